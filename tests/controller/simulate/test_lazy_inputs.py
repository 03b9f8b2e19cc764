"""A simulation fed lazily (and spooled) writes exactly what the eager, in-memory one does."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from controller.drive.loop.virtual import OutOfOrderError
from controller.policy.loader import load_policy
from controller.simulate.runner import SLACK, Simulation
from controller.simulate.scenario import load_scenario
from controller.simulate.spool import Spool
from streams.backends.memory import MemoryLog
from streams.codec import encode
from streams.events import Event

SOURCES = Path(__file__).resolve().parents[2] / "replay" / "golden" / "sources"


class _Tee(Spool):
    """A spool that also keeps what it was given (to compare with the eager run)."""

    def __init__(self, kept: MemoryLog) -> None:
        super().__init__(None, batch=7)
        self.kept = kept

    def append_now(self, events: Sequence[Event]) -> list[Event]:
        return self.kept.append_now(super().append_now(events))


@pytest.mark.parametrize(
    "scenario", ["pressure-graceful.yaml", "tdm-budgets.yaml", "allocate-gang.yaml"]
)
def test_lazy_spooled_run_equals_eager_run(scenario: str) -> None:
    path = SOURCES / scenario
    events, _, stop = load_scenario(path)
    policy = load_policy(yaml.safe_load(path.read_text()))
    eager = Simulation(policy.config, eviction=policy.eviction).run(events, until=stop)
    kept = MemoryLog()
    with _Tee(kept) as spool:
        ordered = iter(sorted(events, key=lambda e: e.at))
        lazy = Simulation(policy.config, eviction=policy.eviction, spool=spool).run(
            ordered, until=stop
        )
    assert [encode(e) for e in kept.events] == [encode(e) for e in eager.log.events]
    assert lazy.records == len(eager.log.events) == eager.records
    assert lazy.decisions == eager.decisions


def test_input_far_out_of_order_stops_the_run() -> None:
    events, _, _ = load_scenario(SOURCES / "pressure-graceful.yaml")
    late = sorted(events, key=lambda e: e.at)
    late.append(late[0])  # the first input again, long after its time
    policy = load_policy(yaml.safe_load((SOURCES / "pressure-graceful.yaml").read_text()))
    assert late[-2].at - late[0].at > SLACK
    with pytest.raises(OutOfOrderError, match="out of time order"):
        Simulation(policy.config, eviction=policy.eviction).run(iter(late), until=None)
