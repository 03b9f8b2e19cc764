"""What ``kubectl apply -k DIR`` would create: ``kubectl kustomize DIR``, parsed.

Why kubectl itself: the overlays use what only kustomize defines exactly (components,
JSON patches with test ops, ``$patch: delete``, the ``images:`` transformer, a
configMapGenerator), and a renderer of our own would test our reading of kustomize, not
what a cluster gets. Without ``kubectl`` on PATH the rendering tests skip loudly;
``TIDE_REQUIRE_KUBECTL=1`` (CI) makes them fail instead. The manifests' files are
validated one by one without kubectl too (tests/deploy/test_manifests.py).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBECTL = shutil.which("kubectl")
#: CI sets TIDE_REQUIRE_KUBECTL=1: there a missing kubectl fails the test instead of skipping it
REQUIRED = os.environ.get("TIDE_REQUIRE_KUBECTL") == "1"
#: the Kubernetes release whose schemas the manifests are validated against
KUBERNETES = "1.33"
#: every directory `kubectl apply -k` is meant for (the others are built on, not applied)
APPLIED = ("deploy", "deploy/overlays/act", "deploy/overlays/record", "deploy/overlays/kafka")
MONITORING = "deploy/monitoring"
#: the kinds of the Prometheus Operator (validated by tests/deploy/test_monitoring.py)
OPERATOR_GROUP = "monitoring.coreos.com/v1"
IMAGE = "ghcr.io/tide-controller/tide"
Doc = dict[str, Any]


def version() -> str:
    """The package's version (pyproject.toml): the image's tag."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return str(project["version"])


def kubectl() -> str:
    """The ``kubectl`` binary, or skip the test loudly (fail it where CI requires it)."""
    if KUBECTL is None:
        message = "kubectl is not on PATH: the kustomizations cannot be rendered"
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)
    return KUBECTL


@functools.cache
def _render(directory: str) -> str:
    answer = subprocess.run(
        [kubectl(), "kustomize", str(ROOT / directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert answer.returncode == 0, f"kubectl kustomize {directory}: {answer.stderr.strip()}"
    return answer.stdout


def render(directory: str) -> list[Doc]:
    """The documents ``kubectl kustomize ROOT/directory`` gives (a fresh copy each call)."""
    return [doc for doc in yaml.safe_load_all(_render(directory)) if doc]


def named(docs: list[Doc], kind: str, name: str) -> Doc:
    """The one document of ``kind`` called ``name``."""
    [doc] = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def container(docs: list[Doc], deployment: str) -> Doc:
    """The one container of the Deployment ``deployment``."""
    [found] = named(docs, "Deployment", deployment)["spec"]["template"]["spec"]["containers"]
    return dict(found)


def flag(box: Doc, name: str) -> str | None:
    """The value of ``--name=VALUE`` among a container's args (None: not given)."""
    found = [a.split("=", 1)[1] for a in box["args"] if a.startswith(f"--{name}=")]
    assert len(found) <= 1, found
    return found[0] if found else None
