"""The label sets ``/metrics`` exports at 0: exactly those a real run increments.

Prometheus's ``rate()`` and ``increase()`` see a counter's rise only from a sample it had
before: a series born at 1 reads as no increase. So every label set tide increments must be
exported (at 0) before its first increment, and a label set nothing can increment must not
be exported (a dashboard would list ``kind="bind",reason="cpu-pressure"`` as a thing tide
does). The real runs are the golden logs (tests/replay/golden/: decisions and outcomes of
every plugin, action and pressure reason the demos and scenarios exercise), fed to the
observer record by record as the live loop feeds it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from controller.drive.observe.metrics import DECISION_LABELS, PrometheusObserver
from streams.codec import decode
from streams.events import DECISION_TYPES, EFFECT_TYPES, Event
from streams.payloads import DECISION_KINDS, REASON_CODES

GOLDEN = Path(__file__).resolve().parents[3] / "replay" / "golden"
Series = tuple[str, tuple[tuple[str, str], ...]]


def golden_logs() -> list[Path]:
    return sorted(GOLDEN.glob("*.jsonl"))


def events(path: Path) -> list[Event]:
    return [decode(line) for line in path.read_bytes().splitlines() if line.strip()]


def counters(registry: CollectorRegistry) -> dict[Series, float]:
    """Every ``*_total`` sample the registry exports: (name, sorted labels) → value."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in registry.collect()
        for sample in family.samples
        if sample.name.endswith("_total")
    }


def feed(observer: PrometheusObserver, event: Event) -> None:
    """What the live loop calls for an appended record."""
    if event.type in DECISION_TYPES:
        observer.decided(event)
    elif event.type in EFFECT_TYPES:
        observer.effect(event)
    observer.record(event)


@pytest.mark.parametrize("path", golden_logs(), ids=lambda p: p.stem)
def test_every_series_a_real_run_increments_is_exported_at_zero_before(path: Path) -> None:
    observer = PrometheusObserver()
    born: set[Series] = set()
    before = counters(observer.registry)
    for event in events(path):
        feed(observer, event)
        after = counters(observer.registry)
        born |= {series for series in after if series not in before}
        before = after
    assert born == set(), f"{path.name}: series first exported at their first increment"


def test_the_golden_logs_increment_decision_series() -> None:
    # the test above is not vacuous: the logs hold decisions of every kind
    kinds = {
        str(e.data.get("kind"))
        for p in golden_logs()
        for e in events(p)
        if e.type in DECISION_TYPES
    }
    assert kinds == set(DECISION_KINDS)


def test_the_decision_series_at_zero_are_the_ones_tide_writes() -> None:
    observer = PrometheusObserver()
    exported = {
        dict(labels)["kind"] + " " + dict(labels)["reason"] + " " + dict(labels)["source"]
        for (name, labels), value in counters(observer.registry).items()
        if name == "tide_decisions_total" and value == 0
    }
    # each writer and what it writes (see DECISION_LABELS): no empty source, no reason a
    # kind never carries (a bind is an allocation, a taint pressure's)
    assert exported == {
        "bind allocate allocate",
        "bind allocate backfill",
        "evict preempt preempt",
        "evict tdm-preempt preempt",
        "evict tdm-window-closed tdm",
        "evict low-node-utilization rescheduling",
        "evict cpu-pressure pressure",
        "evict memory-pressure pressure",
        "evict oom-risk pressure",
        "evict faulty-oom pressure",
        "evict faulty-memory-leak pressure",
        "evict predicted-pressure pressure",
        "taint eviction-taint pressure",
        "untaint eviction-taint pressure",
    }
    assert {(k, r) for k, r, _ in DECISION_LABELS} <= {
        (k, r) for k in DECISION_KINDS for r in REASON_CODES
    }
    # every golden decision's label set is among them (the golden logs' are a subset)
    seen = {
        (str(e.data.get("kind")), str(e.data.get("reason")), str(e.data.get("source")))
        for p in golden_logs()
        for e in events(p)
        if e.type in DECISION_TYPES
    }
    assert seen <= set(DECISION_LABELS)
