"""Ctrl-C at any moment is exit 130 and no traceback (issue 29): while Python imports the
command line, while a command folds a log, while ``tide run`` and ``tide record`` talk to
a cluster (the API double), where it is also the clean stop SIGTERM is.

The first two moments are made exact rather than timed: the child process sends itself
SIGINT from an import hook, or from the fold's N-th ``World.apply``, so the test holds on a
machine of any speed. The live ones wait for the line saying the command is running."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from streams.backends import open_log
from streams.recording import import_recording
from tests.kubedouble import ApiDouble
from tests.live.scenario import Tide, cluster

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "replay" / "golden" / "demo-v5.jsonl"
CONFIG = ROOT / "examples" / "volcano-scheduler.conf.yaml"

#: the child: an optional hook that sends SIGINT, then the console script's own two lines
CHILD = """
import os, signal, sys
{hook}
from controller.cli import main
sys.argv = ["tide", *sys.argv[1:]]
sys.exit(main())
"""

#: SIGINT while the first module named here is imported (before the command line exists)
ON_IMPORT = """
class _Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, _Interrupt())
"""

#: SIGINT from the fold's 50th record (once the command line is imported)
ON_FOLD = """
import projections.world as _world
_apply = _world.World.apply
_count = [0]
def _interrupting(self, event):
    _count[0] += 1
    if _count[0] == 50:
        print("sending SIGINT", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGINT)
    return _apply(self, event)
_world.World.apply = _interrupting
"""


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("log") / "demo.db"

    async def make() -> None:
        async with await open_log(str(path)) as opened:
            await import_recording(GOLDEN, opened)

    asyncio.run(make())
    return path


def child(hook: str, *args: str) -> subprocess.CompletedProcess[str]:
    code = CHILD.format(hook=textwrap.dedent(hook))
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def assert_interrupted(returncode: int, stderr: str) -> None:
    assert returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert "internal error" not in stderr, stderr


@pytest.mark.parametrize(
    "module",
    # the command line, then the command's own module (loaded when the command is looked
    # up: controller/cli/lazy.py), then what it reads with
    ["typer", "controller.cli.lazy", "controller.cli.state_cmd", "projections.world"],
)
def test_ctrl_c_while_importing(module: str, log: Path) -> None:
    done = child(ON_IMPORT.format(module=module), "state", str(log))
    assert_interrupted(done.returncode, done.stderr)
    assert done.stdout == ""


@pytest.mark.parametrize(
    "args",
    [
        ["state", "{log}"],
        ["replay", "{log}", "--verify"],
        ["audit", "why", "shop/cache-0", "--log", "{log}"],
        ["simulate", str(GOLDEN), "--config", str(CONFIG)],
    ],
    ids=["state", "replay", "audit", "simulate"],
)
def test_ctrl_c_during_a_fold(args: list[str], log: Path) -> None:
    done = child(ON_FOLD, *(a.format(log=log) for a in args))
    # sent mid-fold (the 50th record), and nothing said after it
    assert done.stderr.splitlines()[-1] == "sending SIGINT", done.stderr
    assert_interrupted(done.returncode, done.stderr)


def test_ctrl_c_stops_tide_run_cleanly_with_130(double: ApiDouble, tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster(double)
        tide = Tide(double, tmp_path, offset=0.0, dry_run=True)
        await tide.start()
        await tide.ready()
        code = await tide.stop(signal.SIGINT)
        stderr = await tide.stderr()
        assert_interrupted(code, stderr)
        assert "stopped:" in stderr  # the clean stop SIGTERM makes: effects finished, sealed
        events = await tide.events()
        assert events[-1].type == "log.sealed"

    asyncio.run(scenario())


def test_ctrl_c_stops_tide_record_cleanly_with_130(double: ApiDouble, tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster(double)
        kubeconfig = double.write_kubeconfig(tmp_path / "kubeconfig")
        db = tmp_path / "tide.db"
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            CHILD.format(hook=""),
            "record",
            "--config",
            str(CONFIG),
            "--kubeconfig",
            str(kubeconfig),
            "--log",
            str(db),
            "--health-address",
            "",
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        assert proc.stderr is not None
        seen: list[str] = []
        async with asyncio.timeout(120):
            while not seen or not seen[-1].startswith("recording "):
                line = (await proc.stderr.readline()).decode()
                assert line, "".join(seen)
                seen.append(line)
        proc.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(proc.wait(), 60)
        stderr = "".join(seen) + (await proc.stderr.read()).decode()
        assert_interrupted(code, stderr)
        assert "stopped:" in stderr
        async with await open_log(str(db)) as opened:
            events = await opened.read_all()
        assert events[-1].type == "log.sealed"

    asyncio.run(scenario())
