"""Fed watch inputs wait in the virtual loop's heap encoded, and come out as they went in."""

from __future__ import annotations

from datetime import timedelta

import orjson

from controller.drive.loop.virtual import VirtualLoop, _Packed
from controller.policy.step import Step
from streams.backends.memory import MemoryLog
from streams.events import Event
from tests.builders import T0, build_node, build_pod, node_metrics, watch


def _inputs() -> list[Event]:
    events = [watch("nodes", build_node("n1", cpu="8", memory="16Gi"))]
    for i in range(20):
        pod = build_pod("ns", f"p{i}", node="n1", labels={"z": "1", "a": str(i)}, grace=7)
        pod["metadata"]["annotations"] = {"zz": "x", "aa": 1.5, "mm": [3, {"y": None, "b": 2}]}
        events.append(watch("pods", pod, T0 + timedelta(seconds=i // 5)))
    events.append(node_metrics("n1", cpu="1", memory="1Gi", when=T0 + timedelta(seconds=9)))
    return events


def test_fed_watch_inputs_wait_packed() -> None:
    loop = VirtualLoop(Step(config=None, eviction=None), log=MemoryLog())
    loop.feed(iter(_inputs()), slack=timedelta(minutes=1))
    held = [item for _, _, _, item in loop._queue]
    assert len(held) == 22
    assert all(isinstance(item, _Packed) == (item.type == "k8s.watch") for item in held)


def test_fed_inputs_are_written_as_they_were_given() -> None:
    inputs = _inputs()
    log = MemoryLog()
    loop = VirtualLoop(Step(config=None, eviction=None), log=log)
    loop.feed(iter(inputs), slack=timedelta(minutes=1))
    loop.run(until=None)
    written = log.events
    assert [e.id for e in written] == [e.id for e in inputs]
    for given, got in zip(inputs, written, strict=True):
        assert (got.type, got.at, got.cause, got.v) == (given.type, given.at, given.cause, given.v)
        # the same payload, keys in the same order at every level
        assert orjson.dumps(got.data) == orjson.dumps(given.data)
