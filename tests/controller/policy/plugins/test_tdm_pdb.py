"""PodDisruptionBudgets in TDM's window-close victims: per job, the first victims in TDM's
order that no budget forbids, counting the victims chosen before them in the session."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from controller.policy.framework.plugin import PluginContext
from controller.policy.framework.session import Session
from controller.policy.framework.tiers import PluginConf, TierConf
from controller.policy.plugins.tdm import build, parse_args
from projections.world import World
from streams.events import format_time, make_event
from tests.builders import build_node, build_pod, build_podgroup, build_queue, watch

JSON = dict[str, Any]
T0 = datetime(2026, 11, 21, 20, 0, tzinfo=UTC)
CLOSE = datetime(2026, 11, 21, 21, 0, tzinfo=UTC)
ARGS = {"tdm.revocable-zone.rz1": "10:00-21:00", "tdm.revocable-zone.rz2": "10:00-21:00"}
OPT_IN = {"volcano.sh/revocable-zone": "*", "volcano.sh/preemptable": "true"}
#: every pod of a job may go as far as TDM's own budget is concerned
ALL = {"volcano.sh/job-disruption-budget-max-unavailable": "100%"}
WEB = {"matchLabels": {"app": "web"}}


def pdb(spec: JSON, status: JSON | None = None, name: str = "web") -> JSON:
    out: JSON = {"metadata": {"namespace": "ns", "name": name}, "spec": spec}
    if status is not None:
        out["status"] = status
    return out


def world(budgets: list[JSON]) -> World:
    out = World()
    events = [watch("queues", build_queue())]
    for zone in ("rz1", "rz2"):
        labels = {"volcano.sh/revocable-zone": zone}
        events.append(watch("nodes", build_node(f"{zone}-n", labels=labels)))
        events.append(watch("podgroups", build_podgroup("ns", f"job-{zone}", annotations=ALL)))
        for i in range(3):
            pod_labels = {"app": "web", "zone": zone}
            if i == 0:
                pod_labels["pin"] = "yes"
            pod = build_pod(
                "ns",
                f"{zone}-{i}",
                node=f"{zone}-n",
                group=f"job-{zone}",
                annotations=OPT_IN,
                labels=pod_labels,
                started=T0 + timedelta(minutes=i),
            )
            events.append(watch("pods", pod))
    events += [watch("poddisruptionbudgets", b) for b in budgets]
    for offset, event in enumerate(events):
        out.apply(event.with_offset(offset))
    return out


@dataclass
class Case:
    name: str
    budgets: list[JSON]
    #: victims in order (TDM's order: newest first, zone by zone)
    expect: list[str]
    held: bool = True
    zones: dict[str, str] = field(default_factory=lambda: {"tdm.revocable-zone.rz1": "10:00-21:00"})


RZ1 = {"matchLabels": {"app": "web", "zone": "rz1"}}
CASES = [
    Case("no-budget", [], ["rz1-2", "rz1-1", "rz1-0"], held=False),
    Case("min-available-int", [pdb({"selector": RZ1, "minAvailable": 2})], ["rz1-2"]),
    # ceil(3 × 50%) = 2 must stay
    Case("min-available-percent", [pdb({"selector": RZ1, "minAvailable": "50%"})], ["rz1-2"]),
    Case("max-unavailable-int", [pdb({"selector": RZ1, "maxUnavailable": 2})], ["rz1-2", "rz1-1"]),
    # ceil(3 × 34%) = 2 may be unavailable
    Case(
        "max-unavailable-percent",
        [pdb({"selector": RZ1, "maxUnavailable": "34%"})],
        ["rz1-2", "rz1-1"],
    ),
    Case("status-allows-none", [pdb({"selector": RZ1}, {"disruptionsAllowed": 0})], []),
    Case(
        "selector-pins-the-oldest",
        [
            pdb(
                {
                    "selector": {
                        "matchExpressions": [{"key": "pin", "operator": "In", "values": ["yes"]}]
                    },
                    "maxUnavailable": 0,
                },
                name="pin",
            )
        ],
        ["rz1-2", "rz1-1"],
    ),
    Case(
        "selector-of-another-app",
        [pdb({"selector": {"matchLabels": {"app": "db"}}, "maxUnavailable": 0})],
        ["rz1-2", "rz1-1", "rz1-0"],
        held=False,
    ),
    # two zones close in one session: one budget over both jobs' pods allows 2 in all
    Case(
        "one-budget-across-two-zones",
        [pdb({"selector": WEB, "maxUnavailable": 2})],
        ["rz1-2", "rz1-1"],
        zones=ARGS,
    ),
    Case(
        "per-zone-budgets",
        [
            pdb({"selector": RZ1, "maxUnavailable": 1}, name="rz1"),
            pdb({"selector": {"matchLabels": {"zone": "rz2"}}, "minAvailable": 1}, name="rz2"),
        ],
        ["rz1-2", "rz2-2", "rz2-1"],
        zones=ARGS,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_window_close_respects_budgets(case: Case) -> None:
    ctx = PluginContext(ZoneInfo("UTC"), "volcano")
    plugin = build(parse_args(case.zones), ctx)
    trigger = make_event(
        "trigger.fired", CLOSE, {"trigger": "t", "kind": "tick", "scheduled": format_time(CLOSE)}
    )
    ssn = Session(
        world(case.budgets),
        trigger,
        tiers=[TierConf((PluginConf.of("tdm", all_flags=True),))],
        ctx=ctx,
    )
    ssn.open([plugin])
    chosen = [v for v in ssn.victim_tasks([])]
    order = sorted(chosen, key=lambda v: (v.evidence["zone"], v.evidence["order"]["position"]))
    assert [v.task.name for v in order] == case.expect
    held = [v.evidence["budget"].get("held_by_disruption_budgets") for v in chosen]
    if case.held and chosen:
        assert any(held), held
    if not case.held:
        assert not any(held)
    for victim in chosen:
        for entry in victim.evidence.get("disruption_budgets", []):
            assert entry["allowed"] > 0
