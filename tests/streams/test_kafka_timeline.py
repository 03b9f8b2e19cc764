"""``tide audit timeline`` on Kafka: through the topic's local subject index it prints
what the scan of the topic prints, and what the same records on SQLite print.

A scenario table: each golden log of ``test_kafka_index.NAMES`` written onto tansu with
the index in every state of ``test_kafka_index.WRITTEN`` (absent, current, behind the
head, a stale copy, interleaved with another writer and a duplicate); for nodes (with
their zones' triggers, and with ``--no-metrics`` and ``--summary``), pods and names
nobody has (``test_subject_index._questions``), the command through the URL with the
index, through the same topic without it (a scan) and, where the topic's offsets are the
SQLite log's (no duplicate on it), through the SQLite log of the same records, which
answers from its own subject index.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from controller.cli import app
from controller.simulate.runner import save_log
from tests.replay.test_subject_index import _questions
from tests.streams.tansu import Broker
from tests.streams.test_kafka_index import NAMES, WRITTEN, _events

#: states whose topic holds each record once, at the offset the SQLite log gives it
DENSE = ("absent", "behind", "current", "stale copy")


def _ask(argv: list[str], log: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["audit", *argv, "--log", log])
    return result.exit_code, result.output


def _timeline_questions(name: str) -> list[list[str]]:
    asked = [q for q in _questions(_events(name)) if q[0] == "timeline"]
    nodes = [q for q in asked if q[1] == "--node"]
    pods = [q for q in asked if q[1] == "--pod" and "--summary" not in q]
    summary = [["timeline", "--node", q[2], "--summary"] for q in nodes[:1]]
    return nodes[:3] + nodes[-1:] + summary + pods[:1] + pods[-1:]


#: every state on the short log, three on the long one (each question there reads the
#: topic's 4,614 records twice: CI's time)
CASES = [
    (state, name)
    for state in sorted(WRITTEN)
    for name in NAMES
    if name == "tdm-budgets" or state in ("behind", "current", "interleaved, with a duplicate")
]


@pytest.mark.parametrize(("state", "name"), CASES)
def test_timeline_through_the_index_prints_what_the_scan_prints(
    broker: Broker, tmp_path: Path, name: str, state: str
) -> None:
    events = _events(name)
    url, _ = WRITTEN[state](broker, tmp_path, events)
    plain = url.split("?", 1)[0]
    db = tmp_path / "log.db"
    if state in DENSE:
        save_log(str(db), events)
    printed = 0
    for argv in _timeline_questions(name):
        indexed = _ask(argv, url)
        assert indexed[0] == 0, (argv, indexed)
        assert indexed == _ask(argv, plain), argv
        if state in DENSE:
            assert indexed == _ask(argv, str(db)), argv
        printed += bool(indexed[1].strip())
    assert printed  # the questions are not all empty
