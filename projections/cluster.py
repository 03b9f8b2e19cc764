"""The cluster projection: Kubernetes watch events and in-flight decisions → Volcano's model.

``ClusterState`` folds ``k8s.watch`` records of ``nodes``, ``pods``, ``podgroups`` and
``queues`` into :mod:`projections.model` objects with Volcano's semantics (volcano-sh/volcano
pkg/scheduler/api and the snapshot in pkg/scheduler/cache/cache.go), and
keeps them indexed for sessions: ``nodes[name].tasks``, ``jobs[id].tasks``, ``pending``
(the Pending tasks) and ``version`` (bumped on every change, so a caller can tell that
nothing moved since its last look). ``sched_version`` is bumped only by the changes a
session can see: every change but a node update that leaves the node's model fields as
they were (a status heartbeat: ``lastHeartbeatTime`` is not in the model). Behaviour
level 3's quiet-tick rule (:mod:`controller.policy.step`) compares it, so heartbeats no
longer wake sessions; level ≤ 2 compares ``version``, as it always did. A heartbeat is
told cheaply: an update whose :func:`~projections.objects.node_inputs` are those of the
node's last update rebuilds nothing but ``idle``.

Watch rules: ADDED and MODIFIED upsert (MODIFIED of an unknown object adds it); DELETED of
an unknown object is ignored; a DELETED pod whose uid differs from the one held is an older
incarnation and is ignored too. A malformed object is counted in ``skipped`` and ignored.

Jobs. A pod naming a PodGroup (``scheduling.k8s.io/group-name``) belongs to job
``<ns>/<group>`` at once. If the PodGroup has not arrived, the job is a *placeholder*
(``JobInfo.placeholder``, ``min_available`` 0, queue ``default``), as Volcano's cache keeps
a JobInfo without a PodGroup and leaves it out of the session snapshot; the PodGroup fills
it in place when it arrives, and its deletion turns the job back into a placeholder (or
drops it when no task is left). A pod without a group is an implicit job of one, id
``<ns>/<pod>`` (see :func:`projections.objects.implicit_job`); an implicit job's phase is
``Inqueue`` while its task is Pending, else ``Running``, since no PodGroup controller
advances it. PriorityClasses are not on the log: a job's priority is the class value
learned from pods that carry it (``priority_classes``), see :mod:`projections.objects`.

Nodes. Accounting follows Volcano's ``NodeInfo.AddTask`` incrementally (Pipelined adds to
``pipelined`` only, Releasing to ``releasing`` and ``used``, every other status to ``used``;
``idle`` = ``allocatable - used``). Succeeded and Failed tasks are not placed on their node. A task
on a node not seen yet creates a *placeholder* node (not Ready, nothing allocatable), filled in when
the Node arrives. One difference from Volcano: adding a Binding task that does not fit ``idle`` is
accounted anyway (Volcano's cache would refuse it and log): a fold never fails, and the engine that
issued the bind had checked the fit.

Decisions are folded as in-flight overlays (``docs/ARCHITECTURE.md``): ``decision.evict``
makes the task Releasing until a watch shows it deleting, terminated or gone, or an
``effect.failed`` / ``effect.skipped`` naming the decision reverts it; ``decision.bind``
makes a Pending task Binding on ``data.node`` until a watch shows ``spec.nodeName`` (or a
non-Pending phase), or ``effect.failed`` reverts it. A watch update in between keeps the
overlay on the new state. A later decision on the same task replaces the earlier overlay.

Ownership. ``config.applied`` sets the :class:`~projections.ownership.Rules` in force (the
configured scheduler names, ``preemptableByDefault`` and the record's behaviour level):
a pod of another scheduler forms no job, DaemonSet and mirror pods are never victims, and
``preemptable`` is opt-in (:mod:`projections.ownership`). Each task's ``owned``,
``evictable`` and ``preemptable`` are derived when it is added, when its PodGroup changes
and, for every task, when the rules change.

The objects and their indexes are :class:`~projections.clusterindex.ClusterIndex`'s (also
what :mod:`projections.snapshot` checkpoints); this module holds the rules that fold
records into them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from projections import snapshot
from projections.accounting import Overlay
from projections.base import BaseProjection, decode_state, encode_state, handles
from projections.behaviour import PREEMPTABLE_OPT_IN
from projections.clusterindex import ClusterIndex
from projections.model import JobInfo, NodeInfo, Resource, TaskInfo, TaskStatus
from projections.objects import (
    apply_implicit,
    apply_node,
    apply_podgroup,
    new_node,
    node_inputs,
    queue_from,
    reset_placeholder,
)
from projections.overcommit import negative
from projections.ownership import derive, forms_job, rules_of
from projections.pods import GROUP_NAME, task_from_pod
from streams.events import Event
from streams.payloads import (
    PodDecisionPayload,
    RawObject,
    as_effect,
    as_pod_decision,
    as_watch,
)

_PENDING = TaskStatus.PENDING
_RELEASING = TaskStatus.RELEASING
_BINDING = TaskStatus.BINDING
_EVICT_CONFIRMED = frozenset({TaskStatus.RELEASING, TaskStatus.SUCCEEDED, TaskStatus.FAILED})
_MALFORMED = (KeyError, TypeError, AttributeError, ValueError)


class _Unseen:
    """A watch handler's answer for a change no session can see (``version`` only)."""


