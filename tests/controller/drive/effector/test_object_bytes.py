"""The simulated cluster keeps the same bytes whether it cuts them out of a canonical
payload or encodes the object itself."""

from __future__ import annotations

import io

from controller.drive.effector import SimulatedCluster
from controller.drive.effector.apiserver import object_bytes
from streams.codec import encode, encode_payload
from streams.events import Event
from streams.recording import read_batches
from tests.builders import build_node, build_pod, watch


def _canonical(events: list[Event]) -> list[tuple[Event, bytes | None]]:
    """The events as a canonical recording reads them back, with their payload bytes."""
    lines = io.BytesIO(b"".join(encode(e) + b"\n" for e in events))
    return [
        (event, payload)
        for batch in read_batches(lines, canonical=True)
        for event, payload in zip(batch.events, batch.payloads, strict=True)
    ]


def test_observe_encoded_keeps_what_observe_keeps() -> None:
    pod = build_pod("ns", "p", labels={"z": "1", "a": "2"})
    node = build_node("n1", cpu="8", memory="16Gi")
    gone = build_pod("ns", "p", labels={"z": "1", "a": "2"})
    events = [watch("nodes", node), watch("pods", pod), watch("pods", gone, event="DELETED")]
    plain, encoded = SimulatedCluster(), SimulatedCluster()
    for event, payload in _canonical(events[:2]):
        assert payload == encode_payload(event.data)
        plain.observe(event)
        encoded.observe_encoded(event, payload)
    for store in ("pods", "nodes"):
        mine, theirs = getattr(plain.state, store), getattr(encoded.state, store)
        assert list(mine) == list(theirs) != []
        assert [mine.raw(k) for k in mine] == [theirs.raw(k) for k in theirs]
    ((deleted, payload),) = _canonical(events[2:])
    assert payload is not None
    encoded.observe_encoded(deleted, payload)
    assert "ns/p" not in encoded.state.pods


def test_an_object_to_trim_is_not_cut_out() -> None:
    pod = build_pod("ns", "q")
    pod["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    data = watch("pods", pod).data
    assert object_bytes(data, encode_payload(data)) is None
    assert object_bytes({**data, "extra": 1}, encode_payload({**data, "extra": 1})) is None
