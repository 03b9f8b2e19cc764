"""A generated *day* of a cluster: the recording the end-to-end benchmark simulates.

:mod:`benchmarks.generate` writes a snapshot and ten minutes of churn, which measures a
fold. The end-to-end row needs time to pass: this module reuses its cluster (nodes in
revocable zones, ~6 KB pods, PodGroups, queues, Pending pods) and then writes ``minutes``
of virtual time: a ``metrics.node`` sample of every Ready node every 60 s, with hot
episodes (3 % of nodes at a time run at 91-98 % CPU or memory for 10-30 minutes, which
is what pressure eviction acts on), ``metrics.pod`` samples of the pods on hot nodes
every 5 minutes, a node status update (heartbeat) of every node every 5 minutes, and pod
churn spread over the span (restarts, some ``OOMKilled``; graceful deletes recreated by
their owner). :data:`CONFIG` is the configuration it is simulated under: allocate and
shuffle with TDM windows on both zones, and pressure eviction.

``python -m benchmarks.day --nodes 100 --pods 3000 --minutes 60`` writes
``benchmarks/out/day-100n-3000p-60m-s20261121.jsonl`` (reused while this module and
:mod:`benchmarks.generate` are unchanged); same options, same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path

import orjson

from benchmarks.generate import (
    _QUEUES,
    JSON,
    OUT_DIR,
    T0,
    Generator,
    Manifest,
    Scale,
)

#: the configuration the day is simulated under (YAML, as `tide simulate --config` reads)
CONFIG = """\
actions: "allocate, shuffle"
tiers:
  - plugins:
      - name: priority
      - name: gang
        enablePreemptable: false
      - name: conformance
  - plugins:
      - name: proportion
      - name: predicates
      - name: tdm
        arguments:
          tdm.revocable-zone.rz1: "08:00-20:00"
          tdm.revocable-zone.rz2: "22:00-06:00"
          tdm.evict.period: "1m"
timezone: UTC
eviction:
  cpuEvict: {enabled: true, evictThreshold: 90, cooldownPeriod: 60s, maxEvictionPerBatch: 4}
  memoryEvict: {enabled: true, evictThreshold: 90, cooldownPeriod: 120s, maxEvictionPerBatch: 2}
  pressureStableThreshold: 2
