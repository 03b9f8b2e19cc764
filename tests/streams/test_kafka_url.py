"""The kafka:// URL's security options: parsed, bad combinations refused, secrets never shown.

No broker here: tansu (the CI broker) has no SASL, so the SASL and TLS settings are
checked up to the aiokafka client options they produce, not against a live handshake.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from streams.backends.kafka_client import client_options
from streams.backends.kafka_url import Security, parse_kafka_url, read_password, redact

BASE = "kafka://b1:9093,b2:9093/cluster-a"


@pytest.mark.parametrize(
    ("query", "expected", "protocol"),
    [
        ("", Security(), "PLAINTEXT"),
        ("tls=1", Security(tls=True), "SSL"),
        (
            "tls=true&tls_ca=/etc/ca.pem&tls_cert=/etc/c.pem&tls_key=/etc/k.pem",
            Security(True, "/etc/ca.pem", "/etc/c.pem", "/etc/k.pem"),
            "SSL",
        ),
        (
            "sasl=scram-sha-512&sasl_user=tide&sasl_password_env=TIDE_KAFKA_PASSWORD",
            Security(sasl="SCRAM-SHA-512", sasl_user="tide", password_env="TIDE_KAFKA_PASSWORD"),
            "SASL_PLAINTEXT",
        ),
        (
            "tls=1&sasl=PLAIN&sasl_user=tide&sasl_password_file=/run/secrets/kafka",
            Security(True, sasl="PLAIN", sasl_user="tide", password_file="/run/secrets/kafka"),
            "SASL_SSL",
        ),
        (
            "tls=yes&sasl=SCRAM-SHA-256&sasl_user=u&sasl_password_env=P",
            Security(True, sasl="SCRAM-SHA-256", sasl_user="u", password_env="P"),
            "SASL_SSL",
        ),
    ],
    ids=["none", "tls", "mutual-tls", "scram-512", "plain-over-tls", "scram-256-tls"],
)
def test_security_options_parse(query: str, expected: Security, protocol: str) -> None:
    security = parse_kafka_url(f"{BASE}?{query}").security
    assert security == expected
    assert security.protocol == protocol


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("sasl_password=hunter2", "a password never goes in the URL"),
        ("tls=maybe", "tls='maybe' is not 1/true/yes or 0/false/no"),
        ("tls_ca=/etc/ca.pem", "tls_ca is given but tls is off"),
        ("tls=1&tls_cert=/etc/c.pem", "tls_cert and tls_key go together"),
        ("sasl=GSSAPI&sasl_user=u&sasl_password_env=P", "sasl='GSSAPI' is not one of"),
        ("sasl=SCRAM-SHA-256&sasl_password_env=P", "needs sasl_user"),
        ("sasl=SCRAM-SHA-256&sasl_user=u", "needs exactly one of sasl_password_env"),
        (
            "sasl=SCRAM-SHA-256&sasl_user=u&sasl_password_env=P&sasl_password_file=/f",
            "needs exactly one of sasl_password_env",
        ),
        ("sasl=PLAIN&sasl_user=u&sasl_password_env=P", "PLAIN sends the password in clear"),
        ("sasl_user=u", "sasl_user is given but no sasl mechanism"),
        ("sasl_password_file=/f", "sasl_password_file is given but no sasl mechanism"),
    ],
    ids=[
        "password-in-url",
        "tls-not-boolean",
        "ca-without-tls",
        "cert-without-key",
        "unknown-mechanism",
        "no-user",
        "no-password-source",
        "two-password-sources",
        "plain-without-tls",
        "user-without-sasl",
        "file-without-sasl",
    ],
)
def test_bad_combinations_are_refused(query: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason) as caught:
        parse_kafka_url(f"{BASE}?{query}")
    assert "hunter2" not in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "url",
    [
        "kafka://tide:hunter2@b1:9093/log",
        "kafka://b1:9093/log?sasl_password=hunter2",
        "kafka://b1:9093/log?token=hunter2",
    ],
    ids=["user-info", "password-option", "unknown-option"],
)
def test_a_secret_in_the_url_is_refused_without_being_shown(url: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_kafka_url(url)
    assert "hunter2" not in str(caught.value)
    assert "hunter2" not in redact(url)


def test_redact_keeps_what_is_not_secret() -> None:
    url = f"{BASE}?sasl=PLAIN&tls=1&sasl_user=tide&sasl_password_env=PW&checkpoints=c.db"
    assert redact(url) == url


def test_the_password_comes_from_the_environment_or_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIDE_KAFKA_PASSWORD", "s3cret")
    from_env = parse_kafka_url(
        f"{BASE}?sasl=SCRAM-SHA-256&sasl_user=tide&sasl_password_env=TIDE_KAFKA_PASSWORD"
    )
    options = client_options(from_env)
    assert options["security_protocol"] == "SASL_PLAINTEXT"
    assert options["sasl_mechanism"] == "SCRAM-SHA-256"
    assert (options["sasl_plain_username"], options["sasl_plain_password"]) == ("tide", "s3cret")
    secret = tmp_path / "password"
    secret.write_text("fr0m-file\nignored\n")
    from_file = parse_kafka_url(
        f"{BASE}?tls=1&sasl=PLAIN&sasl_user=tide&sasl_password_file={secret}"
    )
    assert read_password(from_file.security) == "fr0m-file"
    assert client_options(from_file)["ssl_context"] is not None


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("sasl_password_env=TIDE_UNSET_VARIABLE", r"\$TIDE_UNSET_VARIABLE is unset or empty"),
        ("sasl_password_file=/nonexistent/password", "cannot read /nonexistent/password"),
    ],
    ids=["unset-variable", "missing-file"],
)
def test_a_missing_password_names_its_source(
    query: str, reason: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TIDE_UNSET_VARIABLE", raising=False)
    target = parse_kafka_url(f"{BASE}?sasl=SCRAM-SHA-512&sasl_user=tide&{query}")
    with pytest.raises(ValueError, match=reason):
        client_options(target)


def test_an_unreadable_tls_file_names_it() -> None:
    target = parse_kafka_url(f"{BASE}?tls=1&tls_ca=/nonexistent/ca.pem")
    with pytest.raises(ValueError, match=re.escape("tls_ca=/nonexistent/ca.pem")):
        client_options(target)
