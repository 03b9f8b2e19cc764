"""The why-not fold's task lookup (:class:`replay.whynot.TaskKey`, looked up again only
when a pod of that name changes) answers what a scan of every task at every record
answers: the same sentences over every golden log, for pods evicted, bound, preempted,
never decided and never seen, by ``namespace/name`` and by bare name."""

from __future__ import annotations

from pathlib import Path

import pytest

from projections.world import World
from replay import whynot
from replay.whynot import TaskKey, task_key, why_not
from streams.events import DECISION_TYPES, Event
from streams.recording import read_recording

GOLDEN = Path(__file__).parent / "golden"
LOGS = sorted(p.stem for p in GOLDEN.glob("*.jsonl"))


def _events(name: str) -> list[Event]:
    found = [e for e in read_recording(GOLDEN / f"{name}.jsonl") if isinstance(e, Event)]
    return [e.with_offset(i) for i, e in enumerate(found)]


def _pods(events: list[Event]) -> list[str]:
    """Per decision kind the first pods it names, some pods the log saw, bare names too."""
    by_kind: dict[str, list[str]] = {}
    seen: list[str] = []
    for e in events:
        if e.type in DECISION_TYPES and e.data.get("pod"):
            key = f"{e.data.get('namespace')}/{e.data.get('pod')}"
            kind = str(e.data.get("kind"))
            if key not in by_kind.setdefault(kind, []):
                by_kind[kind].append(key)
        meta = (e.data.get("object") or {}).get("metadata") or {}
        if e.type == "k8s.watch" and e.data.get("resource") == "pods":
            key = f"{meta.get('namespace')}/{meta.get('name')}"
            if key not in seen:
                seen.append(key)
    decided = {k for keys in by_kind.values() for k in keys}
    never = [k for k in seen if k not in decided][:3]
    picked = sorted({k for keys in by_kind.values() for k in keys[:3]} | set(never))
    bare = sorted({k.split("/", 1)[1] for k in picked})[:4]
    return [*picked, *bare, "nobody/none", "none"]


class _Scanning(TaskKey):
    """The lookup as it was: a scan of every task each time it is asked."""

    def find(self, world: World) -> str | None:
        return task_key(world, self.pod)


@pytest.mark.parametrize("name", LOGS, ids=LOGS)
def test_the_kept_lookup_says_what_the_scan_says(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = _events(name)
    pods = _pods(events)
    fast = {pod: why_not(events, pod) for pod in pods}
    monkeypatch.setattr(whynot, "TaskKey", _Scanning)
    for pod in pods:
        assert fast[pod] == why_not(events, pod), pod


def test_the_sentences_are_not_all_empty() -> None:
    """The table above compares something: some golden pods are passed over or wait."""
    events = _events("tdm-budgets")
    assert any(why_not(events, pod) for pod in _pods(events))


def test_a_start_state_folds_on_from_its_position() -> None:
    """WhyNot from a World folded to a cut point says, of the records after it, what the
    fold from 0 says of them, and ends in the same pending answer."""
    events = _events("tdm-budgets")
    pods = _pods(events)
    decided = whynot.decided_by_cause(events)
    for cut in (0, 1, len(events) // 3, len(events) // 2, len(events) - 1):
        for pod in pods:
            head = World()
            for event in events[:cut]:
                head.apply(event)
            whole = whynot.WhyNot(pod, decided)
            for event in events[:cut]:
                whole.feed(event)
            mark = len(whole.out)
            resumed = whynot.WhyNot(pod, decided, world=head)
            for event in events[cut:]:
                whole.feed(event)
                resumed.feed(event)
            assert resumed.out == whole.out[mark:], (cut, pod)
            assert whynot._pending(resumed.world, resumed.last, pod) == whynot._pending(
                whole.world, whole.last, pod
            ), (cut, pod)


def test_the_why_fold_takes_the_start_state_too() -> None:
    """WhyFold(world=) from a cut before the pod's first decision's cause: the same answers
    as from 0, and the why-not sentences of the records after the cut."""
    from replay.streamed import WhyFold

    events = _events("tdm-budgets")
    decided = [e for e in events if e.type in DECISION_TYPES]
    by_id = {e.id: e.offset for e in events}
    for pod in _pods(events):
        mine = [
            e
            for e in decided
            if pod in (f"{e.data.get('namespace')}/{e.data.get('pod')}", e.data.get("pod"))
        ]
        first = min((by_id.get(e.cause or "", e.offset) for e in mine), default=len(events))
        for cut in sorted({0, first // 2, first}):
            head = World()
            for event in events[:cut]:
                head.apply(event)
            whole, resumed = WhyFold(pod, decided), WhyFold(pod, decided, world=head)
            for event in events[:cut]:
                whole.feed(event)
            mark = len(whole.whynot.out)
            for event in events[cut:]:
                whole.feed(event)
                resumed.feed(event)
            assert [a.as_json() for a in resumed.answers()] == [
                a.as_json() for a in whole.answers()
            ], (pod, cut)
            assert resumed.whynot.out == whole.whynot.out[mark:], (pod, cut)
