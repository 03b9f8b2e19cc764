"""Secrets and bulk tide does not keep (streams/redact.py), at import and in the quarantine."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from streams.backends.memory import MemoryLog
from streams.recording import import_recording
from streams.redact import STRIPPED_ANNOTATIONS, redact_raw, strip_object

PASSWORD = "hunter2-s3cret"


def pod(**extra: Any) -> dict[str, Any]:
    env = [
        {"name": "PASSWORD", "value": PASSWORD},
        {"name": "FROM", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}},
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-0",
            "namespace": "default",
            "uid": "u1",
            "resourceVersion": "1",
            "annotations": {STRIPPED_ANNOTATIONS[0]: PASSWORD, "keep": "me"},
            "managedFields": [{"manager": "kubectl"}],
        },
        "spec": {
            "containers": [{"name": "c", "image": "i", "env": env}],
            "initContainers": [{"name": "i", "image": "i", "env": env}],
        },
        **extra,
    }


def test_a_pod_loses_its_env_values_annotations_and_managed_fields() -> None:
    original = pod()
    stripped = strip_object(original)
    text = orjson.dumps(stripped).decode()
    assert PASSWORD not in text and "managedFields" not in text
    assert stripped["metadata"]["annotations"] == {"keep": "me"}
    env = stripped["spec"]["containers"][0]["env"]
    assert env == [{"name": "PASSWORD"}, original["spec"]["containers"][0]["env"][1]]
    assert PASSWORD in orjson.dumps(original).decode()  # the input is not modified


def test_an_object_with_nothing_to_strip_is_returned_as_it_is() -> None:
    plain = {"kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": [{"name": "c"}]}}
    assert strip_object(plain) is plain


def test_a_workload_template_is_stripped_too() -> None:
    deploy = {"kind": "Deployment", "spec": {"template": {"spec": pod()["spec"]}}}
    assert PASSWORD not in orjson.dumps(strip_object(deploy)).decode()


@pytest.mark.parametrize(
    "raw",
    [
        orjson.dumps({"kind": "Secret", "data": {"pw": "aHVudGVyMg=="}}).decode(),
        orjson.dumps(
            {"data": {"object": {"kind": "Secret", "stringData": {"pw": PASSWORD}}}}
        ).decode(),
        orjson.dumps({"data": {"object": pod()}}).decode(),
    ],
    ids=["secret", "secret-as-watch", "env"],
)
def test_the_quarantine_copy_is_redacted(raw: str) -> None:
    out = redact_raw(raw)
    assert PASSWORD not in out and "aHVudGVyMg==" not in out
    assert "<redacted>" in out


def test_import_keeps_no_secret_on_the_log_nor_in_the_quarantine(tmp_path: Path) -> None:
    good = {
        "at": "2026-11-21T20:00:00Z",
        "type": "k8s.watch",
        "data": {"resource": "pods", "event": "ADDED", "object": pod()},
    }
    secret = {
        "at": "2026-11-21T20:00:01Z",
        "type": "k8s.watch",
        "data": {
            "resource": "pods",
            "event": "ADDED",
            "object": {"kind": "Secret", "metadata": {"name": "s"}, "data": {"pw": PASSWORD}},
        },
    }
    path = tmp_path / "r.jsonl"
    path.write_bytes(orjson.dumps(good) + b"\n" + orjson.dumps(secret) + b"\n")

    async def go() -> tuple[str, str]:
        log = MemoryLog()
        await import_recording(path, log)
        stored = b"".join(orjson.dumps(e.data) for e in log.events).decode()
        aside = "".join(q.raw for q in await log.quarantine())
        return stored, aside

    stored, aside = asyncio.run(go())
    assert stored and PASSWORD not in stored
    assert PASSWORD not in aside


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        pytest.param(
            '{"kind":"Pod","spec":{"containers":[{"env":[{"name":"PW","value":"' + PASSWORD,
            '"name":"PW"',
            id="env-cut-short",
        ),
        pytest.param('{"kind": "Secret", "data": {"pw": "aHVudGVyMg==', None, id="secret-cut"),
        pytest.param("kind: Secret\nstringData: {pw: " + PASSWORD, None, id="secret-yaml"),
        pytest.param("password: " + PASSWORD, "password: ", id="yaml-password"),
        pytest.param(
            '{"data":{"pw":"' + PASSWORD + '"},"n":1, "token": "' + PASSWORD,
            '"n":1',
            id="data-and-token",
        ),
        pytest.param(
            '{"metadata":{"annotations":{"' + STRIPPED_ANNOTATIONS[0] + '":"' + PASSWORD + '"}',
            '"metadata":{"annotations"',
            id="last-applied",
        ),
    ],
)
def test_a_quarantined_line_that_is_not_json_is_redacted_as_text(
    raw: str, kept: str | None
) -> None:
    out = redact_raw(raw)
    assert PASSWORD not in out and "aHVudGVyMg==" not in out
    assert "<redacted>" in out
    if kept is not None:  # what names the place stays, for whoever reads the quarantine
        assert kept in out


def test_a_line_that_is_not_json_and_holds_nothing_secret_is_kept() -> None:
    assert (
        redact_raw('{"kind":"Pod","metadata":{"name":"x"') == '{"kind":"Pod","metadata":{"name":"x"'
    )
