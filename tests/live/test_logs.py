"""``tide run --log-format json`` as a log collector reads it: every line one JSON object,
from the first line to the last, and no third-party chatter at INFO (APScheduler logged two
lines per session tick, some 170,000 a day per replica)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import orjson

from tests.kubedouble import ApiDouble
from tests.live.scenario import Tide, clock_offset, cluster, hot_metrics

#: session ticks (1 s each in the scenario) to let pass once the run has started
TICKS = 3


def parse(line: str) -> dict[str, Any]:
    """The JSON object of one stderr line (an AssertionError naming the line if it is not)."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise AssertionError(f"not a JSON line: {line!r}") from None
    assert isinstance(value, dict), line
    return value


async def test_every_line_under_json_is_one_json_object(double: ApiDouble, tmp_path: Path) -> None:
    offset = clock_offset()
    cluster(double)
    feeder = asyncio.create_task(hot_metrics(double, offset=offset))
    tide = Tide(double, tmp_path, offset=offset, dry_run=True, extra=("--log-format", "json"))
    lines: list[str] = []
    try:
        await tide.start()
        assert tide.proc is not None and tide.proc.stderr is not None
        async with asyncio.timeout(120):
            while True:
                line = (await tide.proc.stderr.readline()).decode()
                assert line, "tide run ended while starting:\n" + "".join(lines)
                lines.append(line)
                if "running against" in line:
                    break
        await asyncio.sleep(TICKS + 0.5)
        assert tide.running, "".join(lines)
        assert await tide.stop(signal.SIGTERM) == 0
        lines += (await tide.stderr()).splitlines(keepends=True)
    finally:
        feeder.cancel()
        if tide.running:
            await tide.stop()
    records = [parse(line) for line in lines if line.strip()]
    for record in records:
        assert {"at", "level", "logger", "message"} <= record.keys(), record
    messages = [r["message"] for r in records]
    assert any(m.startswith("running against") for m in messages), messages
    assert any(m.startswith("serving /metrics") for m in messages), messages
    # third-party loggers speak from WARNING up only
    chatter = [
        r
        for r in records
        if r["logger"].startswith(("apscheduler", "aiohttp.access", "kubernetes_asyncio"))
        and r["level"] in ("debug", "info")
    ]
    assert chatter == []
