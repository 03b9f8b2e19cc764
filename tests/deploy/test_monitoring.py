"""deploy/monitoring/: the ServiceMonitor scrapes the Service of /metrics, the
PrometheusRule's spec is the plain rules file and promtool accepts it, the alerts cover what
an on-call engineer needs, and every alert and dashboard panel reads metrics tide exports.

The Prometheus Operator's kinds are not in kubernetes_validate's schemas, and no package
reachable here carries their CRDs' OpenAPI schemas; so the fields used are checked here
against the monitoring.coreos.com/v1 API (ServiceMonitorSpec, Endpoint, PrometheusRuleSpec,
RuleGroup, Rule of prometheus-operator pkg/apis/monitoring/v1): only those fields, with
those types. tests/live/test_monitoring.py evaluates every expression in a real Prometheus.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.monitoring import (
    MONITORING,
    RULES,
    alerts,
    dashboard,
    exported_names,
    metric_names,
    panel_queries,
    panels,
    rule_groups,
)
from tests.deploy.render import named, render
from tests.prometheus import require_promtool

#: a Prometheus duration (the Operator's Duration pattern)
DURATION = re.compile(
    r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"
)
#: the fields of monitoring.coreos.com/v1 this deployment uses, as the API defines them
SERVICE_MONITOR_SPEC: dict[str, type] = {
    "selector": dict,
    "namespaceSelector": dict,
    "endpoints": list,
}
ENDPOINT: dict[str, type] = {"port": str, "path": str, "interval": str, "scrapeTimeout": str}
RULE: dict[str, type] = {"alert": str, "expr": str, "for": str, "labels": dict, "annotations": dict}
SEVERITIES = {"critical", "warning", "info"}


def monitoring() -> list[dict[str, Any]]:
    return render("deploy/monitoring")


def fields(value: dict[str, Any], allowed: dict[str, type], where: str) -> None:
    unknown = set(value) - set(allowed)
    assert not unknown, f"{where}: fields the API does not define: {sorted(unknown)}"
    for key, kind in allowed.items():
        if key in value:
            assert isinstance(value[key], kind), f"{where}.{key}: not a {kind.__name__}"


def test_the_service_monitor_scrapes_the_metrics_service() -> None:
    monitor = named(monitoring(), "ServiceMonitor", "tide")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    spec = monitor["spec"]
    fields(spec, SERVICE_MONITOR_SPEC, "spec")
    service = named(render("deploy"), "Service", "tide-metrics")
    assert spec["selector"] == {"matchLabels": service["metadata"]["labels"]}
    assert spec["namespaceSelector"] == {"matchNames": [service["metadata"]["namespace"]]}
    [endpoint] = spec["endpoints"]
    fields(endpoint, ENDPOINT, "spec.endpoints[0]")
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"
    assert DURATION.match(endpoint["interval"]) and DURATION.match(endpoint["scrapeTimeout"])


def test_the_prometheus_rule_is_the_plain_rules_file() -> None:
    rule = named(monitoring(), "PrometheusRule", "tide")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["metadata"]["namespace"] == "tide"
    assert set(rule["spec"]) == {"groups"}
    assert rule["spec"]["groups"] == rule_groups()
    assert set(yaml.safe_load(RULES.read_text())) == {"groups"}


def test_every_rule_has_the_fields_of_the_api_and_a_severity() -> None:
    names = [g["name"] for g in rule_groups()]
    assert len(names) == len(set(names))
    for group in rule_groups():
        assert set(group) == {"name", "rules"}
        for rule in group["rules"]:
            fields(rule, RULE, f"{group['name']}/{rule.get('alert')}")
            assert DURATION.match(rule.get("for", "0")), rule
            assert rule["labels"]["severity"] in SEVERITIES, rule["alert"]
            assert {"summary", "description"} <= set(rule["annotations"]), rule["alert"]


def test_promtool_accepts_the_rules_file() -> None:
    answer = subprocess.run(
        [require_promtool(), "check", "rules", str(RULES)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert answer.returncode == 0, answer.stdout + answer.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in answer.stdout


# what the on-call engineer must be told, and the metric each alert reads
NEEDED = [
    ("TideNotReady", "tide_ready"),
    ("TideNoLeader", "tide_leader"),
    ("TideSeveralLeaders", "tide_leader"),
    ("TideLeaderFlapping", "tide_leader"),
    ("TideEffectsFailing", "tide_effects_total"),
    ("TideEvictionRefusalsClimbing", "tide_effects_total"),
    ("TideAppendLagHigh", "tide_log_append_lag_seconds_bucket"),
    ("TideWatchRestarting", "tide_watch_restarts_total"),
    ("TideMetricsAbsent", "tide_build_info"),
]


@pytest.mark.parametrize(("alert", "metric"), NEEDED)
def test_the_alerts_cover_what_on_call_needs(alert: str, metric: str) -> None:
    assert metric in metric_names(alerts()[alert]["expr"])


def test_every_alert_and_panel_reads_metrics_tide_exports() -> None:
    exported = exported_names()
    exprs: dict[str, list[str]] = {name: [rule["expr"]] for name, rule in alerts().items()}
    for title, expr in panel_queries():
        exprs.setdefault(title, []).append(expr)
    read = {what: set().union(*map(metric_names, found)) for what, found in exprs.items()}
    assert {what: names - exported for what, names in read.items() if names - exported} == {}
    # each reads some tide metric, but those about the scrape itself (up)
    scrape = {what for what, found in exprs.items() if found[0].startswith(("up{", "sum(up{"))}
    assert (
        {what for what, names in read.items() if not names}
        == scrape
        == {
            "TideTargetDown",
            "Scrapes up",
        }
    )


def test_the_dashboard_is_grafanas_with_one_prometheus_datasource() -> None:
    board = dashboard()
    assert board["uid"] == "tide" and board["schemaVersion"] >= 36
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in panels():
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), panel["title"]
        assert set(panel["gridPos"]) == {"x", "y", "w", "h"}


@pytest.mark.parametrize(
    ("asked", "metric"),
    [
        ("decisions per kind and reason", "tide_decisions_total"),
        ("effects per kind", "tide_effects_total"),
        ("session latency", "tide_session_seconds_bucket"),
        ("append lag", "tide_log_append_lag_seconds_bucket"),
        ("leader", "tide_leader"),
        ("per-node pressure", "koordlet_eviction_pressure_after_eviction"),
    ],
)
def test_the_dashboard_shows_what_was_asked(asked: str, metric: str) -> None:
    assert any(metric in metric_names(expr) for _, expr in panel_queries()), asked


def test_the_pressure_panel_draws_the_thresholds() -> None:
    [panel] = [p for p in panels() if "pressure" in p["title"] and "threshold" in p["title"]]
    exprs = [t["expr"] for t in panel["targets"]]
    assert "vector($cpu_threshold)" in exprs and "vector($memory_threshold)" in exprs
    assert any("by (node, resource)" in e for e in exprs)


def test_the_dashboard_ships_as_a_configmap_for_grafanas_sidecar() -> None:
    config = named(monitoring(), "ConfigMap", "tide-dashboard")
    assert config["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config["data"]["tide-dashboard.json"] == (MONITORING / "tide-dashboard.json").read_text()


# (the skips' reason label and count per minute over 40 minutes, whether the alert fires)
GUARD_RAILS = [
    pytest.param("guard-rail", 1, True, id="refusals-of-the-limits-fire"),
    pytest.param("dry-run", 1, False, id="a-dry-runs-skips-do-not"),
    pytest.param("gone", 1, False, id="pods-already-gone-do-not"),
    pytest.param("guard-rail", 0, False, id="no-refusal-no-alert"),
]


@pytest.mark.parametrize(("reason", "per_minute", "fires"), GUARD_RAILS)
def test_the_guard_rail_alert_reads_the_skips_reason(
    tmp_path: Path, reason: str, per_minute: int, fires: bool
) -> None:
    """``promtool test rules`` on the rules file itself: the alert fires on refusals of the
    eviction limits, never on a dry run's skips or on pods already gone (before the outcome's
    reason label it could not tell them apart)."""
    rule = alerts()["TideEvictionsHeldByGuardRails"]
    # 1 a minute over the alert's 30-minute window: increase() gives 30
    summary = rule["annotations"]["summary"].replace("{{ $value }}", "30")
    expected = [
        {
            "exp_labels": rule["labels"],
            "exp_annotations": {**rule["annotations"], "summary": summary},
        }
    ]
    series = f'tide_effects_total{{kind="evict",result="skipped",reason="{reason}"}}'
    spec = {
        "rule_files": [str(RULES.resolve())],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": series, "values": f"0+{per_minute}x40"}],
                "alert_rule_test": [
                    {
                        "eval_time": "35m",
                        "alertname": "TideEvictionsHeldByGuardRails",
                        "exp_alerts": expected if fires else [],
                    }
                ],
            }
        ],
    }
    tests = tmp_path / "guard-rails.yaml"
    tests.write_text(yaml.safe_dump(spec))
    answer = subprocess.run(
        [require_promtool(), "test", "rules", str(tests)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert answer.returncode == 0, answer.stdout + answer.stderr
