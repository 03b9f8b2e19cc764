"""The controller's step: one record in, the records to write and the decisions out.

Why one step: the controller runs on two clocks — a virtual one (``tide simulate``,
``tide demo``, the test harnesses) and the real one (``tide run``) — and ``tide replay
--verify`` must re-derive what either wrote. Every rule about *what is written* therefore
lives here, once, and the drivers (:mod:`controller.drive.loop.virtual`, the live loop) only move
records between the clock, the log, the step and the effector:

* **Inputs** (watch events, metric samples, effect outcomes) are folded first; a
  ``metrics.node`` sample then goes to pressure eviction (decided *after* its fold: the
  check reads the sample) — it is a *decision point* (:meth:`Step.decides_on`). A written
  input is folded, then decided (:meth:`Step.on_input`: the virtual loop, whose decisions
  follow in their own batch); a decision point that must share one append with its
  decisions (the live loop: a kill between two appends would leave a sample whose
  decisions replay re-derives and no restart can write at their place) is folded *ahead*
  of its write (:meth:`Step.on_input_ahead`). Both give the same decisions: no fold and no
  policy reads a record's offset or hash link, which are all the write adds.
* **Who may decide**: only a leader. A standby folds what it writes and decides nothing;
  it writes no decision point (:meth:`Step.writes`: replay would expect the decisions it
  may not make).
* **Records the log holds already** — read back on a start (:meth:`Step.on_logged`), or the
  whole log folded afresh when another writer appended (:meth:`Step.refold`) — are folded
  and never decided: what they caused is on the log already.
* **Triggers** are decided *before* they are folded (a ``trigger.fired`` record changes no
  state, so deciding before or after is the same, and the step can then drop it): a firing
  that decides nothing is not written, except window boundaries, which always are (the
  zone changed: audit and the next tick need them on the log), and the firings of any
  schedule a plugin declares ``always_written`` (a policy folds their last firing).
* **Quiet ticks** are not run: a session tick whose cluster is unchanged since the last
  tick's session (same cluster version), with no window boundary since, and less than
  :data:`QUIET_TICK_LIMIT` after that session. Up to behaviour level 2 every watch change
  counts (``ClusterState.version``), so on a real cluster, where some node heartbeats
  every second, nearly every tick ran a full session; from level 3
  (:data:`~projections.behaviour.QUIET_TICK_SEEN`) only
  changes a session can see count (``ClusterState.sched_version``: a node update that
  leaves the node's model fields equal, a heartbeat, does not). What a session reads
  beside the cluster (metric samples, the OOM and pressure projections, the clock) never
  counted at either level: a session that would react to those alone runs at the latest
  :data:`QUIET_TICK_LIMIT` after the last one, as at level 2 when no watch event came.
* **Follow-ups** (pressure eviction's later graceful batches and untaints) come from the
  pressure projection (:func:`controller.policy.pressure.followups.pending_followups`); each
  (time, kind) fires once, as a ``trigger.fired`` record written only when it decides something.

The step never appends: it returns what to write, the driver writes it (the log assigns
offsets) and hands the written records back to :meth:`Step.fold`. A decision is a pure
function of the World the step folded — the log prefix before its trigger.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from controller.policy.builtins import BUILTIN_PLUGINS
from controller.policy.decide import decide
from controller.policy.framework.config import TideConfig, plugin_context, plugin_entries
from controller.policy.pressure.config import EvictionConfig
from controller.policy.pressure.followups import Followup, FollowupCache
from controller.policy.trigger_events import trigger_event
from projections.behaviour import QUIET_TICK_SEEN
from projections.usage_fresh import freshness
from projections.world import World
from streams.events import Event
from streams.payloads import as_node_sample, as_trigger

#: trigger kinds that are written even when they decide nothing
ALWAYS_WRITTEN = frozenset({"window-start", "window-end"})
#: A tick whose world is unchanged still runs a session this often, for what changes with
#: time alone (an LS reservation expiring, say).
QUIET_TICK_LIMIT = timedelta(seconds=60)
_NEVER = datetime.min.replace(tzinfo=UTC)


class Step:
    """The pure step of the controller loop (see the module docstring).

    Args:
        config: the scheduler configuration; None runs no sessions (pressure only).
        eviction: the pressure-eviction configuration; None evicts for no pressure.
        world: the World to fold into (default: a fresh one).
    """

    def __init__(
        self,
        *,
        config: TideConfig | None,
        eviction: EvictionConfig | None,
        world: World | None = None,
    ) -> None:
        self.config = config
        self.eviction = eviction
        self.world = world if world is not None else World()
        #: sessions run (quiet ticks excluded)
        self.sessions = 0
        self._last_tick_version: tuple[bool, int] = (False, -1)
        self._last_tick_at = _NEVER
        self._fired: set[tuple[datetime, str]] = set()
        self._followups = FollowupCache()
        self._always = ALWAYS_WRITTEN | always_written_kinds(config)
        self._ahead: str | None = None  # the id of the input folded ahead of its write

    # ---- records the log holds --------------------------------------------------------

    def fold(self, records: Iterable[Event]) -> None:
        """Fold records the driver wrote (with their offsets): what this step returned,
        and inputs that decide nothing. The input folded ahead of its write
        (:meth:`on_input_ahead`) is skipped: it is folded already."""
        apply = self.world.apply
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            for record in records:
                apply(record)
            return
        for record in records:
            if record.id != ahead:
                apply(record)

    def on_logged(self, record: Event) -> None:
        """Fold a record read back from the log (a driver's start): never decided, what it
        caused is on the log already."""
        self.world.apply(record)

    def refold(self) -> Refold:
        """Begin folding the whole log afresh, beside the World decided on until then.

        For a driver whose log another writer appended to (a replica taking over the
        lead): the records of the other writer are folded and never decided, and once the
        driver has read the log to its end :meth:`Refold.adopt` makes the new fold the
        World decided on — the log's, not this step's share of it. The step's own memory
        (the last tick's session, the follow-ups fired) is kept."""
        return Refold(self)

    # ---- inputs -----------------------------------------------------------------------

    def decides_on(self, record: Event) -> bool:
        """Whether an input is a decision point: a ``metrics.node`` sample while pressure
        eviction is configured."""
        return record.type == "metrics.node" and self.eviction is not None

    def writes(self, record: Event, *, leading: bool) -> bool:
        """Whether an input is written at all: everything but a standby's decision point
        (replay would expect the decisions a standby may not make)."""
        return leading or not self.decides_on(record)

    def repeats(self, record: Event) -> bool:
        """Whether a decision point is one the World folded already, for a driver that folds
        it ahead of its write (:meth:`on_input_ahead`): a node sample whose own
        ``timestamp`` does not advance past the newest one folded for its node (the tap's
        rule for what is written, ``controller.drive.sources.tap``). The log holds it
        already (another replica wrote it before a takeover) or holds newer: folded again
        it would count twice, and its decisions, written beside a sample the log drops by
        id, would be decisions replay cannot re-derive. Such a sample is not written."""
        if not self.decides_on(record):
            return False
        sample = as_node_sample(record)
        name = (sample.get("metadata") or {}).get("name")
        newest = self.world.usage.node_fresh.get(name) if isinstance(name, str) else None
        own = freshness(sample) if newest is not None else None
        return own is not None and newest is not None and own.stamp <= newest.stamp

    def on_input(self, record: Event, *, leading: bool = True) -> list[Event]:
        """Fold a written input; return the decisions it causes (to write next, as one
        batch). Not leading, it is folded and decides nothing."""
        self.world.apply(record)
        if leading and self.decides_on(record):
            return decide(self.world, record, self.config, self.eviction)
        return []

    def on_input_ahead(self, record: Event) -> list[Event]:
        """Fold a leader's input *before* it is written; return it with its decisions, to
        write as one batch.

        For a driver that may not split a decision point from its decisions (see the
        module docstring). The decisions are those :meth:`on_input` gives for the written
        record. The driver hands the written batch to :meth:`fold`, which skips the input
        (folded here already, its offset unknown: the World's position stays behind it
        until the next record written)."""
        self.world.apply(record)
        self._ahead = record.id
        if self.decides_on(record):
            return [record, *decide(self.world, record, self.config, self.eviction)]
        return [record]

    # ---- triggers ---------------------------------------------------------------------

    def on_trigger(self, trigger: Event) -> list[Event]:
        """Decide a ``trigger.fired`` (not yet written); return what to write, in order.

        Either nothing (a quiet tick, or a firing that decided nothing and is no window
        boundary) or the trigger followed by its decisions. The driver writes them as one
        batch and passes them to :meth:`fold`.
        """
        kind = as_trigger(trigger).get("kind")
        is_tick = kind == "tick"
        if kind in ALWAYS_WRITTEN:
            self._last_tick_version = (False, -1)  # the zone changed: the next tick must run
        version = self._version()
        if (
            is_tick
            and version == self._last_tick_version
            and trigger.at - self._last_tick_at < QUIET_TICK_LIMIT
        ):
            return []
        self.sessions += 1
        decisions = self._decide(trigger)
        if is_tick:
            self._last_tick_version = version
            self._last_tick_at = trigger.at
        if not decisions and kind not in self._always:
            return []
        return [trigger, *decisions]

    def next_followup(self) -> Followup | None:
        """The earliest pressure follow-up due that has not fired yet, if any."""
        if self.eviction is None:
            return None
        fired = self._fired
        for followup in self._followups.get(self.world):  # by time, then kind
            if (followup.at, followup.kind) not in fired:
                return followup
        return None

    def on_followup(self, followup: Followup) -> list[Event]:
        """Fire a follow-up once; return the trigger and its decisions, or nothing."""
        self._fired.add((followup.at, followup.kind))
        kind = followup.kind
        trigger = trigger_event(followup.at, kind, kind, nodes=followup.data["nodes"])
        decisions = decide(self.world, trigger, self.config, self.eviction)
        return [trigger, *decisions] if decisions else []

    # ---- helpers ----------------------------------------------------------------------

    def _version(self) -> tuple[bool, int]:
        """The cluster version the quiet-tick rule compares, by the behaviour level in
        force (tagged with which counter, as a configuration may change the level)."""
        cluster = self.world.cluster
        if cluster.rules.has(QUIET_TICK_SEEN):
            return True, cluster.sched_version
        return False, cluster.version

    def _decide(self, trigger: Event) -> list[Event]:
        return decide(self.world, trigger, self.config, self.eviction)


class Refold:
    """The whole log folded afresh beside a step's World (:meth:`Step.refold`).

    Args:
        step: the step whose World the fold replaces once adopted.
    """

    def __init__(self, step: Step) -> None:
        self._step = step
        self.world = World()
        #: fold one record of the log, in offset order (never decided)
        self.fold = self.world.apply

    def resume(self, world: World) -> None:
        """Fold on from ``world`` (a checkpoint's: the fold of the log's first
        ``world.position`` records) instead of offset 0."""
        self.world = world
        self.fold = world.apply

    def adopt(self) -> World:
        """Make the fold the World the step decides on (the log was read to its end)."""
        self._step.world = self.world
        return self.world


def always_written_kinds(config: TideConfig | None) -> frozenset[str]:
    """The trigger kinds the configured plugins declare ``always_written``."""
    if config is None:
        return frozenset()
    ctx = plugin_context(config)
    return frozenset(
        schedule.kind
        for _, spec, args in plugin_entries(config, BUILTIN_PLUGINS)
        if spec.schedules is not None
        for schedule in spec.schedules(args, ctx)
        if schedule.always_written
    )
