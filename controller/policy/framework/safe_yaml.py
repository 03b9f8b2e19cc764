"""Bounded YAML for configurations and scenarios: what a hostile file cannot do.

``yaml.safe_load`` builds no objects, but it still lets a 500-byte file with nested
aliases expand to gigabytes once serialised (a ``config.applied`` record holds the whole
configuration), and it happily returns non-string keys, integers beyond 64 bits and
NaN. :func:`load_yaml` refuses, with the path of the offending key, a file that is
larger than :data:`MAX_BYTES`, not UTF-8, uses more than :data:`MAX_ALIASES` aliases,
expands to more than :data:`MAX_NODES` values or deeper than :data:`MAX_DEPTH`, or holds
a non-string key, an integer outside 64 bits, or a NaN / infinite float.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from controller.policy.framework.errors import yaml_problem

MAX_BYTES = 1 << 20
MAX_ALIASES = 100
MAX_NODES = 100_000
MAX_DEPTH = 64
_INT64 = 2**63


class YAMLLimitError(ValueError):
    """A YAML document tide refuses; the message names the file or the key and why."""


class _CountingLoader(yaml.SafeLoader):
    """SafeLoader counting the aliases it resolves."""

    aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise YAMLLimitError(f"more than {MAX_ALIASES} aliases")
        return super().compose_node(parent, index)


def load_yaml_text(text: str | bytes, *, where: str = "<yaml>") -> Any:
    """Parse one YAML document within the bounds above (``YAMLLimitError`` otherwise;
    a syntax error is a ``YAMLLimitError`` too, naming ``where``)."""
    if isinstance(text, bytes):
        if len(text) > MAX_BYTES:
            raise YAMLLimitError(f"{where}: larger than {MAX_BYTES} bytes")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise YAMLLimitError(f"{where}: not UTF-8 (byte {exc.start})") from None
    if len(text) > MAX_BYTES:
        raise YAMLLimitError(f"{where}: larger than {MAX_BYTES} bytes")
    loader = _CountingLoader(text)
    try:
        value = loader.get_single_data()
    except YAMLLimitError as exc:
        raise YAMLLimitError(f"{where}: {exc}") from None
    except yaml.YAMLError as exc:
        raise YAMLLimitError(f"{where}: {yaml_problem(exc)}") from None
    except (RecursionError, ValueError, OverflowError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise YAMLLimitError(f"{where}: not valid YAML: {first}") from None
    finally:
        loader.dispose()
    check_tree(value, where)
    return value


def load_yaml(path: Path) -> Any:
    """:func:`load_yaml_text` of a file (an ``OSError`` names the path)."""
    with path.open("rb") as stream:
        data = stream.read(MAX_BYTES + 1)
    return load_yaml_text(data, where=str(path))


def check_tree(value: Any, where: str) -> None:
    """Refuse a tree (already parsed) outside the bounds: size counted with every alias
    expanded, depth, key types and number ranges."""
    count = 0
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, path, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise YAMLLimitError(f"{where}: more than {MAX_NODES} values (aliases expanded)")
        if depth > MAX_DEPTH:
            raise YAMLLimitError(f"{where}: {path}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise YAMLLimitError(
                        f"{where}: {_join(path, repr(key))}: key {key!r} is not a string"
                    )
                stack.append((child, _join(path, key), depth + 1))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(item))
        elif isinstance(item, bool):
            continue
        elif isinstance(item, int) and not -_INT64 <= item < _INT64:
            raise YAMLLimitError(f"{where}: {path or 'value'}: integer out of 64-bit range")
        elif isinstance(item, float) and not math.isfinite(item):
            raise YAMLLimitError(f"{where}: {path or 'value'}: {item!r} is not a finite number")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
