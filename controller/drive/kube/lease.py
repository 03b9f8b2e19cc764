"""Leader election on a ``coordination.k8s.io/v1`` Lease: who of the replicas may act.

Why here: with two replicas of ``tide run`` only one may decide and act; the other records
and folds and takes over within one lease duration. This is the
:class:`~controller.drive.loop.leadership.Leadership` of the live loop, with the Kubernetes
adapter because it talks to the API (raw JSON through :class:`KubeClient`).

The algorithm is client-go's (and kubernetes-asyncio's ``leaderelection``):

* a candidate reads the Lease every ``retry_period``; it takes it when it does not exist
  (create), when it is free (no holder: a leader released it) or expired, or when it
  already holds it (renew). Expired is judged as client-go's ``isLeaseValid`` does: on this
  replica's own clock, ``leaseDurationSeconds`` after the moment it last *saw the record
  change* (:class:`LeaseObservation`) — never on the holder's ``renewTime``, so clocks that
  disagree between the replicas cannot make a standby take a Lease its leader renews on
  time. A replica that has just started therefore waits one lease duration before it takes
  a Lease another holder left behind. Every write
  carries the resourceVersion it read, so of two candidates racing for one expired Lease
  only one write succeeds; the other gets 409 and has lost the race;
* a takeover from another holder increments ``leaderTransitions`` and sets
  ``acquireTime``;
* the leader renews every ``retry_period``; when no renewal succeeded for
  ``renew_deadline`` (shorter than the lease duration, so it stops before a standby may
  take over), or the Lease shows another holder, it stops leading: ``is_leader`` turns
  False and ``on_stopped`` runs before anything else, then it campaigns again as a standby;
* :meth:`LeaseElector.release` (SIGTERM) empties ``holderIdentity``, so a standby takes
  over at its next retry instead of waiting for the lease to expire.

Every time is read through the injectable :class:`~controller.drive.clock.Clock`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from controller.drive.clock import Clock, SystemClock
from controller.drive.kube.client import KubeClient
from controller.drive.kube.errors import Conflict, KubeError, NotFound
from streams.payloads import RawObject

__all__ = ["LeaseElector", "LeaseObservation"]

log = logging.getLogger(__name__)
JSONObject = RawObject  # a Kubernetes object as raw JSON
#: ``controller.drive.loop.leadership.Callback`` (the adapter may not import the loop's package)
Callback = Callable[[], Awaitable[None]]


def _utc(at: datetime) -> str:
    """A Kubernetes MicroTime (``2025-01-02T03:04:05.000006Z``)."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaseObservation:
    """What this replica last saw of a Lease, and when by its own clock (client-go's
    ``observedRecord`` / ``observedTime``)."""

    def __init__(self) -> None:
        self.spec: JSONObject | None = None
        self.at = datetime.min.replace(tzinfo=UTC)

    def see(self, spec: JSONObject, now: datetime) -> None:
        """Record ``spec`` as read at ``now``; the time moves only when the record changed."""
        if spec != self.spec:
            self.spec, self.at = dict(spec), now

    def expired(self, now: datetime) -> bool:
        """Whether the Lease seen last may be taken at ``now``: no holder, no valid duration,
        or unchanged for longer than its ``leaseDurationSeconds`` on this replica's clock."""
        spec = self.spec
        if spec is None or not spec.get("holderIdentity"):
            return True
        duration = spec.get("leaseDurationSeconds")
        if not isinstance(duration, int) or isinstance(duration, bool):
            return True
        return self.at + timedelta(seconds=duration) < now


