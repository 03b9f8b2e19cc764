"""`tide record` as a subprocess against the API double: end to end, kill -9 restarts,
and least privilege: every test here runs tide under the RBAC of deploy/ as the recorder's
account, which the double enforces as the apiserver does (tests/kuberbac.py: a call the
ClusterRole does not grant answers 403 and fails the test), and the end-to-end test checks
the other way that the role grants nothing tide did not use."""

from __future__ import annotations

import asyncio
import random
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import yaml

from streams.backends import open_log
from streams.events import Event
from tests.builders import build_node, build_pod, build_podgroup, build_queue
from tests.controller.drive.sources.helpers import converge, double_state, duplicates, log_state
from tests.kubedouble import ApiDouble

ROOT = Path(__file__).resolve().parents[4]
CONFIG = ROOT / "examples" / "volcano-scheduler.conf.yaml"
DEPLOY = ROOT / "deploy"
TIDE = [sys.executable, "-c", "from controller.cli import main; main()"]


pytestmark = pytest.mark.usefixtures("under_the_record_role")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cluster(double: ApiDouble) -> None:
    """A small co-located cluster: two nodes, a gang of two, a best-effort pod, a PDB."""
    double.create("nodes", build_node("n1", cpu="8", memory="32Gi"))
    double.create("nodes", build_node("n2", cpu="8", memory="32Gi"))
    double.create("queues", build_queue("default"))
    double.create("podgroups", build_podgroup("default", "train", min_member=2))
    for i in range(2):
        double.create("pods", build_pod("default", f"train-{i}", node=f"n{i + 1}", group="train"))
    double.create("pods", build_pod("batch", "be-1", node="n2", labels={"app": "be"}))
    double.create(
        "poddisruptionbudgets",
        {
            "metadata": {"name": "train", "namespace": "default"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "train"}}},
            "status": {"disruptionsAllowed": 0},
        },
    )
    stamp = "2026-01-01T00:00:00Z"
    double.metrics["nodes"] = {
        "n1": {
            "metadata": {"name": "n1"},
            "timestamp": stamp,
            "window": "10s",
            "usage": {"cpu": "2", "memory": "4Gi"},
        }
    }


