"""Every reference in the packages' docstrings and comments can be followed from a clone.

Two rules, checked on the text of every ``.py`` file of the packages:

* no citation of documents that live outside the repository (the shared design notes:
  "spec §", "seed §", ``spec/*.md``, ``seeds/``, ``ecosystem.md``, ``STYLE``, bare ``§1.2``
  section numbers); a docstring restates the rule and names the upstream source
  (repository, file, function) instead;
* every repo-relative path (``controller/x/y.py``, ``controller/x/``) and every backticked
  dotted name starting with a package (``controller.policy.step.Step``) names something that exists:
  the longest importable prefix is imported and the rest looked up as attributes.

The README, benchmarks/README.md and every page of docs/ are checked for the second rule too.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("streams", "projections", "controller", "replay", "benchmarks")
#: the README, the benchmarks' figures and every page of docs/
DOCUMENTS = (
    "README.md",
    "benchmarks/README.md",
    *sorted(f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")),
)

_NAMES = "|".join(PACKAGES)
#: citations of documents a clone does not have
OUTSIDE = re.compile(
    r"spec §|seed §|\bspec/\S*\.md|\bseeds/|ecosystem\.md|\bSTYLE\b|§\s*\d"
    r"|``(?:volcano|koordinator)\.md``"
)
#: ``controller/x/y.py`` or ``controller/x/``, not part of a longer path (``pkg/controller/x``)
PATH = re.compile(rf"(?<![\w/.-])((?:{_NAMES})(?:/[\w-]+)+(?:\.\w+)?)")
#: written by the benchmarks when they run, so absent from a clean clone
GENERATED = ("benchmarks/out",)
#: ```controller.x.y``` or ``:mod:`~controller.x.y``` (a backtick or ``~`` right before)
DOTTED = re.compile(rf"[`~]((?:{_NAMES})(?:\.[A-Za-z_]\w*)+)")


def package_files() -> list[Path]:
    return sorted(path for name in PACKAGES for path in (ROOT / name).rglob("*.py"))


def outside_citations(text: str) -> list[str]:
    """Lines of ``text`` that cite a document outside the repository."""
    return [line.strip() for line in text.splitlines() if OUTSIDE.search(line)]


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module, or attributes of its longest importable prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(target, attr):
                return False
            target = getattr(target, attr)
        return True
    return False


def dead_references(text: str) -> list[str]:
    """Paths and dotted names in ``text`` that name nothing in the repository."""
    dead = [
        path
        for path in PATH.findall(text)
        if not (ROOT / path).exists() and not path.startswith(GENERATED)
    ]
    dead += [name for name in DOTTED.findall(text) if not resolves(name.rstrip("."))]
    return sorted(set(dead))


@pytest.mark.parametrize(
    ("text", "cited"),
    [
        ("Volcano's LessEqual (spec §1.1).", True),
        ("as the seed says (seed §9.5)", True),
        ("numbers from spec/ecosystem.md", True),
        ("see spec/volcano.md for the rules", True),
        ("the original note in seeds/004.txt", True),
        ("recipe in ``ecosystem.md``", True),
        ("Actions stage, they do not act (STYLE §3.6).", True),
        ("shuffle (spec ``volcano.md`` ...)", True),
        ("the cross-midnight bug (§11.1-2)", True),
        ("volcano-sh/volcano pkg/scheduler/plugins/tdm/tdm.go, ``parseRevocableZone``", False),
        ("the pod's spec.priority; a PodSpec; styles", False),
    ],
)
def test_outside_citations_are_recognised(text: str, cited: bool) -> None:
    assert bool(outside_citations(text)) is cited


@pytest.mark.parametrize(
    ("text", "dead"),
    [
        ("see controller/policy/step.py", []),
        ("see controller/sim/engine.py", ["controller/sim/engine.py"]),
        ("the old `controller/engine/` package", ["controller/engine"]),
        ("the demo `controller/simulate/data/demo-config.yaml`", []),
        ("results in benchmarks/out/results.json", []),
        ("upstream pkg/controllers/job/helpers/helpers.go and pkg/controller/x.py", []),
        ("the step, ``controller.policy.step.Step``", []),
        (":mod:`~controller.policy.framework.jobs` counts", []),
        ("``controller.policy.step.NoSuchThing``", ["controller.policy.step.NoSuchThing"]),
        ("``controller.sim`` runs it", ["controller.sim"]),
        ("``projections.raw`` folds it", ["projections.raw"]),
        ("from controller.sim import x  (not backticked: code, not a reference)", []),
    ],
)
def test_dead_references_are_recognised(text: str, dead: list[str]) -> None:
    assert dead_references(text) == dead


@pytest.mark.parametrize("path", package_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_citation_of_documents_outside_the_repository(path: Path) -> None:
    assert outside_citations(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    "path",
    package_files() + [ROOT / name for name in DOCUMENTS],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_referenced_paths_and_modules_exist(path: Path) -> None:
    assert dead_references(path.read_text(encoding="utf-8")) == []
