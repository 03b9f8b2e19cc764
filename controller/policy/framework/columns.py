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
        # one pass over the nodes, each entry computed as _fill computes it, then turned
        # into columns: a session builds them for ~1,000 nodes (and refreshes only the
        # few it changes) whose resources lie scattered in memory, so reading each node
        # once cost a fifth less than a comprehension per column (3.0 ms a session)
        rows = [
            (
                idle.milli_cpu + MIN_RESOURCE,
                idle.memory + MIN_RESOURCE,
                idle.milli_cpu + rel.milli_cpu - pip.milli_cpu + MIN_RESOURCE,
                idle.memory + rel.memory - pip.memory + MIN_RESOURCE,
                used.milli_cpu,
                used.memory,
                alloc.milli_cpu,
                alloc.memory,
            )
            for idle, rel, pip, used, alloc in [
                (node.idle, node.releasing, node.pipelined, node.used, node.allocatable)
                for node in nodes
            ]
        ]
        columns: list[list[float]] = (
            [list(column) for column in zip(*rows, strict=True)] if rows else [[] for _ in range(8)]
        )
        (
            self.idle_cpu,
            self.idle_mem,
            self.future_cpu,
            self.future_mem,
            self.used_cpu,
            self.used_mem,
            self.alloc_cpu,
            self.alloc_mem,
        ) = columns
        #: the smaller of idle and future idle: a request below it fits both
        self.both_cpu = list(map(min, self.idle_cpu, self.future_cpu))
        self.both_mem = list(map(min, self.idle_mem, self.future_mem))
        self._scalars: dict[str, tuple[list[float], list[float]]] = {}
        self._boths: dict[str, list[float]] = {}
        self._rooms: dict[str | None, list[float]] = {}

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
            nodes = self._nodes
            have = [node.idle.scalars.get(name, 0.0) for node in nodes]
            idle = [value + MIN_RESOURCE for value in have]
            future = [  # as _fill_scalar
                value
                + node.releasing.scalars.get(name, 0.0)
                - node.pipelined.scalars.get(name, 0.0)
                + MIN_RESOURCE
                for value, node in zip(have, nodes, strict=True)
            ]
            found = self._scalars[name] = (idle, future)
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
        most nodes (:mod:`controller.policy.framework.search`); the others take the full test.
        """
        found = self._rooms.get(scalar)
        if found is None:
            cpu_unit, mem_unit, scalar_unit = ROOM_UNITS
            # as _fill_room, a comprehension per case: -inf where a part is NaN (the only
            # float unequal to itself; dividing by a positive unit keeps it NaN and keeps
            # every other float a float), else the smallest part
            if scalar is None:
                found = [
                    min(c / cpu_unit, m / mem_unit) if c == c and m == m else -math.inf
                    for c, m in zip(self.both_cpu, self.both_mem, strict=True)
                ]
            else:
                found = [
                    min(c / cpu_unit, m / mem_unit, x / scalar_unit)
                    if c == c and m == m and x == x
                    else -math.inf
                    for c, m, x in zip(
                        self.both_cpu, self.both_mem, self.scalar_both(scalar), strict=True
                    )
                ]
            self._rooms[scalar] = found
        return found

    def _fill_room(self, scalar: str | None, i: int, room: list[float]) -> None:
        cpu_unit, mem_unit, scalar_unit = ROOM_UNITS
        c, m = self.both_cpu[i], self.both_mem[i]
        if scalar is None:
            room[i] = min(c / cpu_unit, m / mem_unit) if c == c and m == m else -math.inf
        else:
            x = self._boths[scalar][i]
            fine = c == c and m == m and x == x
            room[i] = min(c / cpu_unit, m / mem_unit, x / scalar_unit) if fine else -math.inf

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
