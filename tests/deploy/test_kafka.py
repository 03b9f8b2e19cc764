"""deploy/overlays/kafka/, HA on Kafka: what `kubectl apply -k deploy/overlays/kafka/` creates
(rendered by kubectl: tests/deploy/render.py) has both tide Deployments read the topic of
the brokers named in the one Secret, with TLS and SASL from it; the topic Job sets the
settings tide relies on and reads the same Secret; the Kafka recorder stays
deploy/overlays/record/'s but for where the log lives; no SQLite claim is left.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from streams.backends.kafka_url import parse_kafka_url
from tests.deploy.render import DEPLOY, Doc, named, render
from tests.deploy.render import container as container_of

KAFKA = "deploy/overlays/kafka"


def built() -> list[Doc]:
    return render(KAFKA)


def of(kind: str, name: str) -> Doc:
    return named(built(), kind, name)


def container(name: str) -> Doc:
    return container_of(built(), name)


def secret_env(box: Doc) -> dict[str, tuple[str, str]]:
    """A container's variables taken from Secrets: name -> (Secret, key)."""
    return {
        e["name"]: (e["valueFrom"]["secretKeyRef"]["name"], e["valueFrom"]["secretKeyRef"]["key"])
        for e in box.get("env", [])
        if "secretKeyRef" in e.get("valueFrom", {})
    }


def log_url(name: str) -> str:
    """The --log of Deployment ``name`` as the kubelet expands it from the Secret's values."""
    box = container(name)
    [log] = [a for a in box["args"] if a.startswith("--log=")]
    values = secret_env(box)

    def value(match: re.Match[str]) -> str:
        secret, key = values[match.group(1)]
        return str(of("Secret", secret)["stringData"][key])

    return re.sub(r"\$\((\w+)\)", value, log.removeprefix("--log="))


def test_the_only_edit_is_the_secret() -> None:
    # the brokers and the user are nowhere but in the Secret: every manifest names its keys
    secret = of("Secret", "tide-kafka")["stringData"]
    text = "\n".join(
        p.read_text()
        for p in sorted((DEPLOY / "overlays" / "kafka").glob("*.yaml"))
        if p.name != "secret.yaml"
    )
    assert secret["brokers"] not in text
    assert set(secret) == {"brokers", "user", "password", "ca.crt"}


@pytest.mark.parametrize("name", ["tide-record", "tide-run"])
def test_both_deployments_point_the_log_at_the_secrets_brokers(name: str) -> None:
    box = container(name)
    [log] = [a for a in box["args"] if a.startswith("--log=")]
    assert log.startswith("--log=kafka://$(TIDE_KAFKA_BROKERS)/")
    assert secret_env(box)["TIDE_KAFKA_BROKERS"] == ("tide-kafka", "brokers")
    target = parse_kafka_url(log_url(name))
    assert target.bootstrap == of("Secret", "tide-kafka")["stringData"]["brokers"]
    assert target.security.sasl_user == of("Secret", "tide-kafka")["stringData"]["user"]


def test_the_run_deployment_has_two_replicas_and_no_claim() -> None:
    deployment = of("Deployment", "tide-run")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"]["type"] == "RollingUpdate"
    spec = deployment["spec"]["template"]["spec"]
    assert not [v for v in spec["volumes"] if "persistentVolumeClaim" in v]
    assert not [d for d in built() if d["kind"] == "PersistentVolumeClaim"]
    assert "--leader-elect" in container("tide-run")["args"]


@pytest.mark.parametrize("name", ["tide-record", "tide-run"])
def test_both_deployments_read_the_topic_with_tls_and_sasl_from_the_secret(name: str) -> None:
    found = container(name)
    target = parse_kafka_url(log_url(name))
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
    env = {e["name"]: e["value"] for e in job["env"] if "value" in e}
    configs = dict(pair.split("=", 1) for pair in env["CONFIGS"].split(","))
    assert {**env, **configs}[setting] == value
    topic = parse_kafka_url(log_url("tide-run")).topic
    assert f"for topic in {topic} {topic}.quarantine;" in job["args"][0]
    # the Job reaches the same brokers as the same user, from the same Secret
    assert secret_env(job) == {
        "BOOTSTRAP": ("tide-kafka", "brokers"),
        "KAFKA_USER": ("tide-kafka", "user"),
        "KAFKA_PASSWORD": ("tide-kafka", "password"),
    }


def test_the_kafka_recorder_is_the_sqlite_one_but_for_the_log() -> None:
    sqlite = named(render("deploy/overlays/record"), "Deployment", "tide-record")
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
