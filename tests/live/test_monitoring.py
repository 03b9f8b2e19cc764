"""deploy/monitoring/ against a real Prometheus scraping a real ``tide run --dry-run``.

The live scenario (tests/live/scenario.py: a TDM window closes, pressure evicts and taints,
a gang is bound; every effect is ``skipped: dry-run``) runs as deploy/'s Deployment runs
it (``--dry-run --leader-elect``), with Debian's ``prometheus`` scraping ``/metrics`` every
second as the job ``tide-metrics`` (the ServiceMonitor's job label) and evaluating
deploy/monitoring/tide-rules.yaml. Then every alert's and every dashboard panel's
expression must evaluate through the HTTP API without error, every rule must be healthy
as Prometheus evaluated it, the alerts of a healthy run must be silent, and every panel
must return data for the series the scenario moved (:data:`MOVED`); the panels that
legitimately stay empty say why (:data:`EMPTY`). The panels are asked as Grafana asks them
(``query_range`` from the first scrape to the end, a step a second); the node turns hot
only after the first scrape, so its eviction is seen. Instants come from the run's own
start and its first scrape, so the test holds on a slow machine.
"""

from __future__ import annotations

import asyncio
import math
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from streams.events import format_time
from tests.deploy.monitoring import RULES, alerts, panel_queries, panels
from tests.kubedouble import ApiDouble
from tests.live.scenario import CLOSE_AFTER, Tide, clock_offset, cluster, hot_metrics
from tests.live.test_run_e2e import AFTER_CLOSE, ELECT, start_up_seconds
from tests.prometheus import Prometheus, require, running
from tests.streams.tansu import free_port

JOB = "tide-metrics"
#: panel title -> (expression's index, labels of the series that must be above 0: the
#: scenario moved them)
MOVED: dict[str, tuple[int, dict[str, str]]] = {
    "Leading replicas": (0, {}),
    "Ready replicas": (0, {}),
    "Scrapes up": (0, {}),
    "Version": (0, {}),
    # the window's close evicts through shuffle, pressure through the koordlet path
    "Decisions per kind and reason": (0, {"kind": "evict", "reason": "tdm-window-closed"}),
    "Effects per kind and result": (0, {"kind": "evict", "result": "skipped", "reason": "dry-run"}),
    "Session latency": (1, {}),  # p99 of every session: one a second
    "Log append lag": (1, {}),
    "Leader per replica": (0, {}),
    "Watch restarts": (0, {"resource": "pods"}),  # --watch-timeout 5 renews them
    "Cooldowns active": (0, {"node": "hot", "resource": "cpu"}),
    "Pressure evictions per reason": (0, {"reason": "cpu_pressure"}),
    "Usage freed by the latest round": (0, {"node": "hot"}),  # the victim's pod sample
}
#: panel title -> why it has no data above 0 in this scenario (its expression still
#: evaluates; a series at 0 may be there)
EMPTY = {
    # only the threshold lines: a round's pressure is verified at the first sample after
    # its cooldown (60 s here), which outlasts the run
    "Node pressure after eviction against the thresholds": "cooldown outlasts the run",
    # from a decision to its effect.applied: a dry run applies nothing (histogram at 0: NaN)
    "Pressure eviction latency": "dry run applies nothing",
    # the double creates every Event the run asks for
    "Events not created": "no Event refused",
}
#: alerts a healthy run must not fire (the others may: a short run's windows are young)
SILENT = ("TideMetricsAbsent", "TideTargetDown", "TideNotReady", "TideNoLeader")


def numbers(rows: list[dict[str, Any]]) -> list[tuple[dict[str, str], float]]:
    """(labels, value) of every sample of an instant or a range answer."""
    return [
        (row["metric"], float(value))
        for row in rows
        for _, value in ([row["value"]] if "value" in row else row["values"])
    ]


def moved(rows: list[dict[str, Any]], labels: dict[str, str]) -> bool:
    return any(
        labels.items() <= metric.items() and not math.isnan(value) and value > 0
        for metric, value in numbers(rows)
    )


def test_every_panel_is_accounted_for() -> None:
    titles = {p["title"] for p in panels()}
    assert titles == set(MOVED) | set(EMPTY) and not set(MOVED) & set(EMPTY)