_UNSEEN = _Unseen()


def _seen(node: NodeInfo) -> tuple[Any, ...]:
    """Every field of a node that :func:`apply_node` sets: what a session can see of a
    Node object (equal before and after a heartbeat, which changes only condition times)."""
    return (
        node.allocatable,
        node.capacity,
        node.labels,
        node.revocable_zone,
        node.taints,
        node.unschedulable,
        node.ready,
        node.placeholder,
        node.idle,
    )


class ClusterState(ClusterIndex, BaseProjection):
    """Nodes, tasks, jobs and queues folded from the log (see the module docstring).

    The objects and indexes are :class:`~projections.clusterindex.ClusterIndex`'s (its
    attributes, ``position`` besides); this class adds the rules that fold records into them.
    """

    name = "cluster"

    # ---- watch -------------------------------------------------------------------------

    @handles("k8s.watch")
    def _on_watch(self, event: Event) -> None:
        # the payload typed without a call per record (a TypedDict is the dict itself)
        if TYPE_CHECKING:
            data = as_watch(event)
        else:
            data = event.data
        kind = data.get("event")
        obj = data.get("object")
        if kind not in ("ADDED", "MODIFIED", "DELETED") or not isinstance(obj, dict):
            return
        handler = self._watch_handlers.get(data.get("resource"))
        if handler is None:
            return
        try:
            changed = handler(self, kind, obj)
        except _MALFORMED:
            self.skipped += 1
            return
        if changed:
            self.version += 1
            if changed is not _UNSEEN:
                self.sched_version += 1

    def _bump(self) -> None:
        self.version += 1
        self.sched_version += 1

    def _on_pod(self, kind: str, obj: RawObject) -> bool:
        if kind == "DELETED":
            meta = obj["metadata"]
            key = f"{meta.get('namespace') or 'default'}/{meta['name']}"
            old = self.tasks.get(key)
            uid = meta.get("uid")
            if old is None or (uid and old.uid and uid != old.uid):
                return False
            self._drop_overlay(key)
            self._remove_task(old, key)
            return True
        task = task_from_pod(obj)
        key = task.key
        old = self.tasks.get(key)
        overlay = self.overlays.get(key)
        if overlay is not None:
            if old is None or old.uid != task.uid or self._confirmed(overlay, task):
                self._drop_overlay(key)
            else:
                overlay.base_status, overlay.base_node = task.status, task.node_name
                self._impose(task, overlay)
        if old is not None:
            self._remove_task(old, key, keep_job=old.job == task.job)
        self._add_task(task, key)
        priority = (obj.get("spec") or {}).get("priority") if task.priority_class else None
        if isinstance(priority, int) and self.priority_classes.get(task.priority_class) != priority:
            self._learn_class(task.priority_class, priority)
        return True

    def _learn_class(self, name: str, value: int) -> None:
        self.priority_classes[name] = value
        for job in self.jobs.values():
            if job.priority_class == name and not job.implicit and not job.placeholder:
                job.priority = value
                self.preempt_index.touch_job(job.id)
                if self.touched is not None:
                    self.touched.jobs.add(job.id)

    def _on_node(self, kind: str, obj: RawObject) -> bool | _Unseen:
        name = obj["metadata"]["name"]
        node = self.nodes.get(name)
        self.zone_tasks.touch(name)
        self.preempt_index.touch(name)
        if kind == "DELETED":
            if node is None or node.placeholder:
                return False
            self._node_inputs.pop(name, None)
            if node.tasks:
                node.allocatable, node.capacity = Resource(), Resource()
                node.idle = Resource().sub(node.used)
                node.ready, node.placeholder = False, True
            else:
                del self.nodes[name]
            if name in self.overcommit.open:
                self.overcommit.check(node, self.position)  # gone: nothing to compare with
            return True
        inputs = node_inputs(obj)
        if node is not None and self._node_inputs.get(name) == inputs:
            # A heartbeat: apply_node would set every field as it is but ``idle``, which it
            # recomputes (node accounting moves it by sums that may round differently).
            before = node.idle
            node.idle = node.allocatable.clone().sub(node.used)
            if node.idle == before:
                return _UNSEEN
            self._room_changed(node)
            return True
        if node is None:
            node = self.nodes[name] = new_node(name)
            apply_node(node, obj)
            self._node_inputs[name] = inputs
            return True
        before_seen = _seen(node)
        apply_node(node, obj)
        self._node_inputs[name] = inputs
        self._room_changed(node)
        return True if _seen(node) != before_seen else _UNSEEN

    def _room_changed(self, node: NodeInfo) -> None:
        """A Node update moved its room: over (or no longer) its allocatable?"""
        if node.name in self.overcommit.open or negative(node.idle):
            self.overcommit.check(node, self.position)

    def _on_podgroup(self, kind: str, obj: RawObject) -> bool:
        meta = obj["metadata"]
        job_id = f"{meta.get('namespace') or 'default'}/{meta['name']}"
        job = self.jobs.get(job_id)
        self.queue_totals.touch(job_id)
        self.preempt_index.touch_job(job_id)
        if self.touched is not None:  # whatever follows changes this job, if anything
            self.touched.jobs.add(job_id)
        if kind == "DELETED":
            if job is None or job.implicit or job.placeholder:
                return False
            if not job.tasks:
                del self.jobs[job_id]
                return True
            bare = [t for k, t in sorted(job.tasks.items()) if not t.annotations.get(GROUP_NAME)]
            if bare and forms_job(bare[0], self.rules):
                apply_implicit(job, bare[0], self.rules)
            else:
                reset_placeholder(job)
            return True
        if job is None:
            namespace, _, name = job_id.partition("/")
            job = JobInfo("", namespace, name)
        priority_class = str((obj.get("spec") or {}).get("priorityClassName") or "")
        apply_podgroup(job, obj, self.class_priority(priority_class), self.rules)
        self.jobs[job_id] = job
        if self.rules.has(PREEMPTABLE_OPT_IN):  # its tasks may take the PodGroup's mark
            for key, task in job.tasks.items():
                derive(task, self.rules, job)
                if self.touched is not None:
                    self.touched.tasks.add(key)
                self.zone_tasks.touch_task(task.node_name, key)
                self.preempt_index.touch(task.node_name)
        return True

    def _on_queue(self, kind: str, obj: RawObject) -> bool:
        name = obj["metadata"]["name"]
        if kind == "DELETED":
            return self.queues.pop(name, None) is not None
        self.queues[name] = queue_from(obj)
        return True

    _watch_handlers: ClassVar[
        dict[str, Callable[[ClusterState, str, RawObject], bool | _Unseen]]
    ] = {
        "pods": _on_pod,
        "nodes": _on_node,
        "podgroups": _on_podgroup,
        "queues": _on_queue,
    }

    # ---- configuration -----------------------------------------------------------------

    @handles("config.applied")
    def _on_config(self, event: Event) -> None:
        rules = rules_of(event.data)
        if rules == self.rules:
            return
        self.rules = rules
        # rare (a configuration change): re-derive every task under the new rules
        self._rederive(sorted(self.tasks))
        self._bump()

    # ---- decision overlays -------------------------------------------------------------

    @staticmethod
    def _confirmed(overlay: Overlay, task: TaskInfo) -> bool:
        if overlay.kind == "evict":
            return task.deleting or task.status in _EVICT_CONFIRMED
        return bool(task.node_name) or task.status != _PENDING

    @staticmethod
    def _impose(task: TaskInfo, overlay: Overlay) -> None:
        if overlay.kind == "evict":
            task.status = _RELEASING
        else:
            task.status, task.node_name = _BINDING, overlay.node

    def _drop_overlay(self, key: str) -> None:
        overlay = self.overlays.pop(key, None)
        if overlay is not None:
            self._decisions.pop(overlay.decision, None)

    def _target(self, data: PodDecisionPayload) -> TaskInfo | None:
        task = self.tasks.get(f"{data.get('namespace')}/{data.get('pod')}")
        uid = data.get("uid")
        if task is None or (uid and task.uid and uid != task.uid):
            return None
        return task

    @handles("decision.evict", "decision.bind")
    def _on_decision(self, event: Event) -> None:
        data = as_pod_decision(event)
        task = self._target(data)
        if task is None:
            return
        previous = self.overlays.get(task.key)
        base_status = previous.base_status if previous else task.status
        base_node = previous.base_node if previous else task.node_name
        if event.type == "decision.evict":
            if base_status in _EVICT_CONFIRMED or task.deleting:
                return
            overlay = Overlay(event.id, "evict", base_node, base_status, base_node)
        else:
            node = data.get("node")
            if base_status != _PENDING or base_node or not isinstance(node, str) or not node:
                return
            overlay = Overlay(event.id, "bind", node, base_status, base_node)
        self._drop_overlay(task.key)
        self.overlays[task.key] = overlay
        self._decisions[event.id] = task.key
        self._restatus(
            task,
            _RELEASING if overlay.kind == "evict" else _BINDING,
            base_node if overlay.kind == "evict" else overlay.node,
        )
        self._bump()

    @handles("effect.failed", "effect.skipped")
    def _on_effect_failed(self, event: Event) -> None:
        decision = as_effect(event).get("decision") or event.cause
        key = self._decisions.get(decision) if isinstance(decision, str) else None
        if key is None:
            return
        overlay = self.overlays[key]
        self._drop_overlay(key)
        task = self.tasks.get(key)
        if task is not None:
            self._restatus(task, overlay.base_status, overlay.base_node)
        self._bump()

    # ---- checkpoints -------------------------------------------------------------------

    def dump(self) -> bytes:
        return encode_state(self.name, self.position, snapshot.dump_cluster(self))

    def load(self, state: bytes) -> None:
        position, body = decode_state(self.name, state)
        fresh = ClusterState()
        snapshot.load_cluster(fresh, body)  # all or nothing: self is untouched on error
        fresh.position = position
        vars(self).update(vars(fresh))
