"""The live controller's HTTP endpoint: ``/metrics``, ``/healthz`` and ``/readyz``.

Why aiohttp: it is already on the event loop (kubernetes-asyncio's transport), so the
endpoint shares the loop it reports on: ``/healthz`` answering at all proves the loop
runs (a blocked loop answers nothing and the kubelet restarts the pod), ``/readyz`` is
200 only after the observer was told ``ready(True)`` (initial fold done, watches open).
Bind ``127.0.0.1`` by default; the manifest binds ``0.0.0.0`` for Prometheus and the probes.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from controller.drive.observe.metrics import PrometheusObserver

__all__ = ["DEFAULT_PORT", "MetricsServer", "serve"]

DEFAULT_PORT = 8080


@dataclass
class MetricsServer:
    """A running endpoint: where it listens, and how to stop it."""

    host: str
    port: int
    runner: web.AppRunner

    @property
    def url(self) -> str:
        """``http://HOST:PORT``."""
        return f"http://{self.host}:{self.port}"

    async def close(self) -> None:
        """Stop listening."""
        await self.runner.cleanup()


async def serve(
    observer: PrometheusObserver, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT
) -> MetricsServer:
    """Serve ``observer`` on ``host:port`` (port 0: a free one) until closed.

    Raises:
        OSError: the address cannot be bound (in use, not local).
    """

    async def metrics(request: web.Request) -> web.Response:
        del request
        body = generate_latest(observer.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(request: web.Request) -> web.Response:
        del request
        return web.Response(text="ok\n")

    async def readyz(request: web.Request) -> web.Response:
        del request
        notes = "".join(f"{line}\n" for line in observer.notes)  # stale node metrics
        if observer.is_ready:
            return web.Response(text="ready\n" + notes)
        return web.Response(status=503, text="not ready\n" + notes)

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError:
        await runner.cleanup()
        raise
    server = site._server
    bound = port
    if server is not None and getattr(server, "sockets", None):
        bound = int(server.sockets[0].getsockname()[1])  # type: ignore[attr-defined]
    return MetricsServer(host, bound, runner)
