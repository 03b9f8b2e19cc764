"""The reservation plugin: LS room after a pressure eviction, and replacements elsewhere.

Scenario tests through the real World (with the ``pressure`` projection) and the engine:
a pressure ``decision.evict`` with ``evidence.reserve`` holds 3 cpu on ``n1`` for ten
minutes; the allocate cycle must keep BE pods out of it, let LS pods in, and send the
evicted owner's replacement to another node.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from controller.policy.builtins import BUILTIN_PLUGINS
from controller.policy.engine import run_cycle
from controller.policy.framework.config import TideConfig
from controller.policy.loader import load_config
from controller.policy.plugins.reservation import pressure_state
from projections.pressure import PressureState
from projections.world import World
from streams.events import Event, format_time, make_event
from tests.builders import T0, at, build_node, build_pod, watch
from tests.controller.policy.framework.scenario import binds, trigger

OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs-web"}
RESERVED_UNTIL = T0 + timedelta(minutes=10)


def config(*, with_plugin: bool = True) -> TideConfig:
    second = [{"name": "predicates"}, {"name": "proportion"}]
    if with_plugin:
        second.append({"name": "reservation"})
    return load_config(
        {
            "actions": "allocate",
            "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}]}, {"plugins": second}],
        },
        plugins=BUILTIN_PLUGINS,
    )


def pod(name: str, *, qos: str, cpu: str, node: str = "", owned: bool = False) -> dict[str, Any]:
    obj = build_pod(
        "ns",
        name,
        node=node,
        phase="Running" if node else "Pending",
        cpu=cpu,
        labels={"koordinator.sh/qosClass": qos},
    )
    if owned:
        obj["metadata"]["ownerReferences"] = [{**OWNER, "controller": True}]
    return obj


def pressure_evict() -> Event:
    """What ``controller.policy.pressure`` writes for a CPU eviction with resourceReservation on."""
    data = {
        "kind": "evict",
        "namespace": "ns",
        "pod": "victim",
        "uid": "ns-victim",
        "node": "n1",
        "reason": "cpu-pressure",
        "source": "pressure",
        "evidence": {
            "owner": "ReplicaSet/web",
            "reserve": {
                "cpu_milli": 3000,
                "memory": 1024**3,
                "until": format_time(RESERVED_UNTIL),
            },
        },
    }
    return make_event("decision.evict", T0, data)


def world(*pending: dict[str, Any], pressure: bool = True) -> World:
    """n1: 8 cpu, 3 LS + 3 BE (the victim) running, so 2 idle; n2: 8 cpu, 7 used, 1 idle."""
    events = [
        watch("nodes", build_node("n1", cpu="8")),
        watch("nodes", build_node("n2", cpu="8")),
        watch("pods", pod("ls-a", qos="LS", cpu="3", node="n1")),
        watch("pods", pod("victim", qos="BE", cpu="3", node="n1", owned=True)),
        watch("pods", pod("ls-b", qos="LS", cpu="7", node="n2")),
        *(watch("pods", p) for p in pending),
        pressure_evict(),
    ]
    w = World()
    for offset, event in enumerate(events):
        w.apply(event.with_offset(offset))
    if not pressure:  # a pressure projection that never saw the eviction
        w.pressure = PressureState()
    return w


def test_the_projection_holds_the_reservation() -> None:
    state = pressure_state(world())
    assert state is not None
    assert state.reserved("n1", at(1)).milli_cpu == 3000
    assert state.evicted_owners("n1", at(1)) == frozenset({"ReplicaSet/web"})
    assert pressure_state(world(pressure=False)).reservations == {}


def test_be_pod_is_refused_on_the_reserving_node_until_the_reservation_expires() -> None:
    w = world(pod("be-new", qos="BE", cpu="2"))
    # n1 has 2 idle but 3 are held for LS; n2 has only 1 idle
    assert binds(run_cycle(w, trigger(at(1)), config())) == {}
    assert binds(run_cycle(w, trigger(at(9.9)), config())) == {}
    expired = RESERVED_UNTIL + timedelta(seconds=1)
    assert binds(run_cycle(w, trigger(expired), config())) == {"ns/be-new": "n1"}


def test_without_the_plugin_the_be_pod_takes_the_reserved_room() -> None:
    w = world(pod("be-new", qos="BE", cpu="2"))
    assert binds(run_cycle(w, trigger(at(1)), config(with_plugin=False))) == {"ns/be-new": "n1"}


def test_ls_pod_is_accepted_on_the_reserving_node() -> None:
    w = world(pod("ls-new", qos="LS", cpu="2"))
    assert binds(run_cycle(w, trigger(at(1)), config())) == {"ns/ls-new": "n1"}


def test_a_small_be_pod_fits_beside_the_reservation() -> None:
    w = world(pod("be-small", qos="BE", cpu="500m"))
    # n1: 2 idle - 3 held < 0.5: refused; n2: 1 idle fits
    assert binds(run_cycle(w, trigger(at(1)), config())) == {"ns/be-small": "n2"}


def test_replacement_of_an_evicted_owner_prefers_another_node() -> None:
    w = world(pod("web-2", qos="LS", cpu="1", owned=True))
    assert binds(run_cycle(w, trigger(at(1)), config(with_plugin=False))) == {"ns/web-2": "n1"}
    assert binds(run_cycle(w, trigger(at(1)), config())) == {"ns/web-2": "n2"}
    # once the reservation has expired the owner is no longer steered away
    late = RESERVED_UNTIL + timedelta(minutes=1)
    assert binds(run_cycle(w, trigger(late), config())) == {"ns/web-2": "n1"}


def test_a_world_without_pressure_projection_is_unaffected() -> None:
    w = world(pod("be-new", qos="BE", cpu="2"), pressure=False)
    assert binds(run_cycle(w, trigger(at(1)), config())) == {"ns/be-new": "n1"}
