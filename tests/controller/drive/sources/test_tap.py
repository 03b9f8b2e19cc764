"""The tap: a relist appends only the differences; a replayed event is dropped; bad
objects are set aside with their reason and the rest goes on."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from controller.drive.sources.tap import Tap, observed_id, observed_id_of
from projections.known import KnownObjects
from streams.backends.kafka_codec import record_value
from streams.codec import encode
from streams.events import Event
from streams.log import Quarantined
from tests.builders import build_node, watch

T = datetime(2026, 1, 1, tzinfo=UTC)


def node(name: str, rv: str, uid: str = "") -> dict[str, Any]:
    obj = build_node(name)
    obj["metadata"]["resourceVersion"] = rv
    obj["metadata"]["uid"] = uid or f"uid-{name}"
    return obj


def drained(tap: Tap) -> list[Event | Quarantined]:
    items = []
    while not tap.queue.empty():
        items.append(tap.queue.get_nowait())
    return items


def said(items: list[Event | Quarantined]) -> list[str]:
    out = []
    for item in items:
        if isinstance(item, Quarantined):
            out.append(f"aside {item.source}")
        else:
            meta = item.data["object"]["metadata"]
            out.append(f"{item.data['event']} {meta['name']}@{meta['resourceVersion']}")
    return out


@pytest.mark.parametrize(
    ("on_log", "listed", "expected"),
    [
        ([], [node("a", "1")], ["ADDED a@1"]),
        ([node("a", "1")], [node("a", "1")], []),
        ([node("a", "1")], [node("a", "5")], ["MODIFIED a@5"]),
        ([node("a", "1"), node("b", "2")], [node("b", "2")], ["DELETED a@1"]),
        ([node("a", "1")], [node("a", "7", uid="other")], ["DELETED a@1", "ADDED a@7"]),
        (
            [node("c", "3"), node("a", "1")],
            [node("b", "4"), node("a", "1")],
            ["DELETED c@3", "ADDED b@4"],
        ),
    ],
    ids=["new", "unchanged", "changed", "vanished", "recreated", "mixed"],
)
def test_relist_appends_only_the_differences(
    on_log: list[dict[str, Any]], listed: list[dict[str, Any]], expected: list[str]
) -> None:
    known = KnownObjects()
    known.fold(watch("nodes", obj, T) for obj in on_log)
    tap = Tap(known, lambda: T)
    tap.relisted("nodes", listed)
    assert said(drained(tap)) == expected
    # what the log now holds is what was listed
    assert {k: i.resource_version for k, i in known.of("nodes").items()} == {
        o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in listed
    }


@pytest.mark.parametrize(
    ("event", "obj", "queued"),
    [
        ("MODIFIED", node("a", "1"), False),
        ("MODIFIED", node("a", "2"), True),
        ("DELETED", node("zz", "3"), False),
        ("DELETED", node("a", "3"), True),
        ("ADDED", node("b", "4"), True),
    ],
    ids=["replayed", "newer", "delete-unknown", "delete-known", "new"],
)
def test_a_watch_event_the_log_already_says_is_dropped(
    event: str, obj: dict[str, Any], queued: bool
) -> None:
    known = KnownObjects()
    known.fold([watch("nodes", node("a", "1"), T)])
    tap = Tap(known, lambda: T)
    assert tap.offer("nodes", event, obj) is queued
    assert len(drained(tap)) == int(queued)


def test_a_bad_object_is_set_aside_with_its_reason_and_the_rest_goes_on() -> None:
    tap = Tap(KnownObjects(), lambda: T)
    bad = node("bad", "1")
    bad["status"]["allocatable"]["cpu"] = "12x"
    tap.relisted("nodes", [node("a", "1"), bad, node("b", "2")])
    items = drained(tap)
    assert said(items) == ["ADDED a@1", "aside k8s.watch nodes", "ADDED b@2"]
    aside = items[1]
    assert isinstance(aside, Quarantined)
    assert aside.reason == (
        "nodes bad: status.allocatable.cpu: quantity '12x' is not a valid Kubernetes quantity"
    )
    assert "bad" not in tap.known.of("nodes")  # a later relist offers it again


@pytest.mark.parametrize(
    ("stamps", "written"),
    [
        (["2026-01-01T00:00:10Z", "2026-01-01T00:00:20Z"], 2),
        (["2026-01-01T00:00:10Z", "2026-01-01T00:00:10Z"], 1),
        (["2026-01-01T00:00:20Z", "2026-01-01T00:00:10Z"], 1),
    ],
    ids=["advanced", "same", "went-back"],
)
def test_a_metric_sample_that_did_not_advance_is_not_written(
    stamps: list[str], written: int
) -> None:
    tap = Tap(KnownObjects(), lambda: T)
    for stamp in stamps:
        sample = {
            "metadata": {"name": "n1"},
            "timestamp": stamp,
            "window": "10s",
            "usage": {"cpu": "1", "memory": "1Gi"},
        }
        tap.sample("metrics.node", sample)
    assert len(drained(tap)) == written


def test_a_bookmark_is_written_once_per_version_and_is_where_a_restart_resumes() -> None:
    known = KnownObjects()
    tap = Tap(known, lambda: T)
    tap.relisted("nodes", [node("a", "4")])
    tap.bookmark("nodes", "9")
    tap.bookmark("nodes", "9")
    tap.bookmark("nodes", "")
    items = drained(tap)
    assert [i.data["event"] for i in items if isinstance(i, Event)] == ["ADDED", "BOOKMARK"]
    again = KnownObjects()
    again.fold(i for i in items if isinstance(i, Event))
    assert again.versions == {"nodes": "9"}
    assert set(again.of("nodes")) == {"a"}


def test_bulk_pauses_the_collector_until_the_last_list_is_done() -> None:
    import gc

    from controller.drive.sources.watch import bulk

    assert gc.isenabled()
    outer = bulk()
    inner = bulk()
    outer.__enter__()
    inner.__enter__()
    assert not gc.isenabled()
    outer.__exit__(None, None, None)  # the first to finish is not the last
    assert not gc.isenabled()
    inner.__exit__(None, None, None)
    assert gc.isenabled()


def pod_metrics(name: str, cpu: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "timestamp": "2026-01-01T00:00:10Z",
        "window": "10s",
        "containers": [{"name": "c", "usage": {"cpu": cpu, "memory": "1Gi"}}],
    }


def offered(tap: Tap) -> None:
    noted = node("a", "2")
    noted["metadata"]["annotations"] = {"note": '\u00e9 "x" \u2028', "a": "first"}
    tap.relisted("nodes", [node("b", "1"), noted, node("c", "3")])
    tap.offer("nodes", "DELETED", node("b", "1"))
    tap.bookmark("nodes", "9")
    tap.sample("metrics.pod", pod_metrics("p1", "250m"))
    usage = {"cpu": "1", "memory": "1Gi"}
    sample = {"metadata": {"name": "n1"}, "timestamp": "2026-01-01T00:00:10Z", "usage": usage}
    tap.sample("metrics.node", sample | {"window": "10s"})


def test_the_payload_bytes_handed_to_the_log_are_the_canonical_ones() -> None:
    """The tap serialises each payload once, for its id; the writer hands those bytes to
    the log. They must be exactly what the log would write for the payload itself
    (``streams.codec.encode``), and the id exactly ``observed_id`` of the payload."""
    tap = Tap(KnownObjects(), lambda: T)
    offered(tap)
    events = [item for item in drained(tap) if isinstance(item, Event)]
    assert len(events) == 7
    payloads = tap.payloads(events)
    for event, payload in zip(events, payloads, strict=True):
        assert payload == orjson.dumps(event.data, option=orjson.OPT_SORT_KEYS)
        assert event.id == observed_id(event.type, event.data)
        assert record_value(event, payload) == encode(event)
    assert tap.encoded == {}  # taken with the events: nothing kept behind
    assert tap.payloads(events) == [None] * len(events)  # taken once; None: serialise


@pytest.mark.parametrize(
    "data",
    [
        {"b": 1, "a": {"d": [1, {"z": None, "y": 0.5}], "c": "\u00e9\u2028"}},
        {},
        {"resource": "pods", "event": "ADDED", "object": build_node("n")},
    ],
    ids=["nested unsorted", "empty", "a node"],
)
@pytest.mark.parametrize("type_", ["k8s.watch", "metrics.node", 'odd "type"'])
def test_the_id_from_the_payload_bytes_is_the_observed_id(data: dict[str, Any], type_: str) -> None:
    payload = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    assert observed_id_of(type_, payload) == observed_id(type_, data)
    assert observed_id_of(type_, payload + b" ") != observed_id(type_, data)
