"""The benchmark recording generator: deterministic, realistic sizes, valid input."""

from __future__ import annotations

import io
from dataclasses import replace

import orjson
import pytest

from benchmarks.generate import Scale, generate
from streams.events import JSON

SMALL = Scale(nodes=20, pods=300, pending=10, seed=7)


def _bytes(scale: Scale) -> bytes:
    out = io.BytesIO()
    generate(scale, out)
    return out.getvalue()


@pytest.fixture(scope="module")
def recording() -> bytes:
    return _bytes(SMALL)


def test_same_seed_same_bytes(recording: bytes) -> None:
    assert _bytes(SMALL) == recording


def test_other_seed_other_bytes(recording: bytes) -> None:
    assert _bytes(replace(SMALL, seed=8)) != recording


def test_lines_are_canonical_and_in_time_order(recording: bytes) -> None:
    lines = recording.splitlines()
    records = [orjson.loads(line) for line in lines]
    assert all(set(r) == {"at", "type", "data"} for r in records)
    assert [orjson.dumps(r, option=orjson.OPT_SORT_KEYS) for r in records] == lines
    ats = [r["at"] for r in records]
    assert ats == sorted(ats)


def test_pods_are_about_6_kb(recording: bytes) -> None:
    sizes = [len(line) for line in recording.splitlines() if b'"resource":"pods"' in line[-200:]]
    assert len(sizes) >= SMALL.pods
    assert 5_000 <= sum(sizes) / len(sizes) <= 7_500


def test_shape_matches_the_scale(recording: bytes) -> None:
    pods: dict[str, JSON] = {}  # watch objects, as orjson decodes them
    nodes = zones = 0
    for line in recording.splitlines():
        record = orjson.loads(line)
        data = record["data"]
        if record["type"] != "k8s.watch":
            continue
        obj = data["object"]
        if data["resource"] == "nodes" and data["event"] == "ADDED":
            nodes += 1
            zones += "volcano.sh/revocable-zone" in obj["metadata"]["labels"]
        if data["resource"] == "pods":
            key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
            if data["event"] == "DELETED":
                pods.pop(key)
            else:
                pods[key] = obj
    assert nodes == SMALL.nodes
    assert zones == 3  # 10 % rz1 + 5 % rz2
    assert len(pods) == SMALL.pods
    pending = [p for p in pods.values() if "nodeName" not in p["spec"]]
    assert len(pending) == SMALL.pending


def test_every_line_is_valid_tide_input(recording: bytes) -> None:
    codec = pytest.importorskip("streams.codec")
    validation = pytest.importorskip("streams.validation")
    for line in recording.splitlines():
        event = codec.decode(line)
        validation.validate(event.type, event.data)
