"""The streaming deployment's first half, end to end: `tide record` appends to a Kafka
topic (tansu) from the API double, and `tide replay --verify` and `tide audit` read the
topic back, as an auditor beside the recorder would."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from streams.backends import open_log
from streams.seal import split_writer_link
from tests.builders import build_pod
from tests.controller.drive.sources.helpers import converge, double_state, duplicates, log_state
from tests.controller.drive.sources.test_record_e2e import Tide, cli, cluster
from tests.kubedouble import ApiDouble
from tests.streams.tansu import Broker, start_broker

pytestmark = pytest.mark.usefixtures("under_the_record_role")


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    """A tansu broker (memory storage) for this module."""
    running = start_broker()
    yield running
    running.stop()


class KafkaTide(Tide):
    """A `tide record` subprocess appending to a Kafka topic instead of a SQLite file."""

    def __init__(self, double: ApiDouble, tmp: Path, url: str) -> None:
        super().__init__(double, tmp)
        self.log = url


async def test_record_onto_kafka_then_replay_and_audit_from_it(
    double: ApiDouble, broker: Broker, tmp_path: Path
) -> None:
    cluster(double)
    url = broker.url(checkpoints=str(tmp_path / "checkpoints.db"))
    tide = KafkaTide(double, tmp_path, url)
    await tide.start()
    body = await tide.ready()
    assert "pods: listed" in body
    double.create("pods", build_pod("batch", "be-2", node="n1"))
    double.delete("pods", "batch/be-1")
    async with await open_log(url) as log:
        await converge(log, double, timeout=30)
        events = await log.read_all()
    assert await tide.stop() == 0, await tide.stderr()
    assert log_state(events) == double_state(double)
    assert duplicates(events) == []
    assert [e.type for e in events].count("config.applied") == 1

    code, out, err = await cli("replay", url, "--verify")
    assert code == 0, err
    code, out, err = await cli("audit", "summary", "--log", url)
    assert code == 0, err
    watched = sum(e.type == "k8s.watch" for e in events)
    assert f"k8s.watch {watched}" in " ".join(out.split()), out
    code, out, err = await cli("audit", "timeline", "--log", url, "--pod", "batch/be-1")
    assert code == 0, err
    assert "be-1" in out

    # a second recorder start on the same topic appends nothing twice
    await tide.start()
    await tide.ready()
    async with await open_log(url) as log:
        await converge(log, double, timeout=30)
    assert await tide.stop() == 0, await tide.stderr()
    async with await open_log(url) as log:
        again = await log.read_all()
    assert duplicates(again) == []
    assert log_state(again) == double_state(double)


async def test_two_recorders_on_one_topic_write_every_watch_event_once(
    double: ApiDouble, broker: Broker, tmp_path: Path
) -> None:
    """Two recorders of one cluster, one killed and restarted mid-way: each observation is
    one id whoever records it, so the topic reads as if one recorder had written it."""
    cluster(double)
    url = broker.url()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = KafkaTide(double, tmp_path / "a", url)
    second = KafkaTide(double, tmp_path / "b", url)
    await first.start()
    await first.ready()
    await second.start()
    await second.ready()
    double.create("pods", build_pod("batch", "be-2", node="n1"))
    double.create("pods", build_pod("batch", "be-3", node="n2"))
    async with await open_log(url) as log:
        await converge(log, double, timeout=30)
    assert second.proc is not None
    killed = second.proc.pid
    assert await second.stop(signal.SIGKILL) == -signal.SIGKILL
    double.delete("pods", "batch/be-2")
    pod = double.get("pods", "batch/be-3")
    pod["status"]["phase"] = "Succeeded"
    double.update("pods", pod)
    async with await open_log(url) as log:
        await converge(log, double, timeout=30)
    await second.start()  # relists what it missed: all of it already on the topic
    await second.ready()
    double.delete("pods", "batch/be-1")
    double.create("pods", build_pod("batch", "be-4", node="n1"))
    async with await open_log(url) as log:
        await converge(log, double, timeout=30)
        await asyncio.sleep(1.0)  # both watches have delivered the last changes
        events = await log.read_all()
    assert await first.stop() == 0, await first.stderr()
    assert await second.stop() == 0, await second.stderr()

    assert duplicates(events) == []
    assert len({e.id for e in events}) == len(events)
    assert log_state(events) == double_state(double)
    assert [e.type for e in events].count("config.applied") == 1
    assert [e.data["metadata"]["name"] for e in events if e.type == "metrics.node"] == ["n1"]
    # each recorder chains its own records (no writer lock on a topic): the chain is intact
    # whatever the interleaving, and the killed recorder's own chain, if it wrote a record
    # the other had not, is reported as not ended cleanly (it cannot be told from a cut)
    writers = {own[0] for e in events if (own := split_writer_link(e.prev)) is not None}
    unclean = [w for w in writers if w.rsplit(".", 2)[1] == str(killed)]
    code, out, err = await cli("replay", url, "--verify")
    assert "chain intact" in out, out + err
    if unclean:
        assert code == 1, out + err
        assert "not sealed" in out and "did not end cleanly" in out, out + err
    else:
        assert code == 0, out + err
