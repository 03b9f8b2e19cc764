"""`tide state`: the fold up to a point, as tables or deterministic JSON."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import orjson
import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from controller.cli import state_cmd
from controller.cli.state_cmd import render, state_report
from projections.world import World
from streams.events import Event
from tests.builders import at, build_node, build_pod, build_podgroup, build_queue, watch
from tests.projections.test_world import Counter

needs_sqlite = pytest.mark.skipif(
    importlib.util.find_spec("streams.backends.sqlite") is None,
    reason="the SQLite log backend is not in the tree yet",
)


def events() -> list[Event]:
    return [
        watch("queues", build_queue(), at(0)),
        watch(
            "nodes", build_node("n1", cpu="8", labels={"volcano.sh/revocable-zone": "rz"}), at(0)
        ),
        watch("nodes", build_node("n2", cpu="4", ready=False), at(0)),
        watch(
            "podgroups",
            build_podgroup(
                "ns", "job", min_member=2, annotations={"volcano.sh/jdb-min-available": "1"}
            ),
            at(1),
        ),
        watch("pods", build_pod("ns", "w0", node="n1", group="job"), at(1)),
        watch("pods", build_pod("ns", "w1", phase="Pending", group="job"), at(2)),
        watch("pods", build_pod("ns", "solo", node="n1", cpu="2"), at(3)),
        watch("pods", build_pod("ns", "solo", node="n1", cpu="2"), at(4), "DELETED"),
    ]


def world(upto: int | None = None) -> World:
    w = World()
    for offset, event in enumerate(events()[:upto]):
        w.apply(event.with_offset(offset))
    return w


def test_report_contents() -> None:
    report = state_report(world())
    assert report["position"] == 8
    n1 = report["nodes"][0]
    assert (n1["name"], n1["zone"], n1["ready"], n1["tasks"]) == ("n1", "rz", True, 1)
    assert n1["idle"]["cpu_milli"] == 7000 and n1["allocatable"]["cpu_milli"] == 8000
    assert report["nodes"][1]["ready"] is False
    assert report["tasks"]["by_status"] == {"Pending": 1, "Running": 1}
    assert [t["key"] for t in report["tasks"]["items"]] == ["ns/w0", "ns/w1"]
    (job,) = report["jobs"]
    assert (job["id"], job["min_available"], job["ready"], job["queue"]) == (
        "ns/job",
        2,
        1,
        "default",
    )
    assert job["budget"] == {"min_available": "1", "max_unavailable": ""}
    assert report["queues"][0]["name"] == "default" and report["queues"][0]["jobs"] == 1


def test_report_is_deterministic() -> None:
    one = orjson.dumps(state_report(world()), option=orjson.OPT_SORT_KEYS)
    assert orjson.dumps(state_report(world()), option=orjson.OPT_SORT_KEYS) == one


def test_render_tables() -> None:
    console = Console(record=True, width=160)
    render(state_report(world()), console, limit=1)
    text = console.export_text()
    for expected in (
        "Nodes",
        "Tasks by status",
        "Jobs",
        "Queues",
        "rz",
        "minAvailable=1",
        "… and 1 more nodes",
    ):
        assert expected in text


def make_app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """tide (test shell)."""

    state_cmd.register(app)
    return app


def write_log(path: Path) -> str:
    from streams.backends.sqlite import SQLiteLog

    async def write() -> None:
        log = await SQLiteLog.open(path)
        await log.append(events())
        await log.close()

    asyncio.run(write())
    return str(path)


@needs_sqlite
@pytest.mark.parametrize(
    ("args", "tasks", "position"),
    [
        pytest.param([], {"Pending": 1, "Running": 1}, 8, id="all"),
        pytest.param(["--offset", "7"], {"Pending": 1, "Running": 2}, 7, id="offset-exclusive"),
        pytest.param(["--offset", "0"], {}, 0, id="offset-zero"),
        pytest.param(["--at", "2026-11-21T20:01:00Z"], {"Running": 1}, 5, id="at-inclusive"),
        pytest.param(["--at", "2026-11-21T21:01:00+01:00"], {"Running": 1}, 5, id="at-with-offset"),
    ],
)
def test_cli_json(tmp_path: Path, args: list[str], tasks: dict[str, int], position: int) -> None:
    url = write_log(tmp_path / "t.db")
    result = CliRunner().invoke(make_app(), ["state", "--log", url, "--json", *args])
    assert result.exit_code == 0, result.output
    report = orjson.loads(result.output)
    assert report["tasks"]["by_status"] == tasks
    assert report["position"] == position


@needs_sqlite
def test_cli_tables_and_url(tmp_path: Path) -> None:
    url = write_log(tmp_path / "t.db")
    result = CliRunner().invoke(make_app(), ["state", "--log", f"sqlite:///{url}"])
    assert result.exit_code == 0, result.output
    assert "Nodes" in result.output and "ns/job" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--log", "/nonexistent/x.db"], "no such log", id="missing-file"),
        pytest.param(["--log", "memory://", "--at", "yesterday"], "--at", id="bad-time"),
        pytest.param(
            ["--log", "memory://", "--at", "2026-11-21T20:00:00Z", "--offset", "1"],
            "not both",
            id="both",
        ),
        pytest.param(["--log", "rec.jsonl"], "no such log", id="missing-recording"),
    ],
)
def test_cli_errors(args: list[str], message: str) -> None:
    result = CliRunner().invoke(make_app(), ["state", *args])
    assert result.exit_code == 2
    assert message in result.output


def test_cli_on_an_empty_memory_log() -> None:
    result = CliRunner().invoke(make_app(), ["state", "--log", "memory://", "--json"])
    assert result.exit_code == 0, result.output
    assert orjson.loads(result.output)["nodes"] == []


# -- resuming from the World checkpoint kept with the log -----------------------------


async def _plant(url: str, cut: int, state: bytes | None = None) -> None:
    """Save a World checkpoint of the log's first ``cut`` records (or ``state``) in it."""
    from projections.store import WORLD_CHECKPOINT
    from streams.backends import open_log
    from streams.backends.checkpoints import open_log_store

    async with await open_log(url) as log:
        w = World().fold(await log.read_all(0, cut))
    store = await open_log_store(url, create=True)
    assert store is not None
    async with store:
        await store.save(WORLD_CHECKPOINT, w.position, w.dump() if state is None else state)


