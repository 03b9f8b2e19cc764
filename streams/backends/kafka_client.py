"""The aiokafka clients of a Kafka log, configured from its URL, and its error mapping.

Every client (producer, consumers, admin) gets the same connection settings from
:func:`client_options`: the bootstrap servers, the client id, the request timeout and
the security settings of the URL (TLS context, SASL mechanism and credentials; the
password is read here, when the log opens, and never shown). Every aiokafka error
becomes a :class:`~streams.log.LogError` through :func:`guard`:
:class:`~streams.log.BackendUnavailableError` when aiokafka marks it retriable.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Awaitable
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError
from aiokafka.helpers import create_ssl_context

from streams.backends.kafka_url import KafkaTarget, read_password
from streams.log import BackendUnavailableError, LogError

#: how long a fetch waits on the broker for new records
POLL_MS = 100
FETCH_WAIT_MS = 500
#: room above ``max_batch_bytes`` for the request and batch headers
OVERHEAD = 64 * 1024

T = TypeVar("T")

# aiokafka logs every failed fetch and reconnect; with no handler configured (a command,
# not ``tide run``, which configures logging) Python's last-resort handler printed each on
# stderr: hundreds of lines when a broker stops. Errors reach the user through
# :func:`guard` as one line; a configured handler (the root's) still gets the records.
logging.getLogger("aiokafka").addHandler(logging.NullHandler())


class BatchTooLargeError(LogError):
    """An append whose record batch would exceed ``max_batch_bytes``; retrying cannot help."""

    retriable = False


ClientOptions = dict[str, Any]
"""The keyword arguments of an aiokafka client (aiokafka takes them as ``**kwargs``)."""


def client_options(target: KafkaTarget) -> ClientOptions:
    """The keyword arguments every aiokafka client of ``target`` shares.

    Raises:
        ValueError: the password source or a TLS file cannot be read (naming which).
    """
    security = target.security
    options: ClientOptions = {
        "bootstrap_servers": target.bootstrap.split(","),
        "client_id": target.client_id,
        "request_timeout_ms": int(target.timeout * 1000),
        "security_protocol": security.protocol,
    }
    if security.tls:
        try:
            options["ssl_context"] = create_ssl_context(
                cafile=security.tls_ca, certfile=security.tls_cert, keyfile=security.tls_key
            )
        except (OSError, ssl.SSLError) as exc:
            files = ", ".join(
                f"{key}={value}"
                for key, value in (
                    ("tls_ca", security.tls_ca),
                    ("tls_cert", security.tls_cert),
                    ("tls_key", security.tls_key),
                )
                if value
            )
            reason = getattr(exc, "strerror", None) or type(exc).__name__
            raise ValueError(
                f"cannot load the TLS files ({files or 'system CAs'}): {reason}"
            ) from None
    if security.sasl is not None:
        options["sasl_mechanism"] = security.sasl
        options["sasl_plain_username"] = security.sasl_user
        options["sasl_plain_password"] = read_password(security)
    return options


def producer(target: KafkaTarget, options: ClientOptions) -> Any:
    """The one producer of a log: acks from all replicas, no lingering, batches as big
    as ``max_batch_bytes``."""
    return AIOKafkaProducer(
        **options,
        acks="all",
        linger_ms=0,
        max_batch_size=target.max_batch_bytes,
        max_request_size=target.max_batch_bytes + OVERHEAD,
    )


def consumer(
    target: KafkaTarget,
    options: ClientOptions,
    *,
    fetch_bytes: int | None = None,
) -> Any:
    """A consumer without a group (``assign`` + ``seek``) that fetches whole batches;
    ``fetch_bytes``: what one fetch asks for, if less (a lookup that seeks: the broker
    still hands out at least one whole batch)."""
    fetch = fetch_bytes or max(target.max_batch_bytes + OVERHEAD, 4 * 1024 * 1024)
    return AIOKafkaConsumer(
        **options,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=FETCH_WAIT_MS,
        fetch_max_bytes=max(fetch, 50 * 1024 * 1024),
        max_partition_fetch_bytes=fetch,
    )


async def ensure_topics(target: KafkaTarget, options: ClientOptions) -> None:
    """Create the log's topic and its quarantine (one partition each) if missing."""
    admin = AIOKafkaAdminClient(**options)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [
            NewTopic(name, 1, target.replication)
            for name in (target.topic, target.quarantine_topic)
            if name not in existing
        ]
        if missing:
            await admin.create_topics(missing)
    finally:
        await admin.close()


async def missing_topics(target: KafkaTarget, options: ClientOptions) -> list[str]:
    """The log's topic and its quarantine, those of them the broker does not have (a
    reader's check: it creates nothing)."""
    admin = AIOKafkaAdminClient(**options)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
    finally:
        await admin.close()
    return [name for name in (target.topic, target.quarantine_topic) if name not in existing]


async def guard(call: Awaitable[T], what: str) -> T:
    """Await ``call``, turning an aiokafka error into a log error that says ``what``."""
    try:
        return await call
    except KafkaError as exc:
        raise wrap(exc, what) from exc


async def stop(clients: list[Any]) -> None:
    """Stop clients, ignoring those already gone.

    A consumer whose broker went away raises ``CancelledError`` from ``stop`` (aiokafka
    awaits the fetch tasks it has just cancelled); that is not a cancellation of the
    caller, whose own error (the broker is gone) must not be replaced by it."""
    for client in clients:
        try:
            await client.stop()
        except KafkaError:  # already gone: nothing left to release
            pass
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the caller is being cancelled: let it


def wrap(exc: KafkaError, what: str) -> LogError:
    """The log error for an aiokafka error (retriable ones are ``BackendUnavailable``)."""
    message = f"{what}: {exc}"
    if getattr(exc, "retriable", False) or "Connection" in type(exc).__name__:
        return BackendUnavailableError(message)
    return LogError(message)
