"""`tide audit why` folds from the nearest checkpoint before the pod's first record (issue
26): its answer, the bind views included, is byte for byte the answer of a fold from
offset 0 — on golden logs and built ones, for pods evicted, bound, preempted, waited then
deleted, never decided, and at several checkpoint intervals."""

from __future__ import annotations

import asyncio
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from controller.cli import app, audit_cmd
from controller.cli.explain_cmd import _why_fold, _why_span
from controller.cli.reading import reader
from controller.policy.loader import load_config
from controller.simulate.runner import Simulation, save_log
from controller.simulate.scenario import load_scenario
from projections.checkpoints import CheckpointPolicy, keep_checkpoints
from projections.store import resume_at
from replay.streamed import WhyFold
from streams.backends import open_log
from streams.backends.checkpoints import open_log_store
from streams.codec import encode
from streams.events import DECISION_TYPES, Event
from streams.recording import read_recording
from tests.replay import test_waited

GOLDEN = Path(__file__).parent / "golden"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
INTERVALS = (1, 9, 40)


def _golden(name: str) -> list[Event]:
    return [e for e in read_recording(GOLDEN / f"{name}.jsonl") if isinstance(e, Event)]


def _waited() -> list[Event]:
    """A pod bound after waiting, one deleted while waiting, one still pending."""
    sim = Simulation(load_config(test_waited.CONFIG))
    sim.run(test_waited.inputs(), until=test_waited.s(45))
    return list(sim.log.events)


def _preempted() -> list[Event]:
    """A full cluster where a preemptor is nominated, its victims evicted, then bound."""
    config: dict[str, Any] = yaml.safe_load((EXAMPLES / "preempt-config.yaml").read_text())
    events, _, until = load_scenario(EXAMPLES / "preempt-full-cluster.yaml")
    sim = Simulation(load_config(config))
    sim.run(events, until=until)
    return list(sim.log.events)


SOURCES = {
    "pressure-graceful": lambda: _golden("pressure-graceful"),
    "tdm-budgets": lambda: _golden("tdm-budgets"),
    "allocate-gang": lambda: _golden("allocate-gang"),
    "rescheduling-hot-cold": lambda: _golden("rescheduling-hot-cold"),
    "stale-metrics": lambda: _golden("stale-metrics"),
    "waited": _waited,
    "preempted": _preempted,
}


async def _checkpoint(url: str, every: int) -> None:
    policy = CheckpointPolicy(every_records=every, every_minutes=0, keep=10_000, thinned=0)
    async with await open_log(url) as log:
        store = await open_log_store(url, create=True)
        assert store is not None
        async with store:
            await keep_checkpoints(log, store, policy=policy)


@cache
def _logs(name: str, root: Path) -> dict[int, str]:
    """The log of source ``name`` without checkpoints (0), with one every N records, and
    (-1) as a ``.jsonl`` recording of its stored records: read whole, folded from offset 0
    to the end (the reference)."""
    events = SOURCES[name]()
    urls = {}
    for every in (0, *INTERVALS):
        url = f"sqlite:///{root / f'{name}-{every}.db'}"
        save_log(url, events)
        if every:
            asyncio.run(_checkpoint(url, every))
        urls[every] = url
    with reader(urls[0]) as log:
        lines = b"".join(encode(e) + b"\n" for e in log.records())
    (root / f"{name}.jsonl").write_bytes(lines)
    urls[-1] = str(root / f"{name}.jsonl")
    return urls


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("why-ckpt")


def _pods(url: str) -> list[str]:
    """Every pod the log names (decided or not), by key and by bare name, and one unknown."""
    with reader(url) as log:
        pods = set()
        for e in log.records():
            data = e.data if isinstance(e.data, dict) else {}
            if e.type in DECISION_TYPES and data.get("pod"):
                pods.add(f"{data.get('namespace')}/{data.get('pod')}")
            meta = (data.get("object") or {}).get("metadata") or {}
            if e.type == "k8s.watch" and data.get("resource") == "pods":
                pods.add(f"{meta.get('namespace')}/{meta.get('name')}")
    keys = sorted(pods)
    return [*keys, *sorted({k.split("/", 1)[1] for k in keys})[:4], "nobody/none"]


def _why(url: str, pod: str, *flags: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["audit", "why", pod, "--log", url, *flags])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_audit_why_from_checkpoints_equals_a_fold_from_zero(name: str, root: Path) -> None:
    urls = _logs(name, root)
    pods = _pods(urls[0])
    resumed = 0
    for i, pod in enumerate(pods):
        # the JSON for every pod; the text (the same answer, printed) for a few
        for flags in (("--json",), ()) if i < 3 else (("--json",),):
            expected = _why(urls[-1], pod, *flags)
            assert expected[2] == "" or expected[0] == 1, expected
            for every in (0, *INTERVALS):
                assert _why(urls[every], pod, *flags) == expected, (pod, every, flags)
        with reader(urls[INTERVALS[0]]) as log:
            decided = list(log.of_types(DECISION_TYPES))
            span = _why_span(log, urls[INTERVALS[0]], pod, WhyFold(pod, decided))
            resumed += span is not None and span[0] is not None and span[0].position > 0
    # the checkpoints are used (not a fold from 0 every time): for most pods of the log
    assert resumed >= len(pods) // 2, (resumed, len(pods))


def test_a_cause_before_the_checkpoint_folds_again_from_zero(root: Path) -> None:
    """A fold from a checkpoint that lies after a cause the answer reads says so (None),
    and audit why then folds from offset 0: the same answer."""
    urls = _logs("pressure-graceful", root)
    url = urls[1]
    with reader(url) as log:
        decided = list(log.of_types(DECISION_TYPES))
        evicted = next(e for e in decided if e.type == "decision.evict")
        pod = f"{evicted.data['namespace']}/{evicted.data['pod']}"
        head = log.head()

        async def late() -> Any:
            store = await open_log_store(url, create=False)
            assert store is not None
            async with store:
                return await resume_at(store, log.log, upto=head)

        world = log.run(late())
        assert world is not None and world.position > evicted.offset
        assert _why_fold(pod, decided, log.records(world.position), world=world) is None
        whole = _why_fold(pod, decided, log.records(0))
    assert whole is not None and whole[0]
    assert _why(url, pod) == _why(urls[-1], pod)


@pytest.mark.parametrize("name", ["waited", "rescheduling-hot-cold"])
def test_the_fold_stops_once_the_pod_is_gone_with_the_same_answer(
    name: str, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the pod's last record, with the pod gone and its wait closed, the fold stops:
    fewer records read, the same answer; a pod that stays reads on to the head."""
    url = _logs(name, root)[0]
    fed: list[int] = []
    real = audit_cmd._records

    def counted(log: Any, start: int) -> Any:
        for event in real(log, start):
            fed.append(event.offset)
            yield event

    monkeypatch.setattr(audit_cmd, "_records", counted)
    with reader(url) as log:
        head = log.head()
    stopped = 0
    for pod in _pods(url):
        fed.clear()
        expected = _why(_logs(name, root)[-1], pod, "--json")
        fed.clear()
        assert _why(url, pod, "--json") == expected, pod
        stopped += bool(fed) and fed[-1] < head - 1
    assert stopped > 0
