"""The live controller's observer protocol, and the observer that ignores everything.

Every method is called on the event loop, synchronously, and must not block: an
implementation updates counters or sets a flag and returns.
"""

from __future__ import annotations

from typing import Protocol

from streams.events import Event


class LiveObserver(Protocol):
    """Told what the live loop and its effector do (see the module docstring)."""

    def decided(self, decision: Event) -> None:
        """A decision was appended to the log (its kind, reason and source are in it)."""

    def effect(self, outcome: Event) -> None:
        """An ``effect.applied`` / ``effect.failed`` / ``effect.skipped`` record was appended."""

    def session(self, seconds: float) -> None:
        """A session (one trigger's decide) took ``seconds`` of real time."""

    def append_lag(self, seconds: float) -> None:
        """Real time from a record being observed (or a trigger due) to its append."""

    def watch_restarted(self, resource: str) -> None:
        """A watch on ``resource`` (``pods``, ``nodes`` ...) restarted or relisted."""

    def leader(self, leading: bool) -> None:
        """This replica became (True) or stopped being (False) the leader."""

    def ready(self, ready: bool) -> None:
        """The loop has (True) or has lost (False) its initial fold and its watches."""

    def record(self, event: Event) -> None:
        """Any record was appended (decisions and outcomes too, after ``decided`` /
        ``effect``): the koordlet gauges fold watch events and metric samples."""

    def stale_metrics(self, lines: list[str]) -> None:
        """``/readyz``'s lines about stale node samples (empty: every one is fresh)."""


class NoObserver:
    """Ignores everything (the default observer)."""

    def decided(self, decision: Event) -> None:
        del decision

    def effect(self, outcome: Event) -> None:
        del outcome

    def session(self, seconds: float) -> None:
        del seconds

    def append_lag(self, seconds: float) -> None:
        del seconds

    def watch_restarted(self, resource: str) -> None:
        del resource

    def leader(self, leading: bool) -> None:
        del leading

    def ready(self, ready: bool) -> None:
        del ready

    def record(self, event: Event) -> None:
        del event

    def stale_metrics(self, lines: list[str]) -> None:
        del lines
