"""docs/install.md stays true to deploy/: its contents list is its sections, every
`kubectl apply -k` / `kubectl delete -k` of its ```sh blocks renders (the example
kustomization of its own included), in the order the tests run them, and its alert table,
plain Prometheus scrape job and layout table are deploy/'s."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tests.deploy.monitoring import alerts
from tests.deploy.render import DEPLOY, IMAGE, ROOT, container, render, version

DOC = ROOT / "docs" / "install.md"
TEXT = DOC.read_text()
_SH = re.compile(r"```sh\n(.*?)```", re.S)
_YAML = re.compile(r"```yaml\n(.*?)```", re.S)
_KUSTOMIZE = re.compile(r"^kubectl (apply|delete) -k (\S+)$", re.M)
#: the doc's own kustomization example: where it says it lives, and the clone it names
EXAMPLE = "my-tide/"
CLONE = "../tide/"


def kustomize_commands() -> list[tuple[str, str]]:
    """(verb, path) of every ``kubectl apply|delete -k PATH`` in the sh blocks, in order."""
    return [(verb, path) for block in _SH.findall(TEXT) for verb, path in _KUSTOMIZE.findall(block)]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_the_contents_list_is_the_sections() -> None:
    sections = re.findall(r"^## (.+)$", TEXT, re.M)
    contents = TEXT.split("**Contents**\n", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^- \[(.+?)\]\(#(.+?)\)$", contents, re.M)
    assert [title for title, _ in listed] == sections
    assert [anchor for _, anchor in listed] == [slug(s) for s in sections]


def test_the_install_commands_are_the_tested_ones_in_order() -> None:
    assert kustomize_commands() == [
        ("apply", "deploy/"),
        ("apply", "deploy/overlays/act/"),
        ("apply", "deploy/overlays/record/"),
        ("apply", "deploy/overlays/kafka/"),
        ("apply", EXAMPLE),
        ("apply", "deploy/monitoring/"),
        ("delete", "deploy/"),
    ]


def test_every_kustomization_the_doc_applies_renders() -> None:
    for _, path in kustomize_commands():
        if path != EXAMPLE:
            assert render(path.rstrip("/")), path


def test_the_docs_own_kustomization_sets_the_image(tmp_path: Path) -> None:
    [example] = [b for b in _YAML.findall(TEXT) if b.startswith(f"# {EXAMPLE}kustomization.yaml")]
    mine = tmp_path / EXAMPLE
    mine.mkdir()
    # the clone beside it is this repository (kustomize takes no absolute resource)
    (tmp_path / CLONE.removeprefix("../")).symlink_to(ROOT)
    (mine / "kustomization.yaml").write_text(example)
    assert f"  - {CLONE}deploy\n" in example
    docs = render(str(mine))
    [image] = yaml.safe_load(example)["images"]
    assert image["name"] == IMAGE
    assert container(docs, "tide-run")["image"] == f"{image['newName']}:{version()}"
    assert image["newTag"] == version()


def test_the_alert_table_is_the_rules() -> None:
    table = TEXT.split("| alert | fires when |", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"^\| `(\w+)` \|", table, re.M) == list(alerts())


def test_the_plain_prometheus_job_is_the_one_the_alerts_read() -> None:
    [config] = [yaml.safe_load(b) for b in _YAML.findall(TEXT) if "scrape_configs" in b]
    [job] = config["scrape_configs"]
    assert f'up{{job="{job["job_name"]}"}}' in alerts()["TideTargetDown"]["expr"]
    assert config["rule_files"] == ["tide-rules.yaml"]
    relabel = job["relabel_configs"][0]["regex"]
    service, port = relabel.split(";")
    base = yaml.safe_load((DEPLOY / "base" / "service.yaml").read_text())
    assert (service, port) == (base["metadata"]["name"], base["spec"]["ports"][0]["name"])


def test_the_layout_table_names_every_kustomization() -> None:
    table = TEXT.split("| path | what |", 1)[1]
    listed = re.findall(r"^\| `(deploy/[^`]*)` \|", table, re.M)
    dirs = sorted(f"{p.parent.relative_to(ROOT)}/" for p in DEPLOY.rglob("kustomization.yaml"))
    assert sorted(p if p.endswith("/") else p.rsplit("/", 1)[0] + "/" for p in listed) == dirs
