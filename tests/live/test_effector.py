"""The Kubernetes effector and the exactly-once applier against the API double: outcomes
per API answer, retries within their budget, taints that never clobber, reconciliation
without a second call, guard rails, dry run."""

from __future__ import annotations

import logging
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest

from controller.drive.effector.applier import Applier
from controller.drive.effector.kubernetes import EffectorOptions, KubernetesEffector
from controller.drive.effector.limits import EvictionLimits
from controller.drive.kube.client import JSONObject, KubeClient
from controller.drive.observe.metrics import PrometheusObserver
from projections.effects import EffectsState
from streams.events import Event, make_event
from streams.validation import validate
from tests.builders import build_node, build_pod
from tests.kubedouble import ApiDouble

NOW = datetime(2026, 11, 21, 21, 0, tzinfo=UTC)
TAINT = {"key": "koordinator.sh/eviction", "value": "cpu", "effect": "NoSchedule"}
OTHER = {"key": "team", "value": "a", "effect": "NoSchedule"}


def evict(pod: str, *, uid: str = "", **evidence: Any) -> Event:
    data: dict[str, Any] = {"kind": "evict", "namespace": "default", "pod": pod, "uid": uid}
    data["node"] = "n1"
    data |= {"reason": "tdm-window-closed", "source": "tdm", "evidence": evidence}
    return make_event("decision.evict", NOW, data)


def bind(pod: str, node: str = "n1") -> Event:
    data = {"kind": "bind", "namespace": "default", "pod": pod, "uid": "", "node": node}
    return make_event("decision.bind", NOW, data | {"reason": "allocate", "source": "allocate"})


def taint(kind: str = "taint") -> Event:
    data = {"kind": kind, "node": "n1", "taint": TAINT, "reason": "eviction-taint"}
    return make_event(f"decision.{kind}", NOW, data | {"source": "pressure", "evidence": {}})


def effector(client: KubeClient | None, **options: Any) -> KubernetesEffector:
    async def no_wait(_: float) -> None:
        return None

    opts = EffectorOptions(backoff_base=0.01, backoff_cap=0.02, **options)
    return KubernetesEffector(client, now=lambda: NOW, options=opts, sleep=no_wait)


def calls(double: ApiDouble) -> Counter[str]:
    return Counter(what for what, _, _ in double.mutations)


def setup(double: ApiDouble) -> None:
    double.create("nodes", build_node("n1", taints=[OTHER]))
    double.create("pods", build_pod("default", "a", node="n1", labels={"app": "a"}))
    double.create("pods", build_pod("default", "b", node="n1"))
    double.create("pods", build_pod("default", "p", phase="Pending"))


def blocking_pdb(double: ApiDouble) -> None:
    double.create(
        "poddisruptionbudgets",
        {
            "metadata": {"name": "a", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "a"}}},
            "status": {"disruptionsAllowed": 0},
        },
    )


@pytest.mark.parametrize(
    ("decision", "arrange", "outcome", "error", "reason", "tried"),
    [
        (evict("a"), None, "effect.applied", None, None, {"create pods/eviction": 1}),
        (evict("a"), blocking_pdb, "effect.failed", "429", "budget", {"create pods/eviction": 1}),
        (
            evict("gone"),
            None,
            "effect.skipped",
            "already gone",
            "gone",
            {"create pods/eviction": 1},
        ),
        (
            evict("a", uid="other"),
            None,
            "effect.failed",
            "409",
            "conflict",
            {"create pods/eviction": 1},
        ),
        (bind("p"), None, "effect.applied", None, None, {"create pods/binding": 1}),
        (
            bind("a", "n2"),
            None,
            "effect.failed",
            "already assigned",
            "conflict",
            {"create pods/binding": 1},
        ),
        (bind("a"), None, "effect.applied", None, None, {"create pods/binding": 1}),
        (bind("p", "nowhere"), None, "effect.applied", None, None, {"create pods/binding": 1}),
        (taint(), None, "effect.applied", None, None, {"patch nodes": 1}),
        (taint("untaint"), None, "effect.applied", None, None, {}),
    ],
    ids=[
        "evict",
        "evict-pdb-429-not-retried",
        "evict-gone-skipped",
        "evict-other-incarnation",
        "bind",
        "bind-already-bound-elsewhere",
        "bind-409-but-bound-there-is-ours",
        "bind-unknown-node-the-api-decides",
        "taint",
        "untaint-absent-is-applied-without-a-call",
    ],
)
async def test_outcome_per_answer(
    double: ApiDouble,
    client: KubeClient,
    decision: Event,
    arrange: Any,
    outcome: str,
    error: str | None,
    reason: str | None,
    tried: dict[str, int],
) -> None:
    setup(double)
    if arrange is not None:
        arrange(double)
    record = await effector(client).apply(decision)
    assert (record.type, record.cause, record.data["decision"]) == (
        outcome,
        decision.id,
        decision.id,
    )
    assert error is None or error in record.data["error"], record.data
    assert record.data.get("reason") == reason, record.data
    validate(record.type, record.data)  # the reason is one its outcome type may carry
    assert calls(double) == tried
    assert len(double.events) == (1 if outcome == "effect.applied" else 0)


