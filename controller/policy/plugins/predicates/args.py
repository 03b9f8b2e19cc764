"""The ``predicates`` plugin's arguments: Volcano's switches, checked at load.

Keys (Volcano's, booleans, default true): ``predicate.NodeAffinityEnable``,
``predicate.TaintTolerationEnable``. Other ``predicate.*`` keys are accepted and ignored.
A value that is not a boolean stops startup with a
:class:`~controller.policy.framework.errors.ConfigError` naming the key and the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.policy.framework.errors import ConfigError

NAME = "predicates"


@dataclass(frozen=True)
class PredicatesArgs:
    """Validated switches: whether node affinity (with ``nodeSelector``) and taints are checked."""

    node_affinity: bool = True
    taint_toleration: bool = True


def parse_args(raw: Mapping[str, Any]) -> PredicatesArgs:
    """Read the boolean switches; a non-boolean value is an error naming the key."""
    values = {}
    for key, attr in (
        ("predicate.NodeAffinityEnable", "node_affinity"),
        ("predicate.TaintTolerationEnable", "taint_toleration"),
    ):
        if key in raw:
            value = raw[key]
            if not isinstance(value, bool):
                raise ConfigError(f"{NAME}.{key}", value, "must be true or false")
            values[attr] = value
    return PredicatesArgs(**values)
