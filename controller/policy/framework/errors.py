"""The framework's error tree.

Configuration mistakes must stop startup with a message naming the offending key and
value, so every parse step raises :class:`ConfigError` with a
dotted key path; nothing is logged and ignored as Volcano's ``Arguments.GetInt`` does.

    TideFrameworkError
    ├── ConfigError            invalid configuration (key path + value in the message)
    └── StatementError         a staged operation could not be applied to the session view
"""

from __future__ import annotations

import re
from typing import Any


class TideFrameworkError(Exception):
    """Root of the framework's errors."""


class ConfigError(TideFrameworkError, ValueError):
    """An invalid configuration value.

    The message reads ``<key>: <value>: <problem>`` so that the operator can find the line,
    e.g. ``tdm.revocable-zone.rz1: "25:00-26:00": hour out of range``.
    """

    def __init__(self, key: str, value: Any, problem: str) -> None:
        self.key = key
        self.value = value
        self.problem = problem
        # one line whatever the parts hold (a YAML parser's message spans several)
        super().__init__(_one_line(f"{key}: {_show(value)}: {problem}"))


class StatementError(TideFrameworkError):
    """A statement operation that cannot be applied (missing job or node, duplicate task)."""


def yaml_problem(exc: Exception) -> str:
    """A YAML parser error as one line: what is wrong and where (line and column, from 1)."""
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if isinstance(problem, str) and mark is not None:
        return f"not valid YAML: {problem} at line {mark.line + 1}, column {mark.column + 1}"
    return f"not valid YAML: {exc}"


def _one_line(text: str) -> str:
    return re.sub(r"\s*\n\s*", " ", text).strip()


def _show(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value + '"'
    return repr(value)
