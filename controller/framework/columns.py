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

from projections.model import MIN_RESOURCE, NodeInfo


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

    def refresh(self, i: int) -> None:
        """Recompute node ``i``'s entries (after a statement changed it)."""
        self._fill(i)
        for name, (idle, future) in self._scalars.items():
            self._fill_scalar(name, i, idle, future)
            both = self._boths.get(name)
            if both is not None:
                both[i] = min(idle[i], future[i])