async def test_alerts_and_dashboard_evaluate_on_a_real_dry_run(
    double: ApiDouble, tmp_path: Path
) -> None:
    require()
    loop = asyncio.get_running_loop()
    # the window closes a margin after the start-up this machine needs now (as the e2e test)
    close_after = max(
        CLOSE_AFTER, timedelta(seconds=CLOSE_AFTER.total_seconds() / 3 + 4 * start_up_seconds())
    )
    offset = clock_offset(close_after=close_after)
    close = loop.time() + close_after.total_seconds()
    double.grace_scale = 0.05
    cluster(double)
    # the pods' samples from the start: a victim's usage is known when the node turns hot
    feeders = [asyncio.create_task(pod_metrics(double, offset=offset))]
    port = free_port()  # Prometheus scrapes it from before the run serves it
    extra = (*ELECT, "--metrics-port", str(port))  # the last --metrics-port given wins
    tide = Tide(double, tmp_path, offset=offset, dry_run=True, extra=extra)
    (tmp_path / "prometheus").mkdir()
    answers: dict[tuple[str, int], list[dict[str, Any]]] = {}
    ranges: dict[tuple[str, int], list[dict[str, Any]]] = {}
    fired: dict[str, list[dict[str, Any]]] = {}
    try:
        target = f"127.0.0.1:{port}"
        async with running(
            tmp_path / "prometheus", targets={JOB: target}, rule_files=(RULES,)
        ) as prometheus:
            await tide.start()
            await tide.ready(timeout=max(120.0, 2 * close_after.total_seconds()))
            while await prometheus.scrapes(JOB) < 1:
                await asyncio.sleep(0.2)
            scraped = time.time()  # the first scrape is behind this instant
            # the node turns hot now: its pressure eviction comes after the first scrape
            feeders.append(asyncio.create_task(hot_metrics(double, offset=offset)))
            # the run's own schedule: the window closes, the untaint follows; then three
            # scrapes more than there were, so the last counts are in the TSDB
            await asyncio.sleep(max(0.0, close - loop.time()) + AFTER_CLOSE)
            assert tide.running, await tide.stderr()
            seen = await prometheus.scrapes(JOB)
            while await prometheus.scrapes(JOB) < seen + 3:
                await asyncio.sleep(0.5)
            groups = await evaluated(prometheus)
            for name, rule in alerts().items():
                fired[name] = await prometheus.query(rule["expr"])  # success, or it raises
            per_panel: dict[str, int] = {}
            for title, expr in panel_queries():
                index = per_panel.get(title, 0)
                per_panel[title] = index + 1
                answers[(title, index)] = await prometheus.query(expr)
                ranges[(title, index)] = await prometheus.query_range(
                    expr, start=scraped, end=time.time()
                )
        assert await tide.stop() == 0, await tide.stderr()
    finally:
        for feeder in feeders:
            feeder.cancel()
        if tide.running:
            await tide.stop()
    # every rule loaded, evaluated and healthy
    rules = {r["name"]: r for g in groups for r in g["rules"]}
    assert set(rules) == set(alerts())
    assert {n: r.get("lastError") for n, r in rules.items() if r["health"] != "ok"} == {}
    assert {name: fired[name] for name in SILENT if fired[name]} == {}
    # every panel returned data, and the series the scenario moved are above 0
    assert {key for key, rows in answers.items() if not rows and key[0] not in EMPTY} == set()
    assert {
        title: ranges[(title, index)]
        for title, (index, labels) in MOVED.items()
        if not moved(ranges[(title, index)], labels)
    } == {}
    # and the empty ones are empty for the reason given (but for the threshold lines)
    thresholds = {(title, index) for (title, index) in ranges if index > 0 and "pressure" in title}
    assert {
        key: rows
        for key, rows in ranges.items()
        if key[0] in EMPTY and key not in thresholds
        if moved(rows, {})
    } == {}


async def evaluated(prometheus: Prometheus) -> list[dict[str, Any]]:
    """The rule groups once every rule has been evaluated at least once."""
    while True:
        groups = await prometheus.rules()
        rules = [r for g in groups for r in g["rules"]]
        if rules and all(r.get("lastEvaluation", "").startswith("2") for r in rules):
            return groups
        await asyncio.sleep(0.5)


async def pod_metrics(double: ApiDouble, *, offset: float) -> None:
    """Serve fresh samples of the best-effort pods on ``hot`` every 0.25 s: the usage a
    pressure round frees is its victims'."""
    while True:
        stamp = format_time(datetime.now(UTC) + timedelta(seconds=offset))
        double.metrics["pods"] = {
            f"best/{name}": {
                "metadata": {"name": name, "namespace": "best"},
                "timestamp": stamp,
                "window": "10s",
                "containers": [{"name": "c", "usage": {"cpu": "6", "memory": "2Gi"}}],
            }
            for name in ("be-0", "be-1")
        }
        await asyncio.sleep(0.25)
