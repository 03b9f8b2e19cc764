"""`tide audit why` folded from moment to moment (replay/whyread.py) answers what a fold
from offset 0 answers: a scenario table of logs cut at several points, checkpoints kept at
several intervals, and pods evicted, bound, never bound, deleted and re-created under the
same name (a new uid), and the same name in another namespace (asked by bare name)."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from controller.cli import app
from controller.policy.loader import load_config
from controller.simulate.runner import Simulation, save_log
from replay import whyplan, whyread
from streams.backends import open_log
from streams.codec import encode
from streams.events import Event
from streams.recording import read_recording
from tests.builders import build_pod, watch
from tests.replay import test_waited
from tests.replay.test_why_checkpoints import _checkpoint

GOLDEN = Path(__file__).parent / "golden"
#: checkpoint every N records (0: none kept)
INTERVALS = (0, 3, 17)
#: the log cut after these fractions of its records (1: whole)
CUTS = (0.35, 0.7, 1.0)


def _recreated() -> list[Event]:
    """test_waited's cluster, then ``w`` (bound at 20 s) deleted at 36 s and re-created
    Pending under the same name with a new uid (it fits nowhere: never bound again), and
    a ``w`` in namespace ``other`` bound at 38 s."""
    records = test_waited.inputs()
    w: dict[str, Any] = copy.deepcopy(test_waited.pending("w", "3", 0.5))
    w["spec"]["nodeName"] = "n1"
    w["status"]["phase"] = "Running"
    again: dict[str, Any] = copy.deepcopy(test_waited.pending("w", "6", 37))
    again["metadata"]["uid"] = "default-w-2"
    other = build_pod("other", "w", phase="Pending", cpu="500m", created=test_waited.s(38))
    records += [
        watch("pods", w, test_waited.s(36), "DELETED"),
        watch("pods", again, test_waited.s(37)),
        watch("pods", other, test_waited.s(38)),
    ]
    sim = Simulation(load_config(test_waited.CONFIG))
    sim.run(sorted(records, key=lambda e: e.at), until=test_waited.s(50))
    return list(sim.log.events)


def _golden(name: str) -> Callable[[], list[Event]]:
    def events() -> list[Event]:
        return [e for e in read_recording(GOLDEN / f"{name}.jsonl") if isinstance(e, Event)]

    return events


#: source -> (its events, the pods asked about: evicted, bound, never bound, re-created)
SOURCES: dict[str, tuple[Callable[[], list[Event]], tuple[str, ...]]] = {
    "recreated": (_recreated, ("w", "default/w", "other/w", "x", "z", "default/hog")),
    "pressure-graceful": (_golden("pressure-graceful"), ()),
    "tdm-budgets": (_golden("tdm-budgets"), ()),
}


def _pods(events: list[Event], asked: tuple[str, ...]) -> list[str]:
    """The pods asked about: the source's own, else every pod a decision names (by key)
    and the first few by bare name, and one the log does not name."""
    if asked:
        return [*asked, "nobody/none"]
    keys = sorted(
        {
            f"{e.data.get('namespace')}/{e.data.get('pod')}"
            for e in events
            if e.type.startswith("decision.") and isinstance(e.data, dict) and e.data.get("pod")
        }
    )
    return [*keys[:6], *sorted({k.split("/", 1)[1] for k in keys})[:2], "nobody/none"]


def _why(url: str, pod: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["audit", "why", pod, "--log", url, "--json"])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_every_answer_equals_a_fold_from_zero(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make, asked = SOURCES[name]
    events = make()
    loads: list[int] = []
    local: list[int] = []
    real = whyread.fold_why

    def counted(*args: Any, **kwargs: Any) -> Any:
        read = whyread.Read()
        try:
            return real(*args, **{**kwargs, "read": read})
        finally:
            loads.extend(read.loaded)
            if read.local_from is not None:
                local.append(read.local)

    monkeypatch.setattr(whyread, "fold_why", counted)
    monkeypatch.setattr(whyread, "LOAD_COST", 0)  # jump over every gap a checkpoint spans
    pods = _pods(events, asked)
    for cut in CUTS:
        prefix = events[: max(1, int(len(events) * cut))]
        whole = tmp_path / f"{name}-{cut}-0.db"
        save_log(f"sqlite:///{whole}", prefix)
        # the reference: the stored records as a recording, read whole, folded from 0
        reference = tmp_path / f"{name}-{cut}.jsonl"
        urls = {}
        for every in INTERVALS:
            url = f"sqlite:///{tmp_path / f'{name}-{cut}-{every}.db'}"
            if every:
                save_log(url, prefix)
                asyncio.run(_checkpoint(url, every))
            urls[every] = f"sqlite:///{whole}" if not every else url
        asyncio.run(_export(urls[0], reference))
        for pod in pods:
            expected = _why(str(reference), pod)
            assert expected[2] == "" or expected[0] == 1, expected
            for every, url in urls.items():
                assert _why(url, pod) == expected, (name, cut, every, pod)
    assert loads, "no answer loaded a checkpoint: the gaps were never jumped"
    assert local, "no answer folded the local parts only"


async def _export(url: str, path: Path) -> None:
    async with await open_log(url) as log:
        lines = [encode(e) + b"\n" async for e in log.read(0)]
    path.write_bytes(b"".join(lines))


def test_an_answer_that_comes_to_need_the_exact_world_again_is_folded_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan told that no record of a pod needs the World exact (each one world-free):
    the local fold starts before the pods' Pending records and must give up at them (a wait
    opens); the answer is folded again with the World exact and equals a fold from 0."""
    events = _recreated()
    again: list[str] = []
    real = whyread.fold_why

    def counted(pod: str, *args: Any, **kwargs: Any) -> Any:
        read = whyread.Read()
        try:
            return real(pod, *args, **{**kwargs, "read": read})
        finally:
            if read.again:
                again.append(pod)

    monkeypatch.setattr(whyread, "fold_why", counted)
    monkeypatch.setattr(whyplan, "world_free", lambda event: True)
    url = f"sqlite:///{tmp_path / 'log.db'}"
    save_log(url, events)
    asyncio.run(_checkpoint(url, 3))
    reference = tmp_path / "log.jsonl"
    asyncio.run(_export(url, reference))
    for pod in ("w", "default/w", "x", "z", "nobody/none"):
        assert _why(url, pod) == _why(str(reference), pod), pod
    # bare "w" stays exact: other/w's bind (38 s) comes after default/w is re-created
    assert set(again) == {"default/w", "x", "z"}, again
