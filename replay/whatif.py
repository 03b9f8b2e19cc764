"""What-if summaries: two decision streams compared by reason, node and hour.

``tide replay LOG --config OTHER`` re-decides every recorded decision point under another
configuration; ``--resimulate`` re-runs the log's inputs through the simulator instead.
Either way the answer a person wants is not a list of raw JSON lines but: how many
decisions of each reason, on each node, in each hour, before and after — and which
differences are real (another pod, node, kind or reason) rather than evidence-only (the
same action explained with other numbers). :func:`compare` builds that :class:`WhatIf`
from the two streams; :func:`from_report` from a counterfactual replay's report.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from replay.verify import ReplayReport
from streams.events import JSON

Action = tuple[str, str, str, str, str]
"""What a decision does, without its evidence: (at, kind, target, node, reason)."""


def action(decision: JSON) -> Action:
    """The evidence-free identity of a decision (its JSON line, parsed)."""
    target = (
        f"{decision.get('namespace')}/{decision.get('pod')}"
        if decision.get("pod")
        else str(decision.get("node") or "")
    )
    return (
        str(decision.get("at") or ""),
        str(decision.get("kind") or ""),
        target,
        str(decision.get("node") or ""),
        str(decision.get("reason") or ""),
    )


def _counts(actions: Iterable[Action]) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {"reason": Counter(), "node": Counter(), "hour": Counter()}
    for at, kind, _, node, reason in actions:
        out["reason"][f"{kind} {reason}"] += 1
        out["node"][node] += 1
        out["hour"][at[:13].replace("T", " ") + ":00"] += 1
    return out


@dataclass
class WhatIf:
    """Before vs after: counts, real differences and evidence-only ones."""

    before: list[Action]
    after: list[Action]
    evidence_only: int = 0
    only_before: list[Action] = field(default_factory=list)
    only_after: list[Action] = field(default_factory=list)

    @property
    def real(self) -> int:
        """How many decisions differ in what they do (either side)."""
        return len(self.only_before) + len(self.only_after)

    def table(self) -> list[tuple[str, str, int, int]]:
        """(dimension, value, before, after) rows where the counts are non-zero."""
        b, a = _counts(self.before), _counts(self.after)
        rows = []
        for dim in ("reason", "node", "hour"):
            for value in sorted(set(b[dim]) | set(a[dim])):
                rows.append((dim, value, b[dim][value], a[dim][value]))
        return rows

    def lines(self) -> list[str]:
        """The summary a person reads."""
        out = [
            f"what-if: {len(self.before)} decisions before, {len(self.after)} after; "
            f"{self.real} real difference(s), {self.evidence_only} evidence-only"
        ]
        for side, items in (("- only before", self.only_before), ("+ only after", self.only_after)):
            for at, kind, target, node, reason in items:
                out.append(f"  {side}: {at} {kind} {target} on {node} ({reason})")
        dim = ""
        for name, value, before, after in self.table():
            if before == after:
                continue
            if name != dim:
                out.append(f"  by {name}:")
                dim = name
            out.append(f"    {value:32} {before:5} → {after:<5} ({after - before:+d})")
        return out

    def as_json(self) -> JSON:
        """The summary for scripts."""
        keys = ("at", "kind", "target", "node", "reason")
        return {
            "before": len(self.before),
            "after": len(self.after),
            "real_differences": self.real,
            "evidence_only": self.evidence_only,
            "only_before": [dict(zip(keys, a, strict=True)) for a in self.only_before],
            "only_after": [dict(zip(keys, a, strict=True)) for a in self.only_after],
            "counts": [
                {"by": d, "value": v, "before": b, "after": a} for d, v, b, a in self.table()
            ],
        }


def compare(before: Iterable[JSON], after: Iterable[JSON]) -> WhatIf:
    """Two decision streams (decision payloads with ``at``), compared.

    A decision of ``after`` whose action also is in ``before`` but whose whole payload is
    not (the same eviction explained with other numbers) counts as evidence-only.
    """
    before, after = list(before), list(after)
    b = [action(d) for d in before]
    a = [action(d) for d in after]
    cb, ca = Counter(b), Counter(a)
    only_b = sorted((cb - ca).elements())
    only_a = sorted((ca - cb).elements())
    same = cb & ca
    whole = Counter(json.dumps(d, sort_keys=True) for d in before)
    evidence_only = 0
    for d, act in zip(after, a, strict=True):
        if same[act] <= 0:
            continue
        same[act] -= 1
        line = json.dumps(d, sort_keys=True)
        if whole[line] > 0:
            whole[line] -= 1
        else:
            evidence_only += 1
    return WhatIf(b, a, evidence_only, only_b, only_a)


def from_report(report: ReplayReport, recorded: Iterable[str]) -> WhatIf:
    """The what-if of a counterfactual replay: ``recorded`` are every recorded decision line."""
    before = [json.loads(line) for line in recorded]
    after_counter = Counter(action(d) for d in before)
    evidence_only = 0
    only_b: list[Action] = []
    only_a: list[Action] = []
    for diff in report.differences:
        rec = [json.loads(line) for line in diff.recorded]
        rep = [json.loads(line) for line in diff.replayed]
        ra, pa = Counter(action(d) for d in rec), Counter(action(d) for d in rep)
        after_counter -= ra
        after_counter += pa
        only_b += sorted((ra - pa).elements())
        only_a += sorted((pa - ra).elements())
        same = ra & pa
        lines_r = set(diff.recorded)
        evidence_only += sum(
            1
            for d, line in zip(rep, diff.replayed, strict=True)
            if line not in lines_r and same[action(d)] > 0
        )
    after = sorted(after_counter.elements())
    return WhatIf([action(d) for d in before], after, evidence_only, only_b, only_a)