class Tide:
    """A `tide record` subprocess."""

    def __init__(self, double: ApiDouble, tmp: Path) -> None:
        self.kubeconfig = double.write_kubeconfig(tmp / "kubeconfig")
        self.db = tmp / "tide.db"
        self.log = str(self.db)  # the --log it appends to
        self.port = free_port()
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            *TIDE,
            "record",
            "--config",
            str(CONFIG),
            "--kubeconfig",
            str(self.kubeconfig),
            "--context",
            "double",
            "--log",
            self.log,
            "--health-address",
            f"127.0.0.1:{self.port}",
            "--metrics-interval",
            "0.2",
            "--watch-timeout",
            "2",
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    async def ready(self, timeout: float = 60.0) -> str:
        """Wait for /readyz to answer 200; its body."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        async with aiohttp.ClientSession() as session:
            while loop.time() < deadline:
                assert self.proc is not None and self.proc.returncode is None, await self.stderr()
                try:
                    async with session.get(f"http://127.0.0.1:{self.port}/readyz") as answer:
                        if answer.status == 200:
                            return await answer.text()
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
        raise AssertionError(f"not ready within {timeout}s")

    async def stop(self, signum: int = signal.SIGTERM) -> int:
        assert self.proc is not None
        self.proc.send_signal(signum)
        return await asyncio.wait_for(self.proc.wait(), 30)

    async def stderr(self) -> str:
        assert self.proc is not None and self.proc.stderr is not None
        return (await self.proc.stderr.read()).decode()

    async def events(self) -> list[Event]:
        async with await open_log(self.log) as log:
            return await log.read_all()


async def cli(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *TIDE, *args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def granted() -> set[tuple[str, str, str]]:
    """(group, resource, verb) the record ClusterRole grants."""
    docs = list(yaml.safe_load_all((DEPLOY / "common" / "rbac-record.yaml").read_text()))
    [role] = [d for d in docs if d["kind"] == "ClusterRole"]
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


async def test_record_end_to_end_and_least_privilege(double: ApiDouble, tmp_path: Path) -> None:
    cluster(double)
    tide = Tide(double, tmp_path)
    await tide.start()
    body = await tide.ready()
    assert "pods: listed" in body and "metrics:" in body
    # create, change and delete through the API: the log follows, in order
    double.create("pods", build_pod("batch", "be-2", node="n1"))
    pod = double.get("pods", "batch/be-1")
    pod["status"]["phase"] = "Succeeded"
    double.update("pods", pod)
    double.delete("pods", "batch/be-1")
    async with await open_log(str(tide.db)) as log:
        await converge(log, double, timeout=30)
    assert await tide.stop() == 0, await tide.stderr()
    events = await tide.events()
    tail = [
        (e.data["event"], e.data["object"]["metadata"]["name"])
        for e in events
        if e.type == "k8s.watch" and e.data["resource"] == "pods" and e.data["event"] != "BOOKMARK"
    ][-3:]
    assert tail == [("ADDED", "be-2"), ("MODIFIED", "be-1"), ("DELETED", "be-1")]
    assert [e.type for e in events].count("config.applied") == 1
    assert [e.data["metadata"]["name"] for e in events if e.type == "metrics.node"] == ["n1"]
    assert duplicates(events) == []

    # tide state shows the double's cluster
    code, out, err = await cli("state", "--log", str(tide.db), "--json")
    assert code == 0, err
    state: dict[str, Any] = orjson.loads(out)
    assert sorted(n["name"] for n in state["nodes"]) == ["n1", "n2"]
    assert sorted(t["key"] for t in state["tasks"]["items"]) == sorted(
        key for key in double.objects["pods"]
    )
    # simulate over the recorded log and replay --verify work on it
    recording = tmp_path / "recorded.jsonl"
    code, _, err = await cli("log", "export", "--log", str(tide.db), "--out", str(recording))
    assert code == 0, err
    code, _, err = await cli(
        "simulate", str(recording), "--config", str(CONFIG), "--decisions", str(tmp_path / "d")
    )
    assert code == 0, err
    code, _, err = await cli("replay", str(tide.db), "--verify")
    assert code == 0, err

    # least privilege: the double enforced the role, so every call was granted; and the
    # other way, the role grants exactly the calls tide made
    assert double.forbidden == []
    used = {(r.group, r.resource, r.verb) for r in double.requests}
    assert used == granted()


async def test_kill_9_at_random_points_loses_nothing_and_says_nothing_twice(
    double: ApiDouble, tmp_path: Path
) -> None:
    rng = random.Random(11)
    cluster(double)
    tide = Tide(double, tmp_path)
    for round_ in range(3):
        await tide.start()
        await tide.ready()
        for i in range(rng.randint(3, 8)):
            double.create("pods", build_pod("churn", f"r{round_}-{i}", node="n1"))
            await asyncio.sleep(rng.uniform(0, 0.05))
        victims = sorted(k for k in double.objects["pods"] if k.startswith("churn/"))
        for key in rng.sample(victims, k=min(2, len(victims))):
            double.delete("pods", key)
        await asyncio.sleep(rng.uniform(0, 0.3))
        assert await tide.stop(signal.SIGKILL) == -signal.SIGKILL
        if round_ == 1:
            double.compact()  # what happened while tide was down is only in a list
    await tide.start()
    await tide.ready()
    async with await open_log(str(tide.db)) as log:
        await converge(log, double, timeout=30)
    assert await tide.stop() == 0
    events = await tide.events()
    assert log_state(events) == double_state(double)
    assert duplicates(events) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kubeconfig", "/nonexistent/config"], "/nonexistent/config: no such kubeconfig file"),
        (["--health-address", "nowhere"], "--health-address: 'nowhere' is not host:port"),
        (["--metrics-interval", "-1"], "--metrics-interval -1.0: must be 0 (none) or positive"),
    ],
    ids=["missing-kubeconfig", "bad-address", "negative-interval"],
)
async def test_bad_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    code, _, err = await cli(
        "record", "--config", str(CONFIG), "--log", str(tmp_path / "x.db"), *args
    )
    assert code == 2
    assert err.strip().splitlines()[-1] == f"error: {message}"
