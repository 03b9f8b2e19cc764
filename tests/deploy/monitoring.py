"""deploy/monitoring/ read for the tests: the alerts of the rules file, the dashboard's
panels and their expressions as Prometheus evaluates them (Grafana's variables replaced
by what Grafana would send), and the metric names tide exports."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import generate_latest

from controller.drive.observe import koordlet
from controller.drive.observe.metrics import PrometheusObserver
from tests.deploy.render import DEPLOY

MONITORING = DEPLOY / "monitoring"
RULES = MONITORING / "tide-rules.yaml"
DASHBOARD = MONITORING / "tide-dashboard.json"
#: what Grafana puts for the dashboard's variables; $__rate_interval is at least four
#: scrape intervals (the tests scrape every second, Grafana's default is 15 s: 1m)
VARIABLES = {"$__rate_interval": "1m", "$cpu_threshold": "80", "$memory_threshold": "80"}
#: a metric name in an expression (followed by a selector, a range, or the end of a word)
_METRIC = re.compile(r"\b((?:tide|koordlet)_[a-z_]+)\b")


def rule_groups() -> list[dict[str, Any]]:
    """The groups of the plain rules file."""
    groups: list[dict[str, Any]] = yaml.safe_load(RULES.read_text())["groups"]
    return groups


def alerts() -> dict[str, dict[str, Any]]:
    """Every alerting rule by its name."""
    return {rule["alert"]: rule for group in rule_groups() for rule in group["rules"]}


def dashboard() -> dict[str, Any]:
    """The Grafana dashboard."""
    found: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return found


def panels() -> list[dict[str, Any]]:
    """The dashboard's panels that query (not its rows)."""
    return [p for p in dashboard()["panels"] if p["type"] != "row"]


def promql(expr: str) -> str:
    """A panel's expression with Grafana's variables replaced."""
    for name, value in VARIABLES.items():
        expr = expr.replace(name, value)
    assert "$" not in expr, expr
    return expr


def panel_queries() -> list[tuple[str, str]]:
    """(panel title, expression) of every target of every panel."""
    return [(p["title"], promql(t["expr"])) for p in panels() for t in p["targets"]]


def metric_names(expr: str) -> set[str]:
    """The tide and koordlet metric names an expression reads."""
    return set(_METRIC.findall(expr))


def exported_names() -> set[str]:
    """Every sample name ``tide run`` can serve on /metrics: what a fresh observer exposes
    (every tide family, at 0) and the koordlet families, some of which appear only once
    there is something to say (a cooldown, a verified round)."""
    observer = PrometheusObserver()
    exposition = generate_latest(observer.registry).decode()
    names = {
        line.split("{")[0].split(" ")[0]
        for line in exposition.splitlines()
        if line and not line.startswith("#")
    }
    source = Path(koordlet.__file__).read_text(encoding="utf-8")
    families = set(re.findall(r'"(koordlet_[a-z_]+)"', source))
    return names | families
