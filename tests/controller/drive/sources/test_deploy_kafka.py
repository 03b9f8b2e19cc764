"""deploy/kafka/, the streaming deployment: what `kubectl apply -k deploy/kafka/` creates
validates against the Kubernetes schemas, both tide Deployments read the same topic with
TLS and SASL from the Secret, the topic Job sets the settings tide relies on, and the
Kafka recorder stays deploy/deployment.yaml but for where the log lives.

The kustomization is built here the way kustomize does for what it uses (resources,
and JSON patches with test/replace/add), so that no kubectl is needed to run the tests.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from streams.backends.kafka_url import parse_kafka_url

DEPLOY = Path(__file__).resolve().parents[4] / "deploy"
KAFKA = DEPLOY / "kafka"
KUBERNETES = "1.33"
Doc = dict[str, Any]


def _resources(root: Path) -> list[Doc]:
    kustomization = yaml.safe_load((root / "kustomization.yaml").read_text())
    docs: list[Doc] = []
    for entry in kustomization["resources"]:
        path = (root / entry).resolve()
        if path.is_dir():
            docs += _resources(path)
        else:
            docs += list(yaml.safe_load_all(path.read_text()))
    for patch in kustomization.get("patches", []):
        target = patch["target"]
        [doc] = [
            d
            for d in docs
            if d["kind"] == target["kind"] and d["metadata"]["name"] == target["name"]
        ]
        for op in yaml.safe_load((root / patch["path"]).read_text()):
            _apply(doc, op)
    return docs


def _apply(doc: Doc, op: dict[str, Any]) -> None:
    """One JSON patch operation (test, replace, add) on ``doc``, in place."""
    *parents, last = op["path"].strip("/").split("/")
    node: Any = doc
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        index = len(node) if last == "-" else int(last)
        if op["op"] == "test":
            assert node[index] == op["value"], f"{op['path']} is {node[index]!r}"
        elif op["op"] == "replace":
            node[index] = op["value"]
        else:
            node.insert(index, op["value"])
    elif op["op"] == "test":
        assert node[last] == op["value"], f"{op['path']} is {node[last]!r}"
    else:
        assert op["op"] in ("add", "replace"), op
        node[last] = op["value"]


BUILT = _resources(KAFKA)


def of(kind: str, name: str) -> Doc:
    [doc] = [d for d in BUILT if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def container(name: str) -> Doc:
    [found] = of("Deployment", name)["spec"]["template"]["spec"]["containers"]
    return dict(found)


@pytest.mark.parametrize(
    "doc", [pytest.param(d, id=f"{d['kind']}/{d['metadata']['name']}") for d in BUILT]
)
def test_every_built_manifest_validates_against_the_kubernetes_schema(doc: Doc) -> None:
    kubernetes_validate.validate(doc, KUBERNETES, strict=True)


def test_the_kustomization_lists_every_resource_file() -> None:
    listed = yaml.safe_load((KAFKA / "kustomization.yaml").read_text())
    used = set(listed["resources"]) | {p["path"] for p in listed["patches"]}
    assert used - {"../run"} == {p.name for p in KAFKA.glob("*.yaml")} - {"kustomization.yaml"}


@pytest.mark.parametrize("name", ["tide-record", "tide-run"])
def test_both_deployments_read_the_topic_with_tls_and_sasl_from_the_secret(name: str) -> None:
    found = container(name)
    [log] = [a for a in found["args"] if a.startswith("--log=")]
    target = parse_kafka_url(log.removeprefix("--log="))
    assert (target.topic, target.replication) == ("tide", 3)
    security = target.security
    assert security.tls and security.sasl == "SCRAM-SHA-512"
    # the password by environment variable, from the Secret
    env = {e["name"]: e.get("valueFrom", {}) for e in found["env"]}
    ref = env[str(security.password_env)]["secretKeyRef"]
    secret = of("Secret", ref["name"])
    assert ref["key"] in secret["stringData"]
    # the CA from the same Secret, mounted where the URL says
    spec = of("Deployment", name)["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    mount = max(  # the deepest mount holding the file is the one that serves it
        (m for m in found["volumeMounts"] if str(security.tls_ca).startswith(m["mountPath"] + "/")),
        key=lambda m: len(m["mountPath"]),
    )
    items = volumes[mount["name"]]["secret"]
    assert items["secretName"] == ref["name"]
    assert {i["path"]: i["key"] for i in items["items"]} == {"ca.crt": "ca.crt"}
    assert Path(str(security.tls_ca)).name == "ca.crt"


def test_both_deployments_share_one_url() -> None:
    logs = {
        name: [a for a in container(name)["args"] if a.startswith("--log=")]
        for name in ("tide-record", "tide-run")
    }
    assert logs["tide-record"] == logs["tide-run"]


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("PARTITIONS", "1"),
        ("REPLICATION", "3"),
        ("min.insync.replicas", "2"),
        ("retention.ms", "-1"),
        ("retention.bytes", "-1"),
        ("cleanup.policy", "delete"),
    ],
)
def test_the_topic_job_sets_what_the_log_relies_on(setting: str, value: str) -> None:
    [job] = of("Job", "tide-kafka-topic")["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in job["env"]}
    configs = dict(pair.split("=", 1) for pair in env["CONFIGS"].split(","))
    assert {**env, **configs}[setting] == value
    [log] = [a for a in container("tide-run")["args"] if a.startswith("--log=")]
    topic = parse_kafka_url(log.removeprefix("--log=")).topic
    assert f"for topic in {topic} {topic}.quarantine;" in job["args"][0]


def test_the_kafka_recorder_is_the_sqlite_one_but_for_the_log() -> None:
    sqlite = yaml.safe_load((DEPLOY / "deployment.yaml").read_text())
    kafka = copy.deepcopy(of("Deployment", "tide-record"))
    assert (sqlite["spec"]["replicas"], kafka["spec"]["replicas"]) == (1, 2)
    assert kafka["spec"]["strategy"]["type"] == "RollingUpdate"
    for doc in (sqlite, kafka):
        del doc["spec"]["replicas"], doc["spec"]["strategy"]
        spec = doc["spec"]["template"]["spec"]
        [box] = spec["containers"]
        box["args"] = [a for a in box["args"] if not a.startswith("--log=")]
        box.pop("env", None)
        box["volumeMounts"] = [m for m in box["volumeMounts"] if m["name"] != "kafka"]
        spec["volumes"] = [v for v in spec["volumes"] if v["name"] not in ("log", "kafka")]
    assert kafka == sqlite
