"""Leader election on a Lease against the API double: one attempt per scenario on a virtual
clock, then the loop on the real clock — renewal failures past the deadline, release and
takeover, and two electors of which at most one leads at any moment."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller.drive.clock import SystemClock, VirtualClock
from controller.drive.kube.client import KubeClient
from controller.drive.kube.errors import TransportError
from controller.drive.kube.lease import LeaseElector, LeaseObservation
from controller.drive.loop.leadership import Leadership
from tests.kubedouble import ApiDouble

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
NS, NAME = "tide", "tide-leader"
KEY = f"{NS}/{NAME}"


def stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease(holder: str, renewed_ago: float, *, transitions: int = 3) -> dict[str, Any]:
    return {
        "metadata": {"name": NAME, "namespace": NS},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": 15,
            "acquireTime": stamp(NOW - timedelta(minutes=5)),
            "renewTime": stamp(NOW - timedelta(seconds=renewed_ago)),
            "leaderTransitions": transitions,
        },
    }


# (existing Lease or None, seconds this replica has seen it unchanged before the attempt
# (None: it sees it for the first time now), acquired?, holder afterwards, transitions)
ATTEMPTS = [
    pytest.param(None, None, True, "me", 0, id="fresh-lease-created"),
    pytest.param(lease("other", 20), 16, True, "me", 4, id="unchanged-past-its-duration-taken"),
    pytest.param(lease("other", 20), 14, False, "other", 3, id="unchanged-within-it-left"),
    # client-go: expiry is judged on this replica's clock from when it first saw the record,
    # never on the holder's renewTime, however old that looks
    pytest.param(lease("other", 20), None, False, "other", 3, id="first-seen-now-left"),
    pytest.param(lease("other", 5), None, False, "other", 3, id="live-lease-of-another-left"),
    pytest.param(lease("", 0), None, True, "me", 4, id="released-lease-taken-at-once"),
    pytest.param(lease("me", 5), None, True, "me", 3, id="own-lease-renewed"),
    pytest.param(lease("me", 60), None, True, "me", 3, id="own-expired-lease-renewed"),
]


@pytest.mark.parametrize(("existing", "seen_for", "acquired", "holder", "transitions"), ATTEMPTS)
async def test_one_attempt(
    double: ApiDouble,
    client: KubeClient,
    existing: dict[str, Any] | None,
    seen_for: float | None,
    acquired: bool,
    holder: str,
    transitions: int,
) -> None:
    if existing is not None:
        double.create("leases", existing)
    start = NOW - timedelta(seconds=seen_for or 0)
    clock = VirtualClock(start)
    elector = LeaseElector(client, name=NAME, namespace=NS, identity="me", clock=clock)
    leadership: Leadership = elector  # the live loop's protocol
    assert not leadership.is_leader
    if seen_for is not None:
        assert await elector.try_acquire_or_renew() is False  # a first look, too early
        clock.advance(NOW)
    assert await elector.try_acquire_or_renew() is acquired
    spec = double.get("leases", KEY)["spec"]
    assert spec["holderIdentity"] == holder
    assert spec["leaderTransitions"] == transitions
    if acquired:
        assert spec["renewTime"] == stamp(NOW)
        assert spec["leaseDurationSeconds"] == 15


async def test_a_standby_whose_clock_is_ahead_never_takes_a_renewed_lease(
    double: ApiDouble, client: KubeClient
) -> None:
    """An hour of skew between the replicas: the leader's renewTime looks an hour old to the
    standby, which takes the Lease only once it stops changing for a lease duration."""
    leader_clock, standby_clock = VirtualClock(NOW), VirtualClock(NOW + timedelta(hours=1))
    leader = LeaseElector(client, name=NAME, namespace=NS, identity="a", clock=leader_clock)
    standby = LeaseElector(client, name=NAME, namespace=NS, identity="b", clock=standby_clock)
    assert await leader.try_acquire_or_renew()
    for step in range(1, 16):  # 30 s of renewals every 2 s
        for clock in (leader_clock, standby_clock):
            clock.advance(clock.now() + timedelta(seconds=2))
        assert await leader.try_acquire_or_renew()
        assert not await standby.try_acquire_or_renew(), f"taken at renewal {step}"
    for seconds in range(2, 17, 2):  # the leader is gone: nothing changes the record now
        standby_clock.advance(standby_clock.now() + timedelta(seconds=2))
        taken = await standby.try_acquire_or_renew()
        assert taken is (seconds > 15), seconds
    assert double.get("leases", KEY)["spec"]["holderIdentity"] == "b"


class Racing(KubeClient):
    """A client whose second read is followed by another candidate's write before ours."""

    double: ApiDouble
    reads = 0

    async def get_lease(self, namespace: str, name: str) -> dict[str, Any]:
        read = await super().get_lease(namespace, name)
        self.reads += 1
        if self.reads != 2:
            return read
        theirs = lease("rival", 0, transitions=4)
        theirs["metadata"] = dict(self.double.get("leases", KEY)["metadata"])
        self.double.update("leases", theirs)
        return read