def _state(url: str, *args: str) -> str:
    result = CliRunner().invoke(make_app(), ["state", "--log", url, "--json", *args])
    assert result.exit_code == 0, result.output
    return result.output


@needs_sqlite
@pytest.mark.parametrize("cut", [0, 1, 4, 7, 8])
@pytest.mark.parametrize("offset", [None, 4, 5, 8, 100])
def test_a_resumed_state_equals_a_refold(tmp_path: Path, cut: int, offset: int | None) -> None:
    refold = write_log(tmp_path / "refold.db")
    resumed = write_log(tmp_path / "resumed.db")
    asyncio.run(_plant(resumed, cut))
    args = [] if offset is None else ["--offset", str(offset)]
    assert _state(resumed, *args) == _state(refold, *args)
    tables = CliRunner().invoke(make_app(), ["state", "--log", resumed, *args]).output
    assert tables == CliRunner().invoke(make_app(), ["state", "--log", refold, *args]).output


@needs_sqlite
def test_state_really_resumes_from_a_usable_checkpoint(tmp_path: Path) -> None:
    from projections.store import resume_world
    from streams.backends.checkpoints import open_log_store

    url = write_log(tmp_path / "t.db")
    asyncio.run(_plant(url, 6))

    async def positions() -> list[int | None]:
        store = await open_log_store(url, create=False)
        assert store is not None
        async with store:
            found = [
                await resume_world(store, upto=upto, head=head)
                for upto, head in ((None, 8), (6, 8), (5, 8), (None, 5))
            ]
        return [None if w is None else w.position for w in found]

    # usable at or after its position; not before the point asked, nor beyond the log
    assert asyncio.run(positions()) == [6, 6, None, None]


@needs_sqlite
@pytest.mark.parametrize(
    "state",
    [
        pytest.param(b"not json", id="corrupt"),
        pytest.param(World(extra=[Counter()]).dump(), id="other-projections"),
        pytest.param(World().fold(events()[:3]).dump(), id="row-and-state-disagree"),
    ],
)
def test_an_unusable_checkpoint_is_ignored(tmp_path: Path, state: bytes) -> None:
    refold = write_log(tmp_path / "refold.db")
    planted = write_log(tmp_path / "planted.db")
    asyncio.run(_plant(planted, 5, state))
    for args in ([], ["--offset", "6"]):
        assert _state(planted, *args) == _state(refold, *args)


@needs_sqlite
def test_reading_creates_no_checkpoint_table(tmp_path: Path) -> None:
    import sqlite3

    url = write_log(tmp_path / "t.db")
    _state(url)
    with sqlite3.connect(url) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    assert "checkpoints" not in tables


def test_state_on_a_sparse_log(monkeypatch: pytest.MonkeyPatch) -> None:
    """Offsets 10, 20, ...: ``--offset`` still means "records below it", position is the
    last folded offset + 1."""
    from streams import backends
    from streams.backends.memory import MemoryLog
    from tests.streams import sparse

    monkeypatch.setitem(backends.OPENERS, "sparse", "tests.streams.sparse")
    monkeypatch.setattr(sparse, "LOGS", {})
    log = sparse.SparseLog(sparse.LOGS.setdefault("s", MemoryLog()))
    asyncio.run(log.append(events()))
    full = orjson.loads(_state("sparse://s"))
    assert full["position"] == 8 * sparse.STRIDE + 1
    assert full["tasks"]["by_status"] == {"Pending": 1, "Running": 1}
    for offset, dense in ((7 * sparse.STRIDE + 1, 7), (7 * sparse.STRIDE, 6), (1, 0)):
        report = orjson.loads(_state("sparse://s", "--offset", str(offset)))
        expected = state_report(world(dense))
        assert report["tasks"] == expected["tasks"]
        assert report["nodes"] == expected["nodes"]
        assert report["position"] == (dense * sparse.STRIDE + 1 if dense else 0)
