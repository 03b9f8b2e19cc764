"""The local parts of the World (replay/whyread.py, "The local parts"): a World exact at
some offset and fed from there only the records filed under a pod's name or one of its
nodes and the ``config.applied`` records holds, at every one of those records, the same
local parts as the World fed every record. A scenario table: golden logs × the pods their
records name × the offset the partial fold starts at."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from projections.world import World
from replay.whynot import COOLING_RESOURCES
from replay.whyplan import pod_of
from streams.events import DECISION_TYPES, Event
from streams.payloads import as_decision
from streams.recording import read_recording
from streams.subjects import subjects_of

GOLDEN = Path(__file__).parent / "golden"
#: golden log -> how many of its pods are asked about (every one when None)
LOGS: dict[str, int | None] = {
    "pressure-graceful": None,
    "tdm-budgets": None,
    "ownership": None,
    "stale-metrics": None,
    "rescheduling-hot-cold": None,
    "demo-v5": 14,
}
#: the partial fold starts after this fraction of the log's records
STARTS = (0.0, 0.4, 0.75)


def _events(name: str) -> list[Event]:
    return [e for e in read_recording(GOLDEN / f"{name}.jsonl") if isinstance(e, Event)]


def _names(events: list[Event], limit: int | None) -> list[str]:
    """The pod names the records file under ``podname:``: those decisions name first."""
    decided = sorted(
        {
            str(as_decision(e).get("pod"))
            for e in events
            if e.type in DECISION_TYPES and as_decision(e).get("pod")
        }
    )
    named = sorted(
        {k.split(":", 1)[1] for e in events for k in subjects_of(e) if k.startswith("podname:")}
    )
    ordered = decided + [n for n in named if n not in decided]
    return ordered if limit is None else ordered[:limit]


def _nodes(events: list[Event], name: str) -> set[str]:
    """The nodes the records under the pod's name place it on (as the narrow queries
    gather them: replay.whyplan.narrowed)."""
    found = set()
    for event in events:
        if f"podname:{name}" not in subjects_of(event):
            continue
        found.add(pod_of(event)[1])
        if event.type in DECISION_TYPES:
            found.add(str(as_decision(event).get("node") or ""))
    found.discard("")
    return found


def _parts(world: World, name: str, nodes: set[str]) -> tuple[Any, ...]:
    """What the local parts hold for the pod named ``name`` on ``nodes``."""
    cluster, pressure, usage = world.cluster, world.pressure, world.usage
    tasks = [
        (
            key,
            t.uid,
            t.job,
            t.qos,
            t.node_name,
            t.status,
            t.deleting,
            t.owned,
            t.evictable,
            key in cluster.pending,
            bool(t.uid) and pressure.is_evicted(t.uid),
        )
        for key, t in sorted(cluster.tasks.items())
        if key.split("/", 1)[1] == name
    ]
    places = []
    for node in sorted(nodes):
        info = cluster.nodes.get(node)
        series = usage.nodes.get(node)
        places.append(
            (
                node,
                None if info is None else (info.capacity.to_json(), info.allocatable.to_json()),
                None if series is None else series.to_json(),
                [pressure.cooldowns.get((node, r)) for r in COOLING_RESOURCES],
            )
        )
    return tuple(tasks), tuple(places), world.config


def _local(event: Event, keys: set[str]) -> bool:
    return event.type == "config.applied" or bool(keys.intersection(subjects_of(event)))


@pytest.mark.parametrize("name", sorted(LOGS))
def test_local_parts_fold_from_their_own_records(name: str) -> None:
    events = _events(name)
    pods = _names(events, LOGS[name])
    assert pods, name
    compared = 0
    for start in STARTS:
        cut = int(len(events) * start)
        exact = World()
        for event in events[:cut]:
            exact.apply(event)
        partial = {pod: copy.deepcopy(exact) for pod in pods}
        keys = {
            pod: {f"podname:{pod}", *(f"node:{n}" for n in _nodes(events, pod))} for pod in pods
        }
        for event in events[cut:]:
            exact.apply(event)
            for pod in pods:
                if not _local(event, keys[pod]):
                    continue
                world = partial[pod]
                world.apply(event)
                nodes = {k.split(":", 1)[1] for k in keys[pod] if k.startswith("node:")}
                assert _parts(world, pod, nodes) == _parts(exact, pod, nodes), (
                    name,
                    start,
                    pod,
                    event.offset,
                )
                compared += 1
    assert compared, name
