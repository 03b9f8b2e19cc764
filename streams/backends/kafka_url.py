"""What a ``kafka://`` log URL says, parsed and checked without importing the Kafka client.

``kafka://host:port[,host:port...]/topic?option=value&...`` names one topic of one
cluster. The options (all optional):

* ``partitions`` — must be 1: a log is one partition, so its order is total;
* ``replication`` — the replication factor used when the topic is created (default 1);
* ``client_id`` — the client id the broker sees (default ``tide``);
* ``max_batch_bytes`` — the largest record batch one ``append`` may produce (default
  16 MiB; it must not exceed the broker's ``message.max.bytes``);
* ``checkpoints`` — a local SQLite file that keeps the projections' checkpoints of this
  log (read by ``streams.backends.checkpoints``; without it the commands fold from the
  start);
* ``timeout`` — seconds a request to the broker may take before it fails (default 10).

Security, for real clusters (see :class:`Security`):

* ``tls=1`` — talk TLS; ``tls_ca`` (a CA bundle file; default: the system's),
  ``tls_cert`` and ``tls_key`` (a client certificate and its key, both or neither);
* ``sasl`` — ``PLAIN``, ``SCRAM-SHA-256`` or ``SCRAM-SHA-512``, with ``sasl_user`` and the
  password from ``sasl_password_env`` (an environment variable's name) or
  ``sasl_password_file`` (a file whose first line is the password). ``PLAIN`` needs
  ``tls=1``: it would send the password in clear text.

A secret never appears in the URL: ``sasl_password=`` and ``user:password@`` are refused,
and every message about a URL shows it with its query values and user info blanked
(:func:`redact`). The password is read only when the log is opened
(:func:`read_password`), and its value never appears in any message.

The checkpoints option lives in the URL (not in the settings) so that every command that
is handed the log also finds its checkpoints.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from streams.urls import KAFKA_OPTIONS, parse_log_url, redact

__all__ = ["KafkaTarget", "Security", "parse_kafka_url", "read_password", "redact"]

DEFAULT_MAX_BATCH_BYTES = 16 * 1024 * 1024
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_TRUE, _FALSE = frozenset({"1", "true", "yes"}), frozenset({"", "0", "false", "no"})


@dataclass(frozen=True, slots=True)
class Security:
    """How to reach a secured cluster: TLS files and the SASL mechanism, user and the
    *source* of the password (never the password itself)."""

    tls: bool = False
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    sasl: str | None = None
    sasl_user: str | None = None
    password_env: str | None = None
    password_file: str | None = None

    @property
    def protocol(self) -> str:
        """aiokafka's ``security_protocol`` for these settings."""
        if self.sasl:
            return "SASL_SSL" if self.tls else "SASL_PLAINTEXT"
        return "SSL" if self.tls else "PLAINTEXT"


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
    security: Security = Security()

    @property
    def quarantine_topic(self) -> str:
        """The companion topic that keeps the input set aside."""
        return f"{self.topic}.quarantine"


def parse_kafka_url(url: str) -> KafkaTarget:
    """Parse and check a ``kafka://`` URL.

    Raises:
        ValueError: a one-line reason naming the (redacted) URL and what is wrong.
    """
    shown = redact(url)
    # one parser for every log URL; a text without ``://`` is no URL at all, and its split
    # (no broker) is refused below before any option is read
    address = parse_log_url(url) if "://" in url else None
    parts = address.parts() if address is not None else urlsplit(url)
    if parts.scheme != "kafka":
        raise ValueError(f"{shown!r} is not a kafka:// URL")
    if "@" in parts.netloc:
        raise ValueError(
            f"{shown!r}: no user or password before the host; use sasl_user and "
            "sasl_password_env or sasl_password_file"
        )
    if not parts.netloc:
        raise ValueError(f"{shown!r} names no broker (kafka://host:port/topic)")
    topic = parts.path.strip("/")
    if not topic or "/" in topic:
        raise ValueError(f"{shown!r} must name exactly one topic (kafka://host:port/topic)")
    assert address is not None  # a broker was named, so the text had ``://``
    options = dict(address.options())
    if "sasl_password" in options:
        raise ValueError(
            f"{shown!r}: a password never goes in the URL; "
            "use sasl_password_env=VARIABLE or sasl_password_file=PATH"
        )
    unknown = sorted(set(options) - KAFKA_OPTIONS)
    if unknown:
        known = ", ".join(sorted(KAFKA_OPTIONS))
        raise ValueError(f"{shown!r}: unknown option {unknown[0]!r} (known: {known})")
    if options.get("partitions", "1") != "1":
        raise ValueError(
            f"{shown!r}: partitions must be 1 (a log is one totally ordered partition)"
        )
    return KafkaTarget(
        url=url,
        bootstrap=parts.netloc,
        topic=topic,
        replication=_positive(shown, options, "replication", 1),
        client_id=options.get("client_id") or "tide",
        max_batch_bytes=_positive(shown, options, "max_batch_bytes", DEFAULT_MAX_BATCH_BYTES),
        checkpoints=options.get("checkpoints") or None,
        timeout=float(_positive(shown, options, "timeout", 10)),
        security=_security(shown, options),
    )


