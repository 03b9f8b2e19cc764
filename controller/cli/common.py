"""Helpers shared by the command modules: loading configurations and logs, errors.

Every command imports this module, so what only some of them need (an event loop, the
Kubernetes client's errors, the checkpoint store, YAML, a crash file) is imported where
it is used: start-up of an offline command (issue 26, item 4;
tests/controller/cli/test_startup.py)."""

from __future__ import annotations

import functools
import inspect
import os
import re
import select
import signal
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, ParamSpec, TypeVar, cast

import typer

from controller.policy.framework.errors import ConfigError
from streams.backends import not_a_sqlite_log, open_reader
from streams.events import JSON, Event
from streams.gcpause import paused_gc
from streams.log import LogError, Quarantined
from streams.payloads import ConfigPayload, RawConfig
from streams.urls import is_recording_path, parse_log_url

if TYPE_CHECKING:
    import asyncio

    from controller.policy.loader import Policy
    from projections.world import World


def _check_config(data: JSON) -> None:
    """A ``config.applied`` is kept only when its configuration loads (as replay will)."""
    # validation ran the config.applied check before this rule: the payload has its shape
    from controller.policy.loader import load_policy

    config = cast(ConfigPayload, data).get("config")
    if isinstance(config, dict):
        load_policy(config)  # ConfigError (a ValueError) names the key and the value


#: what the commands that read recordings (log import, simulate) hold records to beyond the
#: log layer's own checks: a ``config.applied`` must load
RECORD_CHECKS = {"config.applied": _check_config}

P = ParamSpec("P")
R = TypeVar("R")
#: errors about the user's input (a log, a file, a URL, a configuration): one line, no
#: traceback. ConfigError, ValidationError, CheckpointError and ScenarioError are ValueErrors.
DOMAIN_ERRORS: tuple[type[BaseException], ...] = (LogError, ValueError, OSError)

#: set-aside lines named in a summary (``tide log import``, a ``.jsonl`` read whole)
SHOWN = 20

#: exit codes (docs/commands.md, "Exit codes"): success; input set aside or a verification
#: difference; a usage or configuration error; an internal error (a bug in tide)
EXIT_OK, EXIT_DIFFERENCE, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
#: stopped by Ctrl-C (SIGINT): 128 + 2, what a shell reports for a program SIGINT ended
EXIT_INTERRUPTED = 130
#: the reader of stdout went away (``| head``): 128 + 13, as for a program SIGPIPE ended
EXIT_PIPE = 141

#: the signals that stopped a live command (`tide run`, `tide record`) since
#: :func:`run_against_cluster` started it: a SIGINT among them is exit 130 after the stop
_STOPPED_BY: list[int] = []


#: the exceptions of the click typer runs on: the `click` package for older typers, the
#: copy typer bundles for newer ones (which no longer install `click`, and define their
#: exit and abort in `typer.exceptions`)
_CLICK_ERRORS = sys.modules[typer.BadParameter.__module__]

#: what the command line raises on purpose (an exit, a usage error): never an internal error
_CLI_EXITS: tuple[type[BaseException], ...] = (
    typer.Exit,
    typer.Abort,
    *(
        getattr(_CLICK_ERRORS, name)
        for name in ("Exit", "ClickException", "Abort")
        if hasattr(_CLICK_ERRORS, name)
    ),
)


def guarded(command: Callable[P, R]) -> Callable[P, R]:
    """``command`` with its domain errors turned into one ``error:`` line and exit code 2,
    and any other exception into one line naming where its traceback was written, exit 3."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt:  # Ctrl-C: the shell's code for it, no traceback
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except _CLI_EXITS:
            raise
        except BrokenPipeError:
            if not _stdout_closed():
                raise  # a socket's, not the reader of our output: an error as any other
            _silence_stdout()  # `tide audit decisions | head`: the reader had enough
            raise typer.Exit(EXIT_PIPE) from None
        except DOMAIN_ERRORS as exc:
            lines = str(exc).strip().splitlines() or [type(exc).__name__]
            fail(lines[0], code=EXIT_USAGE)
        except Exception as exc:
            internal_error(exc)

    return run


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (poll says POLLERR on it)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll, no file descriptor
        return False


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the flush at exit does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def internal_error(exc: BaseException) -> NoReturn:
    """Write ``exc``'s traceback to a fresh file and exit 3 with one line naming it."""
    import tempfile
    import traceback

    details = "".join(traceback.format_exception(exc))
    try:
        fd, name = tempfile.mkstemp(prefix="tide-crash-", suffix=".txt")
        with os.fdopen(fd, "w") as out:
            out.write(details)
        where = f"details in {name}"
    except OSError:
        where = "the details could not be written"
    first = (str(exc).strip().splitlines() or [""])[0]
    fail(f"internal error: {type(exc).__name__}: {first} ({where})", code=EXIT_INTERNAL)


