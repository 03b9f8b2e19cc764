"""streams.payloads: the vocabularies hold every word tide writes, and the records tide
wrote (the golden logs, written by simulations) match their TypedDicts key for key."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml

from controller.drive.effector.simulated import SimulatedCluster
from controller.drive.triggers.plan import TICK
from controller.policy.actions.allocate import REASON as ALLOCATE_REASON
from controller.policy.loader import load_config
from controller.policy.plugins.tdm.plugin import REASON_PREEMPT, REASON_WINDOW_CLOSED
from controller.policy.plugins.tdm.schedule import EVICT_PERIOD_KIND as EVICT_PERIOD
from controller.policy.plugins.tdm.schedule import RANKS, WINDOW_END, WINDOW_START
from controller.policy.pressure.decisions import TAINT, TAINT_REASON
from controller.policy.trigger_events import trigger_data
from controller.simulate.runner import Simulation
from controller.simulate.scenario import load_scenario
from projections.pressure import BATCH_KIND, UNTAINT_KIND
from streams import payloads as p
from streams.events import make_event
from streams.payloads import TAINT_EFFECTS
from streams.validation import REASONS
from tests.builders import T0
from tests.controller.policy.pressure.harness import (
    Loop,
    node_event,
    node_sample,
    pod_event,
    seconds,
)
from tests.controller.policy.pressure.harness import config as eviction_config

GOLDEN = Path(__file__).resolve().parents[1] / "replay" / "golden"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LOGS = sorted(GOLDEN.glob("*.jsonl"))

#: every reason code the code base writes, by where it is written
WRITTEN_REASONS = [
    ("tdm window close", REASON_WINDOW_CLOSED),
    ("tdm preempt", REASON_PREEMPT),
    ("allocate", ALLOCATE_REASON),
    ("pressure taint", TAINT_REASON),
    ("pressure cpu", "cpu-pressure"),
    ("pressure memory", "memory-pressure"),
    ("pressure oom risk", "oom-risk"),
    ("faulty oom", "faulty-oom"),
    ("faulty leak", "faulty-memory-leak"),
    ("predictive", "predicted-pressure"),
]

WRITTEN_TRIGGER_KINDS = [TICK, WINDOW_START, WINDOW_END, EVICT_PERIOD, BATCH_KIND, UNTAINT_KIND]

#: record type -> the payload TypedDict tide writes for it
PAYLOADS: dict[str, Any] = {
    "config.applied": p.ConfigPayload,
    "trigger.fired": p.TriggerPayload,
    "decision.evict": p.EvictPayload,
    "decision.bind": p.BindPayload,
    "decision.taint": p.TaintPayload,
    "decision.untaint": p.TaintPayload,
    "effect.applied": p.EffectPayload,
    "effect.failed": p.EffectPayload,
}

#: pressure-eviction evidence key -> the TypedDict of its value
PRESSURE_PARTS: dict[str, Any] = {
    "round": p.RoundEvidence,
    "cooldown": p.CooldownEvidence,
    "victim": p.VictimEvidence,
    "reserve": p.ReserveEvidence,
    "limits": p.LimitsEvidence,
    "prediction": p.PredictionEvidence,
}


def records() -> list[tuple[str, int, str, dict[str, Any]]]:
    out = []
    for log in LOGS:
        for line_no, line in enumerate(log.read_text().splitlines(), start=1):
            record = json.loads(line)
            out.append((log.name, line_no, record["type"], record["data"]))
    return out


RECORDS = records()


def assert_matches(typed: Any, data: dict[str, Any], where: str) -> None:
    keys = set(data)
    missing = typed.__required_keys__ - keys
    extra = keys - typed.__required_keys__ - typed.__optional_keys__
    assert not missing, f"{where}: {typed.__name__} requires {sorted(missing)}"
    assert not extra, f"{where}: {typed.__name__} does not declare {sorted(extra)}"


@pytest.mark.parametrize(("where", "reason"), WRITTEN_REASONS)
def test_every_reason_code_written_is_in_the_vocabulary(where: str, reason: str) -> None:
    assert reason in p.REASON_CODES, where


def test_the_reason_vocabulary_is_the_one_validation_always_accepted() -> None:
    assert (
        REASONS
        == p.REASON_CODES
        == {r for _, r in WRITTEN_REASONS}
        | {
            "preempt",
            "low-node-utilization",
        }
    )
    assert {"NoSchedule", "PreferNoSchedule", "NoExecute"} == TAINT_EFFECTS


@pytest.mark.parametrize("kind", WRITTEN_TRIGGER_KINDS)
def test_every_trigger_kind_written_is_in_the_vocabulary(kind: str) -> None:
    assert kind in p.TRIGGER_KINDS
    assert p.trigger_kind(kind) == kind


def test_the_trigger_plan_ranks_only_known_kinds() -> None:
    assert set(RANKS) <= p.TRIGGER_KINDS


@pytest.mark.parametrize("kind", ["", "Tick", "window_end", "manual"])
def test_an_unknown_trigger_kind_is_not_written(kind: str) -> None:
    with pytest.raises(ValueError, match="unknown trigger kind"):
        trigger_data(datetime(2026, 11, 21, tzinfo=UTC), "t", kind)


def test_the_pressure_taint_is_a_taint() -> None:
    assert TAINT["effect"] in p.TAINT_EFFECTS
    assert set(TAINT) == p.Taint.__required_keys__ | p.Taint.__optional_keys__


def test_the_golden_logs_hold_every_payload_type_but_a_failure() -> None:
    assert {t for _, _, t, _ in RECORDS} >= set(PAYLOADS) - {"effect.failed"}


def test_a_failed_effect_matches_its_payload_type() -> None:
    evict = next(d for _, _, t, d in RECORDS if t == "decision.evict")
    decision = make_event("decision.evict", datetime(2026, 11, 21, tzinfo=UTC), evict)
    (failed,), later = SimulatedCluster().answer(decision, {})
    assert later == [] and failed.type == "effect.failed"
    assert_matches(p.EffectPayload, failed.data, "simulated failure")
    assert p.as_effect(failed)["kind"] == "evict"


@pytest.mark.parametrize("type_", sorted(set(PAYLOADS) - {"effect.failed"}))
def test_every_record_tide_wrote_matches_its_payload_type(type_: str) -> None:
    typed = PAYLOADS[type_]
    found = [(f"{log}:{n}", d) for log, n, t, d in RECORDS if t == type_]
    assert found
    for where, data in found:
        assert_matches(typed, data, where)
        if type_.startswith("decision."):
            assert data["kind"] == type_.removeprefix("decision.")
            assert data["kind"] in p.DECISION_KINDS
            assert data["reason"] in p.REASON_CODES, where
        if type_.startswith("effect."):
            assert data["kind"] in p.DECISION_KINDS, where
        if type_ == "trigger.fired":
            assert data["kind"] in p.TRIGGER_KINDS, where
        if "taint" in data:
            assert_matches(p.Taint, data["taint"], where)


def test_pressure_evidence_parts_match_their_types() -> None:
    seen: set[str] = set()
    for log, n, type_, data in RECORDS:
        if type_ != "decision.evict" or data["source"] != "pressure":
            continue
        evidence = data["evidence"]
        for key, typed in PRESSURE_PARTS.items():
            if key in evidence:
                seen.add(key)
                assert_matches(typed, evidence[key], f"{log}:{n} evidence.{key}")
    assert seen >= {"round", "cooldown", "victim", "limits"}


@pytest.mark.parametrize(
    ("type_", "typed"),
    [("decision.taint", p.TaintEvidence), ("decision.untaint", p.UntaintEvidence)],
)
def test_taint_evidence_matches_its_type(type_: str, typed: Any) -> None:
    found = [(f"{log}:{n}", d) for log, n, t, d in RECORDS if t == type_]
    assert found
    for where, data in found:
        assert_matches(typed, data["evidence"], where)


#: the TDM evidence keys written only when they apply (PodDisruptionBudgets, bad budgets)
TDM_WHEN_THEY_APPLY = {"disruption_budgets", "skipped_jobs"}


def test_tdm_evictions_name_their_zone() -> None:
    found = [d for _, _, t, d in RECORDS if t == "decision.evict" and d["source"] == "tdm"]
    assert found
    for data in found:
        assert isinstance(data["evidence"]["zone"], str)
        declared = set(p.TdmEvidence.__optional_keys__)
        assert declared - TDM_WHEN_THEY_APPLY <= set(data["evidence"])
        assert set(data["evidence"]) <= declared


#: reason code -> the evidence TypedDict of its decisions, and its parts' TypedDicts
EVIDENCE: dict[str, tuple[Any, dict[str, Any]]] = {
    "tdm-window-closed": (
        p.TdmEvidence,
        {"budget": p.TdmBudgetEvidence, "order": p.TdmOrderEvidence},
    ),
    "allocate": (p.AllocateEvidence, {}),
    "faulty-memory-leak": (
        p.MemoryLeakEvidence,
        {"first": p.LeakSampleEvidence, "last": p.LeakSampleEvidence, **PRESSURE_PARTS},
    ),
}


@pytest.mark.parametrize("reason", sorted(EVIDENCE))
def test_the_evidence_written_matches_its_type(reason: str) -> None:
    typed, parts = EVIDENCE[reason]
    found = [(f"{log}:{n}", d) for log, n, _, d in RECORDS if d.get("reason") == reason]
    assert found
    for where, data in found:
        evidence = data["evidence"]
        assert_matches(typed, evidence, where)
        for key, part in parts.items():
            if key in evidence:
                assert_matches(part, evidence[key], f"{where} evidence.{key}")


def test_preempt_evidence_matches_its_type() -> None:
    # no golden log holds a preemption: the example's (evictions for a pending preemptor)
    events, _, until = load_scenario(EXAMPLES / "preempt-full-cluster.yaml")
    raw = yaml.safe_load((EXAMPLES / "preempt-config.yaml").read_text())
    sim = Simulation(load_config(raw))
    sim.run(events, until=until)
    found = [d for d in sim.result.decisions if d.data.get("reason") == "preempt"]
    assert found
    for decision in found:
        assert_matches(p.PreemptEvidence, decision.data["evidence"], decision.id)
        assert set(p.preempt_evidence(p.as_evict(decision))) >= {"preemptor", "nominated"}


def test_faulty_oom_evidence_matches_its_type() -> None:
    # no golden log holds a faulty-oom eviction: three OOM kills in a row
    statuses: list[dict[str, Any]] = [
        {
            "name": "main",
            "restartCount": n,
            "state": {"running": {}},
            "lastState": {
                "terminated": {
                    "reason": "OOMKilled",
                    "containerID": f"f-{n}",
                    "finishedAt": f"2026-11-21T19:{n:02}:00Z",
                }
            },
        }
        for n in (1, 2, 3)
    ]
    pods = [
        pod_event("f", qos="BE", started=T0 - timedelta(hours=2), statuses=[status])
        for status in statuses
    ]
    loop = Loop(eviction_config(predictiveEvict={"enabled": False}))
    loop.run(
        [node_event(), *pods, *(node_sample("n1", seconds(1 + i), cpu_cores=10) for i in range(3))]
    )
    (evicted,) = loop.evictions()
    assert evicted.data["reason"] == "faulty-oom"
    evidence = evicted.data["evidence"]
    assert_matches(p.FaultyOomEvidence, evidence, evicted.id)
    for key, typed in PRESSURE_PARTS.items():
        if key in evidence:
            assert_matches(typed, evidence[key], f"{evicted.id} evidence.{key}")
    assert p.faulty_oom_evidence(p.as_evict(evicted)).get("oom_kills") == 3


def test_the_literal_aliases_and_the_sets_agree() -> None:
    assert set(get_args(p.ReasonCode)) == p.REASON_CODES
    assert set(get_args(p.DecisionKind)) == p.DECISION_KINDS
    assert set(get_args(p.TriggerKind)) == p.TRIGGER_KINDS


def test_the_metrics_fold_imports_no_prometheus() -> None:
    code = "import sys, projections.metrics; print('prometheus_client' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
