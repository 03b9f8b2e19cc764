"""The PromQL examples of docs/running.md against a real Prometheus scraping a real ``tide run``.

The live scenario (tests/live/scenario.py: a TDM window closes, pressure evicts and taints,
a gang is bound) runs with Debian's ``prometheus`` scraping ``/metrics`` every second.
Every example of the "Metrics and probes" block of docs/running.md must evaluate to a non-empty
answer, and the counters must read, through ``increase()``, what the log holds of every
decision made after Prometheus first scraped the run: a series that is born at its first
increment (instead of existing at 0 before it) is read short by that increment, so the
operator's dashboards would undercount every first eviction. Instants come from the run's
own start, so the test holds on a slow machine.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp

from streams.events import DECISION_TYPES, Event
from tests.kubedouble import ApiDouble
from tests.live.scenario import CLOSE_AFTER, ROOT, Tide, clock_offset, cluster, hot_metrics
from tests.live.test_run_e2e import AFTER_CLOSE, ELECT, start_up_seconds
from tests.prometheus import Prometheus, require, running
from tests.streams.tansu import free_port

_BLOCK = re.compile(r"```promql\n(.*?)```", re.S)


def readme_examples() -> list[str]:
    """The expressions of the ``promql`` block of docs/running.md (comments dropped)."""
    block = _BLOCK.search((ROOT / "docs" / "running.md").read_text())
    assert block is not None, "docs/running.md has no promql block"
    lines = (line.split("#", 1)[0].strip() for line in block.group(1).splitlines())
    return [line for line in lines if line]


def test_the_readme_has_promql_examples() -> None:
    assert len(readme_examples()) >= 5


async def value(prometheus: Prometheus, expr: str) -> float:
    found = await prometheus.query(expr)
    assert len(found) == 1, f"{expr}: {found}"
    return float(found[0]["value"][1])


async def test_the_readme_promql_reads_what_the_log_holds(
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
    feeder = asyncio.create_task(hot_metrics(double, offset=offset))
    port = free_port()  # Prometheus scrapes it from before the run serves it
    extra = (*ELECT, "--metrics-port", str(port))  # the last --metrics-port given wins
    tide = Tide(double, tmp_path, offset=offset, dry_run=False, extra=extra)
    (tmp_path / "prometheus").mkdir()
    answers: dict[str, list[dict[str, object]]] = {}
    try:
        target = f"127.0.0.1:{port}"
        async with running(tmp_path / "prometheus", targets={"tide": target}) as prometheus:
            await tide.start()
            await tide.ready(timeout=max(120.0, 2 * close_after.total_seconds()))
            assert tide.url == f"http://{target}", tide.url
            while await prometheus.scrapes("tide") < 1:
                await asyncio.sleep(0.2)
            scraped = datetime.now(UTC)  # the first scrape is behind this instant
            # the run's own schedule: the window closes, the untaint follows; then three
            # scrapes more than there were, so the last counts are in the TSDB
            await asyncio.sleep(max(0.0, close - loop.time()) + AFTER_CLOSE)
            assert tide.running, await tide.stderr()
            seen = await prometheus.scrapes("tide")
            while await prometheus.scrapes("tide") < seen + 3:
                await asyncio.sleep(0.5)
            for expr in readme_examples():
                answers[expr] = await prometheus.query(expr)
            leader = await value(prometheus, "sum(tide_leader)")
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"{tide.url}/readyz") as answer,
            ):
                readyz = (answer.status, (await answer.text()).splitlines())
            read = {
                (str(row["metric"].get("kind")), str(row["metric"].get("reason"))): float(
                    row["value"][1]
                )
                for row in await prometheus.query(
                    "sum by (kind, reason) (increase(tide_decisions_total[1h]))"
                )
            }
            pressure = await value(prometheus, "sum(increase(koordlet_eviction_total[1h]))")
        assert await tide.stop() == 0, await tide.stderr()
    finally:
        feeder.cancel()
        if tide.running:
            await tide.stop()
    assert {expr: len(rows) for expr, rows in answers.items() if not rows} == {}
    assert leader == 1
    # /readyz names what it holds, as tide record's does
    assert readyz[0] == 200 and readyz[1][0] == "ready", readyz
    assert readyz[1][1].startswith("log: ") and readyz[1][-1] == "leader: this replica", readyz
    assert any(line.startswith("pods: listed") for line in readyz[1]), readyz
    events = await tide.events()
    # a decision's ``at`` is on the run's shifted clock; the increments Prometheus can see
    # are those written after its first scrape
    shift = timedelta(seconds=offset)
    after = [e for e in events if e.type in DECISION_TYPES and e.at - shift > scraped]
    before = {key(e) for e in events if e.type in DECISION_TYPES and e.at - shift <= scraped}
    decided = Counter(key(e) for e in after if key(e) not in before)
    assert decided, "no decision came after the first scrape: the test shows nothing"
    # increase() extrapolates to the range's end by at most half a scrape interval: the
    # read may pass the count by a few per cent, never fall short of it
    read_as = {k: (read.get(k, 0.0), count) for k, count in decided.items()}
    assert {k: v for k, v in read_as.items() if not v[1] <= v[0] + 1e-9 <= v[1] * 1.15} == {}
    # the koordlet's counter, when every pressure eviction came after the first scrape
    evictions = [e for e in events if e.type == "decision.evict" and e.data["source"] == "pressure"]
    if evictions and all(e.at - shift > scraped for e in evictions):
        assert len(evictions) <= pressure + 1e-9 <= len(evictions) * 1.15


def key(event: Event) -> tuple[str, str]:
    return str(event.data.get("kind")), str(event.data.get("reason"))
