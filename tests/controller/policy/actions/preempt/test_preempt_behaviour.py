"""preempt and backfill exist from behaviour level 2: a log written before them (no
``behaviour`` on its ``config.applied``) named them and had them skipped, so it replays
without their decisions; a new configuration naming them is stamped with the level."""

from __future__ import annotations

from typing import Any

import pytest

from controller.policy.engine import run_cycle
from controller.policy.framework.config import CURRENT_BEHAVIOUR, LEGACY_BEHAVIOUR
from controller.policy.loader import load_config
from replay.verify import _ConfigCache
from tests.builders import at
from tests.controller.policy.actions.preempt.cases import config
from tests.controller.policy.actions.preempt.test_preempt_scenarios import CASES
from tests.controller.policy.framework.scenario import trigger, world_of

#: a case where preempt evicts and pipelines in both modes
_EVICTING = next(c for c in CASES if c.evicted and c.topo_evicted is None)


@pytest.mark.parametrize(
    ("raw_stamp", "record_stamp", "runs"),
    [
        pytest.param(None, 1, False, id="unstamped-record-is-legacy"),
        pytest.param(None, 2, True, id="record-stamp-sets-the-level"),
        pytest.param(2, 1, True, id="stamp-inside-the-config-wins"),
        pytest.param(1, 2, False, id="legacy-stamp-inside-the-config-wins"),
    ],
)
@pytest.mark.parametrize("action", ["preempt", "backfill"])
def test_a_logs_actions_run_at_its_records_level(
    action: str, raw_stamp: int | None, record_stamp: int, runs: bool
) -> None:
    raw: dict[str, Any] = {"actions": f"allocate, {action}", "tiers": [{"plugins": []}]}
    if raw_stamp is not None:
        raw["behaviour"] = raw_stamp
    policy = _ConfigCache(None, None).get(raw, record_stamp)
    assert (action in policy.config.actions) is runs
    assert "allocate" in policy.config.actions
    assert any(action in w for w in policy.config.warnings) is not runs


@pytest.mark.parametrize(
    ("level", "evicts"),
    [
        pytest.param(LEGACY_BEHAVIOUR, False, id="old-log-replays-without-preempt"),
        pytest.param(CURRENT_BEHAVIOUR, True, id="current-level-preempts"),
    ],
)
@pytest.mark.parametrize("topology", [False, True], ids=["normal", "topology-aware"])
def test_an_old_level_log_listing_preempt_decides_no_preemption(
    level: int, evicts: bool, topology: bool
) -> None:
    conf = load_config(config(topology=topology, tiers=_EVICTING.tiers), default_behaviour=level)
    decisions = run_cycle(world_of(_EVICTING.events()), trigger(at(1)), conf)
    evicted = sorted(
        f"{e.data['namespace']}/{e.data['pod']}" for e in decisions if e.type == "decision.evict"
    )
    assert evicted == (sorted(_EVICTING.evicted) if evicts else [])


@pytest.mark.parametrize(
    ("actions", "stamped"),
    [
        pytest.param("allocate", False, id="allocate-only-stays-unstamped"),
        pytest.param("allocate, preempt", True, id="preempt-is-stamped"),
        pytest.param("allocate, backfill", True, id="backfill-is-stamped"),
    ],
)
def test_a_new_configuration_naming_them_is_stamped(actions: str, stamped: bool) -> None:
    conf = load_config({"actions": actions, "tiers": [{"plugins": [{"name": "priority"}]}]})
    assert conf.raw.get("behaviour") == (CURRENT_BEHAVIOUR if stamped else None)
