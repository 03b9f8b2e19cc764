#!/usr/bin/env python3
"""Run a command in an OCI image archive's root file system, here, without a container runtime.

``podman run`` cannot run containers on tide's CI machine, so the image scripts/build-image
writes is proven to run this way: its layers are unpacked into a directory and its entrypoint
is started there with ``chroot``, as the image's user, in its working directory, with its
environment and nothing of the host's. tests/deploy/test_image.py uses it (through
``.ci/run``); by hand, as root::

    scripts/image_run.py build/tide-0.1.0.oci.tar --version
    scripts/image_run.py --root /tmp/tide-root build/tide-0.1.0.oci.tar demo

Standard library only: it runs with any python3 on the host.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

#: a layer entry that deletes a path of the layers below it (OCI image spec, "Whiteouts")
WHITEOUT = ".wh."
#: a layer entry that empties its directory of the layers below it
OPAQUE = ".wh..wh..opq"


@dataclass(frozen=True)
class Image:
    """What an OCI archive holds: its name, its config and its layers' blobs, in order."""

    name: str
    config: dict[str, Any]
    layers: tuple[str, ...]

    @property
    def labels(self) -> dict[str, str]:
        """The image's labels (``config.Labels``)."""
        labels: dict[str, str] = self.config.get("config", {}).get("Labels") or {}
        return labels

    @property
    def run_config(self) -> dict[str, Any]:
        """How a runtime starts it: ``Entrypoint``, ``Cmd``, ``User``, ``WorkingDir``, ``Env``."""
        run: dict[str, Any] = self.config.get("config", {})
        return run


def _blob(archive: tarfile.TarFile, digest: str) -> IO[bytes]:
    algorithm, _, hexdigest = digest.partition(":")
    member = archive.extractfile(f"blobs/{algorithm}/{hexdigest}")
    if member is None:
        raise ValueError(f"the archive has no blob {digest}")
    return member


def read_image(path: Path) -> Image:
    """Read an OCI archive's name, config and layer list (its only or first manifest).

    Args:
        path: an OCI image layout in a tar file (``buildah push ... oci-archive:PATH``).

    Returns:
        The image, with the ``org.opencontainers.image.ref.name`` it was saved under.
    """
    with tarfile.open(path) as archive:
        index = json.load(_blob_or_file(archive, "index.json"))
        entry = index["manifests"][0]
        manifest = json.load(_blob(archive, entry["digest"]))
        config = json.load(_blob(archive, manifest["config"]["digest"]))
    name = entry.get("annotations", {}).get("org.opencontainers.image.ref.name", "")
    return Image(name, config, tuple(layer["digest"] for layer in manifest["layers"]))


def _blob_or_file(archive: tarfile.TarFile, name: str) -> IO[bytes]:
    member = archive.extractfile(name)
    if member is None:
        raise ValueError(f"the archive has no {name}: not an OCI archive")
    return member


def unpack(path: Path, root: Path) -> Image:
    """Unpack an OCI archive's layers, in order and with their whiteouts, into ``root``.

    Args:
        path: the OCI archive.
        root: an empty or missing directory; owners and modes are kept, so run as root.

    Returns:
        The image read from the archive.
    """
    image = read_image(path)
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)  # the image's "/" (a temporary directory is 0700: the user could not enter)
    with tarfile.open(path) as archive:
        for digest in image.layers:
            # "r|*": the layer is read once as a stream, gzip or not
            with tarfile.open(fileobj=_blob(archive, digest), mode="r|*") as layer:
                for member in layer:
                    _apply(layer, member, root)
    return image


def _apply(layer: tarfile.TarFile, member: tarfile.TarInfo, root: Path) -> None:
    entry = PurePosixPath(member.name)
    if ".." in entry.parts:
        raise ValueError(f"layer entry {member.name} leaves the root file system")
    target = root / entry
    if entry.name == OPAQUE:
        for below in target.parent.iterdir():
            _remove(below)
    elif entry.name.startswith(WHITEOUT):
        _remove(target.with_name(entry.name.removeprefix(WHITEOUT)))
    else:
        if target.is_symlink() or (target.exists() and not target.is_dir()):
            target.unlink()
        # the archive is the one this machine just built: its absolute symlinks are kept
        layer.extract(member, root, numeric_owner=True, filter="fully_trusted")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.is_symlink() or path.exists():
        path.unlink()


def _home(root: Path, user: str) -> str:
    uid = user.partition(":")[0]
    for line in (root / "etc/passwd").read_text().splitlines():
        fields = line.split(":")
        if len(fields) > 5 and uid in (fields[0], fields[2]):
            return fields[5]
    return "/"


def command(image: Image, root: Path, args: list[str]) -> list[str]:
    """The command line that starts the image's entrypoint with ``args`` as a runtime would.

    Args:
        image: the image (its ``User``, ``WorkingDir``, ``Env``, ``Entrypoint``, ``Cmd``).
        root: where its root file system is unpacked.
        args: the container's arguments (they replace ``Cmd``).

    Returns:
        ``chroot --userspec=USER ROOT env -i ENV... env -C WORKDIR ENTRYPOINT ARGS...``.
    """
    run = image.run_config
    user = run.get("User") or "0:0"
    env = [*run.get("Env", []), f"HOME={_home(root, user)}"]
    entrypoint = [*run.get("Entrypoint", []), *(args or run.get("Cmd") or [])]
    workdir = run.get("WorkingDir") or "/"
    return [
        "chroot",
        f"--userspec={user}",
        str(root),
        "/usr/bin/env",
        "-i",
        *env,
        "/usr/bin/env",
        "-C",
        workdir,
        *entrypoint,
    ]


def main(argv: list[str]) -> int:
    """Unpack the archive (into ``--root``, or a temporary directory) and run the command."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--root", type=Path, help="unpack here and keep it (default: temporary)")
    parser.add_argument("archive", type=Path, help="the OCI archive (build/tide-*.oci.tar)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the container's arguments")
    options = parser.parse_args(argv)
    if not options.archive.is_file():
        print(f"image_run: no such archive: {options.archive}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="tide-image-root.") as scratch:
        root = options.root or Path(scratch)
        try:
            image = unpack(options.archive, root)
        except (tarfile.TarError, ValueError, KeyError, IndexError) as error:
            why = "not a tar file" if isinstance(error, tarfile.ReadError) else str(error)
            print(f"image_run: {options.archive} is not an OCI archive: {why}", file=sys.stderr)
            return 2
        return subprocess.run(command(image, root, options.args), check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
