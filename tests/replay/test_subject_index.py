"""The subject index (streams/subjects.py, streams/backends/sqlite_subjects.py) answers
what the scan answers: ``tide audit timeline`` and ``tide audit decisions --node/
--namespace`` over every golden log, read through the index and through a scan of the same
log without it, for pods evicted, bound, preempted and never decided (by ``namespace/name``
and by bare name), nodes, namespaces and names nobody has. A log from before the index is
read by a scan (a reader creates nothing) and indexed by the first writer that opens it.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from controller.cli import app
from controller.cli.reading import reader
from controller.simulate.runner import save_log
from streams.events import DECISION_TYPES, Event
from streams.recording import read_recording

GOLDEN = Path(__file__).parent / "golden"
LOGS = sorted(p.stem for p in GOLDEN.glob("*.jsonl"))


def _events(name: str) -> list[Event]:
    return [e for e in read_recording(GOLDEN / f"{name}.jsonl") if isinstance(e, Event)]


def _altered(db: Path, out: Path, *statements: str) -> Path:
    """A copy of ``db`` with ``statements`` run on it."""
    shutil.copy(db, out)
    with sqlite3.connect(out) as con:
        for statement in statements:
            con.execute(statement)
    con.close()
    return out


def _unindexed(db: Path, out: Path) -> Path:
    """A copy of ``db`` as a log written before the index: its tables dropped."""
    return _altered(db, out, "DROP TABLE subjects", "DROP TABLE subjects_version")


def _questions(events: list[Event]) -> list[list[str]]:
    """Per decision kind its first pods and nodes, pods never decided, namespaces, names
    nobody has: the timeline and decisions questions asked of the log."""
    pods: dict[str, list[str]] = {}
    nodes: list[str] = []
    namespaces: list[str] = []
    seen: list[str] = []
    for e in events:
        if e.type in DECISION_TYPES:
            kind = str(e.data.get("kind"))
            if e.data.get("pod"):
                key = f"{e.data.get('namespace')}/{e.data.get('pod')}"
                if key not in pods.setdefault(kind, []):
                    pods[kind].append(key)
            if e.data.get("node") and e.data["node"] not in nodes:
                nodes.append(str(e.data["node"]))
            if e.data.get("namespace") and e.data["namespace"] not in namespaces:
                namespaces.append(str(e.data["namespace"]))
        meta = (e.data.get("object") or {}).get("metadata") or {}
        if e.type == "k8s.watch" and e.data.get("resource") == "pods":
            seen.append(f"{meta.get('namespace')}/{meta.get('name')}")
    decided = {k for keys in pods.values() for k in keys}
    picked = sorted({k for keys in pods.values() for k in keys[:2]})
    never = sorted(set(seen) - decided)[:2]
    asked: list[list[str]] = []
    for pod in [*picked, *never, *(p.split("/", 1)[1] for p in picked[:2]), "nobody/none"]:
        asked += [["timeline", "--pod", pod], ["timeline", "--pod", pod, "--summary"]]
    for node in [*nodes[:3], "no-such-node"]:
        asked += [
            ["timeline", "--node", node],
            ["timeline", "--node", node, "--no-metrics"],
            ["decisions", "--node", node],
        ]
    for namespace in [*namespaces[:2], "nowhere"]:
        asked.append(["decisions", "--namespace", namespace])
    if nodes and namespaces:
        asked.append(["decisions", "--node", nodes[0], "--namespace", namespaces[0]])
    return asked


def _ask(argv: list[str], db: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["audit", *argv, "--log", str(db)])
    return result.exit_code, result.output


@pytest.mark.parametrize("name", LOGS, ids=LOGS)
def test_the_index_answers_what_the_scan_answers(name: str, tmp_path: Path) -> None:
    events = _events(name)
    db = tmp_path / f"{name}.db"
    save_log(str(db), events)
    old = _unindexed(db, tmp_path / f"{name}-old.db")
    with reader(str(db)) as log:
        assert log.about(["node:x"]) is not None  # the writer indexed it
    with reader(str(old)) as log:
        assert log.about(["node:x"]) is None  # read by a scan
    answered = 0
    for argv in _questions(events):
        indexed, scanned = _ask(argv, db), _ask(argv, old)
        assert indexed == scanned, argv
        answered += bool(indexed[1].strip())
    assert answered  # the questions are not all empty


def test_an_old_log_is_read_unchanged_and_indexed_by_its_next_writer(tmp_path: Path) -> None:
    events = _events("tdm-budgets")
    db = tmp_path / "log.db"
    save_log(str(db), events[:50])
    old = _unindexed(db, tmp_path / "old.db")
    before = old.read_bytes()
    pod = next(
        f"{e.data['namespace']}/{e.data['pod']}" for e in events if e.type == "decision.evict"
    )
    scanned = _ask(["timeline", "--pod", pod], old)
    assert old.read_bytes() == before  # a reader created no index
    save_log(str(old), events)  # a writer: indexes the 50 stored records, then the rest
    save_log(str(db), events)
    with sqlite3.connect(old) as a, sqlite3.connect(db) as b:
        query = 'SELECT subject, "offset" FROM subjects ORDER BY subject, "offset"'
        assert a.execute(query).fetchall() == b.execute(query).fetchall()
    a.close()
    b.close()
    assert _ask(["timeline", "--pod", pod], old) == _ask(["timeline", "--pod", pod], db)
    assert scanned[1].strip()


def _version_1(db: Path, out: Path) -> Path:
    """A copy of ``db`` as version 1 indexed it: no ``mention:`` or ``job:`` keys."""
    return _altered(
        db,
        out,
        "DELETE FROM subjects WHERE subject LIKE 'mention:%' OR subject LIKE 'job:%'",
        "UPDATE subjects_version SET version = 1",
    )


def _why(pod: str, db: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["audit", "why", pod, "--log", str(db), "--json"])
    return result.exit_code, result.output


@pytest.mark.parametrize("name", ["pressure-graceful", "tdm-budgets", "ownership"])
def test_why_reads_a_version_1_index_by_a_scan_and_its_next_writer_adds_the_mentions(
    name: str, tmp_path: Path
) -> None:
    """``audit why`` reads the evictions naming a pod or its job by the ``mention:`` and
    ``job:`` keys; an index of version 1 lacks them and is read by a scan of the
    evictions' payloads instead, with the same answers; its next writer files the
    evictions under them (the index then equals one a writer built whole)."""
    events = _events(name)
    db = tmp_path / "log.db"
    save_log(str(db), events)
    old = _version_1(db, tmp_path / "old.db")
    with sqlite3.connect(db) as con:
        mentions = con.execute(
            "SELECT count(*) FROM subjects WHERE subject LIKE 'mention:%' OR subject LIKE 'job:%'"
        ).fetchone()[0]
    con.close()
    assert mentions, name  # the log's evictions name pods or jobs
    pods = sorted(
        {f"{e.data['namespace']}/{e.data['pod']}" for e in events if e.type == "decision.evict"}
    )
    before = old.read_bytes()
    for pod in [*pods[:6], pods[0].split("/", 1)[1]]:
        answer = _why(pod, db)
        assert answer[0] == 0 and answer[1].strip(), pod
        assert _why(pod, old) == answer, pod
    assert old.read_bytes() == before  # a reader wrote nothing
    save_log(str(old), events)
    save_log(str(db), events)
    with sqlite3.connect(old) as a, sqlite3.connect(db) as b:
        query = 'SELECT subject, "offset" FROM subjects ORDER BY subject, "offset"'
        assert a.execute(query).fetchall() == b.execute(query).fetchall()
        assert a.execute("SELECT version FROM subjects_version").fetchall() == [(2,)]
    a.close()
    b.close()
