"""An S3 endpoint for a broker whose data must outlive it: moto's server, on loopback.

tansu keeps its topics in S3 when started with ``--storage-engine s3://bucket/``; it
finds the endpoint and credentials in the environment (:meth:`S3.broker_env`). moto's
``ThreadedMotoServer`` (the ``moto[server]`` dev extra) answers S3 in this process on a
free port; :func:`start_s3` starts it and creates the bucket. There is no skip: if moto is
missing or does not answer, :class:`~tests.streams.tansu.BrokerError` says why.

moto keeps everything in memory, so the data survives a *broker* restart, not a restart
of this process: enough to show that records, topics and offsets live in the storage,
not in the broker.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from tests.streams.tansu import BrokerError, free_port

START_TIMEOUT = 15.0
_buckets = itertools.count()


@dataclass
class S3:
    """A running moto S3 server on ``127.0.0.1:port`` holding ``bucket``."""

    server: Any  # moto.server.ThreadedMotoServer (moto ships no type information)
    port: int
    bucket: str

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def storage(self) -> str:
        """The broker's ``--storage-engine`` for this bucket."""
        return f"s3://{self.bucket}/"

    def broker_env(self) -> dict[str, str]:
        """The environment tansu reads its S3 endpoint and credentials from."""
        return {
            "AWS_ENDPOINT": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",  # moto accepts any credentials
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def objects(self) -> int:
        """How many objects the bucket holds (a listing's ``<Key>`` elements)."""
        with urllib.request.urlopen(f"{self.endpoint}/{self.bucket}?list-type=2") as answer:
            body: bytes = answer.read()
        return body.count(b"<Key>")

    def stop(self) -> None:
        self.server.stop()


def start_s3(bucket: str | None = None) -> S3:
    """Start moto's S3 server on a free loopback port and create ``bucket`` (None: a
    fresh name: moto's state is the process's, so a bucket outlives its server)."""
    bucket = bucket or f"tansu-{os.getpid()}-{next(_buckets)}"
    try:
        from moto.server import ThreadedMotoServer
    except ModuleNotFoundError:
        raise BrokerError(
            "moto is not installed: pip install -e '.[dev]' provides moto[server]"
        ) from None
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # not a line per request
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    s3 = S3(server=server, port=port, bucket=bucket)
    deadline = time.monotonic() + START_TIMEOUT
    request = urllib.request.Request(f"{s3.endpoint}/{bucket}", method="PUT")
    while True:
        try:
            urllib.request.urlopen(request, timeout=1).close()
            return s3
        except (urllib.error.URLError, OSError) as exc:
            if time.monotonic() > deadline:
                server.stop()
                raise BrokerError(f"moto did not create bucket {bucket!r}: {exc}") from None
            time.sleep(0.01)
