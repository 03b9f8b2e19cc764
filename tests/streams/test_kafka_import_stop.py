"""A broker stopped in the middle of `tide log import --log kafka://…`: one line, no traceback;
and a reading command on a topic that is not there creates none.

Issue 29: stopping the broker mid-import printed a 616-line traceback (aiokafka's
``CancelledError`` from stopping a consumer whose broker was gone, after hundreds of
aiokafka log lines). The import now ends with exit 2 and one line naming the broker and
what was written before it stopped.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from controller.cli import app
from streams.backends.kafka import KafkaLog
from streams.events import format_time, parse_time
from tests.streams.tansu import Broker, start_broker
from tests.streams.test_kafka_restart import topics

GOLDEN = Path(__file__).parents[1] / "replay" / "golden" / "demo-v2.jsonl"
BOOT = "from controller.cli import main; main()"


def _big_recording(path: Path, copies: int) -> None:
    """``copies`` of a golden recording, each two days after the last (fresh content ids)."""
    lines = GOLDEN.read_bytes().splitlines()
    with path.open("wb") as out:
        for k in range(copies):
            for line in lines:
                record = orjson.loads(line)
                record.pop("id", None)
                record["at"] = format_time(parse_time(record["at"]) + timedelta(days=2 * k))
                out.write(orjson.dumps(record) + b"\n")


async def _head(url: str) -> int:
    async with await KafkaLog.open(url) as log:
        return await log.head()


def test_a_broker_stopped_mid_import_ends_it_in_one_line(tmp_path: Path) -> None:
    recording = tmp_path / "big.jsonl"
    _big_recording(recording, copies=12)
    broker = start_broker()
    url = broker.url("imported")
    try:
        command = [sys.executable, "-c", BOOT, "log", "import", str(recording), "--log", url]
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline:
            try:
                if asyncio.run(_head(url)) > 0:  # records are going in: stop the broker
                    break
            except Exception:
                pass
            time.sleep(0.1)
        assert process.poll() is None, "the import ended before the broker could be stopped"
        broker.kill()
        out, err = process.communicate(timeout=300)
    finally:
        broker.stop()
    assert process.returncode == 2, err[-3000:]
    assert "Traceback" not in err and "CancelledError" not in err, err[-3000:]
    lines = err.strip().splitlines()
    assert len(lines) == 1, err[-3000:]
    assert lines[0].startswith(f"error: {url}: the import stopped: broker {broker.bootstrap}: ")
    written = re.search(r"; (\d+) record\(s\) imported and 0 set aside before it", lines[0])
    assert written is not None, lines[0]
    assert out == ""


READERS = [
    ["state", "--log", "{url}"],
    ["replay", "{url}"],
    ["audit", "summary", "--log", "{url}"],
    ["log", "export", "--log", "{url}"],
    ["log", "verify", "{url}"],
    ["log", "quarantine", "--log", "{url}"],
]


@pytest.mark.parametrize("args", READERS, ids=lambda a: "-".join(a[:2]))
def test_a_reading_command_creates_no_topic(args: list[str], broker: Broker) -> None:
    """Reading never writes, on Kafka too: a topic that is not there is not created."""
    url = broker.url()
    result = CliRunner().invoke(app, [a.format(url=url) for a in args])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "no such log" in lines[0] and url in lines[0], result.output
    topic = url.rsplit("/", 1)[1]
    assert not {topic, f"{topic}.quarantine"} & asyncio.run(topics(broker))
