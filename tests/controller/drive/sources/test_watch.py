"""The sources against the API double, through faults: the log ends holding exactly the
double's objects at their last versions, with no record said twice."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from controller.drive.kube.client import KubeClient
from streams.backends.memory import MemoryLog
from streams.events import Event
from tests.builders import build_node, build_pod, build_podgroup, build_queue
from tests.controller.drive.sources.helpers import (
    FAST,
    Running,
    converge,
    double_state,
    duplicates,
    eventually,
    log_state,
)
from tests.kubedouble import ApiDouble


def seed(double: ApiDouble) -> None:
    double.create("nodes", build_node("n1"))
    double.create("nodes", build_node("n2"))
    double.create("queues", build_queue("default"))
    double.create("podgroups", build_podgroup("default", "pg1"))
    for i in range(3):
        double.create("pods", build_pod("default", f"p{i}", node="n1", group="pg1"))
    double.create(
        "poddisruptionbudgets",
        {
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        },
    )


def churn(double: ApiDouble, round_: int) -> None:
    double.create("pods", build_pod("default", f"new{round_}", node="n2"))
    pod = double.get("pods", "default/p0")
    pod["metadata"].setdefault("labels", {})["round"] = str(round_)
    double.update("pods", pod)
    if f"default/p{round_ + 1}" in double.objects["pods"]:
        double.delete("pods", f"default/p{round_ + 1}")


def drop(double: ApiDouble) -> None:
    double.drop_watches()


def compact(double: ApiDouble) -> None:
    double.compact()
    double.drop_watches()


def server_errors(double: ApiDouble) -> None:
    double.faults.fail, double.faults.fail_status = 8, 503
    double.drop_watches()


def slow(double: ApiDouble) -> None:
    double.faults.delay = 0.3
    double.drop_watches()


FAULTS: dict[str, Callable[[ApiDouble], None]] = {
    "none": lambda double: None,
    "dropped-watch": drop,
    "compacted-410": compact,
    "5xx": server_errors,
    "slow": slow,
}


@pytest.mark.parametrize("fault", list(FAULTS), ids=list(FAULTS))
async def test_the_log_ends_equal_to_the_cluster(
    double: ApiDouble, client: KubeClient, fault: str
) -> None:
    seed(double)
    log = MemoryLog()
    async with Running(client, log) as recorder:
        assert log_state(await log.read_all()) == double_state(double)
        for round_ in range(2):
            FAULTS[fault](double)
            churn(double, round_)
            await asyncio.sleep(0.3)
        double.faults.delay = 0.0
        await converge(log, double)
    events = await log.read_all()
    assert duplicates(events) == []
    if fault == "compacted-410":
        assert all(source.state.gone >= 1 for source in recorder.sources)


def changes(events: list[Event]) -> list[tuple[str, str]]:
    """(event, name) of the watch records among ``events``, BOOKMARKs (the runs' seals) left out."""
    return [
        (e.data["event"], e.data["object"]["metadata"]["name"])
        for e in events
        if e.type == "k8s.watch" and e.data["event"] != "BOOKMARK"
    ]


async def test_a_restart_appends_only_what_changed_while_down(
    double: ApiDouble, client: KubeClient
) -> None:
    seed(double)
    log = MemoryLog()
    async with Running(client, log):
        pass
    before = len(await log.read_all())
    double.delete("pods", "default/p1")
    churn(double, 5)
    double.compact()  # the history tide missed is gone: only a relist can tell
    async with Running(client, log) as recorder:
        # not ``recorder.written``: the relists' BOOKMARKs count there, and under load they
        # can make up the number before the pods' relist is written
        await eventually(lambda: len(changes(log.events[before:])) >= 3)
    events = await log.read_all()
    added = changes(events[before:])
    assert sorted(added) == [("ADDED", "new5"), ("DELETED", "p1"), ("MODIFIED", "p0")]
    [pods] = [source for source in recorder.sources if source.name == "pods"]
    # the version on the log was compacted away: at least one relist (a watch that races
    # the relist may meet the compacted window once more; the log stays exact either way)
    assert pods.state.gone >= 1
    assert log_state(events) == double_state(double)
    assert duplicates(events) == []


async def test_a_missing_crd_is_a_warning_and_the_rest_records(
    double: ApiDouble, client: KubeClient
) -> None:
    double.served -= {"podgroups", "queues"}
    double.create("nodes", build_node("n1"))
    log = MemoryLog()
    runner = Running(client, log)
    async with runner as recorder:
        ready, lines = recorder.report()
    assert ready
    assert "queues: absent (resourceVersion )" in lines
    assert sorted(w for w in runner.warnings if "CRD installed" in w) == [
        "podgroups: /apis/scheduling.volcano.sh/v1beta1/podgroups is not served (404): is the"
        " scheduling.volcano.sh CRD installed? tide goes on without it (implicit jobs, the"
        " default queue)",
        "queues: /apis/scheduling.volcano.sh/v1beta1/queues is not served (404): is the"
        " scheduling.volcano.sh CRD installed? tide goes on without it (implicit jobs, the"
        " default queue)",
    ]
    assert log_state(await log.read_all()) == {("nodes", "n1"): "1"}


async def test_a_malformed_object_is_quarantined_and_the_stream_goes_on(
    double: ApiDouble, client: KubeClient
) -> None:
    log = MemoryLog()
    async with Running(client, log) as recorder:
        bad = build_pod("default", "bad", node="n1")
        bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
        double.create("pods", bad)
        double.create("pods", build_pod("default", "good", node="n1"))
        await eventually(
            lambda: recorder.tap.stats.set_aside == 1 and bool(recorder.tap.known.of("pods"))
        )
    [aside] = await log.quarantine()
    assert aside.source == "k8s.watch pods"
    assert aside.reason == (
        "pods default/bad: spec.containers[0].resources.requests.cpu: quantity 'lots' is"
        " not a valid Kubernetes quantity"
    )
    watched = [e for e in await log.read_all() if e.type == "k8s.watch"]  # not the seal
    named = [e.data["object"]["metadata"].get("name") for e in watched]
    assert [name for name in named if name] == ["good"]


@pytest.mark.parametrize("status", [403, 401], ids=["forbidden", "unauthorised"])
async def test_a_forbidden_collection_stops_the_recorder_naming_it(
    double: ApiDouble, client: KubeClient, status: int
) -> None:
    double.faults.fail, double.faults.fail_status, double.faults.fail_match = 1, status, "/pods"
    runner = Running(client, MemoryLog(), FAST)
    await runner.recorder.prepare()
    with pytest.raises(Exception, match=f"GET /api/v1/pods: HTTP {status}"):
        await asyncio.wait_for(runner.recorder.run(asyncio.Event()), 10)


async def test_a_restart_watches_on_from_the_logs_last_version(
    double: ApiDouble, client: KubeClient
) -> None:
    seed(double)
    log = MemoryLog()
    async with Running(client, log):
        pass
    lists = sum(1 for r in double.requests if r.verb == "list")
    before = len(await log.read_all())
    double.delete("pods", "default/p1")
    churn(double, 5)
    async with Running(client, log) as recorder:
        await converge(log, double)
    assert sum(1 for r in double.requests if r.verb == "list") == lists  # no list: a watch
    events = await log.read_all()
    watched = [e for e in events[before:] if e.type == "k8s.watch"]  # not the runs' seals
    said = [(e.data["event"], e.data["object"]["metadata"]["name"]) for e in watched]
    # in the order the server changed them
    assert said == [("DELETED", "p1"), ("ADDED", "new5"), ("MODIFIED", "p0")]
    assert all(source.state.lists == 0 for source in recorder.sources)
    assert duplicates(events) == []
