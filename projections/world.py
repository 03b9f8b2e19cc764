"""The World: every projection a decision reads, folded together from one log.

``World.apply(event)`` folds one record into the cluster, the decision history, the
configuration in force (the latest ``config.applied`` payload) and any extra projections.
By default the extras are the usage and OOM projections (``projections.usage.UsageState``,
``projections.oom.OOMState``) when those modules are present; pass ``extra=[...]`` to choose.
Extras are reachable by name (``world.extra["usage"]``) and, for the two known ones, as
``world.usage`` / ``world.oom``.

The World is itself a projection (name ``world``): its ``dump()`` holds each member's
dump, so one checkpoint restores all of them at one position.
"""

from __future__ import annotations

import base64
import importlib
from collections.abc import Iterable
from typing import Any

from projections.base import CheckpointError, Projection, decode_state, encode_state
from projections.cluster import ClusterState
from projections.history import History
from streams.events import Event

#: (module, class) of the extras a default World folds, if the module exists
DEFAULT_EXTRAS = (
    ("projections.usage", "UsageState"),
    ("projections.oom", "OOMState"),
    ("projections.pressure", "PressureState"),
)


def default_extras() -> list[Projection]:
    """Fresh instances of the default extra projections that are installed."""
    found: list[Projection] = []
    for module_name, class_name in DEFAULT_EXTRAS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        found.append(getattr(module, class_name)())
    return found


class World:
    """All projections of one log at one position.

    Args:
        cluster: the cluster projection (default: a fresh ``ClusterState``).
        history: the decision history (default: a fresh ``History``).
        extra: further projections, folded after those; ``None`` means the defaults
            (:func:`default_extras`), ``[]`` none. Names must be unique.
        keep_pods: passed to a default ``ClusterState``; off by default (a controller
            needs no raw pods; the simulated cluster keeps its own, as an API server would).
    """

    name = "world"

    def __init__(
        self,
        *,
        cluster: ClusterState | None = None,
        history: History | None = None,
        extra: Iterable[Projection] | None = None,
        keep_pods: bool = False,
    ) -> None:
        self.cluster = cluster if cluster is not None else ClusterState(keep_pods=keep_pods)
        self.history = history if history is not None else History()
        self.config: dict[str, Any] | None = None
        self.position = 0
        self.extra: dict[str, Projection] = {}
        for projection in default_extras() if extra is None else extra:
            if projection.name in self.extra or projection.name in ("cluster", "history"):
                raise ValueError(f"two projections named {projection.name!r}")
            self.extra[projection.name] = projection
        self._members: tuple[Projection, ...] = (
            self.cluster,
            self.history,
            *self.extra.values(),
        )

    @property
    def usage(self) -> Any:
        """The usage projection (``projections.usage.UsageState``), or None."""
        return self.extra.get("usage")

    @property
    def oom(self) -> Any:
        """The OOM projection (``projections.oom.OOMState``), or None."""
        return self.extra.get("oom")

    @property
    def members(self) -> tuple[Projection, ...]:
        """Every projection of the world, cluster and history first."""
        return self._members

    def apply(self, event: Event) -> None:
        """Fold one record into every projection (already-folded offsets are skipped)."""
        offset = event.offset
        if 0 <= offset < self.position:
            return
        if event.type == "config.applied":
            config = event.data.get("config")
            self.config = config if isinstance(config, dict) else None
        for member in self._members:
            member.apply(event)
        if offset >= 0:
            self.position = offset + 1

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
