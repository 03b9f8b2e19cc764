"""Every file of deploy/ and everything ``kubectl apply -k`` makes of it is valid Kubernetes
(the schemas of a current release, strictly: an unknown field fails), hardened (non-root,
read-only root file system, no privilege escalation, resources requested), named by its
kustomization, with the one image of deploy/components/image/ at the package's version,
and the configuration loads as a tide policy."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from controller.policy.loader import load_policy
from tests.deploy.render import (
    APPLIED,
    DEPLOY,
    IMAGE,
    KUBERNETES,
    MONITORING,
    OPERATOR_GROUP,
    ROOT,
    Doc,
    named,
    render,
    version,
)

#: files of deploy/ that are not Kubernetes objects (patches, the plain rules file)
NOT_OBJECTS = {
    "deploy/components/act/act.yaml",
    "deploy/overlays/kafka/run-patch.yaml",
    "deploy/overlays/kafka/no-claim.yaml",
    "deploy/monitoring/tide-rules.yaml",
}


def manifest_files() -> list[tuple[str, Doc]]:
    found = []
    for path in sorted(DEPLOY.rglob("*.yaml")):
        where = str(path.relative_to(ROOT))
        if path.name == "kustomization.yaml" or where in NOT_OBJECTS:
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            found.append((f"{where}:{doc['kind']}/{doc['metadata']['name']}", doc))
    return found


FILES = manifest_files()


@pytest.mark.parametrize(("name", "doc"), FILES, ids=[name for name, _ in FILES])
def test_every_manifest_file_validates_against_the_kubernetes_schema(name: str, doc: Doc) -> None:
    if doc["apiVersion"] == OPERATOR_GROUP:
        pytest.skip("a Prometheus Operator kind: tests/deploy/test_monitoring.py checks it")
    kubernetes_validate.validate(doc, KUBERNETES, strict=True)


@pytest.mark.parametrize("directory", [*APPLIED, MONITORING])
def test_every_rendered_document_validates_against_the_kubernetes_schema(directory: str) -> None:
    docs = render(directory)
    assert docs, directory
    for doc in docs:
        if doc["apiVersion"] == OPERATOR_GROUP:
            continue  # tests/deploy/test_monitoring.py
        try:
            kubernetes_validate.validate(doc, KUBERNETES, strict=True)
        except kubernetes_validate.ValidationError as exc:
            raise AssertionError(f"{directory}: {doc['kind']}/{doc['metadata']['name']}") from exc


def kustomization_dirs() -> list[Path]:
    return sorted(p.parent for p in DEPLOY.rglob("kustomization.yaml"))


@pytest.mark.parametrize("directory", kustomization_dirs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_kustomization_names_every_file_beside_it(directory: Path) -> None:
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    used = {r for r in kustomization.get("resources", []) if (directory / r).is_file()}
    used |= {p["path"] for p in kustomization.get("patches", [])}
    used |= {f for g in kustomization.get("configMapGenerator", []) for f in g["files"]}
    here = {p.name for p in directory.iterdir() if p.is_file()} - {"kustomization.yaml"}
    # the plain rules file is for Prometheus without the Operator: deployed by hand
    plain = {"tide-rules.yaml"} if directory == DEPLOY / "monitoring" else set()
    assert used == here - plain
    for entry in kustomization.get("resources", []) + kustomization.get("components", []):
        assert (directory / entry).exists(), entry


def workloads(docs: list[Doc]) -> list[tuple[str, Doc]]:
    return [
        (f"{d['kind']}/{d['metadata']['name']}", d["spec"]["template"]["spec"])
        for d in docs
        if d["kind"] in ("Deployment", "Job")
    ]


@pytest.mark.parametrize("directory", APPLIED)
def test_every_workload_runs_hardened_with_resources(directory: str) -> None:
    for name, spec in workloads(render(directory)):
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", name
        for box in spec["containers"]:
            context = box["securityContext"]
            assert context["readOnlyRootFilesystem"] is True, name
            assert context["allowPrivilegeEscalation"] is False, name
            assert context["capabilities"]["drop"] == ["ALL"], name
            assert box["resources"]["requests"] and box["resources"]["limits"]["memory"], name


@pytest.mark.parametrize("directory", APPLIED)
def test_every_tide_container_runs_the_image_at_the_package_version(directory: str) -> None:
    images = {
        box["image"]
        for _, spec in workloads(render(directory))
        for box in spec["containers"]
        if box["name"] == "tide"
    }
    assert images == {f"{IMAGE}:{version()}"}


def test_the_image_is_named_in_one_place() -> None:
    naming = [
        str(p.relative_to(ROOT)) for p in sorted(DEPLOY.rglob("*.yaml")) if IMAGE in p.read_text()
    ]
    assert naming == ["deploy/components/image/kustomization.yaml"]
    [image] = yaml.safe_load((DEPLOY / "components/image/kustomization.yaml").read_text())["images"]
    assert image == {"name": "tide", "newName": IMAGE, "newTag": version()}


@pytest.mark.parametrize("directory", APPLIED)
def test_every_pod_runs_as_an_account_the_install_creates(directory: str) -> None:
    docs = render(directory)
    accounts = {
        (d["metadata"]["namespace"], d["metadata"]["name"])
        for d in docs
        if d["kind"] == "ServiceAccount"
    }
    for d in docs:
        if d["kind"] == "Deployment":
            spec = d["spec"]["template"]["spec"]
            assert (d["metadata"]["namespace"], spec["serviceAccountName"]) in accounts


@pytest.mark.parametrize("directory", APPLIED)
def test_every_binding_names_a_role_and_an_account_of_the_install(directory: str) -> None:
    docs = render(directory)
    roles = {d["metadata"]["name"] for d in docs if d["kind"] == "ClusterRole"}
    accounts = {
        (d["metadata"]["namespace"], d["metadata"]["name"])
        for d in docs
        if d["kind"] == "ServiceAccount"
    }
    for binding in (d for d in docs if d["kind"] == "ClusterRoleBinding"):
        assert binding["roleRef"]["name"] in roles
        for subject in binding["subjects"]:
            assert (subject["namespace"], subject["name"]) in accounts


@pytest.mark.parametrize("directory", APPLIED)
def test_every_volume_a_pod_mounts_exists(directory: str) -> None:
    docs = render(directory)
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    for name, spec in workloads(docs):
        volumes = {v["name"]: v for v in spec["volumes"]}
        for box in spec["containers"]:
            for mount in box["volumeMounts"]:
                volume = volumes[mount["name"]]
                if "persistentVolumeClaim" in volume:
                    claim = volume["persistentVolumeClaim"]["claimName"]
                    assert ("PersistentVolumeClaim", claim) in kinds, name
                if "configMap" in volume:
                    assert ("ConfigMap", volume["configMap"]["name"]) in kinds, name
                if "secret" in volume:
                    assert ("Secret", volume["secret"]["secretName"]) in kinds, name


def test_the_configmap_holds_a_configuration_tide_loads() -> None:
    config = yaml.safe_load((DEPLOY / "common" / "configmap.yaml").read_text())
    raw = yaml.safe_load(config["data"]["tide.yaml"])
    policy = load_policy(raw)
    # loading stamps the behaviour level where the configuration names a newer plugin
    loaded = {k: v for k, v in policy.config.raw.items() if k != "behaviour"}
    assert "tiers" in raw and loaded == raw


def test_every_install_holds_the_shared_configuration() -> None:
    config = yaml.safe_load((DEPLOY / "common" / "configmap.yaml").read_text())
    for directory in APPLIED:
        assert named(render(directory), "ConfigMap", "tide-config")["data"] == config["data"]
