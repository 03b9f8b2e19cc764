"""The ``nodeorder`` plugin's arguments: Volcano's weights, checked at load.

Keys (integers; Volcano's defaults): ``leastrequested.weight`` 1, ``mostrequested.weight``
0, ``balancedresource.weight`` 1, ``nodeaffinity.weight`` 2, ``tainttoleration.weight``
3. ``podaffinity.weight``, ``imagelocality.weight`` and ``podtopologyspread.weight`` are
accepted and not scored (tide models no preferred pod affinity, images or topology
spread). A non-integer or negative weight stops startup with a
:class:`~controller.policy.framework.errors.ConfigError` naming the key and the value
(upstream reads them from its untyped ``Arguments`` map: volcano-sh/volcano
pkg/scheduler/plugins/nodeorder/nodeorder.go, ``calculateWeight``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.policy.framework.errors import ConfigError

NAME = "nodeorder"
WEIGHTS = {
    "leastrequested.weight": 1,
    "mostrequested.weight": 0,
    "balancedresource.weight": 1,
    "nodeaffinity.weight": 2,
    "tainttoleration.weight": 3,
}
UNSCORED = frozenset({"podaffinity.weight", "imagelocality.weight", "podtopologyspread.weight"})


@dataclass(frozen=True, slots=True)
class NodeOrderArgs:
    """Validated weights."""

    least_requested: int = 1
    most_requested: int = 0
    balanced_resource: int = 1
    node_affinity: int = 2
    taint_toleration: int = 3


def parse_args(raw: Mapping[str, Any]) -> NodeOrderArgs:
    """The weights; a non-integer or negative weight stops startup.

    Raises:
        ConfigError: names the key and the value.
    """
    values = dict(WEIGHTS)
    for key in (*WEIGHTS, *sorted(UNSCORED)):
        if key not in raw:
            continue
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{NAME}.{key}", value, "must be a non-negative integer")
        if key in values:
            values[key] = value
    return NodeOrderArgs(*(values[key] for key in WEIGHTS))
