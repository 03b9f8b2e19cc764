"""A kubeconfig tide cannot use is exit 2 with one line naming the file and what is wrong
(issue 29: a YAML list or a parse error was exit 3, "internal error", a crash file), and no
kubeconfig at all says so; nothing is written (no log is created)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from controller.cli import app
from controller.drive.kube.config import KubeConfigError, check_kubeconfig, load_cluster

ROOT = Path(__file__).resolve().parents[4]
CONFIG = ROOT / "examples" / "volcano-scheduler.conf.yaml"

GOOD = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
    "users": [{"name": "u", "user": {"token": "t"}}],
    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    "current-context": "x",
}


def changed(**parts: object) -> bytes:
    return yaml.safe_dump({**GOOD, **parts}).encode()


#: what the file holds -> what the one line says after the file's name
CASES: dict[str, tuple[bytes, str]] = {
    "binary": (bytes(range(128, 256)), "not UTF-8 (byte 0), so not a kubeconfig"),
    "not-yaml": (b"clusters: [a, b\n", "not valid YAML: "),
    "a-list": (b"- a\n- b\n", "is YAML but not a kubeconfig (not a mapping)"),
    "a-string": (b"hello\n", "is YAML but not a kubeconfig (not a mapping)"),
    "other-yaml": (
        b"actions: allocate\n",
        "is YAML but not a kubeconfig (no clusters, contexts or users; keys: actions)",
    ),
    "empty": (b"", "is empty, not a kubeconfig"),
    "blank": (b"\n  \n", "is empty, not a kubeconfig"),
    "no-current-context": (
        changed(**{"current-context": ""}),
        "has no current-context (give --context NAME)",
    ),
    "unknown-current-context": (
        changed(**{"current-context": "gone"}),
        "has no context 'gone' in its contexts",
    ),
    "missing-cluster": (
        changed(clusters=[]),
        "context 'x' names cluster 'c', which its clusters do not have",
    ),
    "missing-user": (
        changed(users=[]),
        "context 'x' names user 'u', which its users do not have",
    ),
    "no-server": (
        changed(clusters=[{"name": "c", "cluster": {}}]),
        "cluster 'c' has no server",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_kubeconfig_is_exit_2_naming_the_file(case: str, tmp_path: Path) -> None:
    content, said = CASES[case]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_bytes(content)
    log = tmp_path / "tide.db"
    for command in ("record", "run"):
        args = [command, "--config", str(CONFIG), "--kubeconfig", str(kubeconfig)]
        result = CliRunner().invoke(app, [*args, "--log", str(log)])
        assert result.exit_code == 2, (command, result.output)
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert errors == [line for line in result.stderr.splitlines() if "warning" not in line]
        assert len(errors) == 1, result.stderr
        assert errors[0].startswith(f"error: {kubeconfig}: {said}"), errors[0]
        assert "internal error" not in result.output and "Traceback" not in result.output
        assert sorted(p.name for p in tmp_path.iterdir()) == ["kubeconfig"]


def test_a_directory_for_a_kubeconfig(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match=f"^{tmp_path}: is a directory"):
        asyncio.run(load_cluster(tmp_path, None))


def test_the_good_one_passes_and_a_context_may_be_chosen(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_bytes(changed(**{"current-context": ""}))
    check_kubeconfig(kubeconfig, "x")
    kubeconfig.write_bytes(yaml.safe_dump(GOOD).encode())
    check_kubeconfig(kubeconfig, None)
    anonymous = {"name": "x", "context": {"cluster": "c"}}  # no user: kubectl allows it
    kubeconfig.write_bytes(changed(contexts=[anonymous]))
    check_kubeconfig(kubeconfig, None)
    with pytest.raises(KubeConfigError, match="has no context 'y'"):
        check_kubeconfig(kubeconfig, "y")


@pytest.mark.parametrize("kubeconfig_env", [None, "", "{tmp}/nope{sep}{tmp}/nada"])
def test_no_kubeconfig_at_all_says_so(
    kubeconfig_env: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    if kubeconfig_env is None:
        monkeypatch.delenv("KUBECONFIG", raising=False)
    else:
        monkeypatch.setenv("KUBECONFIG", kubeconfig_env.format(tmp=tmp_path, sep=os.pathsep))
    log = tmp_path / "tide.db"
    result = CliRunner().invoke(app, ["record", "--config", str(CONFIG), "--log", str(log)])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: no cluster to talk to: "), errors
    assert "not a pod (KUBERNETES_SERVICE_HOST is unset); give --kubeconfig FILE" in errors[0]
    if kubeconfig_env:
        assert "$KUBECONFIG" in errors[0] and "names no existing file" in errors[0]
    else:
        assert f"there is no {tmp_path}/.kube/config" in errors[0]
    assert not log.exists()
