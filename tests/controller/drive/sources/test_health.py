"""The probes: /readyz answers 503 until ready, with each source's line; addresses parse."""

from __future__ import annotations

import aiohttp
import pytest

from controller.drive.sources.health import HealthServer, parse_address


async def test_readyz_is_503_until_ready() -> None:
    state = {"ready": False}
    server = HealthServer("127.0.0.1:0", lambda: (state["ready"], ["pods: listing"]))
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            url = f"http://127.0.0.1:{server.port}/readyz"
            async with session.get(url) as answer:
                assert (answer.status, await answer.text()) == (503, "not ready\npods: listing\n")
            state["ready"] = True
            async with session.get(url) as answer:
                assert (answer.status, await answer.text()) == (200, "ready\npods: listing\n")
    finally:
        await server.stop()


@pytest.mark.parametrize(
    ("address", "parsed"),
    [
        ("127.0.0.1:8081", ("127.0.0.1", 8081)),
        ("0.0.0.0:0", ("0.0.0.0", 0)),
        ("[::1]:9000", ("::1", 9000)),
        ("localhost", None),
        (":8081", None),
        ("host:99999", None),
        ("host:http", None),
    ],
    ids=["v4", "any-port", "v6", "no-port", "no-host", "port-too-big", "named-port"],
)
def test_parse_address(address: str, parsed: tuple[str, int] | None) -> None:
    if parsed is None:
        with pytest.raises(ValueError, match="is not host:port"):
            parse_address(address)
    else:
        assert parse_address(address) == parsed