def require_persistent(url: str, *, option: str = "--log") -> None:
    """Refuse a log that cannot outlive the command (``memory://``, ``sqlite://``,
    ``sqlite:///``) where keeping the records is the point."""
    if not parse_log_url(url).is_persistent:
        fail(f"{option} {url}: a throw-away log would be lost when the command ends; name a file")


#: reStructuredText a docstring may hold that ``--help`` shows as plain text: a role
#: (``:class:`~a.B```, ``:func:`f```) and a literal (double backticks)
_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")


def plain(text: str) -> str:
    """``text`` (a docstring) without its reStructuredText markup: ``:class:`~a.B``` is
    ``B``, ``:func:`a.f``` is ``a.f``, a literal in double backticks its bare text."""

    def role(match: re.Match[str]) -> str:
        target = match.group(1)
        return target.rsplit(".", 1)[-1] if match.group(0).count("~") else target

    return _LITERAL.sub(r"\1", _ROLE.sub(role, text))


def plain_help(app: typer.Typer) -> None:
    """Every command's and group's help in ``app`` as plain text (:func:`plain`); the app
    itself prints its help without rich's panels, whose flags read ``<bool>``."""
    app.rich_markup_mode = None
    for command in app.registered_commands:
        doc = command.help or (inspect.getdoc(command.callback) if command.callback else None)
        if doc:
            command.help = plain(doc)
    for group in app.registered_groups:
        if isinstance(group.help, str):
            group.help = plain(group.help)
        if group.typer_instance is not None:
            info = group.typer_instance.info
            if isinstance(info.help, str):
                info.help = plain(info.help)
            plain_help(group.typer_instance)


def require_log(source: str) -> None:
    """Reading commands never create a log nor take another file for one: a missing path
    is an error, and so is a local file that is not a tide log (exit 2, one line naming
    the path and why: a directory, an empty file, a SQLite file of someone else's)."""
    path = Path(source) if is_recording_path(source) else parse_log_url(source).local_file
    if path is None:
        return
    if not path.exists():
        fail(f"{source}: no such log ({path} does not exist)")
    if is_recording_path(source):
        if path.is_dir():
            fail(f"{source}: is a directory, not a recording")
        return
    why = not_a_sqlite_log(path)
    if why is not None:
        fail(f"{source}: {why}")


