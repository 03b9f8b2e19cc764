"""tide's image: one version, one description in two builds, and an image that runs.

The Containerfile (for builders with a registry) and scripts/build-image (this machine, no
registry) describe the same image: the tables below hold them to the same Python, user,
working directory, entrypoint, environment and labels, and both to pyproject's version, which
``tide --version`` prints. The built archive is checked only where it can be: as root, after
scripts/build-image, with ``TIDE_REQUIRE_IMAGE=1`` (``.ci/run`` sets it once the build is
done); there its config must say what the Containerfile says and its root file system must run
``tide --version`` and ``tide demo`` under chroot as the image's user.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import tomllib
from collections.abc import Callable, Iterator
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

from controller.cli import app

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import image_run  # noqa: E402  (scripts/ is not a package)

CONTAINERFILE = (ROOT / "Containerfile").read_text()
#: the Containerfile's last stage: the image itself
FINAL = "FROM " + CONTAINERFILE.rsplit("\nFROM ", 1)[1]
BUILD_SCRIPT = ROOT / "scripts" / "build-image"
SCRIPT = BUILD_SCRIPT.read_text()
PYPROJECT_VERSION: str = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
#: CI sets TIDE_REQUIRE_IMAGE=1 once scripts/build-image is done: there the built image's tests
#: fail instead of skipping
REQUIRED = os.environ.get("TIDE_REQUIRE_IMAGE") == "1"
LABEL = "org.opencontainers.image."


def _one(pattern: str, text: str) -> str:
    found = re.findall(pattern, text, re.M)
    assert len(found) == 1, f"{pattern!r}: {found}"
    return str(found[0])


def _var(name: str) -> str:
    """A ``name=value`` assignment at the top of scripts/build-image (quotes stripped)."""
    return _one(rf"^{name}=(\"[^\"]*\"|'[^']*'|\S+)", SCRIPT).strip("'\"")


def _containerfile_labels() -> dict[str, str]:
    return dict(re.findall(rf"({re.escape(LABEL)}\w+)=\"([^\"]*)\"", FINAL))


def _script_labels() -> dict[str, str]:
    """The build script's labels, its ``$variables`` resolved (version, revision stay named)."""
    labels = dict(re.findall(rf"--label ({re.escape(LABEL)}\w+)=\"\$(\w+)\"", SCRIPT))
    named = {"version": "${VERSION}", "revision": "${REVISION}"}
    return {key: named.get(var) or _var(var) for key, var in labels.items()}


def _containerfile_env() -> set[str]:
    return set(_one(r"^ENV (.*)$", FINAL).split())


UID = _var("uid")
#: what the two builds must agree on: (what, the Containerfile says, the build script says)
PARITY = [
    ("python", _one(r"^ARG PYTHON=(\S+)$", CONTAINERFILE), _var("python_version")),
    ("both stages on python:X-slim", CONTAINERFILE.count("FROM python:${PYTHON}-slim"), 2),
    ("user", _one(r"^USER (\S+)$", FINAL), f"{UID}:{UID}"),
    ("useradd uid", _one(r"useradd --uid (\d+)", FINAL), UID),
    ("groupadd gid", _one(r"groupadd --gid (\d+)", FINAL), UID),
    ("home", _one(r"--home-dir (\S+)", FINAL), _var("home")),
    ("working directory", _one(r"^WORKDIR (\S+)$", FINAL), _var("home")),
    ("entrypoint", _one(r"^ENTRYPOINT (.*)$", FINAL), _var("entrypoint")),
    ("labels", _containerfile_labels(), _script_labels()),
    (
        "environment",
        _containerfile_env(),
        set(re.findall(r"--env (LANG=\S+|PYTHON\w+=\S+)", SCRIPT)),
    ),
]


@pytest.mark.parametrize(("what", "containerfile", "script"), PARITY, ids=[p[0] for p in PARITY])
def test_containerfile_and_build_script_describe_one_image(
    what: str, containerfile: object, script: object
) -> None:
    assert containerfile == script, what


def test_the_labels_are_the_ones_a_registry_shows() -> None:
    assert set(_containerfile_labels()) == {
        f"{LABEL}{key}" for key in ("title", "description", "source", "version", "revision")
    }


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("pyproject.toml", PYPROJECT_VERSION),
        ("the installed package (importlib.metadata)", version("tide")),
        ("the Containerfile's ARG VERSION, stage one", None),
        ("the Containerfile's ARG VERSION, stage two", None),
    ],
)
def test_one_version(source: str, found: str | None) -> None:
    defaults = re.findall(r"^ARG VERSION=(\S+)$", CONTAINERFILE, re.M)
    assert len(defaults) == 2
    if found is None:
        found = defaults[0] if "stage one" in source else defaults[1]
    assert found == PYPROJECT_VERSION, f"{source} says {found}, pyproject.toml {PYPROJECT_VERSION}"


def test_tide_version_prints_the_package_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"tide {PYPROJECT_VERSION}\n"


@pytest.mark.parametrize(
    ("env", "name", "archive"),
    [
        (
            {},
            f"ghcr.io/tide-controller/tide:{PYPROJECT_VERSION}",
            f"build/tide-{PYPROJECT_VERSION}.oci.tar",
        ),
        (
            {"TIDE_IMAGE_REPO": "registry.example/ops/tide", "TIDE_IMAGE_ARCHIVE": "/tmp/t.tar"},
            f"registry.example/ops/tide:{PYPROJECT_VERSION}",
            "/tmp/t.tar",
        ),
    ],
)
def test_build_script_tags_the_package_version(
    env: dict[str, str], name: str, archive: str
) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TIDE_IMAGE_")}
    out = subprocess.run(
        [str(BUILD_SCRIPT), "--print"],
        capture_output=True,
        text=True,
        check=True,
        env={**clean, **env},
    ).stdout
    assert out.splitlines() == [name, archive]


