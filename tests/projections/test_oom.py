"""OOMState: OOM kills counted once per termination, last reasons, per-node index."""

from __future__ import annotations

from typing import Any

import pytest

from projections.oom import OOMState
from streams.events import Event
from tests.builders import at, build_pod, watch

JSON = dict[str, Any]


def fold(state: OOMState, events: list[Event]) -> OOMState:
    for event in events:
        state.apply(event.with_offset(state.position))
    return state


def status(
    restarts: int,
    last: tuple[str, str] | None = None,
    current: tuple[str, str] | None = None,
    *,
    name: str = "main",
    cid: bool = True,
) -> JSON:
    """A container status; ``last``/``current`` are ``(reason, finishedAt minute)``."""

    def terminated(reason: str, minute: str, n: int) -> JSON:
        out: JSON = {"reason": reason, "exitCode": 137}
        if cid:
            out |= {
                "containerID": f"containerd://{name}-{n}",
                "finishedAt": f"2026-11-21T20:{minute}:00Z",
            }
        return out

    cs: JSON = {"name": name, "restartCount": restarts, "ready": current is None}
    cs["state"] = {"terminated": terminated(*current, restarts + 1)} if current else {"running": {}}
    if last is not None:
        cs["lastState"] = {"terminated": terminated(*last, restarts)}
    return cs


def pod_event(statuses: list[JSON], *, event: str = "MODIFIED", uid: str = "") -> Event:
    pod = build_pod("default", "p", node="n1", container_statuses=statuses)
    if uid:
        pod["metadata"]["uid"] = uid
    return watch("pods", pod, at(1), event=event)


OOM = "OOMKilled"


@pytest.mark.parametrize(
    ("steps", "kills", "reasons"),
    [
        pytest.param([[status(0)]], 0, (), id="never-terminated"),
        pytest.param([[status(1, (OOM, "01"))]], 1, (OOM,), id="first-sight-counts"),
        pytest.param(
            [[status(1, (OOM, "01"))], [status(1, (OOM, "01"))], [status(1, (OOM, "01"))]],
            1,
            (OOM,),
            id="repeated-identical-modified-not-double-counted",
        ),
        pytest.param(
            [[status(1, (OOM, "01"))], [status(2, (OOM, "02"))], [status(3, (OOM, "03"))]],
            3,
            (OOM, OOM, OOM),
            id="three-kills",
        ),
        pytest.param(
            [[status(1, (OOM, "01"))], [status(2, ("Error", "02"))], [status(3, (OOM, "03"))]],
            2,
            (OOM, "Error", OOM),
            id="error-in-between",
        ),
        pytest.param(
            [[status(0, None, (OOM, "05"))], [status(1, (OOM, "05"))]],
            1,
            (OOM,),
            id="state-then-laststate-same-termination",
        ),
        pytest.param(
            [
                [status(1, (OOM, "01"), cid=False)],
                [status(1, (OOM, "01"), cid=False)],
                [status(2, (OOM, "01"), cid=False)],
            ],
            2,
            (OOM, OOM),
            id="without-ids-restart-count-tells-them-apart",
        ),
        pytest.param(
            [[status(1, (OOM, "01"), name="a"), status(1, ("Completed", "02"), name="b")]],
            1,
            (OOM, "Completed"),
            id="two-containers-ordered-by-finish",
        ),
    ],
)
def test_oom_transitions(steps: list[list[JSON]], kills: int, reasons: tuple[str, ...]) -> None:
    state = fold(OOMState(), [pod_event(s) for s in steps])
    assert state.kills("default/p") == kills
    assert state.last_reasons("default/p") == reasons


@pytest.mark.parametrize(
    ("reasons", "threshold", "faulty"),
    [
        pytest.param([OOM, OOM, OOM], 3, True, id="three-in-a-row"),
        pytest.param([OOM, OOM], 3, False, id="two-of-three"),
        pytest.param([OOM, OOM, OOM, "Error"], 3, False, id="last-was-not-oom"),
        pytest.param(["Error", OOM, OOM, OOM], 3, True, id="older-error-ignored"),
        pytest.param([OOM], 1, True, id="threshold-one"),
    ],
)
def test_last_terminations_all_oom(reasons: list[str], threshold: int, faulty: bool) -> None:
    events = [pod_event([status(i + 1, (r, f"{i:02}"))]) for i, r in enumerate(reasons)]
    state = fold(OOMState(), events)
    assert state.all_oom("default/p", threshold) is faulty
    assert (state.repeated_oom_on("n1", threshold) == ["default/p"]) is faulty
    assert state.repeated_oom_on("n2", threshold) == []


def test_delete_and_new_incarnation_start_over() -> None:
    state = fold(OOMState(), [pod_event([status(1, (OOM, "01"))], uid="u1")])
    fold(state, [pod_event([status(1, (OOM, "01"))], event="DELETED", uid="u1")])
    assert state.kills("default/p") == 0 and state.streaking == {}
    fold(state, [pod_event([status(1, (OOM, "01"))], uid="u2")])
    fold(state, [pod_event([status(1, (OOM, "07"))], uid="u3")])
    assert state.kills("default/p") == 1
    assert state.pods["default/p"].uid == "u3"


def test_moving_node_reindexes() -> None:
    state = fold(OOMState(), [pod_event([status(1, (OOM, "01"))])])
    pod = build_pod("default", "p", node="n2", container_statuses=[status(1, (OOM, "01"))])
    fold(state, [watch("pods", pod, at(2), event="MODIFIED")])
    assert state.repeated_oom_on("n1", 1) == []
    assert state.repeated_oom_on("n2", 1) == ["default/p"]


def test_dump_roundtrip_is_deterministic() -> None:
    state = fold(OOMState(), [pod_event([status(i + 1, (OOM, f"{i:02}"))]) for i in range(3)])
    restored = OOMState()
    restored.load(state.dump())
    assert restored.dump() == state.dump()
    assert restored.repeated_oom_on("n1", 3) == ["default/p"]
    assert restored.position == 3
