"""The watch sources: what tide sees of a cluster, onto the log (read only).

``watch`` (list + watch of one collection, resume, relist on 410), ``metrics`` (polling
metrics.k8s.io), ``tap`` (validation, deduplication, the queue to the writer), ``known``
(what the log already holds), ``recorder`` (`tide record`'s wiring) and ``health`` (the
probes). They call the Kubernetes adapter (:mod:`controller.drive.kube`), never the client.
"""
