"""A kubeconfig ``exec`` credential plugin written by a test, and the kubeconfig user naming it.

Why a real program: tide must run the plugin the way kubectl does (a subprocess,
``KUBERNETES_EXEC_INFO``, an ``ExecCredential`` on stdout), so the test counts real runs.
Run *n* prints the token ``PREFIX-n`` with an ``expirationTimestamp`` ``LIFE`` seconds after
its run (or, with ``BASE`` set, at ``BASE + n * LIFE``: for a test on a fake clock) and
first appends ``TOKEN EXPIRY`` to the ledger, which the API double's
:class:`~tests.kubeauth.Authentication` reads: one line per run.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCRIPT = """#!{python}
import json, os, sys, time
from datetime import datetime, timezone

ledger = os.environ["LEDGER"]
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
assert info["kind"] == "ExecCredential", info
try:
    with open(ledger) as f:
        n = len(f.read().splitlines()) + 1
except FileNotFoundError:
    n = 1
life = float(os.environ["LIFE"])
base = os.environ.get("BASE")
expiry = float(base) + n * life if base else time.time() + life
token = os.environ["PREFIX"] + "-" + str(n)
with open(ledger, "a") as f:
    f.write(f"{{token}} {{expiry}}\\n")
stamp = datetime.fromtimestamp(expiry, timezone.utc).isoformat().replace("+00:00", "Z")
json.dump(
    {{
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {{"token": token, "expirationTimestamp": stamp}},
    }},
    sys.stdout,
)
"""


@dataclass
class ExecPlugin:
    """A plugin script in ``directory`` whose tokens live ``life`` seconds."""

    directory: Path
    life: float
    base: float | None = None
    prefix: str = "exec"

    def __post_init__(self) -> None:
        self.script = self.directory / "credential-plugin"
        self.script.write_text(SCRIPT.format(python=sys.executable))
        self.script.chmod(0o755)
        self.ledger = self.directory / "issued"

    def user(self) -> dict[str, Any]:
        """The kubeconfig ``users[].user`` that runs this plugin."""
        env = {"LEDGER": str(self.ledger), "LIFE": str(self.life), "PREFIX": self.prefix}
        if self.base is not None:
            env["BASE"] = repr(self.base)
        return {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": str(self.script),
                "env": [{"name": k, "value": v} for k, v in sorted(env.items())],
                "interactiveMode": "Never",
            }
        }

    def issued(self) -> list[tuple[str, float]]:
        """(token, expiry) of every run so far, in order."""
        if not self.ledger.exists():
            return []
        lines = self.ledger.read_text().splitlines()
        return [(token, float(until)) for token, _, until in (ln.partition(" ") for ln in lines)]

    @property
    def runs(self) -> int:
        """How many times the plugin ran."""
        return len(self.issued())