def fail(message: str, code: int = 2) -> NoReturn:
    """Print an error on stderr and exit."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def read_policy(paths: Path | Sequence[Path]) -> Policy:
    """Read and load one or more configuration files (:func:`controller.policy.loader.load_policy`).

    Each file may be a tide configuration or a ConfigMap wrapping one (a Volcano scheduler
    ConfigMap, say, next to a file with tide's own keys). Their top-level keys are merged;
    a key given by two files is an error naming both. A file that cannot be read or parsed,
    or an invalid value, stops with the path and the reason (the key and the value); each
    warning is printed once on stderr.
    """
    from controller.policy.loader import load_policy

    files = [paths] if isinstance(paths, Path) else list(paths)
    merged: RawConfig = {}
    origin: dict[str, Path] = {}
    for path in files:
        inner = _read_config_file(path)
        for key in sorted(inner):
            if key in origin:
                fail(f"{path}: key {key!r} is also given by {origin[key]}")
            origin[key] = path
            merged[key] = inner[key]
    label = ", ".join(str(p) for p in files)
    try:
        policy = load_policy(merged, strict=True)
    except (ConfigError, ValueError) as exc:
        fail(f"{label}: {exc}")
    for warning in policy.warnings:
        typer.echo(f"warning: {warning}", err=True)
    return policy


def _read_config_file(path: Path) -> RawConfig:
    """One configuration file's keys (a ConfigMap unwrapped, its notes printed), or exit."""
    from controller.policy.framework.safe_yaml import YAMLLimitError, load_yaml
    from controller.policy.framework.unwrap import unwrap

    try:
        raw = load_yaml(path)
    except OSError as exc:
        fail(f"{path}: {exc.strerror or exc}")
    except YAMLLimitError as exc:
        fail(str(exc))
    if raw is None or raw == {}:  # never Volcano's default in its place, silently
        fail(f"{path}: the configuration is empty (no keys, only blanks or comments)")
    if not isinstance(raw, dict):
        fail(f"{path}: a configuration is a mapping")
    try:
        inner, notes = unwrap(raw)
    except ConfigError as exc:
        fail(f"{path}: {exc}")
    if not inner:
        fail(f"{path}: the configuration it wraps is empty (no keys)")
    for note in notes:
        typer.echo(f"{path}: {note}", err=True)
    return inner


def read_log_events(source: str) -> list[Event]:
    """All records of a log URL, a ``.db`` path, or a ``.jsonl`` recording."""
    if is_recording_path(source):
        from streams.recording import read_recording

        events = []
        aside: list[Quarantined] = []
        for item in read_recording(Path(source), extra=RECORD_CHECKS):
            if isinstance(item, Event):
                events.append(item)
            else:  # reported, never dropped silently
                aside.append(item)
        if aside:  # as `tide log import` names them: line number and reason
            typer.echo(f"{source}: {len(aside)} line(s) set aside, not read:", err=True)
            for item in aside[:SHOWN]:
                typer.echo(f"  {item.source}:{item.line}: {item.reason}", err=True)
            if len(aside) > SHOWN:
                typer.echo(f"  ... and {len(aside) - SHOWN} more", err=True)
        return [e.with_offset(i) for i, e in enumerate(events)]
    require_log(source)
    import asyncio

    async def load() -> list[Event]:
        async with await open_reader(source) as log:
            return await log.read_all()

    with paused_gc():
        return asyncio.run(load())


def persist(
    url: str, events: Sequence[Event], *, run: str | None = None, another_run: bool = False
) -> int:
    """Append ``events`` to the log at ``url`` and checkpoint it (:func:`save_checkpoint`);
    returns how many were new. ``run``: see :class:`streams.chain.ChainWriter`."""
    from controller.compose.simulated import save_checkpoint
    from controller.simulate.runner import save_log

    added = save_log(url, list(events), run=run, another_run=another_run)
    save_checkpoint(url)
    return added


def run_against_cluster(main: Coroutine[Any, Any, object], log_url: str) -> None:
    """Run a command that talks to a cluster (``tide record``, ``tide run``) to its end,
    turn its API and log errors into one line, and leave a checkpoint at the log's head."""
    import asyncio

    from controller.compose.simulated import save_checkpoint
    from controller.drive.kube.errors import KubeError

    _STOPPED_BY.clear()
    try:
        asyncio.run(main)
    except KubeError as exc:
        fail(f"{exc} (does the ClusterRole in deploy/ grant it?)")
    except (LogError, ValueError) as exc:
        fail(str(exc))
    save_checkpoint(log_url)
    if signal.SIGINT in _STOPPED_BY:  # the same clean stop as SIGTERM; Ctrl-C's exit code
        raise typer.Exit(EXIT_INTERRUPTED)


def stop_on_signals() -> asyncio.Event:
    """An event SIGTERM and SIGINT set: a live command's clean stop (its effects in flight
    finish, the log is sealed). :func:`run_against_cluster` exits 130 after a SIGINT."""
    import asyncio

    stop = asyncio.Event()
    running = asyncio.get_running_loop()

    def stopped(signum: int) -> None:
        _STOPPED_BY.append(signum)
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        running.add_signal_handler(signum, stopped, signum)
    return stop


async def resume_from(source: str, start: int) -> tuple[World | None, list[Event]]:
    """A World resumed at or before ``start`` from the checkpoint kept with the log at
    ``source`` (None if there is no usable one), and the records from its position on
    (all of them without a checkpoint). Writes nothing."""
    from projections.store import resume_at
    from streams.backends.checkpoints import open_log_store

    require_log(source)
    async with await open_reader(source) as log:
        world = None
        store = await open_log_store(log.url or source, create=False)
        if store is not None:
            async with store:
                world = await resume_at(store, log, upto=start)
        with paused_gc():
            events = await log.read_all(world.position if world is not None else 0)
    return world, events


def require_file(source: str) -> None:
    """A log given as a plain path (not a URL) must exist: ``error: PATH: no such log``;
    any local path must be a tide log (:func:`require_log`)."""
    if "://" not in source and not Path(source).exists():
        fail(f"{source}: no such log")
    require_log(source)
