"""`tide record` with a kubeconfig ``exec`` plugin whose tokens expire every few seconds,
against the API double's authentication: it keeps recording across the expiries, and a
token the server never accepts still ends it with its one-line hint."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from streams.backends import open_log
from tests.builders import build_pod
from tests.controller.drive.kube.execplugin import ExecPlugin
from tests.controller.drive.sources.helpers import converge
from tests.controller.drive.sources.test_record_e2e import Tide, cluster
from tests.kubeauth import Authentication
from tests.kubedouble import ApiDouble

#: the life of each token (tide runs the plugin again half of it before it ends)
LIFE = 3.0
#: expiries to live through
EXPIRIES = 4


async def test_record_keeps_recording_across_exec_token_expiries(
    double: ApiDouble, tmp_path: Path
) -> None:
    cluster(double)
    plugin = ExecPlugin(tmp_path, life=LIFE)
    double.auth = Authentication(ledger=plugin.ledger)
    tide = Tide(double, tmp_path)
    tide.kubeconfig = double.write_kubeconfig(tmp_path / "exec-kubeconfig", user=plugin.user())
    await tide.start()
    await tide.ready()
    # a new pod while each token is current, until EXPIRIES tokens have expired
    deadline = time.time() + 60 + EXPIRIES * LIFE
    made = 0
    while sum(until < time.time() for _, until in plugin.issued()) < EXPIRIES:
        assert time.time() < deadline, f"{plugin.runs} plugin runs by the deadline"
        assert tide.proc is not None and tide.proc.returncode is None, await tide.stderr()
        if plugin.runs > made:
            made = plugin.runs
            double.create("pods", build_pod("default", f"made-{made}", node="n1"))
        await asyncio.sleep(0.1)
    async with await open_log(str(tide.db)) as log:
        await converge(log, double, timeout=30)
    assert tide.proc is not None and tide.proc.returncode is None, await tide.stderr()
    assert await tide.stop() == 0, await tide.stderr()
    issued = [token for token, _ in plugin.issued()]
    accepted = {p.token for p in double.auth.presented if p.accepted}
    assert len(issued) > EXPIRIES and set(issued[: EXPIRIES + 1]) <= accepted
    # tide sent only tokens the plugin gave it (a 401 is possible on a loaded machine: a
    # token sent a moment before its end and checked after it; it is then sent once more)
    assert {p.token for p in double.auth.presented} <= set(issued)


async def test_record_with_a_token_the_server_refuses_ends_with_one_line(
    double: ApiDouble, tmp_path: Path
) -> None:
    cluster(double)
    plugin = ExecPlugin(tmp_path, life=900)
    double.auth = Authentication()  # the plugin's tokens are unknown here
    tide = Tide(double, tmp_path)
    tide.kubeconfig = double.write_kubeconfig(tmp_path / "exec-kubeconfig", user=plugin.user())
    await tide.start()
    assert tide.proc is not None
    assert await asyncio.wait_for(tide.proc.wait(), 60) == 2
    lines = (await tide.stderr()).strip().splitlines()
    assert lines[-1].startswith("error: GET /") and lines[-1].endswith(
        "HTTP 401: Unauthorized (does the ClusterRole in deploy/ grant it?)"
    ), lines
    assert plugin.runs == 2  # at start, and once more after the first 401
    assert {p.token for p in double.auth.presented} == {"exec-1", "exec-2"}
    assert not any(p.accepted for p in double.auth.presented)
