"""The bind view: for a bind, per node, which check refused the pod or what each scoring
plugin gave it, derived offline from the log.

Why it exists: kube-scheduler-simulator users read a placement as a table of nodes, each
with its filter verdict or its per-plugin scores. A tide bind records only the chosen
node, its total score and how many feasible nodes the search found: the search stops
early and prunes its scoring, so the rest was never computed, and recording it would
change every bind on every log. So :class:`BindFold` derives it, in one pass over the
log: at each record that caused a bind (a decision's ``cause``: a session trigger) it
rebuilds the session the engine opened there, with the configuration in force, the same
way ``tide replay --verify`` re-decides (:func:`~controller.policy.loader.load_policy`,
:func:`~controller.policy.engine.build_cycle`, the engine's session), runs its actions,
and just before each placement asks every node about the task being placed
(:func:`controller.policy.framework.verdicts.evaluate_nodes`, which changes nothing).

A derivation is trusted only when the rebuilt session decides what the log recorded
(the same decision lines); the chosen node's total is then the recorded score. A bind
that cannot be derived (no configuration on the log, a cause not on the log, a session
that decides otherwise) gets one line saying why (:attr:`BindView.problem`).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from controller.policy.engine import build_cycle, run_actions
from controller.policy.framework.session import Session, open_session
from controller.policy.framework.statement import Statement
from controller.policy.framework.verdicts import evaluate_nodes
from controller.policy.loader import Policy, load_policy
from projections.model import TaskInfo
from projections.world import World
from replay.bindparts import Part, PartsFor
from replay.explain import Answer
from streams.codec import decision_line
from streams.events import DECISION_TYPES, JSON, Event
from streams.payloads import as_decision, evidence_of

__all__ = [
    "BindFold",
    "BindView",
    "NodeView",
    "PluginScore",
    "bind_views",
    "failed_what",
    "with_views",
]

#: how many feasible nodes the compact form lists (the rest are counted)
COMPACT = 5
#: how many of the best feasible nodes get their scores split into weighted parts (the
#: report lists 10; the others keep their per-plugin scores)
PARTS = 10


@dataclass(frozen=True)
class PluginScore:
    """One node-order plugin's score of a node, and its weighted parts when known."""

    plugin: str
    score: float
    parts: tuple[Part, ...] = ()

    def text(self) -> str:
        """``nodeorder 348 (leastrequested 46×1 + …)``."""
        inner = " + ".join(f"{p.name} {_num(p.raw)}×{_num(p.weight)}" for p in self.parts)
        return f"{self.plugin} {_num(self.score)}" + (f" ({inner})" if inner else "")


@dataclass(frozen=True)
class NodeView:
    """One node's verdict for the bound pod (see
    :class:`controller.policy.framework.verdicts.NodeVerdict`)."""

    node: str
    check: str = ""
    reason: str = ""
    fits_idle: bool = False
    scores: tuple[PluginScore, ...] = ()
    total: float = 0.0
    score_error: str = ""

    @property
    def feasible(self) -> bool:
        """Whether every check passed."""
        return not self.check

    def as_json(self) -> JSON:
        """The node's verdict as JSON."""
        if not self.feasible:
            return {"node": self.node, "failed": self.check, "reason": self.reason}
        out: JSON = {
            "node": self.node,
            "total": self.total,
            "fits_idle": self.fits_idle,
            "scores": [
                {
                    "plugin": s.plugin,
                    "score": s.score,
                    "parts": [{"name": p.name, "raw": p.raw, "weight": p.weight} for p in s.parts],
                }
                for s in self.scores
            ],
        }
        if self.score_error:
            out["score_error"] = self.score_error
        return out