def _security(shown: str, options: dict[str, str]) -> Security:
    """The security options, refusing combinations that cannot work or leak a secret."""
    tls_text = options.get("tls", "").lower()
    if tls_text not in _TRUE | _FALSE:
        raise ValueError(f"{shown!r}: tls={tls_text!r} is not 1/true/yes or 0/false/no")
    tls = tls_text in _TRUE
    files = {key: options.get(key) or None for key in ("tls_ca", "tls_cert", "tls_key")}
    given = sorted(key for key, value in files.items() if value)
    if given and not tls:
        raise ValueError(f"{shown!r}: {given[0]} is given but tls is off (add tls=1)")
    if bool(files["tls_cert"]) != bool(files["tls_key"]):
        raise ValueError(f"{shown!r}: tls_cert and tls_key go together (a client certificate)")
    sasl = options.get("sasl") or None
    user = options.get("sasl_user") or None
    env = options.get("sasl_password_env") or None
    path = options.get("sasl_password_file") or None
    if sasl is None:
        stray = [key for key, value in (("sasl_user", user), ("sasl_password_env", env)) if value]
        stray += ["sasl_password_file"] if path else []
        if stray:
            raise ValueError(f"{shown!r}: {stray[0]} is given but no sasl mechanism")
        return Security(tls, files["tls_ca"], files["tls_cert"], files["tls_key"])
    mechanism = sasl.upper()
    if mechanism not in MECHANISMS:
        raise ValueError(f"{shown!r}: sasl={sasl!r} is not one of {', '.join(MECHANISMS)}")
    if user is None:
        raise ValueError(f"{shown!r}: sasl={mechanism} needs sasl_user")
    if (env is None) == (path is None):
        raise ValueError(
            f"{shown!r}: sasl={mechanism} needs exactly one of sasl_password_env "
            "and sasl_password_file"
        )
    if mechanism == "PLAIN" and not tls:
        raise ValueError(f"{shown!r}: sasl=PLAIN sends the password in clear text; add tls=1")
    return Security(
        tls, files["tls_ca"], files["tls_cert"], files["tls_key"], mechanism, user, env, path
    )


def read_password(security: Security) -> str | None:
    """The SASL password from its environment variable or file (None without SASL).

    Raises:
        ValueError: the variable is unset or empty, or the file cannot be read or is
            empty; the message names the variable or file, never the value.
    """
    if security.sasl is None:
        return None
    if security.password_env is not None:
        value = os.environ.get(security.password_env, "")
        if not value:
            raise ValueError(f"sasl_password_env: ${security.password_env} is unset or empty")
        return value
    assert security.password_file is not None
    try:
        lines = Path(security.password_file).read_text().splitlines()
    except OSError as exc:
        raise ValueError(
            f"sasl_password_file: cannot read {security.password_file} ({exc.strerror})"
        ) from None
    if not lines or not lines[0]:
        raise ValueError(f"sasl_password_file: {security.password_file} is empty")
    return lines[0]


def _positive(shown: str, options: dict[str, str], key: str, default: int) -> int:
    text = options.get(key)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{shown!r}: {key}={text!r} is not a whole number") from None
    if value < 1:
        raise ValueError(f"{shown!r}: {key} must be at least 1, not {value}")
    return value
