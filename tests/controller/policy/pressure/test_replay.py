"""Pressure decisions replay: the harness's logs verify (see conftest.py), and an
altered pressure decision is caught."""

from __future__ import annotations

import dataclasses

from controller.policy.loader import load_config
from replay.verify import replay
from tests.controller.policy.pressure.harness import LOOPS, Loop, config, node_sample, seconds
from tests.controller.policy.pressure.test_seed_cases import five_pods


def test_an_altered_pressure_decision_fails_verification() -> None:
    cfg = config()
    loop = Loop(cfg)
    loop.run(five_pods() + [node_sample("n1", seconds(i), cpu_cores=95) for i in (1, 2, 3)])
    LOOPS.remove(loop)  # this log is tampered with below; the fixture must not verify it
    log = loop.log
    index = next(i for i, e in enumerate(log) if e.type == "decision.evict")
    altered = dataclasses.replace(log[index], data={**log[index].data, "pod": "be-5"})
    report = replay([*log[:index], altered, *log[index + 1 :]], configs=(load_config({}), cfg))
    assert not report.ok
    assert report.differences[0].cause_type == "metrics.node"
    assert replay(log, configs=(load_config({}), cfg)).ok
