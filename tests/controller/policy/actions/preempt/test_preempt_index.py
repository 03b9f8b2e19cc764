"""Preempt cycles that read the fold's per-node readings (projections/preemptindex.py),
kept from one cycle to the next while the log goes on, decide byte for byte as the plain
path on a twin world: each round folds the decisions of the previous one (evictions
become Releasing, preemptors Binding) and the deletion of its victims."""

from __future__ import annotations

import pytest

from controller.policy.actions import preempt as preempt_mod
from controller.policy.actions.preempt import PreemptAction
from controller.policy.builtins import BUILTIN_ACTIONS
from controller.policy.engine import run_cycle
from controller.policy.framework.plugin import ActionSpec
from controller.policy.loader import load_config
from projections.world import World
from streams.events import Event
from tests.builders import at, watch
from tests.controller.policy.actions.preempt.cases import Case, config, group, pod
from tests.controller.policy.actions.preempt.test_dryrun_predicate import affinity_cluster
from tests.controller.policy.actions.preempt.test_fastpath import random_cluster
from tests.controller.policy.framework.scenario import trigger, world_of

ROUNDS = 4


def _rounds(case: Case, *, fast: bool, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    spec = ActionSpec(
        preempt_mod.NAME, preempt_mod.parse_args, lambda args: PreemptAction(args, fast=fast)
    )
    events = case.events()
    world: World = world_of(events)
    offset = len(events)

    def fold(event: Event) -> None:
        nonlocal offset
        world.apply(event.with_offset(offset))
        offset += 1

    out = []
    victims: list[Event] = []
    with monkeypatch.context() as patch:
        patch.setitem(BUILTIN_ACTIONS, preempt_mod.NAME, spec)
        conf = load_config(config(tiers=case.tiers, topology=True))
        for step in range(ROUNDS):
            for gone in victims:  # the previous round's victims have terminated
                fold(gone)
            if step:  # and a new urgent pod arrives
                name = f"late{step}"
                fold(watch("podgroups", group(name, 1, "high-priority", queue="q1")))
                fold(watch("pods", pod(f"p-{name}-0", name, cpu="2", memory="1G", priority=90)))
            decided = run_cycle(world, trigger(at(30 + step)), conf)
            out.append("\n".join(repr(event) for event in decided))
            for event in decided:
                fold(event)
            victims = [
                watch("pods", _pod_of(case, event), at(31 + step), "DELETED")
                for event in decided
                if event.type == "decision.evict"
            ]
    return out


def _pod_of(case: Case, evict: Event) -> dict[str, object]:
    name = evict.data["pod"]
    return next(pod for pod in case.pods if pod["metadata"]["name"] == name)


CASES = [random_cluster(seed) for seed in range(12)] + [
    affinity_cluster(seed) for seed in range(12)
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_kept_readings_decide_as_the_plain_path_across_cycles(
    case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = _rounds(case, fast=True, monkeypatch=monkeypatch)
    slow = _rounds(case, fast=False, monkeypatch=monkeypatch)
    assert fast == slow
    return None


def test_later_rounds_decide_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above reaches kept readings: most cases evict again after round 1."""
    later = 0
    for case in CASES:
        later += sum(
            "decision.evict" in round_
            for round_ in _rounds(case, fast=True, monkeypatch=monkeypatch)[1:]
        )
    assert later >= 10
