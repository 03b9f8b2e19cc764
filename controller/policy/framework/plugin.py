"""The shapes of a plugin and an action, and the registry entries that build them.

A plugin answers scheduling questions (it registers named callables when the session opens; the
session walks the tiers and combines the answers); an action walks the session and stages operations
on a statement, which commit turns into decision events (as volcano-sh/volcano's ``Session.Add*Fn``
and ``Statement``, pkg/scheduler/framework). Both are built once per configuration from typed,
validated arguments (``parse_args`` raises :class:`~controller.policy.framework.errors.ConfigError`
naming
the key and value), unlike Volcano's untyped ``Arguments`` map that warns and moves on. A plugin
module exposes::

    NAME: str
    def parse_args(raw: Mapping[str, Any]) -> Args
    def build(args: Args, ctx: PluginContext) -> Plugin

optionally ``def schedules(args: Args, ctx: PluginContext) -> tuple[Schedule, ...]``
(the triggers the plugin needs, as data: see :class:`Schedule`), and an action module::

    NAME: str
    def parse_args(raw: Mapping[str, Any]) -> Args
    def build(args: Args) -> Action

Plugins must not keep state between sessions that is not derived from the session
(time comes from ``ssn.now``; history from ``ssn.history``), so that replay re-derives
the same decisions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol
from zoneinfo import ZoneInfo

from projections.behaviour import Change

if TYPE_CHECKING:
    from controller.policy.framework.session import Session


@dataclass(frozen=True)
class PluginContext:
    """What a plugin may know besides its arguments and the session.

    ``timezone`` is the configured IANA zone (TDM windows are read in it);
    ``scheduler_name`` selects the pods tide may bind; ``options`` carries any further
    process-level settings (read-only).
    """

    timezone: ZoneInfo
    scheduler_name: str
    options: Mapping[str, Any] = field(default_factory=dict)


class Plugin(Protocol):
    """A plugin registers its extension-point callables on session open."""

    name: str

    def on_session_open(self, ssn: Session) -> None: ...

    def on_session_close(self, ssn: Session) -> None: ...


class Action(Protocol):
    """An action walks the session and stages operations on statements it commits.

    ``triggers`` names the ``trigger.fired`` kinds the action runs on (None: every kind).
    Placement belongs to the session tick; a TDM window end or evict period only needs
    the eviction actions, and must stay cheap (the tick right after it allocates anyway).
    """

    name: str
    triggers: frozenset[str] | None

    def execute(self, ssn: Session) -> None: ...


_UTC = ZoneInfo("UTC")


@dataclass(frozen=True, slots=True)
class Cron:
    """Fire every day at ``hour:minute:second`` wall time in ``tz``.

    A repeated wall time (autumn) fires twice; a skipped one (spring) fires at the
    pre-transition offset (APScheduler 3.11 ``CronTrigger``'s behaviour, which the trigger
    plan keeps).
    """

    hour: int
    minute: int
    second: int = 0
    tz: ZoneInfo = _UTC


class Anchor(Protocol):
    """Where an :class:`Interval` is anchored, given the registration time."""

    def before(self, at: datetime) -> datetime:
        """The anchor instant (aware, ``<= at``) for a plan registered at ``at``."""
        ...


@dataclass(frozen=True, slots=True)
class Interval:
    """Fire every ``period`` (absolute time) from an anchor.

    ``anchor`` None: the registration time itself; otherwise ``anchor.before(start)``, a pure
    function of the registration time (e.g. TDM's latest window close), so a plan registered
    later fires at the same instants as one registered earlier.
    """

    period: timedelta
    anchor: Anchor | None = None
    tz: ZoneInfo = _UTC


@dataclass(frozen=True, slots=True)
class Schedule:
    """A trigger a plugin needs, as data: the trigger plan turns it into a scheduler object.

    Policy code may not import a scheduler library (the import contracts forbid it), so a
    plugin only *describes* when it wants a session: ``name`` (unique; the ``trigger`` of
    the ``trigger.fired`` records), ``kind`` (the records' ``kind``; actions select on it),
    ``zone`` (written into the records when set) and ``when``. ``rank`` orders triggers
    due at the same instant (lower first; the session tick ranks :data:`TICK_RANK`).
    ``always_written``: the loop writes every firing, even one that decides nothing (by
    default such a firing is dropped), so that a policy can fold "when did this last
    fire" from the log (rescheduling's interval).
    """

    name: str
    kind: str
    when: Cron | Interval
    zone: str | None = None
    rank: int = 0
    always_written: bool = False


#: The session tick's tie-break rank: after every plugin trigger due at the same instant.
TICK_RANK = 100


@dataclass(frozen=True)
class PluginSpec:
    """A registry entry: how to validate a plugin's arguments and build it.

    ``schedules`` (optional) declares the triggers the plugin needs for given arguments;
    ``warnings`` (optional) returns startup warnings for given arguments and the
    configured action names (e.g. a victim function that no configured action calls).
    ``since`` is the behaviour change that brought the plugin (None: it always existed,
    :mod:`projections.behaviour`): a configuration stamped with an earlier level (an old
    log's) treats it as unimplemented, as the tide that wrote the log did.
    """

    name: str
    parse_args: Callable[[Mapping[str, Any]], Any]
    build: Callable[[Any, PluginContext], Plugin]
    schedules: Callable[[Any, PluginContext], tuple[Schedule, ...]] | None = None
    warnings: Callable[[Any, tuple[str, ...]], tuple[str, ...]] | None = None
    since: Change | None = None


@dataclass(frozen=True)
class ActionSpec:
    """A registry entry for an action; ``parse_args`` reads its ``configurations`` entry.

    ``since`` is the behaviour change that brought the action (None: it always existed),
    as a plugin's: a configuration of an older level that names it has it skipped.
    """

    name: str
    parse_args: Callable[[Mapping[str, Any]], Any]
    build: Callable[[Any], Action]
    since: Change | None = None


def no_args(raw: Mapping[str, Any]) -> None:
    """``parse_args`` for plugins and actions without arguments.

    Unknown keys are ignored, as Volcano does: a pasted Volcano configuration often
    carries arguments for features tide does not model.
    """
    del raw
