"""What a projection is: a fold of the log that knows where it is.

A projection applies events in offset order, ignores the types it does not fold, and keeps
``position``, the offset of the next event it expects. Its state can be written out with
``dump()`` (deterministic bytes: equal states give equal bytes) and read back with
``load()``, which restores ``position`` too; :mod:`projections.store` keeps the two in one
write so a projection resumes exactly where its checkpoint was taken.

:class:`Projection` is the structural contract (any class with these members is one);
:class:`BaseProjection` implements it with one handler method per event type, marked with
:func:`handles`, as eventsourcing's projections dispatch on the event's topic.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

import orjson

from streams.events import JSON, Event
from streams.gcpause import paused_gc as paused_gc

Handler = Callable[[Any, Event], None]
F = TypeVar("F", bound=Callable[..., None])


class CheckpointError(ValueError):
    """A checkpoint that this projection cannot load (other format or other projection)."""


@runtime_checkable
class Projection(Protocol):
    """A fold of the log. ``position`` is the next offset to apply."""

    position: int

    @property
    def name(self) -> str:
        """The projection's stable name (its checkpoint key)."""

    def apply(self, event: Event) -> None:
        """Fold one event (types the projection does not fold are ignored)."""

    def dump(self) -> bytes:
        """The whole state, ``position`` included, as deterministic bytes."""

    def load(self, state: bytes) -> None:
        """Replace the state with a ``dump()``; raises :class:`CheckpointError` if foreign."""


def handles(*types: str) -> Callable[[F], F]:
    """Mark a method of a :class:`BaseProjection` as the handler of these event types."""

    def mark(method: F) -> F:
        method.__tide_handles__ = types  # type: ignore[attr-defined]
        return method

    return mark


class BaseProjection(abc.ABC):
    """A projection with per-type handlers and the position rule.

    ``apply`` skips an event whose offset is below ``position`` (already folded, so a
    resumed projection never double-counts) and advances ``position`` past every logged
    event, folded or ignored. Events not on a log yet (``offset == -1``) are folded
    without moving ``position``.
    """

    name: ClassVar[str] = ""
    _handlers: ClassVar[dict[str, Handler]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        handlers: dict[str, Handler] = {}
        for klass in reversed(cls.__mro__):
            for attr in vars(klass).values():
                for event_type in getattr(attr, "__tide_handles__", ()):
                    handlers[event_type] = attr
        cls._handlers = handlers

    def __init__(self) -> None:
        self.position = 0

    def apply(self, event: Event) -> None:
        offset = event.offset
        if 0 <= offset < self.position:
            return
        handler = self._handlers.get(event.type)
        if handler is not None:
            handler(self, event)
        if offset >= 0:
            self.position = offset + 1

    def fold(self, events: Iterable[Event]) -> None:
        """Apply events in order."""
        for event in events:
            self.apply(event)

    @abc.abstractmethod
    def dump(self) -> bytes:
        """The whole state as deterministic bytes."""

    @abc.abstractmethod
    def load(self, state: bytes) -> None:
        """Replace the state with a ``dump()``."""


def encode_state(name: str, position: int, body: JSON, *, fmt: int = 1) -> bytes:
    """Canonical checkpoint bytes: sorted keys, exact floats, RFC 3339 times."""
    return orjson.dumps(
        {"projection": name, "format": fmt, "position": position, "state": body},
        option=orjson.OPT_SORT_KEYS,
    )


def decode_state(name: str, state: bytes, *, fmt: int = 1) -> tuple[int, JSON]:
    """``(position, body)`` of a checkpoint written by :func:`encode_state` for ``name``."""
    try:
        envelope = orjson.loads(state)
    except orjson.JSONDecodeError as exc:
        raise CheckpointError(f"checkpoint for {name!r} is not JSON: {exc}") from exc
    if not isinstance(envelope, dict) or envelope.get("projection") != name:
        found = envelope.get("projection") if isinstance(envelope, dict) else None
        raise CheckpointError(f"checkpoint is for {found!r}, not {name!r}")
    if envelope.get("format") != fmt:
        raise CheckpointError(
            f"checkpoint for {name!r} has format {envelope.get('format')!r}, expected {fmt}"
        )
    position = envelope.get("position")
    body = envelope.get("state")
    if not isinstance(position, int) or position < 0 or not isinstance(body, dict):
        raise CheckpointError(f"checkpoint for {name!r} is malformed")
    return position, body
