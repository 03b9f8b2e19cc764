"""Every log a pressure test writes must replay identically (`tide replay --verify`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.controller.policy.pressure.harness import LOOPS


@pytest.fixture(autouse=True)
def verify_every_loop() -> Iterator[None]:
    LOOPS.clear()
    yield
    loops = list(LOOPS)
    LOOPS.clear()
    for loop in loops:
        loop.verify()
