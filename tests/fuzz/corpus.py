"""A seeded generator of hostile inputs: recording lines, configurations and scenarios.

Each case is one class of bad input the fuzz tests feed through the real entry points
(import, configuration loading, scenario loading, simulation). The generator is seeded,
so a failing case is reproduced by its id alone.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import yaml

from streams.codec import encode
from streams.events import Event
from tests.builders import at, build_node, build_pod, build_podgroup, build_queue, watch

JSON = dict[str, Any]
SEED = 20261121

#: values dropped into a field of the wrong type
ODD_VALUES: list[Any] = [
    None,
    1,
    -1,
    0.5,
    True,
    "",
    "x",
    [],
    {},
    [None],
    [[1]],
    {"a": 1},
    2**63,
    -(2**63) - 1,
    "1e400",
    "1e999999999",
    "\u0663",
    "-5",
    "٣Gi",
    "NaN",
    "Infinity",
    "a/b",
    "UPPER",
]
QUANTITIES = [
    "1e400",
    "1e999999999",
    "-1",
    "-0.5Gi",
    "\u0661\u0662",
    "12x",
    "1e",
    ".",
    "+-1",
    "1" * 70,
    "9223372036854775808",
    "1e19",
    " 1",
    "1\n",
    "0x10",
    "1.5.5",
    "1Ki1",
    "100000000000000000000Ei",
    "1e-400",
    "١٢٣m",
]
TIMES = [
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-01:00",
    "9999-12-31T23:59:59Z",
    "1970-01-01T00:00:00Z",
    "2100-01-01T00:00:00Z",
    "2026-11-21T20:00:00",
    "2026-13-01T00:00:00Z",
    "not a time",
    "\u0662026-11-21T20:00:00Z",
    "1999-12-31T23:59:59Z",
    "",
]
NAMES = ["a/b", "UPPER", "-lead", "trail-", "a" * 254, "dot..dot", "sp ace", "é", "a_b"]


@dataclass(frozen=True)
class Case:
    """One fuzz case: its class, an id, and the input (bytes of a file)."""

    kind: str
    id: str
    body: bytes


def good_events() -> list[Event]:
    """A small valid recording: nodes, a queue, a podgroup, pods and metrics."""
    events = [
        watch("nodes", build_node("n1", cpu="8", memory="32Gi"), at(0)),
        watch("nodes", build_node("n2", cpu="8", memory="32Gi"), at(0)),
        watch("queues", build_queue("default"), at(0)),
        watch("podgroups", build_podgroup("batch", "job", min_member=1), at(0)),
    ]
    for i in range(4):
        pod = build_pod("batch", f"job-{i}", node="n1" if i < 2 else "", group="job")
        events.append(watch("pods", pod, at(0.5 + i / 10)))
    return events


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if prefix:
        yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _paths(child, (*prefix, i))


def _set(value: Any, path: tuple[Any, ...], new: Any) -> None:
    for key in path[:-1]:
        value = value[key]
    value[path[-1]] = new


def _nest(depth: int, rng: random.Random) -> Any:
    inner: Any = 1
    for _ in range(depth):
        inner = [inner] if rng.random() < 0.5 else {"k": inner}
    return inner


def _line(event: Event, rng: random.Random, *, keep_id: bool) -> JSON:
    record: JSON = orjson.loads(encode(event))
    if not keep_id:
        record.pop("id", None)
    return record


def recording_line(kind: str, rng: random.Random, base: list[Event]) -> bytes:
    """One bad (or oddly valid) line of class ``kind``."""
    event = rng.choice(base)
    record = _line(event, rng, keep_id=False)
    data = record["data"]
    if kind == "depth":
        data["object"]["spec"]["deep"] = _nest(rng.randint(180, 400), rng)
    elif kind == "time":
        record["at"] = rng.choice(TIMES)
    elif kind == "quantity":
        obj = data["object"]
        if obj["kind"] == "Node":
            obj["status"]["allocatable"]["cpu"] = rng.choice(QUANTITIES)
        elif obj["kind"] == "Pod":
            obj["spec"]["containers"][0]["resources"]["requests"]["cpu"] = rng.choice(QUANTITIES)
        else:
            key = "capability" if obj["kind"] == "Queue" else "minResources"
            obj.setdefault("spec", {})[key] = {"cpu": rng.choice(QUANTITIES)}
    elif kind == "shape":
        for _ in range(rng.randint(1, 3)):
            path = rng.choice(list(_paths(data)))
            _set(data, path, copy.deepcopy(rng.choice(ODD_VALUES)))
    elif kind == "kind":
        data["object"]["kind"] = rng.choice(["Secret", "ConfigMap", "Pod", "Node", 7])
        data["resource"] = rng.choice(["pods", "nodes", "queues", "podgroups"])
    elif kind == "name":
        data["object"]["metadata"]["name"] = rng.choice(NAMES)
    elif kind == "conflict":
        record = _line(event, rng, keep_id=True)
        record["data"]["object"]["metadata"]["labels"] = {"changed": str(rng.random())}
    elif kind == "envelope":
        choice = rng.randrange(6)
        if choice == 0:
            return b"{not json"
        if choice == 1:
            return orjson.dumps([1, 2])
        if choice == 2:
            record.pop("type")
        elif choice == 3:
            record["type"] = rng.choice(["k8s.secret", 5, None])
        elif choice == 4:
            record["data"] = rng.choice([[], "x", 3])
        else:
            record["v"] = rng.choice([0, -1, "1", 99])
    elif kind == "bigint":
        data["object"].setdefault("spec", {})["big"] = rng.choice([2**64, 2**63, -(2**70)])
    # the standard library's encoder: it writes what orjson refuses (deep nesting, big ints)
    return json.dumps(record, separators=(",", ":")).encode()


RECORDING_KINDS = [
    "depth",
    "time",
    "quantity",
    "shape",
    "kind",
    "name",
    "conflict",
    "envelope",
    "bigint",
]


def recording_cases(count: int, seed: int = SEED) -> list[tuple[str, list[bytes], int]]:
    """``count`` recordings: (case id, lines, index of the bad line)."""
    rng = random.Random(seed)
    base = good_events()
    good = [encode(e) for e in base]
    cases = []
    for n in range(count):
        kind = RECORDING_KINDS[n % len(RECORDING_KINDS)]
        bad = recording_line(kind, rng, base)
        position = rng.randrange(len(good) + 1)
        if kind == "conflict":
            position = len(good)  # after the record it collides with
        lines = [*good[:position], bad, *good[position:]]
        cases.append((f"{kind}-{n}", lines, position))
    return cases


# -- configurations ------------------------------------------------------------------

BASE_CONFIG: JSON = {
    "actions": "allocate",
    "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}]}],
    "sessionTick": "1s",
    "eviction": {"cpuEvict": {"enabled": True, "evictThreshold": 90, "cooldownPeriod": "60s"}},
}
DURATIONS = [
    "1us",
    "1ns",
    "0",
    "-1s",
    "1e400h",
    "99999999999999999999h",
    "nan",
    "inf",
    "1.5.5s",
    "3000000h",
    "1h" * 60,
    "\u0661s",
    1e308,
    float("nan"),
    float("inf"),
    -1,
    10**30,
    True,
]


def config_body(n: int, rng: random.Random) -> bytes:
    """A configuration file of one hostile class (rotating through them by ``n``)."""
    config = copy.deepcopy(BASE_CONFIG)
    choice = n % 8
    if choice == 0:
        config["sessionTick"] = rng.choice(DURATIONS)
    elif choice == 1:
        config["eviction"]["cpuEvict"]["cooldownPeriod"] = rng.choice(DURATIONS)
    elif choice == 2:
        return b"a: &a [x,x,x,x,x,x,x,x]\n" + b"".join(
            f"l{i}: &l{i} [{', '.join([f'*{prev}' for _ in range(8)])}]\n".encode()
            for i, prev in enumerate(["a"] + [f"l{j}" for j in range(rng.randint(4, 8))])
        )
    elif choice == 3:
        return b"sessionTick: 1s\nactions: \xff\xfeallocate\n"
    elif choice == 4:
        return yaml.safe_dump(config).encode() + f"{rng.randint(1, 9)}: x\n".encode()
    elif choice == 5:
        config["eviction"]["cpuEvict"]["evictThreshold"] = rng.choice(
            [10**30, float("nan"), float("inf"), "90", -5]
        )
    elif choice == 6:
        path = rng.choice(list(_paths(config)))
        _set(config, path, copy.deepcopy(rng.choice(ODD_VALUES)))
    else:
        config["deep"] = _nest(rng.randint(70, 200), rng)
    return _dump(config)


def _dump(value: Any) -> bytes:
    """YAML that keeps NaN, infinities and huge integers as YAML spells them."""
    return yaml.safe_dump(value, default_flow_style=None).encode()


# -- scenarios -------------------------------------------------------------------------

BASE_SCENARIO: JSON = {
    "start": "2026-11-21T06:00:00Z",
    "until": "+10m",
    "nodes": [{"name": "shared", "count": 2, "cpu": "16", "memory": "64Gi"}],
    "workloads": [
        {
            "name": "batch",
            "replicas": 2,
            "cpu": "2",
            "memory": "4Gi",
            "qos": "BE",
            "nodes": ["shared-0"],
        },
        {"name": "web", "replicas": 1, "cpu": "1", "memory": "1Gi"},
    ],
    "usage": [
        {
            "node": "shared-0",
            "every": "60s",
            "points": [["+0m", {"cpu": "30%", "memory": "40%"}], ["+8m", {"cpu": "96%"}]],
        }
    ],
}


def scenario_body(n: int, rng: random.Random) -> bytes:
    """A scenario file with one hostile value."""
    scenario = copy.deepcopy(BASE_SCENARIO)
    choice = n % 5
    if choice == 0:
        path = rng.choice(list(_paths(scenario)))
        _set(scenario, path, copy.deepcopy(rng.choice(ODD_VALUES)))
    elif choice == 1:
        scenario["start"] = rng.choice(TIMES)
    elif choice == 2:
        scenario["workloads"][0][rng.choice(["cpu", "memory"])] = rng.choice(QUANTITIES)
    elif choice == 3:
        scenario["workloads"][rng.randrange(2)]["name"] = rng.choice(NAMES)
    else:
        scenario["usage"][0]["every"] = rng.choice(DURATIONS)
    return _dump(scenario)


def files(kind: str, count: int, make: Callable[[int, random.Random], bytes]) -> list[Case]:
    """``count`` cases of ``make`` (seeded per kind)."""
    rng = random.Random(f"{SEED}-{kind}")
    return [Case(kind, f"{kind}-{n}", make(n, rng)) for n in range(count)]
