"""`tide state`: the cluster as the log says it was at a point.

Folds a log (any ``open_log`` URL or ``.db`` path) up to ``--offset N`` (records with offset
< N) or ``--at TIME`` (every record whose ``at`` ≤ TIME), then prints the nodes (zone,
Ready, allocatable, idle, task count), the tasks by status, the jobs (min available, ready
count, budget, queue) and the queues: rich tables by default, or one deterministic JSON
document (sorted keys and rows) with ``--json``. A node whose bound requests exceed its
allocatable is named with its excess (``overcommitted`` in the JSON, present only then;
:mod:`projections.overcommit`), never left to read as negative idle.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from controller.cli.common import fail, require_file, require_log
from controller.cli.progress import Progress
from projections.base import paused_gc
from projections.model import ALLOCATED_STATUSES, JobInfo, Resource, TaskStatus
from projections.overcommit import amount
from projections.overcommit import current as overcommitted
from projections.store import resume_at
from projections.world import World
from streams.backends import open_reader
from streams.backends.checkpoints import open_log_store
from streams.events import JSON, parse_time
from streams.urls import DEFAULT_LOG

_READY = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED}


async def fold_log(url: str, *, at: datetime | None = None, offset: int | None = None) -> World:
    """The world folded from ``url``: records with offset < ``offset`` and ``at`` ≤ ``at``.

    The fold resumes from the nearest checkpoint kept with the log that is usable at
    ``offset`` and, with ``at``, holds only records at or before ``at``
    (:func:`projections.store.resume_at`); the result is the same as a fold from offset 0
    (records are not in time order, so the records after the checkpoint are all read and
    those after ``at`` skipped). Nothing is written.
    """
    require_log(url)
    async with await open_reader(url) as log:
        world = None
        store = await open_log_store(log.url or url, create=False)
        if store is not None:
            async with store:
                world = await resume_at(store, log, upto=offset, at=at)
        if world is None:
            world = World()
        begin = world.position
        bar = Progress("state", (offset if offset is not None else await log.head()) - begin)
        with paused_gc(), bar:
            async for event in log.read(world.position, offset):
                if bar.on:
                    bar.update(event.offset - begin)
                if at is None or event.at <= at:
                    world.apply(event)
    return world


def _resource(resource: Resource | None) -> dict[str, float] | None:
    if resource is None:
        return None
    out = {"cpu_milli": resource.milli_cpu, "memory": resource.memory}
    out.update({name: resource.scalars[name] for name in sorted(resource.scalars)})
    return out


def _ready_count(job: JobInfo) -> int:
    return sum(1 for task in job.tasks.values() if task.status in _READY)


def state_report(world: World) -> JSON:
    """The state as plain JSON, every list sorted (the ``--json`` document)."""
    cluster = world.cluster
    nodes = [
        {
            "name": node.name,
            "zone": node.revocable_zone,
            "ready": node.ready,
            "unschedulable": node.unschedulable,
            "known": not node.placeholder,
            "allocatable": _resource(node.allocatable),
            "idle": _resource(node.idle),
            "used": _resource(node.used),
            "releasing": _resource(node.releasing),
            "pipelined": _resource(node.pipelined),
            "tasks": len(node.tasks),
        }
        for node in (cluster.nodes[name] for name in sorted(cluster.nodes))
    ]
    by_status: dict[str, int] = {}
    for status in TaskStatus:
        count = sum(1 for task in cluster.tasks.values() if task.status == status)
        if count:
            by_status[status.name.title()] = count
    tasks = [
        {
            "key": key,
            "status": task.status.name.title(),
            "node": task.node_name,
            "job": task.job,
            "priority": task.priority,
            "qos": task.qos,
            "preemptable": task.preemptable,
        }
        for key, task in sorted(cluster.tasks.items())
    ]
    jobs = [
        {
            "id": job_id,
            "queue": job.queue,
            "phase": job.phase,
            "min_available": job.min_available,
            "ready": _ready_count(job),
            "tasks": len(job.tasks),
            "budget": {
                "min_available": job.budget_min_available,
                "max_unavailable": job.budget_max_unavailable,
            },
            "preemptable": job.preemptable,
            "implicit": job.implicit,
            "podgroup_seen": not job.placeholder,
        }
        for job_id, job in sorted(cluster.jobs.items())
    ]
    jobs_per_queue: dict[str, int] = {}
    for job in cluster.jobs.values():
        jobs_per_queue[job.queue] = jobs_per_queue.get(job.queue, 0) + 1
    queues = [
        {
            "name": name,
            "weight": queue.weight,
            "priority": queue.priority,
            "state": queue.state,
            "capability": _resource(queue.capability),
            "guarantee": _resource(queue.guarantee),
            "jobs": jobs_per_queue.get(name, 0),
        }
        for name, queue in sorted(cluster.queues.items())
    ]
    over = overcommitted(cluster.nodes.values())
    # the over-commit invariant broken: said (and only then), not left as negative room
    found = [{"node": name, "excess": excess} for name, excess in over]
    return {
        "position": world.position,
        "version": cluster.version,
        "skipped": cluster.skipped,
        "nodes": nodes,
        "tasks": {"by_status": by_status, "items": tasks},
        "jobs": jobs,
        "queues": queues,
        **({"overcommitted": found} if found else {}),
    }


def _cpu(resource: dict[str, float] | None) -> str:
    return "-" if resource is None else f"{resource['cpu_milli'] / 1000:g}"


def _memory(resource: dict[str, float] | None) -> str:
    if resource is None:
        return "-"
    value = resource["memory"]
    for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if abs(value) >= size:
            return f"{value / size:.1f}{unit}"
    return f"{value:g}"


def render(report: JSON, console: Console, *, limit: int = 50) -> None:
    """Print the report as rich tables, at most ``limit`` rows per table."""

    def rows(items: list[Any]) -> tuple[list[Any], int]:
        return items[:limit], max(len(items) - limit, 0)

    console.print(f"[bold]position[/] {report['position']}  [bold]version[/] {report['version']}")
    nodes = Table(title="Nodes")
    for column in (
        "node",
        "zone",
        "ready",
        "alloc cpu",
        "alloc mem",
        "idle cpu",
        "idle mem",
        "tasks",
    ):
        nodes.add_column(column)
    shown, more = rows(report["nodes"])
    for n in shown:
        ready = "yes" if n["ready"] else ("unknown" if not n["known"] else "no")
        nodes.add_row(
            n["name"],
            n["zone"] or "-",
            ready,
            _cpu(n["allocatable"]),
            _memory(n["allocatable"]),
            _cpu(n["idle"]),
            _memory(n["idle"]),
            str(n["tasks"]),
        )
    console.print(nodes)
    if more:
        console.print(f"… and {more} more nodes")
    for over in report.get("overcommitted", []):
        console.print(
            f"[bold red]over-committed[/] {over['node']}: bound requests exceed allocatable"
            f" by {amount(over['excess'])}"
        )
    statuses = Table(title="Tasks by status")
    statuses.add_column("status")
    statuses.add_column("tasks", justify="right")
    for status, count in report["tasks"]["by_status"].items():
        statuses.add_row(status, str(count))
    console.print(statuses)
    jobs = Table(title="Jobs")
    for column in ("job", "queue", "phase", "min", "ready", "tasks", "budget"):
        jobs.add_column(column)
    shown, more = rows(report["jobs"])
    for j in shown:
        budget = j["budget"]
        text = (
            f"minAvailable={budget['min_available']}"
            if budget["min_available"]
            else f"maxUnavailable={budget['max_unavailable']}"
            if budget["max_unavailable"]
            else "-"
        )
        phase = j["phase"] if j["podgroup_seen"] else "(no PodGroup yet)"
        jobs.add_row(
            j["id"],
            j["queue"],
            phase,
            str(j["min_available"]),
            str(j["ready"]),
            str(j["tasks"]),
            text,
        )
    console.print(jobs)
    if more:
        console.print(f"… and {more} more jobs")
    queues = Table(title="Queues")
    for column in ("queue", "weight", "priority", "state", "cap cpu", "cap mem", "jobs"):
        queues.add_column(column)
    for q in report["queues"]:
        queues.add_row(
            q["name"],
            str(q["weight"]),
            str(q["priority"]),
            q["state"],
            _cpu(q["capability"]),
            _memory(q["capability"]),
            str(q["jobs"]),
        )
    console.print(queues)


def state(
    source: Annotated[
        str | None,
        typer.Argument(
            metavar="LOG", help="Log URL or .db path (default tide.db).", show_default=False
        ),
    ] = None,
    log: Annotated[
        str | None,
        typer.Option("--log", help="The same as LOG (kept for older scripts).", show_default=False),
    ] = None,
    at: Annotated[
        str | None, typer.Option("--at", help="Fold records with at ≤ TIME (RFC 3339).")
    ] = None,
    offset: Annotated[
        int | None, typer.Option("--offset", help="Fold records with offset < N.", min=0)
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    limit: Annotated[int, typer.Option(help="Rows per table (tables only).", min=1)] = 50,
) -> None:
    """Show the folded cluster state: nodes, tasks by status, jobs and queues."""
    log = _one_log(source, log)
    if at is not None and offset is not None:
        typer.echo("error: give --at or --offset, not both", err=True)
        raise typer.Exit(2)
    require_file(log)
    when = None
    if at is not None:
        try:
            when = parse_time(at)
        except ValueError as exc:
            typer.echo(f"error: --at {at!r}: {exc}", err=True)
            raise typer.Exit(2) from exc
    try:
        world = asyncio.run(fold_log(log, at=when, offset=offset))
    except (OSError, ValueError) as exc:
        typer.echo(f"error: {log}: {exc}", err=True)
        raise typer.Exit(2) from exc
    report = state_report(world)
    if as_json:
        text = orjson.dumps(report, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
        typer.echo(text.decode())
    else:
        render(report, Console(), limit=limit)


def _one_log(source: str | None, option: str | None) -> str:
    """The log named by the positional LOG or ``--log`` (the same log given twice is
    fine; two different ones are exit 2), ``tide.db`` when neither is given."""
    if source is not None and option is not None and source != option:
        fail(f"LOG {source} and --log {option} name two logs: give one")
    return source or option or DEFAULT_LOG


def register(app: typer.Typer) -> None:
    """Add this module's commands to the app."""
    app.command("state")(state)
