"""Fixtures every test package may use (keep this small; topic fixtures live beside their tests)."""

from __future__ import annotations

import pytest

from streams.backends.memory import MemoryLog


@pytest.fixture
def memory_log() -> MemoryLog:
    """A fresh in-process log."""
    return MemoryLog()
