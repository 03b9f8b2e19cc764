"""The World: every projection a decision reads, folded together from one log.

``World.apply(event)`` folds one record into the cluster, the decision history, the
resource usage, the OOM kills, the pressure-eviction state and the configuration in force
(the latest ``config.applied`` payload) and the PodDisruptionBudgets. Those are typed
fields; a policy reads them
through :class:`PolicyInputs`, the one protocol the session and pressure eviction take.
Further projections (a tool's or a test's own) may be passed as ``extra``; they are folded
after the policy inputs and reachable by name in :attr:`World.extra`.

The World is itself a projection (name ``world``): its ``dump()`` holds each member's
dump, so one checkpoint restores all of them at one position.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable
from typing import Protocol

from projections.base import (
    BaseProjection,
    CheckpointError,
    Projection,
    decode_state,
    encode_state,
    paused_gc,
)
from projections.cluster import ClusterState
from projections.history import History
from projections.nominations import Nominations
from projections.oom import OOMState
from projections.pdb import PDBState
from projections.pressure import PressureState
from projections.usage import UsageState
from streams.codec import decode
from streams.events import Event
from streams.payloads import RawConfig, as_config

#: one member's part in folding one event type: (member, its fold of the event, direct).
#: A *direct* member is a :class:`BaseProjection` with the stock ``apply``: the World calls
#: its handler itself and keeps its position; any other member gets ``apply(event)``.
_Step = tuple[Projection, Callable[[Event], None], bool]

#: the names of the World's own members, in folding order
POLICY_MEMBERS = ("cluster", "history", "usage", "oom", "pressure", "nominations", "pdbs")


class PolicyInputs(Protocol):
    """What a policy reads: the folds of the log prefix before its trigger, typed.

    :class:`World` is the implementation; tests may pass any object with these fields.
    """

    @property
    def cluster(self) -> ClusterState: ...

    @property
    def history(self) -> History: ...

    @property
    def usage(self) -> UsageState: ...

    @property
    def oom(self) -> OOMState: ...

    @property
    def pressure(self) -> PressureState: ...

    @property
    def pdbs(self) -> PDBState: ...


def _is_direct(member: Projection) -> bool:
    """Whether the World may call ``member``'s handlers itself (see ``_Step``)."""
    return (
        isinstance(member, BaseProjection)
        and type(member).apply is BaseProjection.apply
        and "apply" not in vars(member)
    )


class World:
    """All projections of one log at one position.

    Args:
        cluster, history, usage, oom, pressure, nominations, pdbs: the members (default:
            fresh, empty ones).
        extra: further projections, folded after those. Names must be unique.
    """

    name = "world"

    def __init__(
        self,
        *,
        cluster: ClusterState | None = None,
        history: History | None = None,
        usage: UsageState | None = None,
        oom: OOMState | None = None,
        pressure: PressureState | None = None,
        nominations: Nominations | None = None,
        pdbs: PDBState | None = None,
        extra: Iterable[Projection] = (),
    ) -> None:
        self.cluster = cluster if cluster is not None else ClusterState()
        self.history = history if history is not None else History()
        self.usage = usage if usage is not None else UsageState()
        self.oom = oom if oom is not None else OOMState()
        self.pressure = pressure if pressure is not None else PressureState()
        #: preemptors' nominated nodes (read by allocate and preempt, not part of
        #: PolicyInputs: a policy input without it simply has no nominations)
        self.nominations = nominations if nominations is not None else Nominations()
        #: PodDisruptionBudgets (victim choice asks controller.policy.framework.disruption)
        self.pdbs = pdbs if pdbs is not None else PDBState()
        self.config: RawConfig | None = None
        self.position = 0
        self.extra: dict[str, Projection] = {}
        for projection in extra:
            if projection.name in self.extra or projection.name in POLICY_MEMBERS:
                raise ValueError(f"two projections named {projection.name!r}")
            self.extra[projection.name] = projection
        self._members: tuple[Projection, ...] = (
            self.cluster,
            self.history,
            self.usage,
            self.oom,
            self.pressure,
            self.nominations,
            self.pdbs,
            *self.extra.values(),
        )
        self._direct = tuple(m for m in self._members if _is_direct(m))
        self._routes: dict[str, tuple[_Step, ...]] = {}

    @property
    def members(self) -> tuple[Projection, ...]:
        """Every projection of the world, cluster and history first."""
        return self._members

    def apply(self, event: Event) -> None:
        """Fold one record into every projection (already-folded offsets are skipped).

        The same as calling each member's ``apply`` in turn, without the calls that would
        do nothing: the members that fold ``event.type`` are looked up once per type.
        """
        offset = event.offset
        if 0 <= offset < self.position:
            return
        type_ = event.type
        if type_ == "config.applied":
            config = as_config(event).get("config")
            self.config = config if isinstance(config, dict) else None
        route = self._routes.get(type_)
        if route is None:
            route = self._route(type_)
        if offset < 0:  # not on a log: nothing to skip, no position to move
            for _member, fold, _direct in route:
                fold(event)
            return
        for member, fold, direct in route:
            if not direct or offset >= member.position:
                fold(event)
        for member in self._direct:  # as BaseProjection.apply: past every logged event
            if member.position <= offset:
                member.position = offset + 1
        self.position = offset + 1

    def _route(self, type_: str) -> tuple[_Step, ...]:
        steps: list[_Step] = []
        for member in self._members:
            if not _is_direct(member):
                steps.append((member, member.apply, False))
                continue
            handler = type(member)._handlers.get(type_)  # type: ignore[attr-defined]
            if handler is not None:
                steps.append((member, handler.__get__(member), True))
        route = self._routes[type_] = tuple(steps)
        return route

    def fold_lines(self, lines: Iterable[bytes | str]) -> int:
        """Decode canonical lines (:func:`streams.codec.decode`) and fold them; returns
        how many. A bulk fold: the cyclic garbage collector is paused meanwhile, as
        :func:`projections.store.run_projection` pauses it (see
        :func:`projections.base.paused_gc`)."""
        apply = self.apply
        count = 0
        with paused_gc():
            for line in lines:
                apply(decode(line))
                count += 1
        return count

    def fold(self, events: Iterable[Event]) -> World:
        """Apply events in order; returns the world for chaining."""
        for event in events:
            self.apply(event)
        return self

    def dump(self) -> bytes:
        body = {
            "config": self.config,
            "members": {m.name: base64.b64encode(m.dump()).decode("ascii") for m in self._members},
        }
        return encode_state(self.name, self.position, body)

    def load(self, state: bytes) -> None:
        """Restore every member; the set of members must match the checkpoint's."""
        position, body = decode_state(self.name, state)
        members = body.get("members")
        if not isinstance(members, dict) or sorted(members) != sorted(
            m.name for m in self._members
        ):
            found = sorted(members) if isinstance(members, dict) else None
            mine = sorted(m.name for m in self._members)
            raise CheckpointError(f"checkpoint holds projections {found}, this world {mine}")
        config = body.get("config")
        payloads = {name: base64.b64decode(text) for name, text in members.items()}
        previous = [(member, member.dump()) for member in self._members]
        try:
            for member in self._members:
                member.load(payloads[member.name])
        except CheckpointError:
            for member, state in previous:  # all or nothing
                member.load(state)
            raise
        self.config = config if isinstance(config, dict) else None
        self.position = position