@pytest.mark.parametrize(
    ("failures", "attempts", "outcome", "tried"),
    [(2, 4, "effect.applied", 3), (9, 3, "effect.failed", 3), (1, 1, "effect.failed", 1)],
    ids=["5xx-then-ok", "5xx-beyond-the-budget", "no-retry-budget"],
)
async def test_5xx_is_retried_within_the_attempts(
    double: ApiDouble, client: KubeClient, failures: int, attempts: int, outcome: str, tried: int
) -> None:
    setup(double)
    double.faults.fail, double.faults.fail_status, double.faults.fail_match = (
        failures,
        503,
        "/eviction",
    )
    record = await effector(client, attempts=attempts).apply(evict("a"))
    assert record.type == outcome, record.data
    sent = [r for r in double.requests if r.resource == "pods/eviction"]
    assert len(sent) == tried
    double.faults.fail = 0


class Racing(KubeClient):
    """A client after whose first node read someone else adds a taint (the patch's failed
    ``test`` is answered 422, as a real apiserver answers it)."""

    double: ApiDouble
    raced = False

    async def get(self, path: str) -> JSONObject:
        answer = await super().get(path)
        if path.startswith("/api/v1/nodes/") and not self.raced:
            self.raced = True
            node = dict(self.double.get("nodes", "n1"))
            node["spec"] = dict(node["spec"]) | {
                "taints": [*node["spec"]["taints"], {"key": "late", "effect": "NoExecute"}]
            }
            self.double.update("nodes", node)
        return answer


async def test_a_taint_conflict_is_retried_and_keeps_every_other_taint(double: ApiDouble) -> None:
    setup(double)
    async with Racing.for_host(double.url, request_timeout=5) as racing:
        assert isinstance(racing, Racing)
        racing.double = double
        record = await effector(racing).apply(taint())
    assert record.type == "effect.applied"
    statuses = [status for what, _, status in double.mutations if what == "patch nodes"]
    assert statuses == [422, 200]
    keys = [t["key"] for t in double.get("nodes", "n1")["spec"]["taints"]]
    assert keys == ["team", "late", "koordinator.sh/eviction"]


def recording_effector(
    client: KubeClient, slept: list[float], **options: Any
) -> KubernetesEffector:
    """An effector whose waits are recorded (and not slept)."""

    async def sleep(delay: float) -> None:
        slept.append(delay)

    opts = EffectorOptions(backoff_base=0.01, backoff_cap=0.02, **options)
    return KubernetesEffector(client, now=lambda: NOW, options=opts, sleep=sleep)


def second_budget(double: ApiDouble) -> None:
    blocking_pdb(double)
    double.create(
        "poddisruptionbudgets",
        {
            "metadata": {"name": "a2", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "a"}}},
            "status": {"disruptionsAllowed": 3},
        },
    )


