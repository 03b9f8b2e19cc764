"""What a live controller tells its operators: counters, health, leadership.

Why a seam: the live loop of ``tide run`` and the Kubernetes effector report
what happens as it happens, and the Prometheus endpoint, the health probes and the structured
logs turn that into something an operator reads. The loop codes against the
:class:`~controller.drive.observe.hooks.LiveObserver` protocol only; :class:`NoObserver` is the
default when nothing listens (tests, ``tide run`` without ``--metrics-address``);
:class:`controller.drive.observe.metrics.PrometheusObserver` counts,
:func:`controller.drive.observe.http.serve`
serves it, :mod:`controller.drive.observe.logs` sets up the (JSON) logs.
"""

from controller.drive.observe.hooks import LiveObserver, NoObserver

__all__ = ["LiveObserver", "NoObserver"]
