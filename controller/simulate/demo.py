"""`tide demo`: the embedded default, end to end, in well under a minute.

A built-in co-located cluster (online nodes, a day-time revocable zone, a night-only
zone whose window runs across midnight, online and batch workloads, jobs with
budgets, a CPU spike and a leaking pod) runs through a day of virtual time against the
simulated cluster. The log is kept in a SQLite file; the timeline and a summary are
printed (the commands to try next are the command line's: :mod:`controller.cli.demo_cmd`).
"""

from __future__ import annotations

from collections import Counter
from importlib import resources
from pathlib import Path

import typer
import yaml

from controller.policy.loader import load_policy
from controller.simulate.runner import Simulation, save_log
from controller.simulate.scenario import expand, frees_usage
from streams.events import Event, format_time
from streams.payloads import as_decision, as_taint


def _data(name: str) -> str:
    return resources.files("controller.simulate").joinpath("data", name).read_text()


def describe(decision: Event) -> str:
    """One readable timeline line for a decision."""
    d = as_decision(decision)
    ev = d.get("evidence") or {}
    when = format_time(decision.at)[11:19]
    if d.get("kind") in ("taint", "untaint"):
        t = as_taint(decision)
        taint = t.get("taint") or {}
        mark = f"{taint.get('key')}:{taint.get('effect')}"
        return f"{when}  {t['kind']:7} {t.get('node')}  {mark}  ({t.get('reason')})"
    pod = f"{d.get('namespace')}/{d.get('pod')}"
    verb = "bind " if d.get("kind") == "bind" else "evict"
    where = "to" if d.get("kind") == "bind" else "from"
    extra = ""
    if ev.get("zone"):
        extra = f" zone {ev['zone']} window {ev.get('window', '')}"
    elif "pressure" in ev:
        extra = f" pressure {ev['pressure']}%"
    return f"{when}  {verb}   {pod:22} {where} {d.get('node')}  {d.get('reason')}{extra}"


def run_demo(db: Path, *, echo: bool = True, behaviour: int | None = None) -> list[Event]:
    """Run the demo, keep its log in ``db``, print what happened; returns the decisions.

    ``behaviour``: run at that level instead of the current one (the golden demo logs of
    earlier levels stay tested)."""
    raw_config = yaml.safe_load(_data("demo-config.yaml"))
    policy = load_policy(raw_config)
    config, eviction = policy.config, policy.eviction
    scenario = yaml.safe_load(_data("demo-scenario.yaml"))
    events, _, until = expand(scenario)
    result = Simulation(
        config,
        eviction=eviction,
        config_source="tide demo",
        relief=frees_usage(scenario),
        behaviour=behaviour,
    ).run(events, until=until)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    save_log(f"sqlite:///{db}", result.log.events, run="demo")
    if not echo:
        return result.decisions
    out = typer.echo
    span = f"{format_time(events[0].at)} → {format_time(until) if until else '?'}"
    out(
        f"tide demo: a co-located cluster through a day ({span}),"
        " zones: day 08:00-20:00, night 22:00-04:00 (UTC)\n"
    )
    day = ""
    for decision in result.decisions:
        date = format_time(decision.at)[:10]
        if date != day:
            day = date
            out(f"── {day} ──")
        out("  " + describe(decision))
    counts = Counter(
        f"{data.get('kind')} {data.get('reason')}"
        for data in (as_decision(d) for d in result.decisions)
    )
    out("\nsummary:")
    for key, count in sorted(counts.items()):
        out(f"  {count:4}  {key}")
    out(f"  {len(result.log.events)} records on the log, {result.sessions} sessions run\n")
    return result.decisions  # the commands to try next: controller.cli.demo_cmd