async def test_a_conflict_on_update_loses_the_race(double: ApiDouble) -> None:
    double.create("leases", lease("other", 20))
    async with Racing.for_host(double.url, request_timeout=5) as racing:
        assert isinstance(racing, Racing)
        racing.double = double
        clock = VirtualClock(NOW - timedelta(seconds=16))
        elector = LeaseElector(racing, name=NAME, namespace=NS, identity="me", clock=clock)
        assert await elector.try_acquire_or_renew() is False  # first seen: too early
        clock.advance(NOW)  # unchanged for 16 s: expired, and the rival writes first
        assert await elector.try_acquire_or_renew() is False
    assert double.get("leases", KEY)["spec"]["holderIdentity"] == "rival"
    assert any(r.method == "PUT" for r in double.requests)  # it tried, and got 409


LIVE = {"holderIdentity": "a", "renewTime": stamp(NOW), "leaseDurationSeconds": 15}


@pytest.mark.parametrize(
    ("spec", "unchanged_for", "expired"),
    [
        pytest.param(LIVE, 0, False, id="just-seen"),
        pytest.param(LIVE, 15, False, id="unchanged-for-its-duration"),
        pytest.param(LIVE, 16, True, id="unchanged-past-its-duration"),
        pytest.param(
            LIVE | {"renewTime": stamp(NOW - timedelta(hours=1))},
            0,
            False,
            id="an-old-renew-time-is-not-read",
        ),
        pytest.param(LIVE | {"holderIdentity": ""}, 0, True, id="no-holder"),
        pytest.param({"holderIdentity": "a", "renewTime": stamp(NOW)}, 0, True, id="no-duration"),
        pytest.param(LIVE | {"leaseDurationSeconds": True}, 0, True, id="duration-not-a-number"),
    ],
)
def test_expiry_counts_from_the_last_change_seen(
    spec: dict[str, Any], unchanged_for: int, expired: bool
) -> None:
    seen = LeaseObservation()
    seen.see(spec, NOW)
    later = NOW + timedelta(seconds=unchanged_for)
    seen.see(dict(spec), later)  # read again, the same record: the time stays
    assert seen.expired(later) is expired
    seen.see(spec | {"renewTime": stamp(later)}, later)  # a renewal: counted from now
    valid = bool(spec.get("holderIdentity")) and type(spec.get("leaseDurationSeconds")) is int
    assert seen.expired(later + timedelta(seconds=15)) is not valid


@pytest.mark.parametrize(
    "durations",
    [
        pytest.param((10.0, 10.0, 2.0), id="renew-deadline-not-below-lease"),
        pytest.param((15.0, 2.0, 2.0), id="retry-not-below-deadline"),
        pytest.param((15.0, 10.0, 0.0), id="retry-zero"),
    ],
)
async def test_durations_are_validated(client: KubeClient, durations: tuple[float, ...]) -> None:
    lease_duration, renew_deadline, retry_period = durations
    with pytest.raises(ValueError, match="lease_duration > renew_deadline > retry_period"):
        LeaseElector(
            client,
            name=NAME,
            namespace=NS,
            identity="me",
            lease_duration=lease_duration,
            renew_deadline=renew_deadline,
            retry_period=retry_period,
        )


# ---- the loop, on the real clock ---------------------------------------------------------

LEASE, DEADLINE, RETRY = 1.0, 0.6, 0.1


class Flaky(KubeClient):
    """A client whose Lease calls fail while ``broken`` (a partitioned replica)."""

    broken = False

    async def get_lease(self, namespace: str, name: str) -> dict[str, Any]:
        if self.broken:
            raise TransportError(f"GET lease {name}", 0, "partitioned")
        return await super().get_lease(namespace, name)