class LeaseElector:
    """Campaigns for, holds and releases one Lease (see the module docstring).

    Args:
        client: the API connection.
        name: the Lease's name.
        namespace: the Lease's namespace.
        identity: this replica's name in ``holderIdentity`` (the pod name).
        lease_duration: seconds a standby waits after the last renewal before taking over.
        renew_deadline: seconds the leader keeps trying to renew before it stops leading.
        retry_period: seconds between two attempts (of a candidate and of the leader).
        clock: the wall clock (the system clock by default; a virtual one in tests).

    Raises:
        ValueError: the durations are not ``lease_duration > renew_deadline >
            retry_period > 0``, or the identity is empty.
    """

    def __init__(
        self,
        client: KubeClient,
        *,
        name: str,
        namespace: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: Clock | None = None,
    ) -> None:
        if not identity:
            raise ValueError("leader election: the identity must not be empty")
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError(
                "leader election: need lease_duration > renew_deadline > retry_period > 0, "
                f"got {lease_duration} / {renew_deadline} / {retry_period}"
            )
        self._client = client
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._clock: Clock = clock or SystemClock()
        self._leading = False
        self._released = False
        self._other_holder = False
        self._valid_until = datetime.min.replace(tzinfo=UTC)
        self._won_at = self._valid_until  # when the last successful attempt started
        self._observed = LeaseObservation()
        self._lock = asyncio.Lock()

    @property
    def is_leader(self) -> bool:
        """Whether this replica holds the Lease right now."""
        return self._leading and self._clock.now() < self._valid_until

    async def run(self, on_started: Callback, on_stopped: Callback) -> None:
        """Campaign, lead, and after a loss campaign again, until cancelled.

        ``on_started`` runs each time the Lease is won, ``on_stopped`` once for each
        ``on_started``: on a loss (before anything else), a release, or cancellation.
        """
        started = False
        try:
            while not self._released:
                await self._campaign()
                if self._released:
                    break
                self._valid_until = self._won_at + timedelta(seconds=self.renew_deadline)
                self._leading = True
                started = True
                log.info("lease %s/%s: %s leads", self.namespace, self.name, self.identity)
                await on_started()
                await self._hold()
                # lost or released: stop acting before anything else
                self._leading = False
                started = False
                await on_stopped()
                log.warning(
                    "lease %s/%s: %s stopped leading", self.namespace, self.name, self.identity
                )
            await asyncio.Event().wait()  # released: stay a standby that never campaigns
        finally:
            self._leading = False
            if started:
                await on_stopped()

    async def release(self) -> None:
        """Stop leading now and free the Lease so a standby takes over at its next retry."""
        was_leading, self._leading, self._released = self._leading, False, True
        if not was_leading:
            return
        async with self._lock:
            for _ in range(3):
                try:
                    lease = await self._client.get_lease(self.namespace, self.name)
                    spec = lease.get("spec") or {}
                    if spec.get("holderIdentity") != self.identity:
                        return
                    now = _utc(self._clock.now())
                    lease["spec"] = spec | {
                        "holderIdentity": "",
                        "leaseDurationSeconds": 1,
                        "acquireTime": now,
                        "renewTime": now,
                    }
                    await self._client.replace_lease(self.namespace, self.name, lease)
                    log.info("lease %s/%s: %s released", self.namespace, self.name, self.identity)
                    return
                except Conflict:
                    continue
                except KubeError as exc:
                    log.warning("lease %s/%s: release failed: %s", self.namespace, self.name, exc)
                    return

    async def try_acquire_or_renew(self) -> bool:
        """One attempt: read the Lease and take or renew it when allowed.

        Returns:
            True when this replica holds the Lease afterwards; False when another live
            holder has it or another candidate won the race (409).

        Raises:
            KubeError: the API failed (transport, 5xx, RBAC); the caller retries.
        """
        async with self._lock:
            if self._released:
                return False
            return await self._attempt()

    async def _attempt(self) -> bool:
        now = self._clock.now()
        self._other_holder = False
        try:
            lease = await self._client.get_lease(self.namespace, self.name)
        except NotFound:
            return await self._create(now)
        spec: JSONObject = dict(lease.get("spec") or {})
        self._observed.see(spec, now)
        holder = spec.get("holderIdentity") or ""
        if holder != self.identity and not self._observed.expired(now):
            self._other_holder = True
            return False
        if holder != self.identity:
            transitions = spec.get("leaderTransitions")
            spec["leaderTransitions"] = (transitions if isinstance(transitions, int) else 0) + 1
            spec["acquireTime"] = _utc(now)
        spec |= {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": math.ceil(self.lease_duration),
            "renewTime": _utc(now),
        }
        spec.setdefault("acquireTime", _utc(now))
        lease["spec"] = spec
        try:
            await self._client.replace_lease(self.namespace, self.name, lease)
        except Conflict:
            return False  # someone wrote it since we read it: lost the race
        self._observed.see(spec, now)
        self._won_at = now
        return True

    async def _create(self, now: datetime) -> bool:
        spec: JSONObject = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": math.ceil(self.lease_duration),
            "acquireTime": _utc(now),
            "renewTime": _utc(now),
            "leaderTransitions": 0,
        }
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": spec,
        }
        try:
            await self._client.create_lease(self.namespace, lease)
        except Conflict:
            return False  # another candidate created it first
        self._observed.see(spec, now)
        self._won_at = now
        return True

    async def _campaign(self) -> None:
        """Until this replica holds the Lease (or is released)."""
        while not self._released:
            try:
                if await self.try_acquire_or_renew():
                    return
            except KubeError as exc:
                log.warning("lease %s/%s: %s", self.namespace, self.name, exc)
            await asyncio.sleep(self.retry_period)

    async def _hold(self) -> None:
        """Renew every ``retry_period`` until no renewal succeeded for ``renew_deadline``,
        another holder shows, or the Lease is released."""
        deadline = timedelta(seconds=self.renew_deadline)
        pause = self.retry_period
        while not self._released:
            await asyncio.sleep(pause)
            left = (self._valid_until - self._clock.now()).total_seconds()
            if self._released or left <= 0:
                return
            renewed = False
            with contextlib.suppress(KubeError, TimeoutError):
                renewed = await asyncio.wait_for(self.try_acquire_or_renew(), left)
            if renewed:
                self._valid_until = self._won_at + deadline
                pause = self.retry_period
            elif self._other_holder:
                return
            else:
                left = (self._valid_until - self._clock.now()).total_seconds()
                pause = max(0.0, min(self.retry_period, left))
