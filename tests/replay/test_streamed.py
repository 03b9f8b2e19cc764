"""The streamed audit paths (replay.streamed, controller.cli.reading) answer exactly
what the eager, whole-log functions answer, with pages small enough that every golden
log spans many of them."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from controller.cli.reading import decisions, folded, records
from controller.simulate.runner import save_log
from projections.metrics import compute_metrics
from replay.audit import select_decisions
from replay.explain import answers
from replay.metrics import render as render_metrics
from replay.report import collect, render
from replay.streamed import ReportFold, WhyFold
from replay.timeline import timeline, timeline_summary
from replay.whynot import why_not
from streams import paging
from streams.backends import open_log
from streams.codec import decision_line
from streams.events import DECISION_TYPES, Event
from streams.recording import read_recording

GOLDEN = Path(__file__).parent / "golden"
LOGS = ["pressure-graceful", "tdm-budgets", "allocate-gang", "ownership", "rescheduling-hot-cold"]


def _events(name: str) -> list[Event]:
    found = [e for e in read_recording(GOLDEN / f"{name}.jsonl") if isinstance(e, Event)]
    return [e.with_offset(i) for i, e in enumerate(found)]


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paging, "PAGE", 7)


def _db(name: str, tmp_path: Path) -> tuple[str, list[Event]]:
    events = _events(name)
    url = str(tmp_path / f"{name}.db")
    save_log(url, events)
    # the log as stored (it carries its hash-chain links), read whole: the reference
    return url, asyncio.run(_read_all(url))


async def _read_all(url: str) -> list[Event]:
    async with await open_log(url) as log:
        return await log.read_all()


def _pods(events: list[Event]) -> list[str]:
    """Every pod a decision names, plus every pod the log saw (some never decided)."""
    pods = {
        f"{e.data.get('namespace')}/{e.data.get('pod')}"
        for e in events
        if e.type in DECISION_TYPES and e.data.get("pod")
    }
    for e in events:
        meta = (e.data.get("object") or {}).get("metadata") or {}
        if e.type == "k8s.watch" and e.data.get("resource") == "pods":
            pods.add(f"{meta.get('namespace')}/{meta.get('name')}")
    return [*sorted(pods)[:6], "nobody/none"]


@pytest.mark.parametrize("name", LOGS, ids=LOGS)
@pytest.mark.usefixtures("small_pages")
def test_streamed_why_equals_the_eager_one(name: str, tmp_path: Path) -> None:
    url, events = _db(name, tmp_path)
    for pod in _pods(events):
        fold = WhyFold(pod, decisions(url))
        for event in folded(url, "audit why"):
            fold.feed(event)
        assert [a.as_json() for a in fold.answers()] == [
            a.as_json() for a in answers(events, pod)
        ], pod
        assert fold.not_decided() == why_not(events, pod), pod


@pytest.mark.parametrize("name", LOGS, ids=LOGS)
@pytest.mark.usefixtures("small_pages")
def test_streamed_report_page_equals_the_eager_one(name: str, tmp_path: Path) -> None:
    url, events = _db(name, tmp_path)
    fold = ReportFold(decisions(url))
    day = fold.day(folded(url, "report"))
    assert render(day, fold.needed(), title="t") == render(collect(events), events, title="t")
    assert len(fold.needed()) < len(events)


@pytest.mark.parametrize("name", LOGS, ids=LOGS)
@pytest.mark.usefixtures("small_pages")
def test_paged_reads_equal_the_whole_log(name: str, tmp_path: Path) -> None:
    url, events = _db(name, tmp_path)
    assert list(records(url)) == events
    assert list(decisions(url)) == [e for e in events if e.type in DECISION_TYPES]
    assert [decision_line(e) for e in select_decisions(decisions(url), kind="evict")] == [
        decision_line(e) for e in select_decisions(events, kind="evict")
    ]
    assert render_metrics(compute_metrics(records(url))) == render_metrics(compute_metrics(events))
    assert Counter(e.type for e in records(url)) == Counter(e.type for e in events)
    node = next(
        str((e.data.get("object") or {}).get("metadata", {}).get("name"))
        for e in events
        if e.type == "k8s.watch" and e.data.get("resource") == "nodes"
    )
    assert timeline(records(url), node=node) == timeline(events, node=node)
    assert timeline_summary(records(url), node=node) == timeline_summary(events, node=node)
