"""``/healthz`` and ``/readyz`` of a long-running command, on a small aiohttp server.

``/healthz`` answers 200 while the process runs its loop (a liveness probe restarts a
wedged process, nothing else). ``/readyz`` answers 200 once the recorder's initial lists
are on the log and 503 before, and its body lists every source's state — including a
metrics API that does not answer, which leaves pressure eviction nothing to act on.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

__all__ = ["HealthServer", "parse_address"]

Report = Callable[[], tuple[bool, list[str]]]


def parse_address(address: str) -> tuple[str, int]:
    """``host:port`` → (host, port).

    Raises:
        ValueError: not ``host:port`` with a port in 0..65535 (the message names the value).
    """
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"{address!r} is not host:port")
    return host.strip("[]"), int(port)


class HealthServer:
    """Serves the probes; ``report()`` says (ready, lines) at each request.

    Args:
        address: ``host:port`` to listen on (port 0: any free port, see :attr:`port`).
        report: the readiness and the lines of ``/readyz``'s body.
    """

    def __init__(self, address: str, report: Report) -> None:
        self.host, self.port = parse_address(address)
        self._report = report
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        """Listen (raises OSError when the address is taken)."""
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        server = site._server  # aiohttp keeps the bound sockets there
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = int(sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop listening."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        ready, lines = self._report()
        body = "\n".join(["ready" if ready else "not ready", *lines]) + "\n"
        return web.Response(text=body, status=200 if ready else 503)
