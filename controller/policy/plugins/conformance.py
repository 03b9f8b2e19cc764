"""The ``conformance`` plugin: never preempt or reclaim cluster-critical pods.

Upstream: volcano-sh/volcano pkg/scheduler/plugins/conformance/conformance.go,
``conformancePlugin.OnSessionOpen``: preemptees in namespace ``kube-system`` or with priority class
``system-cluster-critical`` / ``system-node-critical`` are dropped from the candidates;
the rest are returned with Permit. (Volcano registers no victim-tasks function here, so
shuffle's victims are not filtered by this plugin; neither are tide's.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from controller.policy.framework.plugin import PluginContext, no_args
from controller.policy.framework.points import Vote
from controller.policy.framework.session import Session
from projections.model import TaskInfo

NAME = "conformance"
CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
SYSTEM_NAMESPACE = "kube-system"


def parse_args(raw: Mapping[str, Any]) -> None:
    """No arguments."""
    no_args(raw)


def is_critical(task: TaskInfo) -> bool:
    """Whether ``task`` is a pod conformance protects."""
    return task.namespace == SYSTEM_NAMESPACE or task.priority_class in CRITICAL_CLASSES


def evictable(preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
    """The preemptees that are not critical, with Permit."""
    del preemptor
    return [task for task in preemptees if not is_critical(task)], Vote.PERMIT


class ConformancePlugin:
    name = NAME

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_preemptable_fn(NAME, evictable)
        ssn.add_reclaimable_fn(NAME, evictable)

    def on_session_close(self, ssn: Session) -> None:
        del ssn


def build(args: None, ctx: PluginContext) -> ConformancePlugin:
    del args, ctx
    return ConformancePlugin()
