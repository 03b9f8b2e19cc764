"""streams.gcpause: the collector paced around folds, and frozen after a live
controller's initial fold, still frees cycles made afterwards."""

from __future__ import annotations

import gc
import weakref

import pytest

from streams.gcpause import freeze_folded, paced


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _cycle() -> weakref.ref[_Node]:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


@pytest.fixture(autouse=True)
def _restore() -> object:
    was = gc.isenabled()
    yield None
    gc.unfreeze()
    if was:
        gc.enable()


@pytest.mark.parametrize(("every", "folded"), [(1, 1), (3, 10), (50, 10)], ids=["1", "3", "50"])
def test_freeze_folded_keeps_the_collector_on_and_freezes_as_the_heap_grows(
    every: int, folded: int
) -> None:
    heap = [_Node() for _ in range(100)]  # the folded cluster
    gc.enable()
    pacer = freeze_folded(every=every)
    frozen = gc.get_freeze_count()
    assert gc.isenabled() and frozen >= len(heap)
    later = _cycle()
    more = [_Node() for _ in range(10)]
    for _ in range(folded):
        pacer.grew()
    if folded >= every:
        assert later() is None  # the cycle made after the fold was collected
        assert gc.get_freeze_count() >= frozen + len(more)
    else:
        gc.collect()
        assert later() is None
    pacer.thaw()
    assert gc.get_freeze_count() == 0


def test_paced_restores_the_collector_and_frees_cycles_on_its_budget() -> None:
    gc.enable()
    refs = []
    for i in paced(range(10), every=5):
        refs.append(_cycle())
        if i == 5:
            assert refs[0]() is None  # collected at the 5th item
    assert gc.isenabled() and gc.get_freeze_count() == 0
