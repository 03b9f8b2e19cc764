"""`tide audit why PREEMPTOR`: the nomination its victims' evictions carry, and its outcome."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from controller.cli import app
from controller.policy.loader import load_config
from controller.simulate.runner import Simulation
from controller.simulate.scenario import load_scenario
from replay.nomination import nomination_answers
from streams.codec import encode
from streams.events import Event, make_event
from tests.builders import at, build_node, build_pod, watch

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def evict(victim: str, preemptor: str = "ns/hi", node: str = "n1", cause: str = "t1") -> Event:
    evidence = {"preemptor": preemptor, "nominated": node, "phase": "inter-job", "mode": "normal"}
    data = {
        "kind": "evict",
        "namespace": "ns",
        "pod": victim,
        "uid": victim,
        "node": node,
        "reason": "preempt",
        "source": "preempt",
        "evidence": evidence,
    }
    return make_event("decision.evict", at(1), data, cause=cause)


def bind(pod: str, node: str) -> Event:
    data = {
        "kind": "bind",
        "namespace": "ns",
        "pod": pod,
        "uid": pod,
        "node": node,
        "reason": "allocate",
        "source": "allocate",
        "evidence": {},
    }
    return make_event("decision.bind", at(2), data, cause="t2")


AFTER: dict[str, list[Event]] = {
    "bound-there": [bind("hi", "n1")],
    "bound-elsewhere": [bind("hi", "n2")],
    "preemptor-deleted": [watch("pods", build_pod("ns", "hi", phase="Pending"), event="DELETED")],
    "node-deleted": [watch("nodes", build_node("n1"), event="DELETED")],
    "runs-on-its-own": [watch("pods", build_pod("ns", "hi", node="n1"), event="MODIFIED")],
    "still-standing": [bind("other", "n1")],
}
EXPECT = {
    "bound-there": "bound there",
    "bound-elsewhere": "bound on n2, not on n1",
    "preemptor-deleted": "the preemptor was deleted",
    "node-deleted": "node n1 was deleted",
    "runs-on-its-own": "the pod runs on n1",
    "still-standing": "still standing",
}


@pytest.mark.parametrize("case", sorted(AFTER))
def test_outcome_of_a_nomination(case: str) -> None:
    events = [evict("a"), evict("b"), *AFTER[case]]
    [answer] = nomination_answers(events, "hi")
    assert "ns/hi was nominated to n1" in answer.headline
    assert "2 victim(s)" in answer.headline and "ns/a, ns/b" in answer.headline
    assert EXPECT[case] in answer.outcome
    assert answer.evidence["victims"] == ["ns/a", "ns/b"]


@pytest.mark.parametrize(
    ("events", "pod", "count"),
    [
        pytest.param([evict("a")], "ns/hi", 1, id="full-name"),
        pytest.param([evict("a")], "other", 0, id="another-pod"),
        pytest.param([evict("a"), evict("b", cause="t9")], "hi", 2, id="two-sessions"),
        pytest.param([evict("a"), evict("b", node="n2")], "hi", 2, id="two-nodes"),
        pytest.param([evict("a", preemptor="ns/x")], "a", 0, id="a-victim-is-not-a-preemptor"),
    ],
)
def test_one_answer_per_preemption(events: list[Event], pod: str, count: int) -> None:
    assert len(nomination_answers(events, pod)) == count


def test_audit_why_preemptor_shows_nomination_then_bind(tmp_path: Path) -> None:
    config: dict[str, Any] = yaml.safe_load((EXAMPLES / "preempt-config.yaml").read_text())
    events, _, until = load_scenario(EXAMPLES / "preempt-full-cluster.yaml")
    sim = Simulation(load_config(config))
    sim.run(events, until=until)
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"".join(encode(e) + b"\n" for e in sim.log.events))
    result = CliRunner().invoke(app, ["audit", "why", "urgent-0", "--log", str(log)])
    assert result.exit_code == 0, result.output
    nominated = result.output.index("default/urgent-0 was nominated to n1")
    bound = result.output.index("default/urgent-0 was bound to n1")
    assert nominated < bound
    assert "outcome: bound there" in result.output