"""


@dataclass(frozen=True, slots=True)
class DayScale:
    """How big a day: the cluster (nodes, pods at the start) and the span."""

    nodes: int = 1_000
    pods: int = 30_000
    minutes: int = 24 * 60
    seed: int = 20261121
    hot_fraction: float = 0.03
    restart_per_hour: float = 0.01  # fraction of pods restarted per hour
    recreate_per_hour: float = 0.004  # fraction of pods deleted and recreated per hour

    @property
    def name(self) -> str:
        return f"day-{self.nodes}n-{self.pods}p-{self.minutes}m-s{self.seed}"

    def cluster(self) -> Scale:
        return Scale(
            nodes=self.nodes, pods=self.pods, pending=max(1, self.pods // 100), seed=self.seed
        )


class DayGenerator(Generator):
    """The snapshot of :class:`benchmarks.generate.Generator`, then a day of samples."""

    def __init__(self, day: DayScale) -> None:
        super().__init__(day.cluster())
        self.day = day

    def events(self) -> Iterator[tuple[datetime, str, JSON]]:
        rng = self.rng
        self.build_nodes()
        self.build_workloads()
        slots = [
            (wi, k)
            for wi, w in enumerate(self.workloads)
            if w.kind in ("Job", "Deployment")
            for k in range(w.replicas)
        ]
        pending_slots = set(rng.sample(slots, min(self.scale.pending, len(slots))))
        at = T0
        for q in _QUEUES:
            yield at, "k8s.watch", {"resource": "queues", "event": "ADDED", "object": self.queue(q)}
        for node in self.nodes:
            yield at, "k8s.watch", {"resource": "nodes", "event": "ADDED", "object": node}
        for pg in self.podgroups:
            yield at, "k8s.watch", {"resource": "podgroups", "event": "ADDED", "object": pg}
        for wi, wl in enumerate(self.workloads):
            for k in range(wl.replicas):
                created = at - timedelta(minutes=rng.randint(1, 60 * 24 * 7))
                index = self.new_pod(wi, (wi, k) in pending_slots, created)
                yield (
                    at,
                    "k8s.watch",
                    {"resource": "pods", "event": "ADDED", "object": self.pod_json(index)},
                )
        yield from self.day_events(T0 + timedelta(seconds=10))

    def day_events(self, start: datetime) -> Iterator[tuple[datetime, str, JSON]]:
        rng, day = self.rng, self.day
        hot: dict[int, tuple[int, str]] = {}  # node -> (last minute, "cpu" | "memory")
        n = len(self.nodes)
        per_minute_restart = day.restart_per_hour * len(self.pods) / 60
        per_minute_recreate = day.recreate_per_hour * len(self.pods) / 60
        for minute in range(day.minutes):
            at = start + timedelta(minutes=minute)
            # hot episodes start and end
            for i in [i for i, (end, _) in hot.items() if end < minute]:
                del hot[i]
            while len(hot) < int(n * day.hot_fraction):
                i = rng.randrange(n)
                hot.setdefault(i, (minute + rng.randint(10, 30), rng.choice(["cpu", "memory"])))
            batch: list[tuple[datetime, str, JSON]] = []
            for i in range(n):
                if self.nodes[i]["status"]["conditions"][-1]["status"] != "True":
                    continue
                sample = self.node_metrics(i, at)
                if i in hot:
                    self.heat(sample, i, hot[i][1])
                batch.append((at, "metrics.node", sample))
            if minute % 5 == 0:
                for i, st in enumerate(self.pods):
                    if st is not None and st.node in hot:
                        batch.append((at, "metrics.pod", self.pod_metrics(i, at)))
            actions = [("heartbeat", i) for i in range(n) if i % 5 == minute % 5]
            live = [i for i, st in enumerate(self.pods) if st is not None and st.node >= 0]
            actions += [("restart", i) for i in rng.sample(live, _count(rng, per_minute_restart))]
            actions += [("recreate", i) for i in rng.sample(live, _count(rng, per_minute_recreate))]
            seen: set[int] = set()
            for k, (what, i) in enumerate(actions):
                if what != "heartbeat" and i in seen:
                    continue
                seen.add(i)
                step = timedelta(seconds=1 + (50 * k) // max(1, len(actions)))
                batch.extend(self.churn(what, i, at + step))
            batch.sort(key=lambda item: item[0])  # stable: one object's events keep order
            yield from batch
        self.now = start + timedelta(minutes=day.minutes)

    def heat(self, sample: JSON, i: int, resource: str) -> None:
        """Turn a node sample into a hot one (91-98 % of ``resource``)."""
        alloc = self.nodes[i]["status"]["allocatable"]
        frac = self.rng.uniform(0.91, 0.98)
        if resource == "cpu":
            sample["usage"]["cpu"] = f"{int(int(alloc['cpu'][:-1]) * frac * 1_000_000)}n"
        else:
            sample["usage"]["memory"] = f"{int(int(alloc['memory'][:-2]) * frac)}Ki"


def _count(rng: object, mean: float) -> int:
    """An integer with mean ``mean`` (the fraction carried by a draw)."""
    import random

    assert isinstance(rng, random.Random)
    whole = int(mean)
    return whole + (1 if rng.random() < mean - whole else 0)


def source_hash() -> str:
    """This module's and the snapshot generator's sources: a cached day is reused only
    while both are unchanged."""
    here = Path(__file__).resolve().parent
    text = (here / "day.py").read_bytes() + (here / "generate.py").read_bytes()
    return hashlib.blake2b(text, digest_size=8).hexdigest()


def ensure_day(day: DayScale, out_dir: Path = OUT_DIR, *, log: bool = True) -> Manifest:
    """The day recording for ``day`` in ``out_dir``: reused when current, else written."""
    path = out_dir / f"{day.name}.jsonl"
    meta = path.with_suffix(".meta.json")
    if path.exists() and meta.exists():
        cached = orjson.loads(meta.read_bytes())
        if cached.get("source_hash") == source_hash() and cached.get("scale") == asdict(day):
            # The meta may have been written through another checkout's symlink to
            # this directory: the path is where the recording is found now.
            return Manifest(**{**cached, "path": str(path)})
    if log:
        print(f"generating {path.name} ...", file=sys.stderr, flush=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as out:
        manifest = DayGenerator(day).write(out)
    tmp.replace(path)
    manifest.path, manifest.scale, manifest.source_hash = str(path), asdict(day), source_hash()
    meta.write_bytes(orjson.dumps(asdict(manifest), option=orjson.OPT_INDENT_2))
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write a generated day (benchmarks/day.py)")
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--pods", type=int, default=30_000)
    parser.add_argument("--minutes", type=int, default=24 * 60)
    parser.add_argument("--seed", type=int, default=20261121)
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    parser.add_argument("--config", type=Path, help="also write the configuration here")
    args = parser.parse_args(argv)
    day = DayScale(nodes=args.nodes, pods=args.pods, minutes=args.minutes, seed=args.seed)
    manifest = ensure_day(day, args.out)
    if args.config is not None:
        args.config.write_text(CONFIG)
    print(orjson.dumps(asdict(manifest), option=orjson.OPT_INDENT_2).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
