"""The one log URL parser: every address the README and the tests use, what each means
(normal form, persistence, the file it names, where its checkpoints go, how it is shown)
and what is refused, with the message the commands have always printed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from streams.backends import normalise_url, open_log
from streams.backends.checkpoints import store_path
from streams.backends.kafka_url import parse_kafka_url
from streams.urls import LogURL, is_recording_path, parse_log_url, redact


@dataclass(frozen=True)
class Case:
    url: str
    text: str
    scheme: str
    persistent: bool
    checkpoints: str | None
    local_file: str | None  # the file a reading command requires to exist
    shown: str | None = None  # display(); None: the URL itself


SECURED = (
    "kafka://b1:9093,b2:9093/cluster-a?tls=1&tls_ca=/etc/ca.pem&sasl=SCRAM-SHA-512"
    "&sasl_user=tide&sasl_password_env=TIDE_KAFKA_PASSWORD&checkpoints=/var/lib/tide/a.db"
)

CASES = [
    Case("tide.db", "sqlite:///tide.db", "sqlite", True, "tide.db", "tide.db"),
    Case("./logs/a.db", "sqlite:///logs/a.db", "sqlite", True, "logs/a.db", "logs/a.db"),
    Case("/abs/a.db", "sqlite:////abs/a.db", "sqlite", True, "/abs/a.db", "/abs/a.db"),
    Case("sqlite:///p.db", "sqlite:///p.db", "sqlite", True, "p.db", "p.db"),
    Case("sqlite:////abs/p.db", "sqlite:////abs/p.db", "sqlite", True, "/abs/p.db", "/abs/p.db"),
    # a SQLite address is text after ``://``: a ``?`` is part of the file's name
    Case("sqlite:///p.db?x=1", "sqlite:///p.db?x=1", "sqlite", True, "p.db?x=1", "p.db?x=1"),
    Case("sqlite://", "sqlite://", "sqlite", False, None, None),
    Case("sqlite:///", "sqlite:///", "sqlite", False, None, "."),
    Case("sqlite:///:memory:", "sqlite:///:memory:", "sqlite", False, ":memory:", ":memory:"),
    # two slashes: the file is opened, but the address names no checkpoint file
    Case("sqlite://rel.db", "sqlite://rel.db", "sqlite", True, None, None),
    Case("memory://", "memory://", "memory", False, None, None),
    Case("kafka://h:9092/topic", "kafka://h:9092/topic", "kafka", True, None, None),
    Case(
        "kafka://127.0.0.1:9092/cluster-a?checkpoints=/var/lib/tide/cluster-a.db",
        "kafka://127.0.0.1:9092/cluster-a?checkpoints=/var/lib/tide/cluster-a.db",
        "kafka",
        True,
        "/var/lib/tide/cluster-a.db",
        None,
    ),
    # the last ``checkpoints`` given with a value counts
    Case(
        "kafka://h:1/t?checkpoints=a.db&checkpoints=",
        "kafka://h:1/t?checkpoints=a.db&checkpoints=",
        "kafka",
        True,
        "a.db",
        None,
    ),
    Case(SECURED, SECURED, "kafka", True, "/var/lib/tide/a.db", None),
    Case(
        "kafka://u:secret@h:1/t?sasl_password=hunter2",
        "kafka://u:secret@h:1/t?sasl_password=hunter2",
        "kafka",
        True,
        None,
        None,
        shown="kafka://***@h:1/t?sasl_password=***",
    ),
    # parsing keeps an unknown scheme: open_log refuses it, naming the supported ones
    Case("ftp://host/log", "ftp://host/log", "ftp", True, None, None),
]


@pytest.mark.parametrize("case", CASES, ids=[case.url for case in CASES])
def test_what_an_address_means(case: Case) -> None:
    address = parse_log_url(case.url)
    assert address == LogURL(case.url, case.text, case.scheme, case.text.split("://", 1)[1])
    assert address.plain == ("://" not in case.url)
    assert normalise_url(case.url) == case.text
    assert address.is_persistent is case.persistent
    assert address.checkpoints == store_path(case.url) == case.checkpoints
    assert address.local_file == (None if case.local_file is None else Path(case.local_file))
    assert address.display() == (case.shown or case.url)


def test_a_secret_is_never_shown() -> None:
    shown = parse_log_url(SECURED.replace("tls=1", "tls=1&token=abc")).display()
    assert "token=***" in shown and "abc" not in shown
    assert "sasl_password_env=TIDE_KAFKA_PASSWORD" in shown  # a variable's name, no secret
    assert redact("kafka://[::1/t") == "<unparsable URL>"


@pytest.mark.parametrize("text", ["rec.jsonl", "./in/day.jsonl"])
def test_a_recording_is_refused_as_a_log(text: str) -> None:
    assert is_recording_path(text)
    with pytest.raises(ValueError) as caught:
        parse_log_url(text)
    assert str(caught.value) == (
        f"{text} is a recording, not a log; import it with `tide log import`"
    )


def test_a_jsonl_url_is_no_recording_path() -> None:
    assert not is_recording_path("sqlite:///a.jsonl")
    assert parse_log_url("sqlite:///a.jsonl").sqlite_file == "a.jsonl"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://host/log", "unsupported log URL 'ftp://host/log' (supported schemes: "),
        ("nope://x", "unsupported log URL 'nope://x' (supported schemes: "),
        ("a.jsonl", "a.jsonl is a recording, not a log"),
    ],
)
async def test_open_log_refuses(url: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        await open_log(url)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("kafka://h:1", "'kafka://h:1' must name exactly one topic (kafka://host:port/topic)"),
        # what is shown is the URL as urlsplit puts it back together (an empty host drops)
        ("kafka:///t", "'kafka:/t' names no broker (kafka://host:port/topic)"),
        ("kafka:/t", "'kafka:/t' names no broker (kafka://host:port/topic)"),
        ("sqlite:///a.db", "'sqlite:/a.db' is not a kafka:// URL"),
        ("a.db", "'a.db' is not a kafka:// URL"),
        (
            "kafka://u:pw@h:1/t",
            "'kafka://***@h:1/t': no user or password before the host; use sasl_user and "
            "sasl_password_env or sasl_password_file",
        ),
        ("kafka://h:1/t?partitions=2", "'kafka://h:1/t?partitions=2': partitions must be 1"),
        ("kafka://h:1/t?colour=red", "'kafka://h:1/t?colour=***': unknown option 'colour'"),
        ("kafka://h:1/t?timeout=0", "'kafka://h:1/t?timeout=0': timeout must be at least 1"),
    ],
)
def test_the_kafka_backend_refuses(url: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_kafka_url(url)
    assert str(caught.value).startswith(message)


def test_the_kafka_backend_reads_its_options_through_the_parser() -> None:
    target = parse_kafka_url(SECURED)
    assert (target.bootstrap, target.topic) == ("b1:9093,b2:9093", "cluster-a")
    assert target.checkpoints == parse_log_url(SECURED).checkpoints == "/var/lib/tide/a.db"
    assert target.security.sasl == "SCRAM-SHA-512" and target.security.tls
