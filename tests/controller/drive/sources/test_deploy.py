"""deploy/ is valid Kubernetes YAML (schemas of a current Kubernetes), hardened the way
the recorder needs, and its configuration loads as a tide policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from controller.policy.loader import load_policy

DEPLOY = Path(__file__).resolve().parents[4] / "deploy"
KUBERNETES = "1.33"


def documents() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(DEPLOY.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            found.append((f"{path.name}:{doc['kind']}/{doc['metadata']['name']}", doc))
    return found


DOCS = documents()


@pytest.mark.parametrize(("name", "doc"), DOCS, ids=[name for name, _ in DOCS])
def test_every_manifest_validates_against_the_kubernetes_schema(
    name: str, doc: dict[str, Any]
) -> None:
    kubernetes_validate.validate(doc, KUBERNETES, strict=True)


def by_kind(kind: str) -> dict[str, Any]:
    [doc] = [doc for _, doc in DOCS if doc["kind"] == kind]
    return doc


def test_the_kustomization_lists_every_manifest() -> None:
    listed = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())["resources"]
    assert sorted(listed) == sorted(
        p.name for p in DEPLOY.glob("*.yaml") if p.name != "kustomization.yaml"
    )


def test_the_deployment_runs_hardened_with_probes_and_the_log_on_a_claim() -> None:
    spec = by_kind("Deployment")["spec"]["template"]["spec"]
    [container] = spec["containers"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["resources"]["requests"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert spec["serviceAccountName"] == by_kind("ServiceAccount")["metadata"]["name"]
    claims = [v for v in spec["volumes"] if "persistentVolumeClaim" in v]
    assert (
        claims[0]["persistentVolumeClaim"]["claimName"]
        == by_kind("PersistentVolumeClaim")["metadata"]["name"]
    )
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert f"--log={mounts[claims[0]['name']]}/tide.db" in container["args"]
    assert "--health-address=0.0.0.0:8081" in container["args"]


def test_the_binding_gives_the_role_to_the_service_account() -> None:
    binding = by_kind("ClusterRoleBinding")
    assert binding["roleRef"]["name"] == by_kind("ClusterRole")["metadata"]["name"]
    [subject] = binding["subjects"]
    account = by_kind("ServiceAccount")["metadata"]
    assert (subject["name"], subject["namespace"]) == (account["name"], account["namespace"])


def test_the_configmap_holds_a_configuration_tide_loads() -> None:
    raw = yaml.safe_load(by_kind("ConfigMap")["data"]["tide.yaml"])
    policy = load_policy(raw)
    # loading stamps the behaviour level where the configuration names a newer plugin
    loaded = {k: v for k, v in policy.config.raw.items() if k != "behaviour"}
    assert "tiers" in raw and loaded == raw
