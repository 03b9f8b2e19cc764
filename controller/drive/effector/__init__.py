"""Turning decisions into effects: the effector port (:mod:`.port`) and its adapters.

:mod:`.simulated` is the simulated cluster, the effector of the embedded default; the
Kubernetes effector of ``tide run`` will sit beside it.
"""

from __future__ import annotations

from controller.drive.effector.port import Effector, Effects, NoEffector
from controller.drive.effector.simulated import (
    DEFAULT_GRACE,
    DEFAULT_STARTUP_DELAY,
    SimulatedCluster,
)
from controller.drive.effector.simulated_objects import (
    BASE_NAME_ANNOTATION,
    INCARNATION_ANNOTATION,
    NOTICE_ANNOTATION,
    RECREATING_KINDS,
    recreated,
)

__all__ = [
    "BASE_NAME_ANNOTATION",
    "DEFAULT_GRACE",
    "DEFAULT_STARTUP_DELAY",
    "INCARNATION_ANNOTATION",
    "NOTICE_ANNOTATION",
    "RECREATING_KINDS",
    "Effector",
    "Effects",
    "NoEffector",
    "SimulatedCluster",
    "recreated",
]
