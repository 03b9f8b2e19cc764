"""The loop's cache of pending follow-ups answers as :func:`pending_followups` would."""

from __future__ import annotations

import pytest

from controller.policy.pressure import followups
from controller.policy.pressure.followups import FollowupCache, pending_followups
from projections.world import World
from tests.controller.policy.pressure.harness import Loop, node_sample, seconds
from tests.controller.policy.pressure.test_graceful import cfg, checks, cluster


def _run() -> Loop:
    """Two nodes under pressure: rounds with later batches, eviction taints, untaints."""
    loop = Loop(cfg(), sim=True)
    events = cluster(node="n1") + cluster(node="n2")
    events += checks([(1, 99), (2, 99), (3, 99)], "n1")
    events += checks([(1, 99), (2, 99), (3, 99), (20, 99), (21, 99), (22, 99)], "n2")
    events += [node_sample("n1", seconds(t), cpu_cores=10) for t in (100, 200, 400, 700)]
    loop.run(events, until=seconds(900))
    return loop


def test_the_cache_follows_every_record_of_a_run() -> None:
    loop = _run()
    assert any(e.type == "decision.untaint" for e in loop.log)
    world, cache = World(), FollowupCache()
    seen = 0
    for record in loop.log:
        world.apply(record)
        expected = pending_followups(world)
        assert cache.get(world) == expected, record
        seen += bool(expected)
    assert seen > 10  # the run had follow-ups pending for a while


def test_an_overdue_untaint_moves_with_the_clock() -> None:
    loop = Loop(cfg())
    loop.run(cluster() + checks([(1, 99), (2, 99), (3, 99)]), until=seconds(5))
    cache = FollowupCache()
    assert [f.at for f in cache.get(loop.world) if f.kind == "untaint"] == [seconds(313)]
    for at in (400, 401, 500):
        sample = node_sample("n1", seconds(at), cpu_cores=10).with_offset(len(loop.log) + at)
        loop.world.apply(sample)
        assert cache.get(loop.world) == pending_followups(loop.world)
        assert [f.at for f in cache.get(loop.world) if f.kind == "untaint"] == [seconds(at)]


def test_nothing_is_recomputed_while_nothing_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = Loop(cfg())
    loop.run(cluster() + checks([(1, 99), (2, 99), (3, 99)]), until=seconds(5))
    cache = FollowupCache()
    first = cache.get(loop.world)
    assert first and first[0].at == seconds(13)
    calls: list[int] = []
    original = followups.pending_followups

    def counted(world: World) -> list[followups.Followup]:
        calls.append(1)
        return original(world)

    monkeypatch.setattr(followups, "pending_followups", counted)
    for at in (6, 7, 13):  # samples up to the first follow-up's time change nothing
        sample = node_sample("n2", seconds(at), cpu_cores=10).with_offset(len(loop.log) + at)
        loop.world.apply(sample)
        assert cache.get(loop.world) is first
    assert calls == []
    loop.world.apply(node_sample("n2", seconds(14), cpu_cores=10).with_offset(len(loop.log) + 14))
    assert cache.get(loop.world) == original(loop.world)  # past it: the batch lapsed
    assert calls == [1]


def test_a_new_world_is_not_answered_from_another() -> None:
    loop = Loop(cfg())
    loop.run(cluster() + checks([(1, 99), (2, 99), (3, 99)]), until=seconds(5))
    cache = FollowupCache()
    assert cache.get(loop.world)
    assert cache.get(World()) == []
