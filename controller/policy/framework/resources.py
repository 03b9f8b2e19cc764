"""Resource arithmetic the model's :class:`Resource` leaves out.

The operations are Volcano's ``Resource`` methods used by the proportion plugin and the
actions (volcano-sh/volcano pkg/scheduler/api/resource_info.go, e.g. ``Multi``,
``MinDimensionResource``, ``LessEqualWithDimension``, which compares only the dimensions
the request asks for, without tolerance) and ``NodeInfo.FutureIdle`` (node_info.go:
``idle + releasing − pipelined``).

Pure functions returning new vectors (never mutating their arguments), because session
code works on objects it shares with the projection. ``fits`` is the allocation hot
path's ``less_equal(req, idle + releasing − pipelined)`` without building the sum.
"""

from __future__ import annotations

from projections.model import MIN_RESOURCE, NodeInfo, Resource


def multi(r: Resource, ratio: float) -> Resource:
    """Every dimension scaled by ``ratio``."""
    return Resource(
        r.milli_cpu * ratio, r.memory * ratio, {k: v * ratio for k, v in r.scalars.items()}
    )


def min_dimension(r: Resource, rr: Resource, *, infinite_default: bool) -> Resource:
    """Volcano's ``MinDimensionResource``: per dimension of ``r``, the min with ``rr``.

    A scalar missing in ``rr`` is infinite (kept) or zero, per ``infinite_default``.
    """
    scalars = {}
    for name, value in r.scalars.items():
        if name in rr.scalars:
            scalars[name] = min(value, rr.scalars[name])
        else:
            scalars[name] = value if infinite_default else 0.0
    return Resource(min(r.milli_cpu, rr.milli_cpu), min(r.memory, rr.memory), scalars)


def maximum(r: Resource, rr: Resource) -> Resource:
    """Per-dimension max over the union of dimensions (missing = 0)."""
    names = set(r.scalars) | set(rr.scalars)
    return Resource(
        max(r.milli_cpu, rr.milli_cpu),
        max(r.memory, rr.memory),
        {n: max(r.scalars.get(n, 0.0), rr.scalars.get(n, 0.0)) for n in sorted(names)},
    )


def exceeded_part(r: Resource, rr: Resource) -> Resource:
    """Per dimension of ``r``: ``max(r − rr, 0)``."""
    return Resource(
        max(r.milli_cpu - rr.milli_cpu, 0.0),
        max(r.memory - rr.memory, 0.0),
        {n: max(v - rr.scalars.get(n, 0.0), 0.0) for n, v in r.scalars.items()},
    )


def diff(r: Resource, old: Resource) -> tuple[Resource, Resource]:
    """``(increase, decrease)`` of ``r`` against ``old``, both non-negative."""
    up, down = Resource(), Resource()
    for attr in ("milli_cpu", "memory"):
        delta = getattr(r, attr) - getattr(old, attr)
        setattr(up if delta > 0 else down, attr, abs(delta))
    for name in sorted(set(r.scalars) | set(old.scalars)):
        delta = r.scalars.get(name, 0.0) - old.scalars.get(name, 0.0)
        if delta > 0:
            up.scalars[name] = delta
        elif delta < 0:
            down.scalars[name] = -delta
    return up, down


def less_equal_with_dimension(r: Resource, rr: Resource, req: Resource) -> bool:
    """Compare only the dimensions ``req`` asks for (> 0), without tolerance; ``pods`` aside."""
    if req.milli_cpu > 0 and r.milli_cpu > rr.milli_cpu:
        return False
    if req.memory > 0 and r.memory > rr.memory:
        return False
    for name, quantity in req.scalars.items():
        if name == "pods" or quantity <= 0:
            continue
        if r.scalars.get(name, 0.0) > rr.scalars.get(name, 0.0):
            return False
    return True


def share(allocated: Resource, deserved: Resource) -> float:
    """Max over ``deserved``'s dimensions of ``allocated / deserved`` (0/0 = 0, x/0 = 1)."""

    def one(num: float, den: float) -> float:
        if den == 0:
            return 0.0 if num == 0 else 1.0
        return num / den

    result = max(
        one(allocated.milli_cpu, deserved.milli_cpu), one(allocated.memory, deserved.memory)
    )
    for name, value in deserved.scalars.items():
        result = max(result, one(allocated.scalars.get(name, 0.0), value))
    return result


def _le(a: float, b: float) -> bool:
    return a < b or abs(a - b) < MIN_RESOURCE


def fits(req: Resource, node: NodeInfo, *, future: bool) -> bool:
    """``req ≤ idle`` (or ``≤ future_idle`` = idle + releasing − pipelined), Zero default."""
    idle, rel, pip = node.idle, node.releasing, node.pipelined
    if future:
        cpu = idle.milli_cpu + rel.milli_cpu - pip.milli_cpu
        mem = idle.memory + rel.memory - pip.memory
    else:
        cpu, mem = idle.milli_cpu, idle.memory
    if not _le(req.milli_cpu, cpu) or not _le(req.memory, mem):
        return False
    iscal = idle.scalars
    for name, value in req.scalars.items():
        have = iscal.get(name, 0.0)
        if future:
            have += rel.scalars.get(name, 0.0) - pip.scalars.get(name, 0.0)
        if not _le(value, have):
            return False
    return True
