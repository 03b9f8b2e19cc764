"""The Kubernetes adapter: the only package that imports ``kubernetes_asyncio``.

``client`` (configuration, raw list / watch / get), ``errors`` (the error tree with
``.retriable``), ``retry`` (capped exponential backoff with jitter) and ``resources`` (the
collections tide reads). Sources and, later, the effector call it; policy code never does.
"""
