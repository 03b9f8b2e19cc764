"""The live scenario shared by the ``tide run`` tests, and a ``tide run`` subprocess.

A revocable zone ``rz1`` whose window closes a few seconds after the start (the run's
clock is shifted with ``--clock-offset`` so that an ``HH:MM`` boundary comes up at once),
two preemptable pods of one job on it; a node ``hot`` whose metrics (served by the API
double) stay above the CPU threshold, with best-effort pods on it; two pending pods of a
gang to bind on ``free``.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from streams.backends import open_log
from streams.events import Event, format_time
from tests.builders import build_node, build_pod, build_podgroup, build_queue
from tests.kubedouble import ApiDouble

ROOT = Path(__file__).resolve().parents[2]
TIDE = [sys.executable, "-c", "from controller.cli import main; main()"]
#: the window closes this long after the test computes the offset
CLOSE_AFTER = timedelta(seconds=15)
#: the zone's window in the shifted clock; it closes at 21:00 UTC
WINDOW = "10:00-21:00"

CONFIG: dict[str, Any] = {
    "actions": "allocate, shuffle",
    "tiers": [
        {
            "plugins": [
                {"name": "priority"},
                {"name": "gang", "enablePreemptable": False},
            ]
        },
        {
            "plugins": [
                {"name": "predicates"},
                {"name": "proportion"},
                {
                    "name": "tdm",
                    "arguments": {
                        "tdm.revocable-zone.rz1": WINDOW,
                        "tdm.evict.period": "1m",
                    },
                },
            ]
        },
    ],
    "timezone": "UTC",
    "schedulerName": "volcano",
    "sessionTick": "1s",
    "eviction": {
        "cpuEvict": {
            "enabled": True,
            "evictThreshold": 80,
            "cooldownPeriod": "60s",
            "maxEvictionPerBatch": 1,
            "maxEvictionPerMinute": 5,
        },
        "memoryEvict": {"enabled": False},
        "gracefulEviction": {"enabled": False},
        "schedulingOptimization": {"evictionTaint": True, "taintDuration": "4s"},
        "pressureStableThreshold": 1,
    },
}


def clock_offset(now: datetime | None = None, *, close_after: timedelta = CLOSE_AFTER) -> float:
    """Seconds to add to the wall clock so that rz1's window closes ``close_after``
    (:data:`CLOSE_AFTER` unless given) from now."""
    now = now or datetime.now(UTC)
    close = now.replace(hour=21, minute=0, second=0, microsecond=0)
    return (close - close_after - now).total_seconds()


def cluster(double: ApiDouble) -> None:
    """Create the scenario's objects in the double."""
    double.create(
        "nodes", build_node("rz1-node", cpu="16", labels={"volcano.sh/revocable-zone": "rz1"})
    )
    double.create("nodes", build_node("hot", cpu="16"))
    double.create("nodes", build_node("free", cpu="16"))
    double.create("queues", build_queue("default"))
    revocable = {"volcano.sh/revocable-zone": "*", "volcano.sh/preemptable": "true"}
    double.create(
        "podgroups",
        build_podgroup("batch", "train", annotations={"volcano.sh/jdb-max-unavailable": "100%"}),
    )
    for i in range(2):
        pod = build_pod(
            "batch", f"train-{i}", node="rz1-node", group="train", annotations=revocable
        )
        double.create("pods", pod)
    for i in range(2):
        pod = build_pod(
            "best",
            f"be-{i}",
            node="hot",
            labels={"koordinator.sh/qosClass": "BE"},
            owner_kind="ReplicaSet",
        )
        double.create("pods", pod)
    double.create("podgroups", build_podgroup("web", "gang", min_member=2, phase="Inqueue"))
    for i in range(2):
        pod = build_pod("web", f"gang-{i}", phase="Pending", group="gang")
        double.create("pods", pod)


async def hot_metrics(double: ApiDouble, *, offset: float) -> None:
    """Serve a fresh sample of ``hot`` at 95% CPU (and calm ones elsewhere) every 0.25 s."""
    while True:
        stamp = format_time(datetime.now(UTC) + timedelta(seconds=offset))
        double.metrics["nodes"] = {
            name: {
                "metadata": {"name": name},
                "timestamp": stamp,
                "window": "10s",
                "usage": {"cpu": cpu, "memory": "4Gi"},
            }
            for name, cpu in (("hot", "15200m"), ("free", "1"), ("rz1-node", "1"))
        }
        await asyncio.sleep(0.25)


class Tide:
    """A ``tide run`` subprocess against the double."""

    def __init__(
        self,
        double: ApiDouble,
        tmp: Path,
        *,
        offset: float,
        dry_run: bool,
        config: dict[str, Any] | None = None,
        name: str = "tide",
        db: Path | None = None,
        extra: tuple[str, ...] = (),
        log: str | None = None,
    ) -> None:
        self.kubeconfig = double.write_kubeconfig(tmp / f"{name}.kubeconfig")
        self.config = tmp / f"{name}.yaml"
        self.config.write_text(yaml.safe_dump(config or CONFIG))
        self.db = db or tmp / "tide.db"
        #: the log's URL: ``log`` (a ``kafka://`` topic, say), else the SQLite file ``db``
        self.log = log or str(self.db)
        self.offset = offset
        self.dry_run = dry_run
        self.extra = extra
        self.proc: asyncio.subprocess.Process | None = None
        #: ``http://HOST:PORT`` of /metrics, /healthz and /readyz (known once ready)
        self.url = ""

    async def start(self) -> None:
        args = [
            "run",
            "--config",
            str(self.config),
            "--kubeconfig",
            str(self.kubeconfig),
            "--log",
            self.log,
            "--metrics-port",
            "0",
            "--metrics-interval",
            "0.25",
            "--watch-timeout",
            "5",
            "--clock-offset",
            str(self.offset),
        ]
        if self.dry_run:
            args.append("--dry-run")
        args.extend(self.extra)
        self.proc = await asyncio.create_subprocess_exec(
            *TIDE, *args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

    async def ready(self, timeout: float = 120.0) -> None:
        """Wait for the line saying the run has folded the log and started."""
        assert self.proc is not None and self.proc.stderr is not None
        lines = []
        async with asyncio.timeout(timeout):
            while True:
                line = (await self.proc.stderr.readline()).decode()
                lines.append(line)
                if not line:
                    raise AssertionError("tide run ended while starting:\n" + "".join(lines))
                if line.startswith("serving /metrics"):
                    self.url = line.split(" on ")[-1].strip()
                if line.startswith("running against"):
                    return

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def stop(self, signum: int = signal.SIGTERM) -> int:
        assert self.proc is not None
        if self.proc.returncode is None:
            self.proc.send_signal(signum)
        return await asyncio.wait_for(self.proc.wait(), 60)

    async def stderr(self) -> str:
        assert self.proc is not None and self.proc.stderr is not None
        return (await self.proc.stderr.read()).decode()

    async def events(self) -> list[Event]:
        async with await open_log(self.log) as log:
            return await log.read_all()


async def cli(*args: str) -> tuple[int, str, str]:
    """Run a ``tide`` command; (exit code, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        *TIDE, *args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 180)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()
