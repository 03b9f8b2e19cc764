"""The live controller's HTTP endpoint: ``/metrics``, ``/healthz`` and ``/readyz``.

Why aiohttp: it is already on the event loop (kubernetes-asyncio's transport), so the
endpoint shares the loop it reports on: ``/healthz`` answering at all proves the loop
runs (a blocked loop answers nothing and the kubelet restarts the pod), ``/readyz`` is
200 only after the observer was told ``ready(True)`` (initial fold done, watches open);
its body names, a line each, what the run's ``report`` says it is waiting for or holds
(the log's fold, each source's list, the metrics, the lead), as ``tide record``'s does.
Bind ``127.0.0.1`` by default; the manifest binds ``0.0.0.0`` for Prometheus and the probes.
"""

from __future__ import annotations

from collections.abc import Callable
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
    observer: PrometheusObserver,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    report: Callable[[], list[str]] | None = None,
) -> MetricsServer:
    """Serve ``observer`` on ``host:port`` (port 0: a free one) until closed; ``report``
    gives the lines of ``/readyz`` after its first one (``ready`` / ``not ready``).

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
        lines = ["ready" if observer.is_ready else "not ready"]
        if report is not None:  # the run's: its sources, metrics (stale nodes), lead
            lines.extend(report())
        body = "\n".join(lines) + "\n"
        return web.Response(status=200 if observer.is_ready else 503, text=body)

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
