"""Per-node free resources as flat columns, for allocate's node search.

Allocate tests ``init_resreq ≤ idle`` and ``≤ future_idle`` on ~500 nodes for each of up
to 1,000 pending pods; reading four ``Resource`` objects per node and adding them up is
most of that work. The columns hold, per session node (in the view's order), idle and
future-idle (``idle + releasing − pipelined``) cpu, memory and each requested scalar,
minus Volcano's 0.1 tolerance, so the test becomes ``request < column[i]``. Node scorers
read the used and allocatable CPU and memory columns (``used_*``, ``alloc_*``, exact
copies). The view refreshes a node's entries whenever a statement changes the node.
"""

from __future__ import annotations

import math

from projections.model import MIN_RESOURCE, NodeInfo

#: The units of :meth:`FreeColumns.room`: a core, a GiB, one of a scalar.
ROOM_UNITS = (1000.0, 1024.0**3, 1.0)


class FreeColumns:
    """Idle / future-idle columns over ``nodes`` (built lazily per scalar name)."""

    def __init__(self, nodes: list[NodeInfo]) -> None:
        self._nodes = nodes
        count = len(nodes)
        self.idle_cpu = [0.0] * count
        self.idle_mem = [0.0] * count
        self.future_cpu = [0.0] * count
        self.future_mem = [0.0] * count
        #: the smaller of idle and future idle: a request below it fits both
        self.both_cpu = [0.0] * count
        self.both_mem = [0.0] * count
        self.used_cpu = [0.0] * count
        self.used_mem = [0.0] * count
        self.alloc_cpu = [node.allocatable.milli_cpu for node in nodes]
        self.alloc_mem = [node.allocatable.memory for node in nodes]
        self._scalars: dict[str, tuple[list[float], list[float]]] = {}
        self._boths: dict[str, list[float]] = {}
        self._rooms: dict[str | None, list[float]] = {}
        for i in range(count):
            self._fill(i)

    def _fill(self, i: int) -> None:
        node = self._nodes[i]
        idle, rel, pip = node.idle, node.releasing, node.pipelined
        self.idle_cpu[i] = idle.milli_cpu + MIN_RESOURCE
        self.idle_mem[i] = idle.memory + MIN_RESOURCE
        self.future_cpu[i] = idle.milli_cpu + rel.milli_cpu - pip.milli_cpu + MIN_RESOURCE
        self.future_mem[i] = idle.memory + rel.memory - pip.memory + MIN_RESOURCE
        self.both_cpu[i] = min(self.idle_cpu[i], self.future_cpu[i])
        self.both_mem[i] = min(self.idle_mem[i], self.future_mem[i])
        used = node.used
        self.used_cpu[i] = used.milli_cpu
        self.used_mem[i] = used.memory

    def _fill_scalar(self, name: str, i: int, idle: list[float], future: list[float]) -> None:
        node = self._nodes[i]
        have = node.idle.scalars.get(name, 0.0)
        idle[i] = have + MIN_RESOURCE
        future[i] = (
            have
            + node.releasing.scalars.get(name, 0.0)
            - node.pipelined.scalars.get(name, 0.0)
            + MIN_RESOURCE
        )

    def scalar(self, name: str) -> tuple[list[float], list[float]]:
        """``(idle, future)`` columns of scalar ``name`` (a missing scalar counts 0)."""
        found = self._scalars.get(name)
        if found is None:
            count = len(self._nodes)
            found = ([0.0] * count, [0.0] * count)
            for i in range(count):
                self._fill_scalar(name, i, *found)
            self._scalars[name] = found
        return found

    def scalar_both(self, name: str) -> list[float]:
        """The smaller of scalar ``name``'s idle and future columns, per node."""
        found = self._boths.get(name)
        if found is None:
            idle, future = self.scalar(name)
            found = self._boths[name] = list(map(min, idle, future))
        return found

    def room(self, scalar: str | None) -> list[float]:
        """Per node, the smallest of its ``both_*`` columns (and scalar ``scalar``'s) in
        :data:`ROOM_UNITS`; −inf where one is NaN.

        A request whose largest part, in the same units, is below a node's room fits the
        node's idle and future idle: division by a positive constant keeps the order of
        floats, so ``r / u < c / u`` implies ``r < c``. One comparison then answers for
        most nodes (:mod:`controller.framework.search`); the others take the full test.
        """
        found = self._rooms.get(scalar)
        if found is None:
            found = self._rooms[scalar] = [0.0] * len(self._nodes)
            if scalar is not None:
                self.scalar_both(scalar)
            for i in range(len(found)):
                self._fill_room(scalar, i, found)
        return found

    def _fill_room(self, scalar: str | None, i: int, room: list[float]) -> None:
        cpu_unit, mem_unit, scalar_unit = ROOM_UNITS
        parts = [self.both_cpu[i] / cpu_unit, self.both_mem[i] / mem_unit]
        if scalar is not None:
            parts.append(self._boths[scalar][i] / scalar_unit)
        room[i] = -math.inf if any(math.isnan(part) for part in parts) else min(parts)

    def refresh(self, i: int) -> None:
        """Recompute node ``i``'s entries (after a statement changed it)."""
        self._fill(i)
        for name, (idle, future) in self._scalars.items():
            self._fill_scalar(name, i, idle, future)
            both = self._boths.get(name)
            if both is not None:
                both[i] = min(idle[i], future[i])
        for scalar, room in self._rooms.items():
            self._fill_room(scalar, i, room)
