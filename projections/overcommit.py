"""The over-commit invariant: a node never holds more than it can allocate.

Why: the cluster fold accounts every task a watch shows on a node, fitting or not (a fold
never fails, see :mod:`projections.cluster`), so a node whose bound requests exceed its
allocatable (a ghost pod, a bind on room that was not there, a node that shrank) would
show as negative room and nothing would say so. The fold watches for it here, and
``tide state``, ``tide audit summary`` and ``tide report`` report every node that was over.

Cheap on the hot path: the fold calls :meth:`OvercommitWatch.check` only where node
accounting already changes, and only when the change can matter — a task placed on a
node that is left with negative room, a task leaving a node that is over, a Node update
that moves its room — and the check is a few comparisons. Nothing is added per record.

Not in checkpoints (like the heartbeat cache): a fold resumed from one finds a node still
over at its next accounting change; :func:`excess` of the nodes themselves is what
``tide state`` shows now, resumed or not.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from projections.model import MIN_RESOURCE, NodeInfo, Resource

#: episodes kept after they end (the oldest are counted, then dropped: memory stays bounded)
KEEP_CLOSED = 1000


def negative(idle: Resource) -> bool:
    """True if ``idle`` is below zero in some dimension (beyond Volcano's 0.1 tolerance)."""
    if idle.milli_cpu < -MIN_RESOURCE or idle.memory < -MIN_RESOURCE:
        return True
    return any(value < -MIN_RESOURCE for value in idle.scalars.values())


def excess(node: NodeInfo) -> dict[str, float]:
    """By how much ``node``'s accounted requests exceed its allocatable, per resource
    (``cpu_milli``, ``memory`` in bytes, scalars by name); empty if they fit, and for a
    placeholder (a node not seen: nothing to compare with)."""
    if node.placeholder:
        return {}
    idle = node.idle
    over: dict[str, float] = {}
    if idle.milli_cpu < -MIN_RESOURCE:
        over["cpu_milli"] = -idle.milli_cpu
    if idle.memory < -MIN_RESOURCE:
        over["memory"] = -idle.memory
    for name in sorted(idle.scalars):
        if idle.scalars[name] < -MIN_RESOURCE:
            over[name] = -idle.scalars[name]
    return over


@dataclass(slots=True)
class Episode:
    """One node over its allocatable: from the record at offset ``since`` to the one at
    ``until`` (None: still over), the most it was over by (``worst``, per resource) and how
    many tasks it held then (``tasks``)."""

    node: str
    since: int
    until: int | None = None
    worst: dict[str, float] = field(default_factory=dict)
    tasks: int = 0


class OvercommitWatch:
    """The over-committed nodes of a fold: ``open`` (node -> its episode, still over) and
    ``closed`` (ended episodes, oldest first, at most :data:`KEEP_CLOSED`; ``dropped``
    counts the older ones)."""

    __slots__ = ("closed", "dropped", "open")

    def __init__(self) -> None:
        self.open: dict[str, Episode] = {}
        self.closed: list[Episode] = []
        self.dropped = 0

    def check(self, node: NodeInfo, position: int) -> None:
        """See ``node`` after its accounting changed at the record at offset ``position``."""
        over = excess(node)
        episode = self.open.get(node.name)
        if not over:
            if episode is not None:
                episode.until = position
                del self.open[node.name]
                self.closed.append(episode)
                if len(self.closed) > KEEP_CLOSED:
                    del self.closed[0]
                    self.dropped += 1
            return
        if episode is None:
            episode = self.open[node.name] = Episode(node.name, position)
        worst = episode.worst
        grew = False
        for name, value in over.items():
            if value > worst.get(name, 0.0):
                worst[name] = value
                grew = True
        if grew:
            episode.tasks = len(node.tasks)

    def episodes(self) -> list[Episode]:
        """Every episode kept, ended ones first, then the open ones by node name."""
        return [*self.closed, *(self.open[name] for name in sorted(self.open))]

    @property
    def ever(self) -> int:
        """How many episodes there were (dropped ones included)."""
        return self.dropped + len(self.closed) + len(self.open)


def amount(over: dict[str, float]) -> str:
    """``over`` in units people read: ``cpu +2``, ``memory +1.5Gi``, ``nvidia.com/gpu +2``."""
    parts = []
    for name, value in over.items():
        if name == "cpu_milli":
            parts.append(f"cpu +{value / 1000:g}")
        elif name == "memory":
            parts.append(f"memory +{value / 2**30:.3g}Gi")
        else:  # scalars are kept in milli-units, but ``pods``
            parts.append(f"{name} +{value if name == 'pods' else value / 1000:g}")
    return ", ".join(parts)


def current(nodes: Iterable[NodeInfo]) -> list[tuple[str, dict[str, float]]]:
    """The nodes over their allocatable now, by name, with their excess."""
    found = [(node.name, excess(node)) for node in nodes]
    return sorted((name, over) for name, over in found if over)
