"""Preempt cycles at full scale: 100 starving high-priority pods on a full cluster.

The recording the other benchmarks fold leaves most nodes half empty, where nothing needs
preempting; this benchmark folds its own full cluster into a ``World`` at the recording's
scale (``--nodes``, ``--pods``; 5,000 / 150,000 by default): every node has 32 cpu /
128 GiB and runs ``pods / nodes`` pods of 1 cpu / 2 GiB (30 by default, so 2 cpu are
free), every other pod marked ``volcano.sh/preemptable: "true"``, in jobs of 10 pods
with priorities 1-3. 100 Pending pods with ``spec.priority`` 1,000,000 and 4 cpu / 8 GiB
each must evict pods to fit.

* preempt, normal: ``run_cycle`` with actions ``preempt``; target <= 500 ms;
* preempt, topology-aware: the same with ``enableTopologyAwarePreemption: true``
  (16 workers, default candidate counts: 100 at 5,000 nodes); target <= 500 ms;
* baseline (same run): one allocate pass over the same session (actions ``allocate``,
  the same 100 pods; none fits, so each searches every node); ``ratio`` = preempt
  cycle / allocate pass.

Best wall time of ``repeat`` (>= 3), CPU median [range] in the notes; ``run_cycle`` is
pure, so each cycle runs on the same world. The first topology-aware cycle ("first run"
in the notes) also reads the nodes it dry-runs into the fold's preemption index
(:mod:`projections.preemptindex`); the later ones find them there, as a live
controller's sessions do for every node the log has not changed since.
"""

from __future__ import annotations

import statistics
import time
from datetime import timedelta
from typing import Any

from benchmarks.bench_policy import describe, trigger
from benchmarks.common import Context, Result, need
from benchmarks.generate import T0

JSON = dict[str, Any]
TARGET = 0.500
PREEMPTORS = 100
CREATED = "2026-11-21T00:00:00Z"


def config(actions: str, *, topology: bool = False) -> dict[str, Any]:
    return {
        "actions": actions,
        "tiers": [
            {
                "plugins": [
                    {"name": "priority"},
                    {"name": "gang", "enablePreemptable": False},
                    {"name": "conformance"},
                ]
            },
            {"plugins": [{"name": "predicates"}, {"name": "proportion"}]},
        ],
        "configurations": [
            {"name": "preempt", "arguments": {"enableTopologyAwarePreemption": topology}}
        ],
        "timezone": "UTC",
    }


def _pod(name: str, node: str, cpu: str, priority: int, annotations: dict[str, str]) -> JSON:
    memory = f"{int(cpu) * 2}Gi"
    pod: JSON = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "bench",
            "uid": f"bench-{name}",
            "creationTimestamp": CREATED,
            "annotations": annotations,
            "labels": {},
        },
        "spec": {
            "schedulerName": "volcano",
            "priority": priority,
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
            ],
        },
        "status": {"phase": "Pending"},
    }
    if node:
        pod["spec"]["nodeName"] = node
        pod["status"] = {"phase": "Running", "startTime": CREATED}
    return pod


def _node(name: str) -> JSON:
    alloc = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": {}},
        "spec": {},
        "status": {
            "allocatable": alloc,
            "capacity": dict(alloc),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _group(name: str) -> JSON:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": "bench",
            "uid": f"pg-{name}",
            "creationTimestamp": CREATED,
        },
        "spec": {"minMember": 1, "queue": "default"},
        "status": {"phase": "Running"},
    }


def full_cluster(nodes: int, pods: int) -> Any:
    """A World folded from a full cluster (see the module docstring)."""
    world_mod = need("projections.world", "World")
    from streams.events import make_event

    world = world_mod.World()

    def add(resource: str, obj: JSON) -> None:
        data = {"resource": resource, "event": "ADDED", "object": obj}
        world.apply(make_event("k8s.watch", T0, data))

    per_node = max(pods // nodes, 1)
    for n in range(nodes):
        add("nodes", _node(f"node-{n:05d}"))
    for n in range(nodes):
        for k in range(per_node):
            i = n * per_node + k
            group = f"job-{i // 10}"
            annotations = {"scheduling.k8s.io/group-name": group}
            if i % 2 == 0:
                annotations["volcano.sh/preemptable"] = "true"
            if i % 10 == 0:
                add("podgroups", _group(group))
            add("pods", _pod(f"p-{i}", f"node-{n:05d}", "1", 1 + (i // 10) % 3, annotations))
    for i in range(PREEMPTORS):
        add("pods", _pod(f"urgent-{i}", "", "4", 1_000_000, {}))
    return world


def _best(fn: Any, repeat: int) -> tuple[float, Any, float, list[float]]:
    """Best wall time, the last output, the first run's wall time, the CPU times sorted."""
    times: list[float] = []
    cpu: list[float] = []
    out: Any = None
    for _ in range(max(3, repeat)):
        start, start_cpu = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return min(times), out, times[0], sorted(cpu)


def _cpu(values: list[float]) -> str:
    """``median [low-high]`` in ms of sorted CPU times."""
    return (
        f"{statistics.median(values) * 1000:,.1f} ms "
        f"[{values[0] * 1000:,.1f}-{values[-1] * 1000:,.1f}]"
    )


def run(ctx: Context) -> list[Result]:
    engine = need("controller.policy.engine", "run_cycle")
    actions = need("controller.policy.builtins", "BUILTIN_ACTIONS").BUILTIN_ACTIONS
    load_config = need("controller.policy.loader", "load_config").load_config
    if "preempt" not in actions:
        return [Result("preempt", "-", skipped="action preempt not registered yet")]
    scale = ctx.manifest.scale
    print("[preempt] folding a full cluster ...", flush=True)
    world = full_cluster(int(scale["nodes"]), int(scale["pods"]))
    tick = trigger(T0 + timedelta(minutes=11), "session", "tick")
    allocate = load_config(config("allocate"))
    base, _, _, base_cpu = _best(lambda: engine.run_cycle(world, tick, allocate), ctx.repeat)
    rows = []
    for name, topology in (("normal", False), ("topology-aware", True)):
        conf = load_config(config("preempt", topology=topology))
        spent, decisions, cold, spent_cpu = _best(
            lambda conf=conf: engine.run_cycle(world, tick, conf), ctx.repeat
        )
        rows.append(
            Result(
                "preempt",
                f"preempt cycle, {PREEMPTORS} starving pods, {name}",
                spent * 1000,
                "ms",
                base * 1000,
                "one allocate pass, same session",
                spent / base,
                f"<= {TARGET * 1000:,.0f} ms",
                spent <= TARGET,
                notes=(
                    f"{describe(decisions)}; first run {cold * 1000:,.1f} ms; CPU median "
                    f"{_cpu(spent_cpu)} (allocate pass {_cpu(base_cpu)})"
                ),
            )
        )
    return rows