@pytest.mark.parametrize(
    ("arrange", "attempts", "outcome", "error", "reason", "evictions", "slept"),
    [
        pytest.param(
            (2, 429, 10), 4, "effect.applied", None, None, 3, [10.0, 10.0], id="throttled-then-ok"
        ),
        pytest.param(
            (9, 429, 10),
            4,
            "effect.failed",
            "after 4 attempts",
            "unavailable",
            4,
            [10.0] * 3,
            id="throttled-beyond-the-attempts",
        ),
        pytest.param(
            (1, 429, 10),
            1,
            "effect.applied",
            None,
            None,
            2,
            [10.0],
            id="the-servers-wait-passes-once-whatever-the-attempts",
        ),
        pytest.param(
            (9, 429, 10),
            1,
            "effect.failed",
            "429",
            "unavailable",
            2,
            [10.0],
            id="failed-only-after-the-servers-wait",
        ),
        pytest.param(
            (1, 503, 2), 4, "effect.applied", None, None, 2, [2.0], id="5xx-with-retry-after"
        ),
        pytest.param(
            second_budget,
            4,
            "effect.failed",
            "more than one PodDisruptionBudget",
            "rejected",
            1,
            [],
            id="two-budgets-fail-after-one-call",
        ),
        pytest.param(
            blocking_pdb,
            4,
            "effect.failed",
            "disruption budget",
            "budget",
            1,
            [],
            id="a-budgets-429-is-no-throttling",
        ),
    ],
)
async def test_the_servers_answers_decide_the_retries(
    double: ApiDouble,
    client: KubeClient,
    arrange: Any,
    attempts: int,
    outcome: str,
    error: str | None,
    reason: str | None,
    evictions: int,
    slept: list[float],
) -> None:
    """Answers as kube-apiserver sends them: API Priority and Fairness' 429 (plain text,
    ``Retry-After``), a 5xx with ``Retry-After``, the 500 of a pod under two budgets (a
    permanent condition), a budget's 429 (a ``Status`` naming the ``DisruptionBudget``)."""
    setup(double)
    if callable(arrange):
        arrange(double)
    else:
        failures, status, wait = arrange
        double.faults.fail, double.faults.fail_status = failures, status
        double.faults.fail_match, double.faults.retry_after = "/eviction", wait
    waits: list[float] = []
    record = await recording_effector(client, waits, attempts=attempts).apply(evict("a"))
    assert record.type == outcome, record.data
    assert error is None or error in record.data["error"], record.data
    assert record.data.get("reason") == reason, record.data
    assert len([r for r in double.requests if r.resource == "pods/eviction"]) == evictions
    assert waits == slept
    double.faults.fail = 0


async def test_a_taint_patch_the_server_refuses_for_good_fails_after_one_re_read(
    double: ApiDouble, client: KubeClient
) -> None:
    """A 422 is also a malformed patch: when the node's version did not move, the patch is
    not retried."""
    setup(double)
    double.faults.fail, double.faults.fail_status, double.faults.fail_match = 9, 422, "/nodes/n1"
    double.faults.fail_method = "PATCH"  # the node's reads are answered; its patches are not
    record = await effector(client).apply(taint())
    assert (record.type, record.data["reason"]) == ("effect.failed", "rejected")
    assert "rejected our request" in record.data["error"]
    patches = [r for r in double.requests if r.method == "PATCH"]
    reads = [r for r in double.requests if r.method == "GET" and r.path == "/api/v1/nodes/n1"]
    assert (len(patches), len(reads)) == (1, 2)
    double.faults.fail = 0


async def test_guard_rail_refuses_and_names_the_limit(
    double: ApiDouble, client: KubeClient
) -> None:
    setup(double)
    acting = effector(client, limits=EvictionLimits(per_node=1))
    first, second = await acting.apply(evict("a")), await acting.apply(evict("b"))
    assert first.type == "effect.applied"
    assert (second.type, second.data["reason"]) == ("effect.skipped", "guard-rail")
    assert second.data["error"] == "limit: evictions per node per minute (1) reached on node n1"
    assert calls(double) == {"create pods/eviction": 1}


