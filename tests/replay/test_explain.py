"""`tide audit why` headlines: one per reason code, with units, and the non-decisions."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from replay.explain import HEADLINES, answers, headline
from replay.units import cores, gib, humanize, percent, seconds
from replay.whynot import why_not
from streams.events import Event
from streams.payloads import REASON_CODES
from streams.recording import read_recording

GOLDEN = Path(__file__).resolve().parent / "golden"
AT = datetime(2026, 11, 21, 21, 1, tzinfo=UTC)

PRESSURE: dict[str, Any] = {
    "resource": "cpu",
    "pressure": 96.125,
    "threshold": 90.0,
    "level": 85.0,
    "target": 3560.0,
    "streak": [96.1, 96.1, 96.125],
    "round": {"id": "r/cpu", "plan": ["b/x", "default/p"], "batch": 0, "next_at": None},
    "victim": {"qos": "BE", "priority": 5, "cpu_milli": 500.0, "memory": 0.0},
}


def _evict(reason: str, evidence: dict[str, Any]) -> Event:
    data = {
        "kind": "evict",
        "namespace": "default",
        "pod": "p",
        "uid": "u",
        "node": "n1",
        "reason": reason,
        "source": "s",
        "evidence": evidence,
    }
    return Event(type="decision.evict", at=AT, id="d", data=data)


def _taint(kind: str, evidence: dict[str, Any]) -> Event:
    data = {
        "kind": kind,
        "node": "n1",
        "taint": {"key": "koordinator.sh/eviction", "effect": "NoSchedule"},
        "reason": "eviction-taint",
        "source": "pressure",
        "evidence": evidence,
    }
    return Event(type=f"decision.{kind}", at=AT, id="d", data=data)


TDM = {
    "zone": "rz1",
    "window": "10:00-21:00",
    "timezone": "UTC",
    "job": "default/train",
    "budget": {"form": "none", "running": 2, "max_evict": 1, "value": ""},
    "order": {"position": 1, "candidates": 2},
    "evict_period": "1m",
}

CASES: list[tuple[str, Event, list[str]]] = [
    (
        "tdm-window-closed",
        _evict("tdm-window-closed", TDM),
        [
            "default/p was evicted from n1 at 21:01:00 UTC because revocable zone rz1's window"
            " 10:00-21:00 (UTC) closed at 21:00; job default/train had 2 running and no budget"
            " annotation, so at most 1 per 1m period; it was candidate 1 of 2",
        ],
    ),
    ("tdm-preempt", _evict("tdm-preempt", {"zone": "rz1"}), ["by the preempt action", "rz1"]),
    ("preempt", _evict("preempt", {"preemptor": "default/big"}), ["to make room for default/big"]),
    (
        "allocate",
        Event(
            type="decision.bind",
            at=AT,
            id="d",
            data={
                "kind": "bind",
                "namespace": "default",
                "pod": "p",
                "uid": "u",
                "node": "n1",
                "reason": "allocate",
                "source": "allocate",
                "evidence": {"feasible": 3, "score": 12.5, "job": "default/j", "queue": "q"},
            },
        ),
        ["default/p was bound to n1 at 21:01:00 UTC", "of 3 feasible", "score 12.5", "queue q"],
    ),
    ("low-node-utilization", _evict("low-node-utilization", {}), ["to rebalance"]),
    (
        "cpu-pressure",
        _evict("cpu-pressure", PRESSURE),
        [
            "because CPU use was 96.13 % of capacity, above the 90 % threshold for 3 checks",
            "about 3.56 cores",
            "number 2 of 2 in the plan (BE, priority 5)",
        ],
    ),
    (
        "memory-pressure",
        _evict("memory-pressure", {**PRESSURE, "resource": "memory", "target": 2 * 1024.0**3}),
        ["because memory use was 96.13 % of capacity", "about 2 GiB"],
    ),
    (
        "oom-risk",
        _evict("oom-risk", {**PRESSURE, "resource": "memory", "threshold": 95.0}),
        ["96.13 % of allocatable, above the 95 % OOM-risk threshold"],
    ),
    (
        "faulty-oom",
        _evict("faulty-oom", {"oom_count_threshold": 3, "oom_kills": 4}),
        ["its last 3 container terminations were all OOMKilled (4 OOM kills"],
    ),
    (
        "faulty-memory-leak",
        _evict(
            "faulty-memory-leak",
            {
                "first": {"at": "07:00", "memory": 2 * 1024.0**3},
                "last": {"at": "07:54", "memory": 3.5 * 1024.0**3},
                "growth": 1.75,
                "memory_leak_duration": 3600.0,
            },
        ),
        ["memory kept growing: 2 GiB at 07:00 to 3.5 GiB at 07:54 (×1.75 within 1 h)"],
    ),
    (
        "predicted-pressure",
        _evict(
            "predicted-pressure",
            {
                **PRESSURE,
                "prediction": {
                    "predicted": 147.262,
                    "current": 96.0,
                    "trend_per_minute": 5.1262,
                    "advance_threshold": 90.0,
                    "prediction_window": 600.0,
                },
            },
        ),
        ["forecast to reach 147.26 % of capacity within 10 min (now 96 %, trend 5.13 %/min)"],
    ),
    (
        "eviction-taint",
        _taint("taint", {"until": "08:00:10", "evictions": ["shop/cache-0"]}),
        ["n1 was tainted koordinator.sh/eviction:NoSchedule at 21:01:00 UTC", "shop/cache-0 is"],
    ),
]


def test_every_reason_code_has_a_headline_and_a_case() -> None:
    assert set(HEADLINES) == REASON_CODES
    assert {case[0] for case in CASES} == REASON_CODES


@pytest.mark.parametrize(("reason", "decision", "expected"), CASES, ids=[c[0] for c in CASES])
def test_headline_says_why(reason: str, decision: Event, expected: list[str]) -> None:
    text = headline(decision)
    for part in expected:
        assert part in text
    assert "{" not in text and "None" not in text


def test_untaint_headline() -> None:
    text = headline(_taint("untaint", {"tainted_at": "07:55", "until": "08:00"}))
    assert text.startswith("n1's taint koordinator.sh/eviction:NoSchedule was removed")


@pytest.mark.parametrize(
    ("value", "key", "resource", "expected"),
    [
        (2000.0, "cpu_milli", "", "2 cores"),
        (4294967296.0, "memory", "", "4 GiB"),
        (96.125, "pressure", "", "96.13 %"),
        (60.0, "seconds", "", "1 min"),
        (30760.0, "usage", "cpu", "30.76 cores"),
        (21523.999999999996, "target", "cpu", "21.52 cores"),
        (0.30000000000000004, "other", "", 0.3),
    ],
    ids=["cores", "gib", "percent", "seconds", "usage-cpu", "float-artefact", "plain-float"],
)
def test_humanize_gives_units(value: float, key: str, resource: str, expected: object) -> None:
    assert humanize({key: value, "resource": resource} if resource else {key: value})[key] == (
        expected
    )


def test_unit_helpers() -> None:
    assert (cores(1000), gib(1.5 * 1024**3), percent(90), seconds(45)) == (
        "1 core",
        "1.5 GiB",
        "90 %",
        "45 s",
    )


def _golden(name: str) -> list[Event]:
    return [e for e in read_recording(GOLDEN / f"{name}.jsonl") if isinstance(e, Event)]


def test_answer_has_cause_outcome_and_yaml_evidence_with_units() -> None:
    found = answers(_golden("pressure-graceful"), "batch/batch-2")
    assert found
    text = found[0].text()
    assert "because CPU use was 96.13 % of capacity" in text
    assert "outcome: applied at 2026-11-21T12:07:20Z; the pod was gone at" in text
    assert "usage: 30.76 cores" in text
    evidence = text.split("evidence:")[1]
    assert "{'" not in evidence and "None" not in evidence  # YAML, not Python reprs
    assert found[0].as_json()["raw_evidence"]["usage"] == 30760.0


def test_budget_blocked_tdm_candidate_says_why_not() -> None:
    lines = why_not(_golden("tdm-budgets"), "batch/train-3")
    assert any(
        "batch/train-3 was a candidate but was not evicted at 2026-11-21T21:00:00Z" in line
        and "at most 2 per evict period" in line
        and "batch/train-0, batch/train-1 came first" in line
        for line in lines
    ), lines


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (
            "batch/batch-4",
            [
                "batch/batch-4 was not evicted at 2026-11-21T12:07:30Z although hot-0's cpu was"
                " 96.19 % of capacity, above the 90 % threshold: the node was cooling down after"
                " the last cpu round until 2026-11-21T12:08:10Z, and no new round may start"
                " before then"
            ],
        ),
        ("shop/svc-0", []),  # an LS pod is never a CPU-pressure candidate: nothing to explain
    ],
    ids=["be-candidate-cooling", "ls-pod-not-a-candidate"],
)
def test_cooldown_blocked_pressure_candidate_says_why_not(pod: str, expected: list[str]) -> None:
    lines = why_not(_golden("pressure-graceful"), pod)
    assert [line for line in lines if "cooling down" in line] == expected


@pytest.mark.parametrize(
    ("log", "pod", "parts"),
    [
        (
            "allocate-gang",
            "hpc/big-0",
            [
                "hpc/big-0 is pending at 2026-11-21T08:02:05Z: 3 of 4 node(s) fail the predicates",
                "Insufficient resources on 2 node(s)",
                "untolerated taint {maintenance: true} on 1 node(s)",
                "1 would fit",
                "job hpc/big in queue default needs at least 3 pod(s) placed together",
            ],
        ),
        (
            "demo",
            "batch/nightly-0-wqdq7",
            [
                "batch/nightly-0-wqdq7 is pending at 2026-11-22T05:00:00Z: 7 of 7 node(s) fail",
                "beyond revocable zone night:22:00-04:00 on 2 node(s)",
                "job batch/nightly in queue default needs at least 3 pod(s)",
            ],
        ),
    ],
    ids=["gang-taint-and-resources", "demo-zone-closed"],
)
def test_pending_pod_names_failed_predicates(log: str, pod: str, parts: list[str]) -> None:
    lines = [line for line in why_not(_golden(log), pod) if "is pending" in line]
    assert len(lines) == 1, lines
    for part in parts:
        assert part in lines[0]


def test_running_pod_is_not_called_pending() -> None:
    assert not any("is pending" in line for line in why_not(_golden("demo"), "shop/web-0"))


def test_node_timeline_names_pods_shows_percent_and_zone_triggers() -> None:
    from replay.timeline import timeline, timeline_summary

    events = _golden("demo")
    lines = timeline(events, node="shared-1", metrics=False)
    assert not any("node sample" in line for line in lines)
    assert any("decision evict batch/etl-2 from shared-1  (cpu-pressure" in x for x in lines)
    with_samples = timeline(events, node="shared-1")
    assert any("node sample cpu 31.04 cores (97 %)" in line for line in with_samples)
    summary = timeline_summary(events, node="shared-1")
    assert summary[0].startswith("shared-1: ")
    assert any(line.startswith("  peak cpu pressure 97 % at") for line in summary)


def test_zone_triggers_show_on_the_zone_nodes() -> None:
    from replay.timeline import timeline

    lines = timeline(_golden("tdm-budgets"), node="rz1-1", metrics=False)
    assert any("trigger window-end of zone rz1" in line for line in lines), lines


def test_whatif_separates_real_from_evidence_only_differences() -> None:
    from replay.whatif import compare

    before = [
        {
            "at": "2026-11-21T21:00:00Z",
            "kind": "evict",
            "namespace": "a",
            "pod": "x",
            "node": "n",
            "reason": "tdm-window-closed",
        },
        {
            "at": "2026-11-21T08:00:00Z",
            "kind": "bind",
            "namespace": "a",
            "pod": "y",
            "node": "n",
            "reason": "allocate",
        },
    ]
    moved = {**before[0], "at": "2026-11-21T23:00:00Z"}
    whatif = compare(before, [moved, before[1]])
    assert whatif.real == 2
    rows = {(d, v): (b, a) for d, v, b, a in whatif.table()}
    assert rows[("hour", "2026-11-21 21:00")] == (1, 0)
    assert rows[("hour", "2026-11-21 23:00")] == (0, 1)
    assert whatif.as_json()["only_after"][0]["at"] == "2026-11-21T23:00:00Z"


def test_report_and_series_commands(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from controller.cli import app

    log = str(GOLDEN / "demo.jsonl")
    out = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["report", log, "--out", str(out), "--node", "shared-1"])
    assert result.exit_code == 0, result.output
    marked = re.findall(r'data-count="(\d+)" data-kind="evict"', out.read_text())
    assert "1 node(s)" in result.output and sum(map(int, marked)) == 3  # coinciding: one marker
    result = CliRunner().invoke(app, ["audit", "series", "--node", "shared-1", "--log", log])
    rows = result.output.splitlines()
    assert rows[0] == "time,cpu_percent,memory_percent,cpu_cores,memory_gib"
    assert len(rows) == 1442
    result = CliRunner().invoke(app, ["audit", "series", "--node", "nope", "--log", log])
    assert result.exit_code != 0 and "no such node" in result.output