def _num(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class BindView:
    """A bind and every node's verdict for its pod at the moment it was placed.

    ``problem`` is non-empty (one sentence) when the view could not be derived, and
    ``nodes`` is then empty.
    """

    decision: Event
    nodes: tuple[NodeView, ...] = ()
    problem: str = ""

    @property
    def pod(self) -> str:
        """``namespace/name`` of the bound pod."""
        d = as_decision(self.decision)
        return f"{d.get('namespace')}/{d.get('pod')}"

    @property
    def node(self) -> str:
        """The node the pod was bound to."""
        return str(as_decision(self.decision).get("node") or "")

    @property
    def recorded(self) -> float | None:
        """The total score the bind recorded (None when it recorded none)."""
        score = evidence_of(as_decision(self.decision)).get("score")
        return float(score) if isinstance(score, int | float) else None

    @property
    def chosen(self) -> NodeView | None:
        """The chosen node's verdict (None when not derived)."""
        return next((n for n in self.nodes if n.node == self.node), None)

    @property
    def agrees(self) -> bool:
        """Whether the chosen node came out feasible with the recorded total score."""
        chosen = self.chosen
        return (
            chosen is not None
            and chosen.feasible
            and (self.recorded is None or chosen.total == self.recorded)
        )

    def ranked(self) -> list[NodeView]:
        """The feasible nodes, highest total first, ties by name (the search's order)."""
        return sorted((n for n in self.nodes if n.feasible), key=lambda n: (-n.total, n.node))

    def failed(self) -> list[tuple[str, list[tuple[str, list[str]]]]]:
        """The refused nodes by the check that refused them (most nodes first), each
        check's nodes by reason (most first; names sorted)."""
        groups: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for n in self.nodes:
            if not n.feasible:
                groups[n.check][n.reason].append(n.node)
        out = [
            (check, sorted(((r, sorted(ns)) for r, ns in by.items()), key=_most_first))
            for check, by in groups.items()
        ]
        return sorted(out, key=lambda g: (-sum(len(ns) for _, ns in g[1]), g[0]))

    def plugins(self) -> list[str]:
        """The scoring plugins, in tier order."""
        seen: dict[str, None] = {}
        for n in self.nodes:
            for s in n.scores:
                seen.setdefault(s.plugin, None)
        return list(seen)

    def lines(self, *, limit: int = COMPACT) -> list[str]:
        """The compact text form (``tide audit why``): one line per listed node."""
        if self.problem:
            return [f"per-node view: not derived: {self.problem}"]
        ranked = self.ranked()
        head = f"per-node view ({len(self.nodes)} nodes, {len(ranked)} feasible"
        if not self.agrees:
            head += f"; the derived total of {self.node} differs from the recorded score"
        lines = [head + "):"]
        for n in ranked[:limit]:
            mark = " (chosen)" if n.node == self.node else ""
            idle = "" if n.fits_idle else ", fits only future idle"
            scores = ", ".join(s.text() for s in n.scores) or "no scoring plugin"
            lines.append(f"  {n.node}{mark}: total {_num(n.total)}{idle} = {scores}")
        if len(ranked) > limit:
            lines.append(f"  … {len(ranked) - limit} more feasible node(s)")
        for check, reasons in self.failed():
            count = sum(len(names) for _, names in reasons)
            said = "; ".join(f"{reason} ({_names(names)})" for reason, names in reasons)
            lines.append(f"  {count} node(s) failed {failed_what(check)}: {said}")
        return lines

    def as_json(self) -> JSON:
        """The view as JSON (``tide audit why --json``)."""
        if self.problem:
            return {"derived": False, "problem": self.problem}
        return {
            "derived": True,
            "agrees_with_record": self.agrees,
            "nodes": [n.as_json() for n in self.ranked()]
            + [n.as_json() for n in self.nodes if not n.feasible],
        }


def failed_what(check: str) -> str:
    """What refused a node: ``resources`` (the request does not fit future idle) or the
    refusing predicate plugin's name."""
    return check


def _most_first(group: tuple[str, list[str]]) -> tuple[int, str]:
    return (-len(group[1]), group[0])


def _names(names: list[str], most: int = 3) -> str:
    shown = ", ".join(names[:most])
    return shown + (f", … {len(names) - most} more" if len(names) > most else "")


class _Watched(Statement):
    """A statement that, just before it places a watched task, asks every node about it."""

    def __init__(self, ssn: Session, fold: _Probe) -> None:
        super().__init__(ssn)
        self._probe = fold

    def allocate(
        self,
        task: TaskInfo,
        node_name: str,
        *,
        source: str,
        evidence: Any = None,
        reason: str = "allocate",
    ) -> None:
        self._probe.look(task)
        super().allocate(task, node_name, source=source, evidence=evidence, reason=reason)


class _Probe:
    """What one rebuilt session saw at each placement of a watched pod."""

    def __init__(self, ssn: Session, pods: set[str]) -> None:
        self.ssn = ssn
        self.pods = pods
        #: pod key -> the nodes at its last placement in the session
        self.seen: dict[str, tuple[NodeView, ...]] = {}

    def statement(self) -> Statement:
        return _Watched(self.ssn, self)

    def look(self, task: TaskInfo) -> None:
        if task.key not in self.pods:
            return
        ssn = self.ssn
        nodes = ssn.view.nodes
        verdicts = evaluate_nodes(ssn, task)
        # the parts only for the nodes a view lists (the best PARTS): one split per shown node
        best = sorted((v for v in verdicts if v.feasible), key=lambda v: (-v.total, v.node))
        split = {v.node for v in best[:PARTS]}
        parts = PartsFor(ssn, task)
        views = []
        for v in verdicts:
            scores = tuple(
                PluginScore(
                    name,
                    score,
                    parts.of(nodes[v.node], plugin=name, score=score) if v.node in split else (),
                )
                for name, score in v.scores
            )
            views.append(
                NodeView(v.node, v.check, v.reason, v.fits_idle, scores, v.total, v.score_error)
            )
        self.seen[task.key] = tuple(views)


def _pod_key(event: Event) -> str:
    d = as_decision(event)
    return f"{d.get('namespace')}/{d.get('pod')}"


def _matches(key: str, pod: str | None) -> bool:
    return pod is None or key == pod or key.split("/", 1)[-1] == pod


@dataclass
class BindFold:
    """Bind views in one pass over a log (see the module docstring).

    ``decisions`` are the log's decision records (any order; others are skipped); then
    every record is :meth:`feed` in offset order. ``pod`` (``namespace/name`` or a name)
    derives only that pod's binds. ``world``: fold into this World instead of an own one,
    when the caller folds one already (then call :meth:`before` ahead of its own apply,
    instead of :meth:`feed`). ``since``/``until`` keep the binds of a time range, and
    ``limit`` derives the first that many of them only (each costs one evaluation of every
    node): :attr:`left_out` counts the others.
    """

    decisions: Iterable[Event]
    pod: str | None = None
    world: World = field(default_factory=World)
    #: only the binds at or after / at or before these instants (the report's range)
    since: datetime | None = None
    until: datetime | None = None
    #: derive at most this many binds' views (the first in log order); None: every one
    limit: int | None = None
    _by_cause: dict[str, list[Event]] = field(init=False, default_factory=dict)
    _binds: list[Event] = field(init=False, default_factory=list)
    _views: dict[str, BindView] = field(init=False, default_factory=dict)
    _policy: tuple[int, int, Policy] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        for event in self.decisions:
            if event.type not in DECISION_TYPES or event.cause is None:
                if event.type == "decision.bind" and _matches(_pod_key(event), self.pod):
                    self._binds.append(event)
                continue
            self._by_cause.setdefault(event.cause, []).append(event)
            if event.type == "decision.bind" and _matches(_pod_key(event), self.pod):
                self._binds.append(event)
        self._binds.sort(key=lambda e: e.offset)
        self._binds = [
            e
            for e in self._binds
            if (self.since is None or e.at >= self.since)
            and (self.until is None or e.at <= self.until)
        ]
        #: the binds in range whose views were not derived (past ``limit``)
        self.left_out = max(0, len(self._binds) - self.limit) if self.limit is not None else 0
        if self.limit is not None:
            self._binds = self._binds[: self.limit]
        self._wanted = {e.cause for e in self._binds if e.cause}
        self._fed: set[str] = set()
        self.decisions = ()

    def feed(self, event: Event) -> None:
        """One record of the log, in offset order."""
        self.before(event)
        self.world.apply(event)

    def before(self, event: Event) -> None:
        """Derive the binds ``event`` caused, before it is folded (as replay does)."""
        if event.type == "trigger.fired" and event.id in self._wanted:
            self._fed.add(event.id)
            self._derive(event)

    def pending(self) -> list[str]:
        """The ids of the records that caused binds to derive and were not fed (sorted): a
        fold that began past them (at a checkpoint) derives them with :meth:`resumed`."""
        return sorted(self._wanted - self._fed)

    def resumed(self, world: World, decisions: Iterable[Event]) -> BindFold:
        """A fold of the :meth:`pending` binds only, into ``world`` (a World folded to a
        position at or before the first of their causes), ``decisions`` the log's from
        that position on (the fold compares what their sessions decide with them);
        :meth:`merge` its views back."""
        wanted = set(self.pending())
        other = BindFold((), pod=self.pod, world=world)
        other._binds = [e for e in self._binds if e.cause in wanted]
        for event in decisions:
            if event.type in DECISION_TYPES and event.cause in wanted:
                other._by_cause.setdefault(event.cause, []).append(event)
        other._wanted = wanted
        return other

    def merge(self, other: BindFold) -> None:
        """Take the views ``other`` (a :meth:`resumed` fold) derived."""
        self._views.update(other._views)
        self._fed |= other._fed

    def views(self) -> list[BindView]:
        """Every bind's view, in log order."""
        return [
            self._views.get(e.id)
            or BindView(e, problem="the record that caused it is not on the log")
            for e in self._binds
        ]

    def _load(self) -> Policy | None:
        raw, level = self.world.config, self.world.cluster.rules.behaviour
        if raw is None:
            return None
        held = self._policy
        if held is None or held[:2] != (id(raw), level):
            held = self._policy = (id(raw), level, load_policy(raw, default_behaviour=level))
        return held[2]

    def _derive(self, trigger: Event) -> None:
        binds = [e for e in self._binds if e.cause == trigger.id]
        try:
            policy = self._load()
        except Exception as exc:  # one line, never a traceback: the log's own config
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            self._fail(binds, f"the configuration in force cannot be loaded: {first}")
            return
        if policy is None:
            self._fail(binds, "the log records no configuration (config.applied) before it")
            return
        probe, decided = _rerun(self.world, trigger, policy, {_pod_key(e) for e in binds})
        recorded = [decision_line(e) for e in self._by_cause.get(trigger.id, [])]
        if [decision_line(e) for e in decided] != recorded:
            self._fail(
                binds,
                "its session, rebuilt from the log, decides otherwise (see tide replay --verify)",
            )
            return
        for event in binds:
            seen = probe.seen.get(_pod_key(event))
            self._views[event.id] = (
                BindView(event, seen)
                if seen
                else BindView(event, problem="no placement of the pod was seen in its session")
            )

    def _fail(self, binds: list[Event], problem: str) -> None:
        for event in binds:
            self._views[event.id] = BindView(event, problem=problem)


def _rerun(
    world: World, trigger: Event, policy: Policy, pods: set[str]
) -> tuple[_Probe, list[Event]]:
    """The engine's session for ``trigger`` (as :func:`controller.policy.engine.run_cycle`
    runs it), watching the placements of ``pods``; the probe and the decisions."""
    config = policy.config
    built = build_cycle(config)
    ssn = open_session(world, trigger, tiers=config.tiers, plugins=built.plugins, ctx=built.ctx)
    probe = _Probe(ssn, pods)
    setattr(ssn, "statement", probe.statement)  # noqa: B010 - this instance only
    return probe, run_actions(ssn, built.actions, trigger)


def bind_views(events: Iterable[Event], *, pod: str | None = None) -> list[BindView]:
    """Every bind's view (``pod``'s only, when given) of the log ``events`` (a list or
    other re-iterable, in offset order: read twice, its decisions first)."""
    records = events if isinstance(events, list) else list(events)
    fold = BindFold(records, pod=pod)
    for event in records:
        fold.feed(event)
    return fold.views()


def with_views(found: Iterable[Answer], views: Iterable[BindView]) -> list[Answer]:
    """``found`` with each bind's answer carrying its per-node view (``tide audit why``)."""
    by_id = {view.decision.id: view for view in views}
    out = []
    for answer in found:
        view = by_id.get(answer.decision.id)
        if view is not None:
            answer = dataclasses.replace(
                answer, per_node=tuple(view.lines()), per_node_json=view.as_json()
            )
        out.append(answer)
    return out
