"""The shuffle action (spec ``volcano.md`` §9): evict what victim functions nominate."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from controller.policy.actions.shuffle import RunningTasks
from controller.policy.builtins import BUILTIN_PLUGINS
from controller.policy.engine import run_cycle
from controller.policy.framework.plugin import PluginSpec
from controller.policy.framework.points import Victim
from controller.policy.framework.session import Session
from controller.policy.loader import load_config
from projections.model import TaskInfo
from streams.events import Event
from tests.builders import at, build_node, build_pod, build_podgroup, watch
from tests.controller.policy.framework.scenario import evicts, trigger, world_of

Pick = Callable[[Session, Sequence[TaskInfo]], list[Victim]]


class Nominator:
    def __init__(self, name: str, pick: Pick) -> None:
        self.name = name
        self.pick = pick

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_victim_tasks_fn(self.name, lambda tasks: self.pick(ssn, tasks))

    def on_session_close(self, ssn: Session) -> None:
        del ssn


def registry_of(**picks: Pick) -> dict[str, PluginSpec]:
    table = dict(BUILTIN_PLUGINS)
    for name, pick in picks.items():
        table[name] = PluginSpec(name, lambda raw: None, _builder(name, pick))
    return table


def _builder(name: str, pick: Pick) -> Callable[[Any, Any], Nominator]:
    return lambda args, ctx: Nominator(name, pick)


def by_name(*names: str, reason: str = "low-node-utilization") -> Pick:
    def pick(ssn: Session, tasks: Sequence[TaskInfo]) -> list[Victim]:
        del tasks
        return [Victim(ssn.tasks[f"ns/{n}"], reason, {"why": n}) for n in names]

    return pick


def on_node(node: str, reason: str) -> Pick:
    def pick(ssn: Session, tasks: Sequence[TaskInfo]) -> list[Victim]:
        return [Victim(t, reason, {"node": node}) for t in tasks if t.node_name == node]

    return pick


def cluster_events() -> list[Event]:
    return [
        watch("nodes", build_node("n1")),
        watch("nodes", build_node("n2")),
        watch("podgroups", build_podgroup("ns", "lost", queue="gone")),
        *(watch("pods", build_pod("ns", n, node="n1")) for n in ("c", "a", "b")),
        watch("pods", build_pod("ns", "x", node="n2")),
        watch("pods", build_pod("ns", "leaving", node="n1", deleting=at(0))),
        watch("pods", build_pod("ns", "lost-0", node="n1", group="lost")),
        watch("pods", build_pod("ns", "waiting", phase="Pending")),
    ]


def run(
    tiers: list[list[str]], registry: dict[str, PluginSpec], actions: str = "shuffle"
) -> list[Event]:
    conf: dict[str, Any] = {
        "actions": actions,
        "tiers": [{"plugins": [{"name": n} for n in row]} for row in tiers],
    }
    config = load_config(conf, plugins=registry)
    return run_cycle(world_of(cluster_events()), trigger(at(1)), config, registry=registry)


def test_union_within_a_tier_deduplicated_and_sorted() -> None:
    registry = registry_of(x=by_name("c", "a", reason="tdm-window-closed"), y=by_name("a", "b"))
    decisions = run([["x", "y"]], registry)
    assert evicts(decisions) == ["ns/a", "ns/b", "ns/c"]
    data = [
        (e.data["pod"], e.data["reason"], e.data["source"], e.data["evidence"]) for e in decisions
    ]
    assert data == [
        ("a", "tdm-window-closed", "x", {"why": "a"}),  # x comes first in the tier
        ("b", "low-node-utilization", "y", {"why": "b"}),
        ("c", "tdm-window-closed", "x", {"why": "c"}),
    ]
    assert all(e.type == "decision.evict" and e.data["node"] == "n1" for e in decisions)


def test_first_non_empty_tier_wins() -> None:
    registry = registry_of(none=by_name(), x=by_name("x"), y=by_name("a"))
    assert evicts(run([["none"], ["x"], ["y"]], registry)) == ["ns/x"]


def test_candidates_are_running_tasks_of_session_jobs() -> None:
    registry = registry_of(n1=on_node("n1", "low-node-utilization"))
    # not "leaving" (releasing), "waiting" (pending) or "lost-0" (its queue is missing)
    assert evicts(run([["n1"]], registry)) == ["ns/a", "ns/b", "ns/c"]


def test_an_already_releasing_victim_is_skipped() -> None:
    registry = registry_of(x=by_name("leaving", "a"))
    assert evicts(run([["x"]], registry)) == ["ns/a"]


def test_victims_have_no_effect_without_shuffle() -> None:
    registry = registry_of(x=by_name("a"))
    assert evicts(run([["x"]], registry, actions="allocate")) == []


def test_candidates_are_built_only_when_read() -> None:
    seen: list[RunningTasks] = []

    def ignore(ssn: Session, tasks: Sequence[TaskInfo]) -> list[Victim]:
        assert isinstance(tasks, RunningTasks)
        seen.append(tasks)
        return []

    run([["x"]], registry_of(x=ignore))
    assert seen and seen[0]._tasks is None  # nobody read it all cycle: never built

    # read within its session (a finished cycle's session is disposed: it answers
    # nothing), the same candidates are the Running tasks in (namespace, name) order
    names: list[str] = []

    def read(ssn: Session, tasks: Sequence[TaskInfo]) -> list[Victim]:
        assert isinstance(tasks, RunningTasks) and tasks._tasks is None
        names.extend(t.name for t in tasks)
        return []

    run([["y"]], registry_of(y=read))
    assert names == ["a", "b", "c", "x"]