def test_build_script_refuses_an_unknown_argument() -> None:
    result = subprocess.run(
        [str(BUILD_SCRIPT), "--push"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "build-image: unknown argument --push (use --print, or no argument to build)"
    )


def _tar_of(path: Path, name: str) -> None:
    (path.parent / name).write_text("{}")
    with tarfile.open(path, "w") as archive:
        archive.add(path.parent / name, arcname=name)


@pytest.mark.parametrize(
    ("make", "line"),
    [
        (lambda p: p.write_text("not a tar"), "is not an OCI archive: not a tar file"),
        (
            lambda p: _tar_of(p, "manifest.json"),
            "is not an OCI archive: \"filename 'index.json' not found\"",
        ),
        (lambda p: None, "no such archive: "),
    ],
    ids=["not a tar", "no index.json", "missing"],
)
def test_image_run_names_a_bad_archive_in_one_line(
    make: Callable[[Path], object], line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / "x.oci.tar"
    make(archive)
    assert image_run.main([str(archive), "--version"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and line in err and str(archive) in err


# --- the built image (root, after scripts/build-image, TIDE_REQUIRE_IMAGE=1) ---------------

built = pytest.mark.skipif(
    not REQUIRED, reason="the built image: TIDE_REQUIRE_IMAGE=1, as root, after scripts/build-image"
)


def _printed() -> list[str]:
    return subprocess.run(
        [str(BUILD_SCRIPT), "--print"], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.splitlines()


def _built_by(script: str) -> tuple[str, Path]:
    """The image name and archive ``script`` writes (try-containerfile's: ``-containerfile``)."""
    name, archive = _printed()
    if script == "scripts/try-containerfile":
        repo, _, tag = name.rpartition(":")
        return f"{repo}-containerfile:{tag}", ROOT / archive.replace(
            ".oci.tar", "-containerfile.oci.tar"
        )
    return name, ROOT / archive


@pytest.fixture(
    scope="module",
    # scripts/build-image's archive is required (.ci/run builds it); the Containerfile's own
    # build (scripts/try-containerfile, by hand: minutes more) is checked when it is there
    params=["scripts/build-image", "scripts/try-containerfile"],
)
def unpacked(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[image_run.Image, Path]]:
    name, archive = _built_by(request.param)
    if request.param != "scripts/build-image" and not archive.is_file():
        pytest.skip(f"no {archive.relative_to(ROOT)}: run {request.param} to check it too")
    assert os.geteuid() == 0, "the image's root file system is unpacked and entered as root"
    assert archive.is_file(), f"no {archive}: run {request.param} first"
    root = tmp_path_factory.mktemp("image") / "root"
    image = image_run.unpack(archive, root)
    assert image.name == name
    yield image, root


def _inside(unpacked: tuple[image_run.Image, Path], *args: str) -> subprocess.CompletedProcess[str]:
    image, root = unpacked
    return subprocess.run(
        image_run.command(image, root, list(args)),
        capture_output=True,
        text=True,
        check=False,
        timeout=600,  # a hang guard, not a timing assertion
    )


def _head() -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.strip()


@built
def test_built_image_says_what_the_containerfile_says(
    unpacked: tuple[image_run.Image, Path],
) -> None:
    image, _ = unpacked
    run = image.run_config
    labels = _containerfile_labels()
    expected = {
        "user": _one(r"^USER (\S+)$", FINAL),
        "entrypoint": json.loads(_one(r"^ENTRYPOINT (.*)$", FINAL)),
        "cmd": None,
        "working directory": _one(r"^WORKDIR (\S+)$", FINAL),
        "environment": _containerfile_env(),
        **{key: value for key, value in labels.items() if "${" not in value},
        f"{LABEL}version": PYPROJECT_VERSION,
        # a stale archive fails here: rebuild it
        f"{LABEL}revision": _head(),
    }
    found = {
        "user": run.get("User"),
        "entrypoint": run.get("Entrypoint"),
        "cmd": run.get("Cmd"),
        "working directory": run.get("WorkingDir"),
        "environment": _containerfile_env() & set(run.get("Env", [])),
        **{key: image.labels.get(key) for key in labels},
    }
    assert found == expected


@built
def test_built_image_runs_tide_version(unpacked: tuple[image_run.Image, Path]) -> None:
    result = _inside(unpacked, "--version")
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        f"tide {PYPROJECT_VERSION}\n",
        "",
    )


@built
def test_built_image_runs_the_demo_as_its_user(unpacked: tuple[image_run.Image, Path]) -> None:
    image, root = unpacked
    home = root / image.run_config["WorkingDir"].lstrip("/")
    demo = _inside(unpacked, "demo")
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "the report (open it in a browser, no network needed): tide-demo.html" in demo.stdout
    for written in ("tide-demo.db", "tide-demo.html"):
        path = home / written
        assert path.is_file(), f"the demo wrote no {written} in the image's working directory"
        assert path.stat().st_uid == int(UID)
    verified = _inside(unpacked, "replay", "tide-demo.db", "--verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
