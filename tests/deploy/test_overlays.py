"""Each install renders what it promises (docs/install.md): deploy/ decides in a dry run
and deploy/overlays/act/ is the same but acting; deploy/overlays/record/ is the read-only
recorder and nothing that could write; every install with tide run has the Service of
/metrics on the pods' metrics port."""

from __future__ import annotations

import pytest
import typer

from controller.cli import app
from tests.deploy.render import APPLIED, Doc, container, named, render


def kinds(docs: list[Doc]) -> set[tuple[str, str]]:
    return {(d["kind"], d["metadata"]["name"]) for d in docs}


def test_the_act_overlay_is_the_install_without_the_dry_run_flag() -> None:
    base, act = render("deploy"), render("deploy/overlays/act")
    assert "--dry-run" in container(base, "tide-run")["args"]
    assert "--dry-run" not in container(act, "tide-run")["args"]
    for docs in (base, act):  # everything else is the same
        box = container(docs, "tide-run")
        box["args"] = [a for a in box["args"] if a != "--dry-run"]
        named(docs, "Deployment", "tide-run")["spec"]["template"]["spec"]["containers"] = [box]
    assert base == act


def test_deploy_installs_base() -> None:
    assert render("deploy") == render("deploy/base")


def test_the_record_overlay_is_the_read_only_recorder_only() -> None:
    docs = render("deploy/overlays/record")
    assert kinds(docs) == {
        ("Namespace", "tide"),
        ("ConfigMap", "tide-config"),
        ("PersistentVolumeClaim", "tide-log"),
        ("ServiceAccount", "tide-record"),
        ("ClusterRole", "tide-record"),
        ("ClusterRoleBinding", "tide-record"),
        ("Deployment", "tide-record"),
    }
    [role] = [d for d in docs if d["kind"] == "ClusterRole"]
    assert {verb for rule in role["rules"] for verb in rule["verbs"]} == {"list", "watch"}
    deployment = named(docs, "Deployment", "tide-record")
    assert deployment["spec"]["replicas"] == 1  # one SQLite writer
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    box = container(docs, "tide-record")
    assert box["args"][0] == "record"
    assert "--health-address=0.0.0.0:8081" in box["args"]
    assert box["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    spec = deployment["spec"]["template"]["spec"]
    [claim] = [v for v in spec["volumes"] if "persistentVolumeClaim" in v]
    mounts = {m["name"]: m["mountPath"] for m in box["volumeMounts"]}
    assert claim["persistentVolumeClaim"]["claimName"] == "tide-log"
    assert f"--log={mounts[claim['name']]}/tide.db" in box["args"]


def test_every_recorder_argument_parses_with_the_real_command_line() -> None:
    for directory in ("deploy/overlays/record", "deploy/overlays/kafka"):
        args = container(render(directory), "tide-record")["args"]
        command = typer.main.get_command(app)
        assert isinstance(command, typer.core.TyperGroup)
        record = command.get_command(typer.Context(command), "record")  # loaded when looked up
        assert record is not None
        context = record.make_context("record", args[1:])
        given = {a.split("=")[0] for a in args[1:]}
        assert given <= {f"--{p.replace('_', '-')}" for p in context.params}


@pytest.mark.parametrize("directory", [d for d in APPLIED if d != "deploy/overlays/record"])
def test_the_metrics_service_reaches_every_run_pods_metrics_port(directory: str) -> None:
    docs = render(directory)
    service = named(docs, "Service", "tide-metrics")
    template = named(docs, "Deployment", "tide-run")["spec"]["template"]
    assert service["spec"]["selector"].items() <= template["metadata"]["labels"].items()
    [port] = service["spec"]["ports"]
    [exposed] = container(docs, "tide-run")["ports"]
    assert (port["name"], port["targetPort"]) == ("metrics", exposed["name"])
    assert port["port"] == exposed["containerPort"]
    # the recorders serve probes, not /metrics: the Service selects no recorder
    for d in docs:
        if d["kind"] == "Deployment" and d["metadata"]["name"] != "tide-run":
            labels = d["spec"]["template"]["metadata"]["labels"]
            assert not service["spec"]["selector"].items() <= labels.items()
