"""Every command on a Kafka log: the golden logs imported onto tansu give the golden output.

The golden logs (``tests/replay/golden``) are imported into Kafka topics with ``tide log
import``; exporting them gives the same bytes, ``tide replay --verify`` passes, and every
golden command (``golden/outputs/commands.json``) run with the topic's URL in place of the
``.db`` file prints what it printed on SQLite. A log simulated onto Kafka verifies too.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from controller.cli import app
from tests.replay.test_golden import COMMANDS, GOLDEN, LOGS
from tests.streams.tansu import Broker


def invoke(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args, env={"COLUMNS": "80"})
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def topics(broker: Broker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The golden logs, each imported into a fresh topic: name -> URL."""
    work = tmp_path_factory.mktemp("kafka-golden")
    urls: dict[str, str] = {}
    for name in LOGS:
        urls[name] = broker.url(checkpoints=str(work / f"{name}.checkpoints.db"))
        code, out = invoke(["log", "import", str(GOLDEN / f"{name}.jsonl"), "--log", urls[name]])
        assert code == 0, out
    yield urls


@pytest.mark.parametrize("name", LOGS)
def test_golden_logs_round_trip_byte_for_byte_and_verify(
    name: str, topics: dict[str, str], tmp_path: Path
) -> None:
    exported = tmp_path / "out.jsonl"
    code, out = invoke(["log", "export", "--log", topics[name], "--out", str(exported)])
    assert code == 0, out
    assert exported.read_bytes() == (GOLDEN / f"{name}.jsonl").read_bytes()
    code, out = invoke(["replay", topics[name], "--verify"])
    assert code == 0, out


def _on_kafka(args: list[str], topics: dict[str, str]) -> list[str]:
    return [topics[arg.removesuffix(".db")] if arg.endswith(".db") else arg for arg in args]


#: the golden commands that read one of the golden logs (the others touch no log)
ON_LOGS = sorted(
    name for name, args in COMMANDS.items() if any(f"{log}.db" in args for log in LOGS)
)


@pytest.mark.parametrize("name", ON_LOGS)
def test_golden_commands_print_the_same_on_kafka(
    name: str, topics: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for log in LOGS:
        shutil.copy(GOLDEN / f"{log}.jsonl", tmp_path / f"{log}.jsonl")
    for source in (GOLDEN / "sources").glob("*.yaml"):
        shutil.copy(source, tmp_path / source.name)
    monkeypatch.chdir(tmp_path)
    expected = (GOLDEN / "outputs" / f"{name}.txt").read_text()
    code, out = invoke(_on_kafka(COMMANDS[name], topics))
    assert f"exit {code}\n" + out == expected


def test_a_log_simulated_onto_kafka_verifies(broker: Broker, tmp_path: Path) -> None:
    url = broker.url(checkpoints=str(tmp_path / "checkpoints.db"))
    scenario = GOLDEN / "sources" / "allocate-gang.yaml"
    code, out = invoke(
        [
            "simulate",
            str(scenario),
            "--config",
            str(scenario),
            "--log",
            url,
            "--decisions",
            str(tmp_path / "decisions.jsonl"),
        ]
    )
    assert code == 0, out
    code, out = invoke(["replay", url, "--verify"])
    assert code == 0 and "decision points" in out, out
    assert (tmp_path / "checkpoints.db").exists()
