"""`tide simulate --metrics-port` serves the eviction metrics over HTTP."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "controller" / "simulate" / "data"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_simulate_serves_metrics(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from controller.cli import main; main()",
            "simulate",
            str(DATA / "demo-scenario.yaml"),
            "--config",
            str(DATA / "demo-config.yaml"),
            "--decisions",
            str(tmp_path / "d.jsonl"),
            "--metrics-port",
            str(port),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        body = ""
        for _ in range(600):  # the run itself takes a few seconds
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as r:
                    body = r.read().decode()
                break
            except OSError as exc:
                if proc.poll() is not None:
                    raise AssertionError(proc.communicate()[1].decode()) from exc
                time.sleep(0.1)
        assert 'koordlet_eviction_total{code="cpu-pressure"' in body
        assert "koordlet_eviction_cooldown_active" in body
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
