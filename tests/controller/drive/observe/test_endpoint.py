"""controller.drive.observe: the Prometheus observer scraped over HTTP, the probes, the JSON logs.

The ``koordlet_*`` series served live must equal what ``tide audit metrics`` computes for
the same log (replay.metrics), whatever order of observer calls the loop makes."""

from __future__ import annotations

import io
import logging
from collections.abc import AsyncIterator
from datetime import timedelta

import aiohttp
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from controller.drive.kube.resources import WATCHED
from controller.drive.observe import LiveObserver
from controller.drive.observe.http import MetricsServer, serve
from controller.drive.observe.logs import configure_logging, decision_fields
from controller.drive.observe.metrics import (
    DECISION_LABELS,
    EFFECT_LABELS,
    WATCHED_RESOURCES,
    PrometheusObserver,
    build_version,
)
from projections.metrics import KOORDLET_REASONS, compute_metrics
from replay.metrics import render
from streams.events import Event
from streams.payloads import DECISION_KINDS
from tests.builders import T0
from tests.controller.policy.pressure.harness import node_sample, seconds
from tests.controller.policy.pressure.test_metrics import cpu_round

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


@pytest.fixture
async def endpoint() -> AsyncIterator[tuple[PrometheusObserver, MetricsServer]]:
    observer = PrometheusObserver()
    hooks: LiveObserver = observer  # the live loop's protocol
    del hooks
    server = await serve(observer, port=0)
    try:
        yield observer, server
    finally:
        await server.close()


