"""A real Prometheus for the tests: Debian's ``prometheus`` on 127.0.0.1, scraping what a
test names, queried over its HTTP API.

Why the real one: what the PromQL examples of docs/running.md show depends on how Prometheus reads
the counters (``rate()`` and ``increase()`` need a series to exist before its first
increment; a series born at its first increment is undercounted), which no exposition
parser can tell. ``.ci/run`` installs the package and sets ``TIDE_REQUIRE_PROMETHEUS=1``:
there a missing binary fails the test instead of skipping it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from tests.streams.tansu import free_port

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
#: CI sets TIDE_REQUIRE_PROMETHEUS=1 (``.ci/run`` installs Debian's prometheus)
REQUIRED = os.environ.get("TIDE_REQUIRE_PROMETHEUS") == "1"


def require() -> str:
    """The ``prometheus`` binary, or skip the test loudly (fail it where CI requires it)."""
    if PROMETHEUS is None:
        message = "Debian's prometheus is not installed (apt-get install prometheus)"
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)
    return PROMETHEUS


def require_promtool() -> str:
    """The ``promtool`` binary (Debian's prometheus ships it), or skip the test loudly (fail
    it where CI requires it)."""
    if PROMTOOL is None:
        message = "Debian's promtool is not installed (apt-get install prometheus)"
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)
    return PROMTOOL


class Prometheus:
    """A running Prometheus (see :func:`running`)."""

    def __init__(self, url: str) -> None:
        self.url = url

    async def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector ``expr`` evaluates to now (``status`` must be success)."""
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{self.url}/api/v1/query", params={"query": expr}) as answer,
        ):
            body = await answer.json()
        assert body.get("status") == "success", f"{expr}: {body}"
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    async def query_range(
        self, expr: str, *, start: float, end: float, step: float = 1.0
    ) -> list[dict[str, Any]]:
        """The range vector ``expr`` evaluates to from ``start`` to ``end`` (Unix seconds)
        every ``step`` seconds, as Grafana asks a panel's (``status`` must be success)."""
        params = {"query": expr, "start": str(start), "end": str(end), "step": str(step)}
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{self.url}/api/v1/query_range", params=params) as answer,
        ):
            body = await answer.json()
        assert body.get("status") == "success", f"{expr}: {body}"
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    async def rules(self) -> list[dict[str, Any]]:
        """The rule groups Prometheus loaded (``/api/v1/rules``), with each rule's health
        and last error as it evaluated them."""
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{self.url}/api/v1/rules") as answer,
        ):
            body = await answer.json()
        assert body.get("status") == "success", body
        groups: list[dict[str, Any]] = body["data"]["groups"]
        return groups

    async def scrapes(self, job: str) -> int:
        """How many scrapes of the job succeeded (``up`` is 1 for each, 0 for a failed one)."""
        found = await self.query(f'sum_over_time(up{{job="{job}"}}[1h])')
        return int(float(found[0]["value"][1])) if found else 0


@contextlib.asynccontextmanager
async def running(
    tmp: Path,
    *,
    targets: dict[str, str],
    interval: str = "1s",
    rule_files: tuple[Path, ...] = (),
) -> AsyncIterator[Prometheus]:
    """Prometheus on 127.0.0.1 scraping ``targets`` (job name → ``host:port``) every
    ``interval`` and evaluating ``rule_files`` as often, its storage in ``tmp``; stopped
    on exit."""
    binary = require()
    config: dict[str, Any] = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": [target]}]}
            for job, target in targets.items()
        ],
    }
    if rule_files:
        config["rule_files"] = [str(path) for path in rule_files]
    path = tmp / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    port = free_port()
    errors = tmp / "prometheus.log"
    url = f"http://127.0.0.1:{port}"
    with errors.open("wb") as sink:  # not a pipe: one nobody reads stalls it once full
        proc = subprocess.Popen(
            [
                binary,
                f"--config.file={path}",
                f"--storage.tsdb.path={tmp / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=sink,
        )
        try:
            await _ready(proc, url, errors)
            yield Prometheus(url)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def _ready(
    proc: subprocess.Popen[bytes], url: str, errors: Path, timeout: float = 120.0
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    async with aiohttp.ClientSession() as session:
        while True:
            if proc.poll() is not None:
                err = errors.read_text(errors="replace")
                raise AssertionError(f"prometheus ended at start:\n{err[-2000:]}")
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(f"{url}/-/ready") as answer:
                    if answer.status == 200:
                        return
            if loop.time() > deadline:
                raise AssertionError(f"prometheus not ready within {timeout}s")
            await asyncio.sleep(0.2)
