"""`tide audit timeline`: what happened to one pod or node, in lines a person can read.

Decision lines name their pod and reason, node samples show pressure as % of the node's
capacity (the number the thresholds are written in), and a node's timeline includes the
window triggers of the revocable zone it belongs to (its ``volcano.sh/revocable-zone``
label). ``metrics=False`` leaves the samples out; :func:`timeline_summary` says the same
in a few lines (counts by kind, the decisions, and the peak pressure).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from projections.parsing import milli, units
from replay.audit import target_of
from replay.units import cores, gib, number, percent
from streams.events import DECISION_TYPES, EFFECT_TYPES, Event, format_time
from streams.payloads import (
    PodSample,
    Quantity,
    as_decision,
    as_effect,
    as_node_sample,
    as_pod_sample,
    as_taint,
    as_trigger,
    as_watch,
)
from streams.subjects import node_key, pod_keys, zone_key


@dataclass
class _Node:
    cpu: float = 0.0
    memory: float = 0.0
    zone: str = ""


@dataclass
class _Fold:
    nodes: dict[str, _Node] = field(default_factory=dict)

    def learn(self, event: Event) -> None:
        if event.type != "k8s.watch":
            return
        watch = as_watch(event)
        if watch.get("resource") != "nodes":
            return
        obj = watch.get("object") or {}
        meta = obj.get("metadata") or {}
        cap = (obj.get("status") or {}).get("capacity") or {}
        try:
            node = _Node(
                milli(cap.get("cpu") or 0),
                units(cap.get("memory") or 0),
                str((meta.get("labels") or {}).get("volcano.sh/revocable-zone") or ""),
            )
        except (TypeError, ValueError):
            node = _Node()
        self.nodes[str(meta.get("name") or "")] = node


def timeline_keys(*, pod: str | None, node: str | None) -> list[str]:
    """The subject keys (:mod:`streams.subjects`) of every record :func:`timeline_lines`
    can show for ``pod`` or ``node``, but the zone triggers (:func:`zone_keys`)."""
    return [*(pod_keys(pod) if pod is not None else ()), *([node_key(node)] if node else ())]


def zone_keys(about: Iterable[Event], node: str | None) -> list[str]:
    """The keys of the triggers :func:`timeline_lines` can show for ``node``, given every
    record about it (``about``, in offset order): the zones it was ever in."""
    if not node:
        return []
    fold = _Fold()
    zones = set()
    for event in about:
        fold.learn(event)
        zone = fold.nodes.get(node, _Node()).zone
        if zone:
            zones.add(zone)
    return [zone_key(zone) for zone in sorted(zones)]


def _matches(key: str, pod: str) -> bool:
    return bool(key) and (key == pod or key.split("/", 1)[-1] == pod)


def _usage(
    usage: Mapping[str, Quantity], node: _Node | None
) -> tuple[str, float | None, float | None]:
    try:
        cpu = milli(usage.get("cpu") or 0)
        memory = units(usage.get("memory") or 0)
    except (TypeError, ValueError):
        return str(usage), None, None
    cpu_p = 100.0 * cpu / node.cpu if node and node.cpu else None
    mem_p = 100.0 * memory / node.memory if node and node.memory else None
    text = f"cpu {cores(cpu)}" + (f" ({percent(cpu_p)})" if cpu_p is not None else "")
    text += f", memory {gib(memory)}" + (f" ({percent(mem_p)})" if mem_p is not None else "")
    return text, cpu_p, mem_p


def _pod_usage(data: PodSample) -> str:
    cpu = memory = 0.0
    try:
        for container in data.get("containers") or []:
            usage = container.get("usage") or {}
            cpu += milli(usage.get("cpu") or 0)
            memory += units(usage.get("memory") or 0)
    except (TypeError, ValueError, AttributeError):
        return str(data.get("containers"))
    return f"cpu {cores(cpu)}, memory {gib(memory)}"


def _decision(event: Event) -> str:
    d = as_decision(event)
    if d.get("kind") in ("taint", "untaint"):
        taint = as_taint(event).get("taint") or {}
        what = f"{d.get('kind')} {d.get('node')} {taint.get('key')}:{taint.get('effect')}"
    else:
        verb = "to" if d.get("kind") == "bind" else "from"
        what = f"{d.get('kind')} {d.get('namespace')}/{d.get('pod')} {verb} {d.get('node')}"
    return f"{what}  ({d.get('reason')}, by {d.get('source')})"


@dataclass
class Line:
    """One timeline line, with what the summary needs to know about it."""

    event: Event
    text: str
    cpu: float | None = None
    memory: float | None = None


def timeline_lines(
    events: Iterable[Event],
    *,
    pod: str | None = None,
    node: str | None = None,
    metrics: bool = True,
) -> list[Line]:
    """The records about ``pod`` or ``node`` as :class:`Line` s, in log order."""
    fold = _Fold()
    out: list[Line] = []
    for event in events:
        fold.learn(event)
        key, node_name = target_of(event)
        hit = (pod is not None and _matches(key, pod)) or (node is not None and node_name == node)
        if not hit and node is not None and event.type == "trigger.fired":
            zone = fold.nodes.get(node, _Node()).zone
            hit = bool(zone) and as_trigger(event).get("zone") == zone
        if not hit:
            continue
        if event.type.startswith("metrics.") and not metrics:
            continue
        line = Line(event, "")
        if event.type == "k8s.watch":
            d = as_watch(event)
            obj = d.get("object") or {}
            phase = (obj.get("status") or {}).get("phase", "")
            deleting = " deleting" if (obj.get("metadata") or {}).get("deletionTimestamp") else ""
            where = (obj.get("spec") or {}).get("nodeName")
            on = f" on {where}" if where and pod is not None else ""
            name = key or node_name
            line.text = f"{d.get('resource')} {name} {d.get('event')}"
            line.text += f" {phase}{on}{deleting}".rstrip() if phase or deleting else ""
        elif event.type in DECISION_TYPES:
            line.text = "decision " + _decision(event)
        elif event.type == "metrics.node":
            line.text, line.cpu, line.memory = _usage(
                as_node_sample(event).get("usage") or {}, fold.nodes.get(node_name)
            )
            line.text = "node sample " + line.text
        elif event.type == "metrics.pod":
            line.text = "pod sample " + _pod_usage(as_pod_sample(event))
        elif event.type == "trigger.fired":
            t = as_trigger(event)
            line.text = f"trigger {t.get('kind')} of zone {t.get('zone')} ({t.get('trigger')})"
        elif event.type in EFFECT_TYPES:
            line.text = f"{event.type} {as_effect(event).get('error') or ''}".rstrip()
        else:  # config.applied, log.sealed: their type says it
            line.text = event.type
        out.append(line)
    return out


def timeline(
    events: Iterable[Event],
    *,
    pod: str | None = None,
    node: str | None = None,
    metrics: bool = True,
) -> list[str]:
    """One line per record about a pod or a node, in log order."""
    return [
        f"{format_time(line.event.at)}  #{line.event.offset}  {line.text}"
        for line in timeline_lines(events, pod=pod, node=node, metrics=metrics)
    ]


def timeline_summary(
    events: Iterable[Event], *, pod: str | None = None, node: str | None = None
) -> list[str]:
    """A few lines: the span, records by type, every decision, and the peak pressure."""
    lines = timeline_lines(events, pod=pod, node=node)
    if not lines:
        return []
    subject = pod if pod is not None else node
    out = [
        f"{subject}: {len(lines)} records from {format_time(lines[0].event.at)}"
        f" to {format_time(lines[-1].event.at)}"
    ]
    for kind, count in sorted(Counter(line.event.type for line in lines).items()):
        out.append(f"  {count:6}  {kind}")
    for resource in ("cpu", "memory"):
        values = [
            (getattr(x, resource), x.event) for x in lines if getattr(x, resource) is not None
        ]
        if values:
            peak, at = max(values, key=lambda item: (item[0], -item[1].offset))
            out.append(f"  peak {resource} pressure {number(peak)} % at {format_time(at.at)}")
    out += [
        f"  {format_time(x.event.at)}  {x.text}"
        for x in lines
        if x.event.type in DECISION_TYPES or x.event.type == "trigger.fired"
    ]
    return out
