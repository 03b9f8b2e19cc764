"""Statements: staged evict / pipeline / allocate operations, committed as decisions.

Actions stage, they do not act: only the effector touches the cluster. Each operation changes the
session view at once (so later questions see it) and runs the plugins' event handlers;
:meth:`commit` turns the evictions and allocations into ``decision.evict`` / ``decision.bind``
events (``at`` = the trigger's time, ``cause`` = the trigger's id), and :meth:`discard` undoes the
operations in reverse order (volcano-sh/volcano pkg/scheduler/framework/statement.go,
``Statement.Commit`` / ``Statement.Discard``). A pipeline produces no event: it only reserves room
in the session for a task waiting on releasing resources.

Difference from Volcano: discarding an eviction restores the task exactly as it was
(Volcano sets the status to Running regardless, so a Bound victim came back Running).
The session never calls an evictor or a binder; the effector acts on the committed
events later, so there is no "commit failed, un-evict" path here.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, NamedTuple, cast

import orjson

from controller.policy.framework.errors import StatementError
from controller.policy.framework.points import Victim
from controller.policy.framework.view import clone_task, clone_task_as_is
from projections.model import TaskInfo, TaskStatus
from streams.events import EVENT_TYPES, Event, build_event, format_time
from streams.payloads import (
    BindPayload,
    EvictPayload,
    EvidenceDict,
    PodDecisionPayload,
    ReasonCode,
    as_json,
)

if TYPE_CHECKING:
    from controller.policy.framework.session import Session


class OpKind(enum.Enum):
    EVICT = "evict"
    PIPELINE = "pipeline"
    ALLOCATE = "allocate"


_EVICT = OpKind.EVICT
_RELEASING = TaskStatus.RELEASING


class DecisionEncoder:
    """Builds the decision events of one commit: ``make_event(type, at, data, cause=...)``.

    The same events, ids byte for byte, but cheaper when a commit holds thousands of
    decisions: every decision of a commit shares ``at`` and ``cause``, so the canonical
    encoding that :func:`streams.events.content_id` hashes, ``{"at", "cause", "data",
    "type"}`` with sorted keys (orjson: compact, and ``OPT_SORT_KEYS`` sorts nested
    objects too), is assembled from a prefix encoded once, the payload, and a suffix per
    type; and the event is built without re-checking the type and time.
    ``tests/controller/policy/framework/test_statement.py`` proves equality with ``make_event``.
    """

    __slots__ = ("_at", "_cause", "_prefix", "_suffixes")

    def __init__(self, at: datetime, cause: str | None) -> None:
        if at.tzinfo is None:
            raise ValueError("event time must be timezone-aware")
        self._at = at.astimezone(UTC)
        self._cause = cause
        self._prefix = (
            b'{"at":' + orjson.dumps(format_time(self._at)) + b',"cause":' + orjson.dumps(cause)
        ) + b',"data":'
        self._suffixes: dict[str, tuple[bytes, int]] = {}

    def __call__(self, type_: str, data: PodDecisionPayload) -> Event:
        suffix = self._suffixes.get(type_)
        if suffix is None:
            if type_ not in EVENT_TYPES:
                raise ValueError(f"unknown event type {type_!r}")
            suffix = self._suffixes[type_] = (
                b',"type":' + orjson.dumps(type_) + b"}",
                EVENT_TYPES[type_],
            )
        body = self._prefix + orjson.dumps(data, option=orjson.OPT_SORT_KEYS) + suffix[0]
        id_ = hashlib.blake2b(body, digest_size=12).hexdigest()
        return build_event(type_, self._at, id_, as_json(data), self._cause, -1, suffix[1])


class Operation(NamedTuple):
    """One staged operation: the task before and after, and the decision's metadata."""

    kind: OpKind
    before: TaskInfo
    after: TaskInfo
    reason: str = ""
    source: str = ""
    evidence: EvidenceDict = {}  # noqa: RUF012 - never mutated; evict/allocate pass their own


