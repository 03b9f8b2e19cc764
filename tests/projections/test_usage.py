"""UsageState: samples folded per node and pod, bounded history, windows, trend, leaks."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from projections.parsing import (
    milli,
    milli_uncached,
    sample_cpu,
    sample_memory,
    units,
    units_uncached,
)
from projections.usage import Series, UsageState
from streams.events import Event, make_event
from tests.builders import T0, at, build_node, build_pod, node_metrics, pod_metrics, watch

GI = 2**30


def fold(state: UsageState, events: list[Event]) -> UsageState:
    for event in events:
        state.apply(event.with_offset(state.position))
    return state


def test_node_and_pod_samples_are_folded_in_milli_and_bytes() -> None:
    state = fold(
        UsageState(),
        [
            node_metrics("n1", cpu="3500m", memory="4Gi"),
            pod_metrics("default", "p", cpu="250m", memory="512Mi"),
        ],
    )
    node = state.latest_node("n1")
    assert node is not None and (node.at, node.cpu, node.memory) == (T0, 3500, 4 * GI)
    assert state.pod_cpu("default/p") == 250
    assert state.pod_memory("default/p") == 512 * 2**20
    assert state.pod_cpu("default/missing") == 0
    assert state.position == 2


def test_pod_usage_is_the_sum_over_containers() -> None:
    event = make_event(
        "metrics.pod",
        T0,
        {
            "metadata": {"name": "p", "namespace": "ns"},
            "containers": [
                {"name": "a", "usage": {"cpu": "1", "memory": "1Gi"}},
                {"name": "b", "usage": {"cpu": "500m", "memory": "1Gi"}},
                {"name": "c", "usage": {}},
            ],
        },
    )
    state = fold(UsageState(), [event])
    latest = state.latest_pod("ns/p")
    assert latest is not None and (latest.cpu, latest.memory) == (1500, 2 * GI)


def test_deleted_pod_and_node_drop_their_history() -> None:
    pod = build_pod("default", "p", node="n1")
    state = fold(
        UsageState(),
        [
            node_metrics("n1", cpu="1", memory="1Gi"),
            pod_metrics("default", "p", cpu="1", memory="1Gi"),
            watch("pods", pod, event="DELETED"),
        ],
    )
    assert state.latest_pod("default/p") is None
    assert state.latest_node("n1") is not None
    fold(state, [watch("nodes", build_node("n1"), event="DELETED")])
    assert state.latest_node("n1") is None


@pytest.mark.parametrize(
    ("horizon_min", "max_samples", "samples", "kept"),
    [
        pytest.param(120, 1440, 10, 10, id="all-within-horizon"),
        pytest.param(5, 1440, 10, 6, id="horizon-keeps-last-5-minutes-inclusive"),
        pytest.param(120, 4, 10, 4, id="max-samples-caps"),
        pytest.param(2, 1, 10, 1, id="both-bounds"),
    ],
)
def test_history_is_bounded(horizon_min: int, max_samples: int, samples: int, kept: int) -> None:
    state = UsageState(horizon=timedelta(minutes=horizon_min), max_samples=max_samples)
    fold(state, [node_metrics("n", cpu=f"{i}", memory="1Gi", when=at(i)) for i in range(samples)])
    series = state.nodes["n"]
    assert len(series) == kept
    assert series.cpu[-1] == (samples - 1) * 1000


@pytest.mark.parametrize(
    ("window_min", "now_min", "expected_cpu"),
    [
        pytest.param(5, 9, (5 + 6 + 7 + 8 + 9) * 1000 / 5, id="last-5-of-10"),
        pytest.param(1, 9, 9000, id="one-minute-window-excludes-its-start"),
        pytest.param(100, 9, 4500, id="window-longer-than-history"),
        pytest.param(5, 4, (0 + 1 + 2 + 3 + 4) * 1000 / 5, id="window-ending-in-the-past"),
    ],
)
def test_average_over_a_window(window_min: int, now_min: int, expected_cpu: float) -> None:
    state = fold(
        UsageState(), [node_metrics("n", cpu=f"{i}", memory="1Gi", when=at(i)) for i in range(10)]
    )
    avg = state.average_node("n", at(now_min), timedelta(minutes=window_min))
    assert avg is not None and avg.cpu == pytest.approx(expected_cpu)


def test_average_defaults_to_metrics_period_and_is_none_without_points() -> None:
    state = UsageState(metrics_period=timedelta(minutes=2))
    fold(state, [node_metrics("n", cpu=f"{i}", memory="1Gi", when=at(i)) for i in range(10)])
    avg = state.average_node("n", at(9))
    assert avg is not None and avg.cpu == pytest.approx(8500)
    assert state.average_node("n", at(30), timedelta(minutes=1)) is None
    assert state.average_node("other", at(9)) is None


@pytest.mark.parametrize(
    ("now_min", "window_min", "expected"),
    [
        pytest.param(10, 10, 0, id="exactly-one-window-ago"),
        pytest.param(10, 5, 5000, id="half-window"),
        pytest.param(10.5, 10, 0, id="between-points-takes-the-older"),
        pytest.param(9, 10, None, id="history-too-short"),
    ],
)
def test_value_one_trend_window_ago(
    now_min: float, window_min: int, expected: float | None
) -> None:
    state = fold(
        UsageState(), [node_metrics("n", cpu=f"{i}", memory="1Gi", when=at(i)) for i in range(11)]
    )
    ago = state.node_ago("n", at(now_min), timedelta(minutes=window_min))
    assert (ago.cpu if ago is not None else None) == expected


def test_tail_returns_last_points_oldest_first() -> None:
    state = fold(
        UsageState(), [node_metrics("n", cpu=f"{i}", memory="1Gi", when=at(i)) for i in range(5)]
    )
    assert [s.cpu for s in state.nodes["n"].tail(3)] == [2000, 3000, 4000]
    assert [s.cpu for s in state.nodes["n"].tail(10)] == [0, 1000, 2000, 3000, 4000]


def _leaky(values: list[float], step_min: float = 6.0) -> Series:
    series = Series()
    for i, v in enumerate(values):
        t = at(i * step_min).timestamp()
        series.add(t, 0.0, v, keep_after=t - 7200, limit=10_000)
    return series


LEAK = timedelta(hours=1)


@pytest.mark.parametrize(
    ("values", "now_index", "leak"),
    [
        pytest.param([100 + 2 * i for i in range(11)], 10, True, id="steady-growth-an-hour"),
        pytest.param([100 + 2 * i for i in range(10)], 9, True, id="span-54min-is-90-percent"),
        pytest.param([100 + 2 * i for i in range(9)], 8, False, id="span-48min-too-short"),
        pytest.param([100] * 11, 10, False, id="flat-is-no-leak"),
        pytest.param(
            [100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 109],
            10,
            False,
            id="grew-9-percent-not-enough",
        ),
        pytest.param([100, 102, 104, 106, 108, 110], 5, False, id="too-young"),
        pytest.param(
            [100, 110, 120, 130, 128.8, 140, 150, 160, 170, 180, 190],
            10,
            True,
            id="dip-of-1-percent-tolerated",
        ),
        pytest.param(
            [100, 110, 120, 130, 128, 140, 150, 160, 170, 180, 190],
            10,
            False,
            id="dip-over-1-percent-breaks",
        ),
        pytest.param(
            [50, 40, 100, 110, 120, 130, 140, 150, 160, 170, 180, 190, 200],
            12,
            True,
            id="drop-before-the-window-is-ignored",
        ),
        pytest.param(
            [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100], 10, False, id="first-sample-zero"
        ),
    ],
)
def test_memory_leak_rule(values: list[float], now_index: int, leak: bool) -> None:
    series = _leaky(values)
    found = series.leak(at(now_index * 6), LEAK)
    assert (found is not None) == leak


def test_out_of_order_point_is_inserted_and_run_recomputed() -> None:
    series = _leaky([100, 110, 120])
    t = at(3).timestamp()  # between the first and second point, a drop
    series.add(t, 0.0, 10.0, keep_after=0, limit=100)
    assert series.memory == [100, 10, 110, 120]
    assert series.run_start == t


def test_dump_is_deterministic_and_load_restores() -> None:
    events = [
        pod_metrics("b", "p", cpu="1", memory="1Gi", when=at(1)),
        pod_metrics("a", "p", cpu="2", memory="2Gi", when=at(2)),
        node_metrics("n2", cpu="1", memory="1Gi", when=at(1)),
        node_metrics("n1", cpu="1", memory="1Gi", when=at(2)),
    ]
    one = fold(UsageState(), events)
    two = fold(UsageState(), [events[2], events[3], events[0], events[1]])
    two.position = one.position
    assert one.dump() == two.dump()
    restored = UsageState()
    restored.load(one.dump())
    assert restored.dump() == one.dump()
    assert restored.position == 4
    assert restored.pod_memory("a/p") == 2 * GI


@given(
    st.one_of(
        st.from_regex(r"[0-9]{1,25}(n|Ki)", fullmatch=True),
        st.from_regex(r"[+-]?[0-9]{0,70}(n|Ki|Mi|m|u|)", fullmatch=True),
        st.text(max_size=8),
        st.integers(-(10**20), 10**20),
        st.floats(allow_nan=False),
    )
)
def test_sample_quantities_parse_as_the_full_parse(quantity: str | int | float) -> None:
    """The regex-free reading of the usual sample forms (nanocores, Ki) is the full one."""
    assert sample_cpu(quantity) == milli_uncached(quantity)
    assert sample_memory(quantity) == units_uncached(quantity)


@pytest.mark.parametrize("quantity", [1.797693134862316e305, 10**400, -(10**400)])
def test_a_quantity_past_a_float_counts_as_zero(quantity: float | int) -> None:
    """Invalid → 0, as for any other bad value: a fold never stops on one (it raised
    OverflowError). 1.8e305 is a float, but not in milli."""
    assert milli_uncached(quantity) == milli(quantity) == 0.0
    if isinstance(quantity, int):
        assert units_uncached(quantity) == units(quantity) == 0.0


@pytest.mark.parametrize(("number", "boolean"), [(1, True), (0, False), (1.0, True), (0.0, False)])
def test_a_number_seen_first_does_not_make_a_bool_a_quantity(number: float, boolean: bool) -> None:
    """The caches keep strings only: a cached 1 must not answer for True (equal, same hash)."""
    assert milli(number) == milli_uncached(number) == number * 1000
    assert units(number) == units_uncached(number) == number
    assert milli(boolean) == milli_uncached(boolean) == 0.0
    assert units(boolean) == units_uncached(boolean) == 0.0