async def test_dry_run_calls_nothing(double: ApiDouble) -> None:
    setup(double)
    for decision in (evict("a"), bind("p"), taint()):
        record = await effector(None, dry_run=True).apply(decision)
        assert (record.type, record.data["error"]) == ("effect.skipped", "dry-run")
        assert record.data["reason"] == "dry-run"
    assert double.mutations == [] and double.requests == []


@pytest.mark.parametrize(
    ("decision", "before", "calls_made"),
    [
        (evict("a"), "evicted", {}),
        (evict("a"), "nothing", {"create pods/eviction": 1}),
        (bind("p"), "bound", {}),
        (bind("p"), "nothing", {"create pods/binding": 1}),
        (taint(), "tainted", {}),
    ],
    ids=["evict-done", "evict-not-done", "bind-done", "bind-not-done", "taint-done"],
)
async def test_reconcile_never_calls_twice(
    double: ApiDouble,
    client: KubeClient,
    decision: Event,
    before: str,
    calls_made: dict[str, int],
) -> None:
    setup(double)
    if before == "evicted":
        double.delete("pods", "default/a")
    elif before == "bound":
        pod = dict(double.get("pods", "default/p"))
        double.update("pods", pod | {"spec": dict(pod["spec"]) | {"nodeName": "n1"}})
    elif before == "tainted":
        node = dict(double.get("nodes", "n1"))
        double.update("nodes", node | {"spec": dict(node["spec"]) | {"taints": [OTHER, TAINT]}})
    double.mutations.clear()
    record = await effector(client).reconcile(decision)
    assert record.type == "effect.applied"
    assert calls(double) == calls_made


async def test_applier_applies_once_and_recovers_only_the_open(
    double: ApiDouble, client: KubeClient
) -> None:
    setup(double)
    effects = EffectsState()
    written: list[Event] = []

    async def write(records: list[Event]) -> None:
        written.extend(records)
        for record in records:
            effects.apply(record)

    done, open_ = evict("a"), bind("p")
    for record in (done, open_):
        effects.apply(record)
    applier = Applier(effector(client), effects, write, now=lambda: NOW)
    applier.submit(done)
    applier.submit(done)  # the same decision again: no second task
    await applier.settle()
    assert applier.recover() == 1  # only the bind is still open
    await applier.settle()
    assert applier.recover() == 0
    assert [e.cause for e in written] == [done.id, open_.id]
    assert calls(double) == {"create pods/eviction": 1, "create pods/binding": 1}
    effects.apply(written[0])  # a re-appended outcome changes nothing
    assert effects.outcomes == {done.id: "effect.applied", open_.id: "effect.applied"}
    restored = EffectsState()
    restored.load(effects.dump())
    assert (restored.outcomes, list(restored.pending)) == (effects.outcomes, [])


async def test_an_event_the_api_refuses_is_logged_and_counted(
    double: ApiDouble, client: KubeClient, caplog: pytest.LogCaptureFixture
) -> None:
    setup(double)
    observer = PrometheusObserver()
    double.faults.fail, double.faults.fail_status, double.faults.fail_match = 1, 500, "/events"
    act = KubernetesEffector(
        client,
        now=lambda: NOW,
        options=EffectorOptions(backoff_base=0.01, backoff_cap=0.02),
        event_failed=observer.event_failed,
    )
    decision = evict("a")
    with caplog.at_level(logging.WARNING, logger="controller.drive.effector.kubernetes"):
        record = await act.apply(decision)
    assert record.type == "effect.applied"  # the Event is a courtesy: the effect stands
    assert double.events == []
    [line] = [r for r in caplog.records if r.name == "controller.drive.effector.kubernetes"]
    assert line.levelno == logging.WARNING
    assert decision.id in line.getMessage() and "500" in line.getMessage()
    assert line.__dict__["decision"] == decision.id
    assert observer.registry.get_sample_value("tide_event_errors_total") == 1
    # the next decision's Event is created: nothing more is counted
    await act.apply(evict("b"))
    assert len(double.events) == 1
    assert observer.registry.get_sample_value("tide_event_errors_total") == 1
