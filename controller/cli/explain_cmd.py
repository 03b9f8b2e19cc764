"""The printing side of `tide audit why` (answers, then non-decisions) and of the
`tide replay --config` what-if summary (and its ``--resimulate`` re-run), as text or JSON.

Kept apart from :mod:`controller.cli.replay_cmd` so the command function there stays a thin
wrapper; the explanations themselves are built in :mod:`replay.explain` and
:mod:`replay.whynot`.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterable
from contextlib import closing
from typing import TYPE_CHECKING

import typer

from controller.cli.progress import Progress
from controller.cli.reading import decisions, folded, is_recording, reader
from controller.policy.loader import Policy
from replay.bindview import BindFold, bind_views, with_views
from replay.explain import Answer, answers
from replay.nomination import nomination_answers
from replay.resimulate import diff_runs, horizon, select_inputs
from replay.streamed import WhyFold
from replay.verify import ReplayReport
from replay.whatif import from_report
from replay.whynot import why_not
from streams.codec import decision_line
from streams.events import DECISION_TYPES, Event
from streams.gcpause import paced
from streams.payloads import as_decision, as_watch
from streams.subjects import name_key

if TYPE_CHECKING:
    from projections.world import World
    from streams.paging import LogReader


def why(events: list[Event], pod: str, *, as_json: bool) -> None:
    """Print why ``pod`` was evicted or bound, and why not; exit 1 when nothing is known."""
    # its own decisions, and the nominations its victims' evictions carry (a preemptor)
    found = sorted(
        with_views(answers(events, pod), bind_views(events, pod=pod))
        + nomination_answers(events, pod),
        key=lambda a: (a.decision.at, a.decision.offset, a.decision.type != "decision.evict"),
    )
    with Progress("audit why", len(events)) as bar:
        passed = why_not(events, pod, progress=bar.callback())
    _print_why(pod, found, passed, as_json=as_json)


def why_streamed(source: str, pod: str, *, as_json: bool) -> None:
    """:func:`why` of the log at ``source`` read once a page at a time, after a narrow
    read of its decisions (:class:`replay.streamed.WhyFold`), from the nearest checkpoint
    before the first record the answer needs (:func:`_why_from`)."""
    if is_recording(source):
        decided = list(decisions(source))
        whole = _why_fold(pod, decided, folded(source, "audit why"))
        assert whole is not None  # from offset 0: never None
        _print_why(pod, whole[0], whole[1], as_json=as_json)
        return
    with reader(source) as log:
        decided = list(log.of_types(DECISION_TYPES))
        span = _why_span(log, source, pod, WhyFold(pod, decided))
        if span is None:  # the log names no such pod, no decision reads it: nothing to fold
            _print_why(pod, [], [], as_json=as_json)
            return
        world, until = span
        begin = world.position if world is not None else 0
        with closing(_paged(log, begin)) as feed:
            answer = _why_fold(pod, decided, feed, world=world, until=until)
        if answer is None:  # a cause it needs lies before the checkpoint: from offset 0
            with closing(_paged(log, 0)) as feed:
                answer = _why_fold(pod, decided, feed, until=until)
        assert answer is not None
    _print_why(pod, answer[0], answer[1], as_json=as_json)


def _paged(log: LogReader, start: int) -> Generator[Event, None, None]:
    with Progress("audit why", log.head() - start) as bar:
        for event in paced(log.records(start)):
            if bar.on and not event.offset & 1023:
                bar.update(event.offset - start)
            yield event


def _why_span(
    log: LogReader, source: str, pod: str, fold: WhyFold
) -> tuple[World | None, int | None] | None:
    """Where the fold for ``pod`` may start and stop: the World of the nearest good
    checkpoint at or before the pod's first record and the first decision the answer reads
    (:attr:`WhyFold.first`; None: from offset 0), and the offset of the last of those
    records (past it the fold stops once :meth:`WhyFold.settled`; None: at the head);
    None when there are none (the answer is then that nothing is known).

    Before the pod's first record the why-not fold holds nothing about it but the World
    (no cooling sentence said, no wait begun), so a fold from there answers the same. The
    pod's records come from the log's subject index (``podname:NAME`` holds every record
    naming a pod of that name); a log without one is folded whole."""
    found = log.about([name_key(pod)])
    if found is None:
        return None, None
    named = [event.offset for event in found]
    if not named and fold.first is None:
        return None
    upto = min([*named[:1], *([] if fold.first is None else [fold.first])], default=log.head())
    until = max([*named[-1:], fold.last])
    if upto <= 0:
        return None, until
    return log.run(_resumed(log, source, upto)), until


async def _resumed(log: LogReader, source: str, upto: int) -> World | None:
    from projections.store import resume_at
    from streams.backends.checkpoints import open_log_store

    store = await open_log_store(log.log.url or source, create=False)
    if store is None:
        return None
    async with store:
        return await resume_at(store, log.log, upto=upto)


def _why_fold(
    pod: str,
    decided: list[Event],
    events: Iterable[Event],
    *,
    world: World | None = None,
    until: int | None = None,
) -> tuple[list[Answer], list[str]] | None:
    """The answers and the non-decisions about ``pod`` folded over ``events`` (from
    ``world``'s position, or offset 0; stopped past offset ``until`` when the answer is
    settled there); None when a fold from a checkpoint missed a cause the answer reads."""
    fold = WhyFold(pod, decided, world=world)
    # what the nominations need: the decisions, the preemptions' causes, the pod's and
    # the nodes' deletions and bindings (a preemptor's outcome), in log order
    causes = {
        e.cause for e in decided if e.cause and "preemptor" in as_decision(e).get("evidence", {})
    }
    name = pod.rsplit("/", 1)[-1]
    kept: list[Event] = []
    # the pod's binds, each node's verdict: derived on the same fold (replay/bindview.py)
    binds = BindFold(decided, pod=pod, world=fold.whynot.world)
    for event in events:
        binds.before(event)
        fold.feed(event)
        if event.type in DECISION_TYPES or event.id in causes or _watch_about(event, name):
            kept.append(event)
        if until is not None and event.offset >= until:
            if fold.settled():
                break
            until = None  # not settled there: folded on to the head
    if world is not None and world.position > 0 and not fold.complete:
        return None
    found = sorted(
        with_views(fold.answers(), binds.views()) + nomination_answers(kept, pod),
        key=lambda a: (a.decision.at, a.decision.offset, a.decision.type != "decision.evict"),
    )
    return found, fold.not_decided()


def _watch_about(event: Event, name: str) -> bool:
    """A watch record a nomination's outcome may read: the pod named ``name``, or a node
    deleted."""
    if event.type != "k8s.watch":
        return False
    # the payload typed without a call per record (a TypedDict is the dict itself)
    if TYPE_CHECKING:
        data = as_watch(event)
    else:
        data = event.data
    resource = data.get("resource")
    if resource == "nodes":
        return data.get("event") == "DELETED"
    meta = (data.get("object") or {}).get("metadata") or {}
    return resource == "pods" and meta.get("name") == name


def _print_why(pod: str, found: list[Answer], passed: list[str], *, as_json: bool) -> None:
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "pod": pod,
                    "decisions": [a.as_json() for a in found],
                    "not_decided": passed,
                },
                indent=2,
                sort_keys=True,
            )
        )
    else:
        blocks = [a.text() for a in found] + [f"not decided: {line}" for line in passed]
        if blocks:
            typer.echo("\n\n".join(blocks))
    if not found and not passed:
        # the answer is "nothing": said on stderr (stdout stays the answer's), exit 1
        typer.echo(f"no decision about {pod}", err=True)
        raise typer.Exit(1)


def print_whatif(
    events: list[Event], report: ReplayReport, *, start: int, as_json: bool, diff: bool
) -> None:
    """Print a counterfactual replay: the differing points with ``diff``, then the summary."""
    recorded = [
        decision_line(e).decode()
        for e in events
        if e.type in DECISION_TYPES and e.cause is not None and e.offset >= start
    ]
    whatif = from_report(report, recorded)
    if as_json:
        typer.echo(json.dumps(whatif.as_json(), indent=2, sort_keys=True))
        return
    if diff:
        for difference in report.differences:
            typer.echo(difference.describe())
    typer.echo(
        f"replayed {report.checked} decision points, {report.decisions} recorded decisions "
        f"under the other configuration: {len(report.differences)} point(s) differ"
    )
    for line in whatif.lines():
        typer.echo(line)


def resimulate(events: list[Event], policy: Policy, *, source: str) -> list[Event]:
    """Re-run the log's inputs through the simulator under ``policy``; the new decisions.

    The inputs are chosen by :func:`replay.resimulate.select_inputs` (watch events and
    metric samples with no cause); the run stops at the log's last record.
    """
    from controller.simulate.runner import Simulation

    inputs = select_inputs(events)
    if not inputs:
        return []
    run = Simulation(policy.config, eviction=policy.eviction, config_source=source)
    stop = horizon(events)
    span = (stop - inputs[0].at).total_seconds() if stop else 0.0
    with Progress("resimulate", span, size=len(inputs)) as bar:
        return run.run(inputs, until=stop, progress=bar.callback()).decisions


def print_resimulated(
    events: list[Event], policy: Policy, *, source: str, as_json: bool, diff: bool
) -> None:
    """Print ``tide replay --resimulate``: the what-if of the re-run against the log."""
    after = resimulate(events, policy, source=source)
    whatif = diff_runs(events, after)
    if as_json:
        typer.echo(json.dumps(whatif.as_json(), indent=2, sort_keys=True))
        return
    if diff:
        for decision in after:
            typer.echo(decision_line(decision).decode())
    typer.echo(
        f"re-simulated {len(select_inputs(events))} input records under {source}: "
        f"{len(whatif.before)} recorded decisions, {len(after)} re-simulated"
    )
    for line in whatif.lines():
        typer.echo(line)
