"""Log URLs: the one parser every part of tide reads a log's address through.

A log is named by a URL (``sqlite:///relative.db``, ``sqlite:////absolute.db``,
``sqlite://`` — a private in-memory SQLite log —, ``memory://``,
``kafka://host:port/topic?option=value``) or by a plain ``.db`` path, which means SQLite.
:func:`parse_log_url` turns any of them into a :class:`LogURL`, a frozen value that says
what the rest of tide asks of an address: its scheme, the SQLite file it names, whether the
log outlives the process (:attr:`LogURL.is_persistent`), where its checkpoints are kept
(:attr:`LogURL.checkpoints`) and how to show it without a secret (:meth:`LogURL.display`).
``open_log`` (``streams.backends``), the Kafka backend (``streams.backends.kafka_url``
checks the Kafka options), the checkpoint store (``streams.backends.checkpoints``) and the
command line all read addresses through it, so an address means the same thing to each.

Parsing is lenient on purpose: an unknown scheme is kept (``open_log`` refuses it with the
list of the supported ones) and a Kafka URL's options are checked only by the Kafka
backend, when the log is opened; the one address refused here is a ``.jsonl`` recording,
which is an input file, never a log. A SQLite address is read as text after ``://``
(never split at ``?`` or ``#``), as ``sqlite3`` opens it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import SplitResult, parse_qsl, urlsplit, urlunsplit

#: the options of a ``kafka://`` URL (``streams.backends.kafka_url`` checks their values);
#: their values are shown in messages, the values of any other key are blanked
KAFKA_OPTIONS = frozenset(
    {"tls", "tls_ca", "tls_cert", "tls_key", "sasl", "sasl_user"}
    | {"sasl_password_env", "sasl_password_file"}
    | {"partitions", "replication", "client_id", "max_batch_bytes", "checkpoints", "timeout"}
)

#: The one ``--log`` default of every command: ``tide.db`` in the working directory (here,
#: not in ``controller.drive.settings``, so a command reads it without importing pydantic)
DEFAULT_LOG = "tide.db"

_SQLITE_FILE = "sqlite:///"
_IN_MEMORY = ("", ":memory:")


def is_recording_path(text: str) -> bool:
    """Whether ``text`` is a plain ``.jsonl`` path: a recording (an input file), not a log."""
    return text.endswith(".jsonl") and "://" not in text


@dataclass(frozen=True, slots=True)
class LogURL:
    """A log's address, parsed (see the module docstring).

    ``given`` is the text as it was given, ``text`` its normal form (a plain path becomes
    ``sqlite:///path``), ``scheme`` what comes before ``://`` and ``rest`` what follows it.
    """

    given: str
    text: str
    scheme: str
    rest: str

    @property
    def plain(self) -> bool:
        """Whether the address was given as a plain path, not a URL."""
        return "://" not in self.given

    @property
    def sqlite_file(self) -> str:
        """The file a ``sqlite`` address opens (``:memory:`` for a private log)."""
        return self.rest.removeprefix("/") or ":memory:"

    @property
    def is_persistent(self) -> bool:
        """Whether the log can outlive the process (not ``memory://``, ``sqlite://``,
        ``sqlite:///`` or ``sqlite:///:memory:``)."""
        if self.scheme == "memory":
            return False
        return not (self.scheme == "sqlite" and self.rest.removeprefix("/") in _IN_MEMORY)

    @property
    def local_file(self) -> Path | None:
        """The local file a ``sqlite:///`` address (or a plain path) names, which the
        reading commands require to exist; None for any other address."""
        if not self.text.startswith(_SQLITE_FILE):
            return None
        return Path(self.text.removeprefix(_SQLITE_FILE))

    @property
    def checkpoints(self) -> str | None:
        """The SQLite file that keeps the log's checkpoints, or None (it keeps none).

        A SQLite log on a file keeps them in that file; a ``kafka://`` log in the local file
        its ``checkpoints=`` option names (the last one given with a value); ``memory://``
        and private ``sqlite://`` logs vanish with the process and keep none.
        """
        if self.scheme == "kafka":
            named = [value for key, value in self.options() if key == "checkpoints" and value]
            return named[-1] if named else None
        if not self.text.startswith(_SQLITE_FILE):
            return None
        return self.text.removeprefix(_SQLITE_FILE) or None

    def parts(self) -> SplitResult:
        """The address split as a URL (host, path, query), for schemes that have them.

        Raises:
            ValueError: the address cannot be split (an unbalanced ``[`` in the host).
        """
        return urlsplit(self.text)

    def options(self) -> list[tuple[str, str]]:
        """The query's ``(key, value)`` pairs in order, blank values kept."""
        return parse_qsl(self.parts().query, keep_blank_values=True)

    def display(self) -> str:
        """The address, safe to print: a ``kafka://`` URL with the values of unknown query
        keys and any user info blanked (:func:`redact`); any other address as given."""
        return redact(self.text) if self.scheme == "kafka" else self.given


def parse_log_url(text: str) -> LogURL:
    """Parse a log's address: a URL, or a plain path (SQLite).

    Raises:
        ValueError: ``text`` is a ``.jsonl`` recording, not a log (the message says how to
            import it).
    """
    if "://" in text:
        scheme, rest = text.split("://", 1)
        return LogURL(given=text, text=text, scheme=scheme, rest=rest)
    if text.endswith(".jsonl"):
        raise ValueError(f"{text} is a recording, not a log; import it with `tide log import`")
    normal = f"{_SQLITE_FILE}{Path(text)}"
    return LogURL(given=text, text=normal, scheme="sqlite", rest=normal.split("://", 1)[1])


def redact(url: str) -> str:
    """``url`` with every query value of a key outside :data:`KAFKA_OPTIONS` and any user
    info blanked: safe to print."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    host = parts.netloc.rsplit("@", 1)[-1]
    if "@" in parts.netloc:
        host = "***@" + host
    query = "&".join(
        f"{key}=" + ("***" if value and key not in KAFKA_OPTIONS else value)
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
    )
    return urlunsplit((parts.scheme, host, parts.path, query, ""))
