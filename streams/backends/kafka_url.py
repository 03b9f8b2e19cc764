"""What a ``kafka://`` log URL says, parsed and checked without importing the Kafka client.

``kafka://host:port[,host:port...]/topic?option=value&...`` names one topic of one
cluster. The options (all optional):

* ``partitions`` — must be 1: a log is one partition, so its order is total;
* ``replication`` — the replication factor used when the topic is created (default 1);
* ``client_id`` — the client id the broker sees (default ``tide``);
* ``max_batch_bytes`` — the largest record batch one ``append`` may produce (default
  16 MiB; it must not exceed the broker's ``message.max.bytes``);
* ``checkpoints`` — a local SQLite file that keeps the projections' checkpoints of this
  log (read by ``projections.store``; without it the commands fold from the start);
* ``timeout`` — seconds a request to the broker may take before it fails (default 10).

The checkpoints option lives in the URL (not in the settings) so that every command that
is handed the log also finds its checkpoints.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

DEFAULT_MAX_BATCH_BYTES = 16 * 1024 * 1024
_OPTIONS = frozenset(
    {"partitions", "replication", "client_id", "max_batch_bytes", "checkpoints", "timeout"}
)


@dataclass(frozen=True, slots=True)
class KafkaTarget:
    """A parsed ``kafka://`` URL (see the module docstring)."""

    url: str
    bootstrap: str
    topic: str
    replication: int = 1
    client_id: str = "tide"
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    checkpoints: str | None = None
    timeout: float = 10.0

    @property
    def quarantine_topic(self) -> str:
        """The companion topic that keeps the input set aside."""
        return f"{self.topic}.quarantine"


def parse_kafka_url(url: str) -> KafkaTarget:
    """Parse and check a ``kafka://`` URL.

    Raises:
        ValueError: a one-line reason naming the URL and what is wrong with it.
    """
    parts = urlsplit(url)
    if parts.scheme != "kafka":
        raise ValueError(f"{url!r} is not a kafka:// URL")
    if not parts.netloc:
        raise ValueError(f"{url!r} names no broker (kafka://host:port/topic)")
    topic = parts.path.strip("/")
    if not topic or "/" in topic:
        raise ValueError(f"{url!r} must name exactly one topic (kafka://host:port/topic)")
    options = dict(parse_qsl(parts.query, keep_blank_values=True))
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        known = ", ".join(sorted(_OPTIONS))
        raise ValueError(f"{url!r}: unknown option {unknown[0]!r} (known: {known})")
    if options.get("partitions", "1") != "1":
        raise ValueError(f"{url!r}: partitions must be 1 (a log is one totally ordered partition)")
    return KafkaTarget(
        url=url,
        bootstrap=parts.netloc,
        topic=topic,
        replication=_positive(url, options, "replication", 1),
        client_id=options.get("client_id") or "tide",
        max_batch_bytes=_positive(url, options, "max_batch_bytes", DEFAULT_MAX_BATCH_BYTES),
        checkpoints=options.get("checkpoints") or None,
        timeout=float(_positive(url, options, "timeout", 10)),
    )


def checkpoint_path(url: str) -> str | None:
    """The ``checkpoints`` file a ``kafka://`` URL names, or None (no URL check here)."""
    query = urlsplit(url).query
    return dict(parse_qsl(query)).get("checkpoints") or None


def _positive(url: str, options: dict[str, str], key: str, default: int) -> int:
    text = options.get(key)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{url!r}: {key}={text!r} is not a whole number") from None
    if value < 1:
        raise ValueError(f"{url!r}: {key} must be at least 1, not {value}")
    return value
