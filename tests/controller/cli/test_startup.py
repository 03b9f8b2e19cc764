"""A command imports only what it uses (issue 26, item 4): the offline commands never
import the Kubernetes client, the HTTP client/server, the Prometheus library, the Kafka
client or the scheduler library that ``tide record`` and ``tide run`` need, nor pydantic.

Each command runs in a fresh interpreter (as the ``tide`` script runs it: ``controller.cli
.main``) on a small SQLite log; at exit the interpreter prints which of those libraries it
had imported. ``tide record`` is the control: it does import them, so the check can fail.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from controller.simulate.runner import save_log
from streams.events import Event
from streams.recording import read_recording

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "replay" / "golden" / "tdm-budgets.jsonl"

#: what only the live commands (record, run) and their parts need
LIVE_ONLY = ("kubernetes_asyncio", "aiohttp", "prometheus_client", "aiokafka", "apscheduler")
#: what no offline command needs either: pydantic validates the live commands' settings
#: (controller.drive.settings); typer's own parameter coercion would import it, tide's
#: does not for its plain types (controller/cli/coercion.py)
NOT_OFFLINE = (*LIVE_ONLY, "pydantic")

_PROBE = """
import atexit, sys
LIVE = {live!r}
def _said():
    found = sorted({{m.split(".")[0] for m in sys.modules}} & set(LIVE))
    sys.stderr.write("IMPORTED:" + ",".join(found) + "\\n")
atexit.register(_said)
sys.argv = ["tide", *{argv!r}]
from controller.cli import main
main()
"""

OFFLINE = {
    "version": ["--version"],
    "audit-decisions": ["audit", "decisions", "--log", "{db}"],
    "audit-decisions-node": ["audit", "decisions", "--node", "rz1-1", "--log", "{db}"],
    "audit-why": ["audit", "why", "batch/etl-0", "--log", "{db}"],
    "audit-timeline": ["audit", "timeline", "--node", "rz1-1", "--log", "{db}"],
    "audit-summary": ["audit", "summary", "--log", "{db}"],
    "state": ["state", "--log", "{db}"],
    "log-export": ["log", "export", "--log", "{db}", "--out", "{out}"],
    "replay": ["replay", "{db}"],
    "help": ["audit", "decisions", "--help"],
}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("startup") / "small.db"
    events = [e for e in read_recording(GOLDEN) if isinstance(e, Event)]
    save_log(str(path), events)
    return path


def _imported(
    argv: list[str], db: Path, watched: tuple[str, ...] = NOT_OFFLINE
) -> tuple[list[str], subprocess.CompletedProcess[str]]:
    """Which of the ``watched`` packages ``tide argv`` imported (``{db}`` is the log)."""
    args = [a.format(db=db, out=db.with_suffix(".jsonl")) for a in argv]
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(live=watched, argv=args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=db.parent,
    )
    said = [line for line in done.stderr.splitlines() if line.startswith("IMPORTED:")]
    assert said, done.stderr
    found = said[-1].removeprefix("IMPORTED:")
    return (found.split(",") if found else []), done


@pytest.mark.parametrize("name", OFFLINE, ids=OFFLINE)
def test_an_offline_command_imports_no_live_library_nor_pydantic(name: str, db: Path) -> None:
    imported, done = _imported(OFFLINE[name], db)
    assert done.returncode == 0, done.stderr
    assert imported == [], f"tide {' '.join(OFFLINE[name])} imported {imported}"


#: the commands benchmarks/bench_startup.py times: on a SQLite log they read its pages on
#: the caller's thread (streams/backends/sqlite_reader.py), without an event loop
LEAN = {"version": OFFLINE["version"], "audit-decisions": OFFLINE["audit-decisions"]}


@pytest.mark.parametrize("name", LEAN, ids=LEAN)
def test_the_timed_commands_start_no_event_loop(name: str, db: Path) -> None:
    imported, done = _imported(LEAN[name], db, watched=("asyncio", "aiosqlite", "_hashlib"))
    assert done.returncode == 0, done.stderr
    assert imported == [], f"tide {' '.join(LEAN[name])} imported {imported}"


def test_the_content_hash_is_hashlibs_own_blake2b() -> None:
    """streams takes blake2b from _blake2 (hashlib would load OpenSSL): the same function."""
    import hashlib

    from streams import codec, events

    assert vars(events)["blake2b"] is vars(codec)["blake2b"] is hashlib.blake2b


def test_the_probe_sees_a_live_command_import_them(db: Path) -> None:
    """``tide record --help`` loads the record command, which needs the Kubernetes client."""
    imported, done = _imported(["record", "--help"], db)
    assert done.returncode == 0, done.stderr
    assert "kubernetes_asyncio" in imported
    assert "pydantic" in imported  # the live commands' settings