def _evict(task: TaskInfo, reason: ReasonCode, source: str, evidence: EvidenceDict) -> EvictPayload:
    """The payload of the eviction of ``task`` (as staged: its node is the one it leaves)."""
    return {
        "kind": "evict",
        "namespace": task.namespace,
        "pod": task.name,
        "uid": task.uid,
        "node": task.node_name,
        "reason": reason,
        "source": source,
        "evidence": evidence,
    }


class Statement:
    """An ordered list of staged operations on one session."""

    def __init__(self, ssn: Session) -> None:
        self._ssn = ssn
        self._ops: list[Operation] = []

    @property
    def operations(self) -> tuple[Operation, ...]:
        return tuple(self._ops)

    def __len__(self) -> int:
        return len(self._ops)

    def has_evictions(self) -> bool:
        return any(op.kind is OpKind.EVICT for op in self._ops)

    def _current(self, task: TaskInfo) -> TaskInfo:
        """The session's current version of ``task`` (callers may hold an older one)."""
        current = self._ssn.tasks.lookup(task.key)
        return current if current is not None else task

    # -- staging -----------------------------------------------------------------------

    def evict(
        self,
        task: TaskInfo,
        reason: str,
        *,
        source: str,
        evidence: EvidenceDict | None = None,
    ) -> None:
        """Mark ``task`` Releasing in the session and run deallocate handlers.

        The body is :meth:`_current` + :meth:`_swap` written out: a TDM window close
        stages thousands of evictions in one cycle, and the calls were a third of it.
        """
        ssn = self._ssn
        view = ssn.view
        key = f"{task.namespace}/{task.name}"
        before = view.tasks.lookup(key) or task
        if before.status == _RELEASING:
            raise StatementError(f"task {key} is already releasing")
        after = clone_task(before, status=_RELEASING)
        view.put_task(after, key)
        if before.node_name:
            view.node_swap_task(before.node_name, key, after)
        ssn.fire_deallocate(after)
        self._ops.append(Operation(_EVICT, before, after, reason, source, evidence or {}))

    def evict_all(self, victims: Iterable[Victim]) -> int:
        """:meth:`evict` each victim in order, skipping one already Releasing (the
        ``StatementError`` :meth:`evict` raises); the number staged.

        Batched per job and per node (``ClusterView.put_tasks`` / ``swap_releasing``):
        a window close stages thousands of evictions on a few hundred nodes, and the
        per-eviction calls were most of staging them. The session ends in the same
        state with the same operations, in the same order; the deallocate handlers run
        after the batch's view changes (in victim order), not between them.
        """
        ssn = self._ssn
        view = ssn.view
        lookup = view.tasks.lookup
        ops = self._ops
        staged: dict[str, TaskInfo] = {}
        by_node: dict[str, list[tuple[str, TaskInfo]]] = {}
        for victim in victims:
            task = victim.task
            key = f"{task.namespace}/{task.name}"
            if key in staged:
                continue  # staged above: Releasing now
            before = lookup(key) or task
            if before.status == _RELEASING:
                continue
            after = clone_task_as_is(before)
            after.status = _RELEASING
            staged[key] = after
            if before.node_name:
                found = by_node.get(before.node_name)
                if found is None:
                    by_node[before.node_name] = [(key, after)]
                else:
                    found.append((key, after))
            evidence = victim.evidence or {}
            ops.append(Operation(_EVICT, before, after, victim.reason, victim.source, evidence))
        view.put_tasks(staged)
        view.swap_releasing(by_node)
        fire = ssn.fire_deallocate
        for after in staged.values():
            fire(after)
        return len(staged)

    def commit_evictions(self, victims: Iterable[Victim]) -> list[Event]:
        """:meth:`evict_all` then :meth:`commit` on an empty statement, for the last action
        of a cycle (``Session.last_action``): the same decision events, in the same order,
        without staging them in the session.

        Staging (a Releasing clone per victim, each job and node rewritten, the deallocate
        handlers) exists so that later questions of the session see the evictions; after
        the last action nothing asks (the plugins' ``on_session_close`` read nothing of
        the session), and staging was most of a TDM window close. A victim is skipped as
        :meth:`evict_all` skips it: met before, or Releasing in the session already.
        """
        if self._ops:
            raise StatementError("commit_evictions needs an empty statement")
        ssn = self._ssn
        lookup = ssn.view.tasks.lookup
        encode = DecisionEncoder(ssn.now, ssn.trigger.id)
        seen: set[str] = set()
        events: list[Event] = []
        for victim in victims:
            task = victim.task
            key = f"{task.namespace}/{task.name}"
            if key in seen:
                continue
            task = lookup(key) or task
            if task.status == _RELEASING:
                continue
            seen.add(key)
            reason = cast(ReasonCode, victim.reason)
            events.append(
                encode("decision.evict", _evict(task, reason, victim.source, victim.evidence or {}))
            )
        ssn.decisions.extend(events)
        return events

    def pipeline(self, task: TaskInfo, node_name: str) -> None:
        """Reserve ``node_name``'s releasing resources for ``task`` (no decision event)."""
        before = self._current(task)
        after = clone_task(before, status=TaskStatus.PIPELINED, node_name=node_name)
        self._place(before, after)
        self._ops.append(Operation(OpKind.PIPELINE, before, after))

    def allocate(
        self,
        task: TaskInfo,
        node_name: str,
        *,
        source: str,
        evidence: EvidenceDict | None = None,
        reason: str = "allocate",
    ) -> None:
        """Place ``task`` on ``node_name`` in the session; committed as a bind."""
        before = self._current(task)
        after = clone_task(before, status=TaskStatus.ALLOCATED, node_name=node_name)
        self._place(before, after)
        self._ops.append(Operation(OpKind.ALLOCATE, before, after, reason, source, evidence or {}))

    def _place(self, before: TaskInfo, after: TaskInfo) -> None:
        view = self._ssn.view
        if self._ssn.jobs.get(before.job) is None:
            raise StatementError(f"job {before.job} of task {before.key} is not in the session")
        if after.node_name not in self._ssn.nodes:
            raise StatementError(f"node {after.node_name} is not in the session")
        view.node_add_task(after.node_name, after)
        view.put_task(after)
        self._ssn.fire_allocate(after)

    def _swap(self, before: TaskInfo, after: TaskInfo) -> None:
        """Replace ``before`` by ``after`` in the job, the task index and its node."""
        view = self._ssn.view
        key = before.key
        view.put_task(after, key)
        if before.node_name:
            view.node_swap_task(before.node_name, key, after)

    # -- ending ------------------------------------------------------------------------

    def commit(self) -> list[Event]:
        """Turn evictions and allocations into decision events; pipelines stay staged."""
        ssn = self._ssn
        events: list[Event] = []
        encode = DecisionEncoder(ssn.now, ssn.trigger.id)
        for op in self._ops:
            if op.kind is OpKind.PIPELINE:
                continue
            task = op.after
            # plugins name their reasons as str; validation holds imported records to the
            # vocabulary, and the payload declares it
            reason = cast(ReasonCode, op.reason)
            if op.kind is OpKind.EVICT:
                events.append(
                    encode("decision.evict", _evict(task, reason, op.source, op.evidence))
                )
            else:
                bind: BindPayload = {
                    "kind": "bind",
                    "namespace": task.namespace,
                    "pod": task.name,
                    "uid": task.uid,
                    "node": task.node_name,
                    "reason": reason,
                    "source": op.source,
                    "evidence": op.evidence,
                }
                events.append(encode("decision.bind", bind))
        self._ops = []
        ssn.decisions.extend(events)
        return events

    def discard(self) -> None:
        """Undo every staged operation, last first."""
        ssn = self._ssn
        view = ssn.view
        for op in reversed(self._ops):
            if op.kind is OpKind.EVICT:
                self._swap(op.after, op.before)
                ssn.fire_allocate(op.before)
            else:
                view.node_remove_task(op.after.node_name, op.after.key)
                view.put_task(op.before)
                ssn.fire_deallocate(op.after)
        self._ops = []

    def merge(self, *others: Statement) -> None:
        """Move the others' operations onto this statement (they become empty)."""
        for other in others:
            self._ops.extend(other._ops)
            other._ops = []