class Replica:
    """An elector running in a task, with what its callbacks saw."""

    def __init__(self, client: KubeClient, identity: str, *, lease: float = LEASE) -> None:
        self.elector = LeaseElector(
            client,
            name=NAME,
            namespace=NS,
            identity=identity,
            lease_duration=lease,
            renew_deadline=DEADLINE if lease == LEASE else lease - 1,
            retry_period=RETRY,
        )
        self.events: list[tuple[str, bool]] = []
        self.task: asyncio.Task[None] | None = None

    async def started(self) -> None:
        self.events.append(("started", self.elector.is_leader))

    async def stopped(self) -> None:
        self.events.append(("stopped", self.elector.is_leader))

    def start(self) -> None:
        self.task = asyncio.create_task(self.elector.run(self.started, self.stopped))

    async def stop(self) -> None:
        assert self.task is not None
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


async def until(predicate: Any, timeout: float) -> float:
    loop = asyncio.get_running_loop()
    start = loop.time()
    while not predicate():
        if loop.time() - start > timeout:
            raise AssertionError(f"not within {timeout}s")
        await asyncio.sleep(0.01)
    return loop.time() - start


async def test_a_leader_whose_renewals_fail_past_the_deadline_stops_first(
    double: ApiDouble,
) -> None:
    async with Flaky.for_host(double.url, request_timeout=5) as flaky:
        assert isinstance(flaky, Flaky)
        replica = Replica(flaky, "a")
        replica.start()
        await until(lambda: replica.elector.is_leader, 2)
        flaky.broken = True
        waited = await until(lambda: not replica.elector.is_leader, 3)
        await until(lambda: len(replica.events) == 2, 1)
        await replica.stop()
    assert waited >= DEADLINE - RETRY
    assert waited <= DEADLINE + 0.5
    # on_stopped ran when is_leader was already False, once per on_started
    assert replica.events == [("started", True), ("stopped", False)]


async def test_release_lets_the_standby_take_over_within_one_lease_duration(
    double: ApiDouble, client: KubeClient
) -> None:
    lease = 4.0  # long, so a takeover at the next retry is told apart from one at expiry
    a, b = Replica(client, "a", lease=lease), Replica(client, "b", lease=lease)
    a.start()
    await until(lambda: a.elector.is_leader, 2)
    b.start()
    await asyncio.sleep(0.3)
    assert not b.elector.is_leader
    await a.elector.release()
    assert not a.elector.is_leader
    took = await until(lambda: b.elector.is_leader, lease)
    assert took < lease / 2  # at its next retry, not after expiry
    spec = double.get("leases", KEY)["spec"]
    assert (spec["holderIdentity"], spec["leaderTransitions"]) == ("b", 1)
    await a.stop()
    await b.stop()
    assert a.events == [("started", True), ("stopped", False)]


async def test_two_electors_never_lead_together(double: ApiDouble) -> None:
    async with (
        Flaky.for_host(double.url, request_timeout=5) as ca,
        Flaky.for_host(double.url, request_timeout=5) as cb,
    ):
        assert isinstance(ca, Flaky) and isinstance(cb, Flaky)
        a, b = Replica(ca, "a"), Replica(cb, "b")
        a.start()
        b.start()
        both = 0
        leaders: list[str] = []

        async def watch(seconds: float) -> None:
            nonlocal both
            loop = asyncio.get_running_loop()
            end = loop.time() + seconds
            while loop.time() < end:
                now = [r.elector.identity for r in (a, b) if r.elector.is_leader]
                both += len(now) > 1
                if now and (not leaders or leaders[-1] != now[0]):
                    leaders.append(now[0])
                await asyncio.sleep(0.005)

        await watch(0.5)
        first, second = (a, b) if leaders == ["a"] else (b, a)
        assert leaders == [first.elector.identity]
        assert isinstance(first.elector._client, Flaky)
        first.elector._client.broken = True  # partitioned: it stops, the other takes over
        await watch(2.5)
        first.elector._client.broken = False  # back: it stays a standby
        await watch(0.5)
        await a.stop()
        await b.stop()
    assert both == 0
    assert leaders == [first.elector.identity, second.elector.identity]


async def test_a_leader_that_sees_another_holder_stops_at_once(
    double: ApiDouble, client: KubeClient
) -> None:
    replica = Replica(client, "a")
    replica.start()
    await until(lambda: replica.elector.is_leader, 2)
    stolen = lease("x", 0, transitions=9)
    stolen["metadata"] = dict(double.get("leases", KEY)["metadata"])
    stolen["spec"]["renewTime"] = stamp(SystemClock().now() + timedelta(hours=1))
    double.update("leases", stolen)  # e.g. an operator handed the Lease over
    waited = await until(lambda: not replica.elector.is_leader, 2)
    await replica.stop()
    assert waited < DEADLINE  # at the next renewal, not after the deadline
    assert replica.events == [("started", True), ("stopped", False)]
    assert double.get("leases", KEY)["spec"]["holderIdentity"] == "x"
