"""The ``shuffle`` action: evict the victims that plugins nominate.

Upstream: volcano-sh/volcano pkg/scheduler/actions/shuffle/shuffle.go, ``Action.Execute``
(the only caller of ``Session.VictimTasks``, so TDM's and rescheduling's victim functions
act only when ``shuffle`` is among the configured actions).

Candidates are the Running tasks of session jobs; ``ssn.victim_tasks`` asks every
enabled victim function (tdm, rescheduling) and returns the first non-empty tier's
union. Each victim is evicted with its plugin's reason and evidence, the nominating
plugin as ``source``.

Differences from Volcano: victims come sorted by ``(namespace, name)`` and de-duplicated
(Volcano iterates a Go set), and the evictions are staged on one statement committed at
the end (in one batch, ``Statement.evict_all``; when shuffle is the cycle's last action,
committed without staging, ``Statement.commit_evictions``) rather than calling the
evictor one by one; there is still no gang check and no
rollback, as upstream. The candidate list is built lazily: TDM ignores it, and building
it means walking every task of every job.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

from controller.policy.framework.plugin import no_args
from controller.policy.framework.session import Session
from projections.model import TaskInfo, TaskStatus
from streams.gcpause import paused_gc

NAME = "shuffle"


def parse_args(raw: Mapping[str, Any]) -> None:
    """No arguments."""
    no_args(raw)


class RunningTasks(Sequence[TaskInfo]):
    """The Running tasks of the session's jobs, sorted by key, built on first use."""

    def __init__(self, ssn: Session) -> None:
        self._ssn = ssn
        self._tasks: list[TaskInfo] | None = None

    def _all(self) -> list[TaskInfo]:
        if self._tasks is None:
            found = [
                task
                for job in (self._ssn.jobs[job_id] for job_id in self._ssn.jobs)
                for task in job.tasks.values()
                if task.status == TaskStatus.RUNNING
            ]
            found.sort(key=lambda t: (t.namespace, t.name))
            self._tasks = found
        return self._tasks

    @overload
    def __getitem__(self, index: int) -> TaskInfo: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[TaskInfo]: ...

    def __getitem__(self, index: int | slice) -> TaskInfo | Sequence[TaskInfo]:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._all())

    def __iter__(self) -> Iterator[TaskInfo]:
        return iter(self._all())


class ShuffleAction:
    name = NAME
    #: Every trigger: TDM's victims appear exactly at window ends and evict periods.
    triggers: frozenset[str] | None = None

    def execute(self, ssn: Session) -> None:
        # A window close builds ~20,000 short-lived dicts and objects (evidence, victims,
        # payloads, events) that hold no cycles; with the collector on, each gen-0 pass
        # re-walked the survivors and the tasks they point at (a fifth of a close at
        # 5,000 nodes, more when a full pass fell inside it). Paused, reference counting
        # frees them; the collector sees only what survives, once, afterwards.
        with paused_gc():
            self._execute(ssn)

    def _execute(self, ssn: Session) -> None:
        victims = ssn.victim_tasks(RunningTasks(ssn))
        if not victims:
            return
        stmt = ssn.statement()
        # the evidence dict becomes the decision's payload as is: victim functions hand
        # over a fresh dict per victim (see Victim); a victim already releasing in this
        # session is skipped. Last of the cycle, nothing reads the session afterwards:
        # the decisions are written without staging the evictions in it.
        if ssn.last_action:
            stmt.commit_evictions(victims)
            return
        stmt.evict_all(victims)
        stmt.commit()


def build(args: None) -> ShuffleAction:
    del args
    return ShuffleAction()