async def get(server: MetricsServer, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(server.url + path) as answer:
        return answer.status, await answer.text()


def decision(kind: str, reason: str, source: str, n: int = 0) -> Event:
    data = {"kind": kind, "reason": reason, "source": source, "namespace": "ns", "pod": f"p{n}"}
    return Event(f"decision.{kind}", T0, f"d{n}", data)


def outcome(result: str, kind: str, n: int = 0, reason: str | None = None) -> Event:
    data = {"decision": f"d{n}", "kind": kind, "target": f"ns/p{n}"}
    if reason is not None:
        data["reason"] = reason
    return Event(f"effect.{result}", T0 + timedelta(seconds=1), f"e{n}", data, cause=f"d{n}")


async def test_every_known_label_value_starts_at_zero(
    endpoint: tuple[PrometheusObserver, MetricsServer],
) -> None:
    _, server = endpoint
    status, text = await get(server, "/metrics")
    assert status == 200
    got = parse(text)
    for kind, reason, source in DECISION_LABELS:
        key = (("kind", kind), ("reason", reason), ("source", source))
        assert got[("tide_decisions_total", key)] == 0
    decisions = [key for name, key in got if name == "tide_decisions_total"]
    assert len(decisions) == len(DECISION_LABELS)  # and no other (test_metrics.py)
    for kind in DECISION_KINDS:
        for result, reason in EFFECT_LABELS:
            key = (("kind", kind), ("reason", reason), ("result", result))
            assert got[("tide_effects_total", key)] == 0
    effects = [key for name, key in got if name == "tide_effects_total"]
    assert len(effects) == len(DECISION_KINDS) * len(EFFECT_LABELS)
    assert ("skipped", "guard-rail") in EFFECT_LABELS and ("applied", "") in EFFECT_LABELS
    for resource in WATCHED_RESOURCES:
        assert got[("tide_watch_restarts_total", (("resource", resource),))] == 0
    for code, reason in KOORDLET_REASONS.items():
        assert got[("koordlet_eviction_total", (("code", code), ("reason", reason)))] == 0
    assert got[("tide_leader", ())] == 0
    assert got[("tide_ready", ())] == 0
    assert got[("tide_build_info", (("version", build_version()),))] == 1


def test_the_watched_resources_are_the_sources_collections() -> None:
    assert sorted(WATCHED_RESOURCES) == sorted(r.plural for r in WATCHED)


# (observer calls, series, expected value)
COUNTS = [
    pytest.param(
        [("decided", decision("evict", "tdm-window-closed", "tdm"))] * 2,
        (
            "tide_decisions_total",
            (("kind", "evict"), ("reason", "tdm-window-closed"), ("source", "tdm")),
        ),
        2,
        id="decisions-by-kind-reason-source",
    ),
    pytest.param(
        [
            ("effect", outcome("failed", "evict", reason="budget")),
            ("effect", outcome("applied", "bind")),
        ],
        ("tide_effects_total", (("kind", "evict"), ("reason", "budget"), ("result", "failed"))),
        1,
        id="effects-by-kind-result-reason",
    ),
    pytest.param(
        [("effect", outcome("applied", "bind"))] * 2,
        ("tide_effects_total", (("kind", "bind"), ("reason", ""), ("result", "applied"))),
        2,
        id="applied-has-no-reason",
    ),
    pytest.param(
        [
            ("effect", outcome("skipped", "evict", reason="guard-rail")),
            ("effect", outcome("skipped", "evict", reason="dry-run")),
            ("effect", outcome("skipped", "evict", reason="guard-rail")),
        ],
        (
            "tide_effects_total",
            (("kind", "evict"), ("reason", "guard-rail"), ("result", "skipped")),
        ),
        2,
        id="guard-rail-skips-apart-from-dry-runs",
    ),
    pytest.param(
        [("effect", outcome("failed", "taint"))],
        ("tide_effects_total", (("kind", "taint"), ("reason", "unknown"), ("result", "failed"))),
        1,
        id="an-outcome-without-a-reason-written-before-reasons",
    ),
    pytest.param(
        [("watch_restarted", "pods")] * 3,
        ("tide_watch_restarts_total", (("resource", "pods"),)),
        3,
        id="watch-restarts",
    ),
    pytest.param(
        [("session", 0.2), ("session", 3.0)], ("tide_session_seconds_count", ()), 2, id="sessions"
    ),
    pytest.param(
        [("session", 0.2), ("session", 3.0)],
        ("tide_session_seconds_bucket", (("le", "0.25"),)),
        1,
        id="session-buckets",
    ),
    pytest.param(
        [("append_lag", 0.004)], ("tide_log_append_lag_seconds_sum", ()), 0.004, id="append-lag"
    ),
    pytest.param([("leader", True)], ("tide_leader", ()), 1, id="leader"),
    pytest.param([("leader", True), ("leader", False)], ("tide_leader", ()), 0, id="leader-lost"),
    pytest.param([("ready", True)], ("tide_ready", ()), 1, id="ready"),
]


@pytest.mark.parametrize(("calls", "series", "value"), COUNTS)
async def test_counts_scraped_over_http(
    endpoint: tuple[PrometheusObserver, MetricsServer],
    calls: list[tuple[str, object]],
    series: tuple[str, tuple[tuple[str, str], ...]],
    value: float,
) -> None:
    observer, server = endpoint
    for method, argument in calls:
        getattr(observer, method)(argument)
    status, text = await get(server, "/metrics")
    assert status == 200
    assert parse(text)[series] == pytest.approx(value)


async def test_koordlet_series_live_equal_the_audit_of_the_same_log(
    endpoint: tuple[PrometheusObserver, MetricsServer],
) -> None:
    observer, server = endpoint
    log = cpu_round([node_sample("n1", seconds(70), cpu_cores=80)]).log
    for event in log:  # what the live loop reports as it appends
        if event.type.startswith("decision."):
            observer.decided(event)
        elif event.type.startswith("effect."):
            observer.effect(event)
        observer.record(event)  # everything: decisions and outcomes are ignored here
    _, text = await get(server, "/metrics")
    live = {k: v for k, v in parse(text).items() if k[0].startswith("koordlet_")}
    audit = parse(render(compute_metrics(log)))
    assert audit  # the round evicted: there is something to compare
    assert {k: v for k, v in live.items() if k in audit} == audit
    extra = {k: v for k, v in live.items() if k not in audit}
    assert extra and set(extra.values()) == {0}  # only the zero-initialised reasons


@pytest.mark.parametrize(
    ("ready_calls", "status"),
    [
        pytest.param([], 503, id="not-yet"),
        pytest.param([True], 200, id="ready"),
        pytest.param([True, False], 503, id="lost-readiness"),
    ],
)
async def test_probes(
    endpoint: tuple[PrometheusObserver, MetricsServer], ready_calls: list[bool], status: int
) -> None:
    observer, server = endpoint
    for ready in ready_calls:
        observer.ready(ready)
    assert (await get(server, "/healthz"))[0] == 200
    assert (await get(server, "/readyz"))[0] == status


async def test_readyz_names_what_the_run_reports() -> None:
    """``/readyz`` names what is not ready (and what is), as ``tide record``'s does."""
    observer = PrometheusObserver()
    said = ["log: folding"]
    server = await serve(observer, port=0, report=lambda: said)
    try:
        assert await get(server, "/readyz") == (503, "not ready\nlog: folding\n")
        said[:] = ["log: 12 records folded", "pods: listed (resourceVersion 7)"]
        observer.ready(True)
        status, body = await get(server, "/readyz")
        assert (status, body.splitlines()) == (200, ["ready", *said])
    finally:
        await server.close()


async def test_an_address_in_use_is_an_os_error(
    endpoint: tuple[PrometheusObserver, MetricsServer],
) -> None:
    _, server = endpoint
    with pytest.raises(OSError):
        await serve(PrometheusObserver(), port=server.port)


@pytest.mark.parametrize("json", [True, False], ids=["json", "plain"])
def test_log_lines_about_an_effect_carry_the_decision_id(json: bool) -> None:
    stream = io.StringIO()
    handler = configure_logging(json=json, stream=stream)
    try:
        logging.getLogger("tide.effector").info(
            "evicted %s", "ns/p0", extra=decision_fields("d-42", result="applied")
        )
    finally:
        logging.getLogger().removeHandler(handler)
    [line] = stream.getvalue().splitlines()
    if json:
        record = orjson.loads(line)
        assert record["message"] == "evicted ns/p0"
        assert (record["decision"], record["result"], record["level"]) == (
            "d-42",
            "applied",
            "info",
        )
        assert record["logger"] == "tide.effector"
    else:
        assert line.endswith("evicted ns/p0 decision=d-42 result=applied")


@pytest.mark.parametrize("ready", [True, False], ids=["ready", "not-ready"])
async def test_readyz_names_the_nodes_whose_metrics_are_stale(ready: bool) -> None:
    """The run's report (its metrics source's lines) is what ``/readyz`` names."""
    observer = PrometheusObserver()
    observer.ready(ready)
    line = "metrics: stale on 1 node, no evidence for pressure eviction: n1 (95 s old, limit 90 s)"
    reported = [line]
    server = await serve(observer, port=0, report=lambda: reported)
    try:
        status, body = await get(server, "/readyz")
        assert (status, body.splitlines()) == (
            200 if ready else 503,
            ["ready" if ready else "not ready", line],
        )
        reported.clear()  # the node is measured again
        assert (await get(server, "/readyz"))[1] == ("ready\n" if ready else "not ready\n")
    finally:
        await server.close()
