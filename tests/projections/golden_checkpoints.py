"""Checkpoints as earlier tides wrote them: the stored version-2 ones
(``tests/projections/golden/checkpoints-v2``) and, from them, version 1 (zlib)."""

from __future__ import annotations

import hashlib
import zlib
from pathlib import Path

import orjson

from projections.checkpoint_codec import MAGIC, decompress, read_header

VERSION_2 = Path(__file__).parent / "golden" / "checkpoints-v2"


def version_2(log: str) -> list[tuple[int, bytes]]:
    """The stored version-2 checkpoints of golden log ``log`` (its name without
    ``.jsonl``), lowest position first."""
    return [(int(p.stem), p.read_bytes()) for p in sorted((VERSION_2 / log).glob("*.ckpt"))]


def as_version_1(data: bytes, *, known: bool = True) -> bytes:
    """A version-2 checkpoint as tides before Zstandard wrote it: version 1, zlib (the same
    parts; ``known`` False: without the recorder's part, which the first ones lacked)."""
    header = read_header(data)
    assert header.version == 2, header.version
    body = decompress(data[header.body :], header.version)
    head = orjson.loads(data[data.index(b"\n") + 1 : header.body - 1])
    if not known:
        body = body[: sum(length for _, length in header.parts[:3])]
        head["parts"] = head["parts"][:3]
    packed = zlib.compress(body, 1)
    head["digest"] = hashlib.sha256(packed).hexdigest()
    return b"".join([MAGIC, b"1\n", orjson.dumps(head, option=orjson.OPT_SORT_KEYS), b"\n", packed])
