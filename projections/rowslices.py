"""A format-3 cluster part decoded row by row, each task's row kept as the bytes it was.

Why: a segment of ``tide replay --verify --jobs N`` starts from a checkpoint and ends by
digesting its World's state as the next checkpoint holds it. Encoding 30,000 tasks' rows
afresh for that digest costs as much as the writer's first checkpoint (~0.7 s on the
1,000-node day); with the rows of the checkpoint it started from at hand, only the tasks
its records touched are encoded again (:func:`projections.rowcache.seeded`, the writers'
own trick). And one ``orjson.loads`` per row is quicker than one of the whole array of
rows (measured on the day's 36 MB part, collector paused: 0.09 s against 0.17 s), so a
reader that keeps no rows decodes this way too.

How the rows are found, and why a wrong cut is never used. :func:`projections.rowcache.
cluster_part` writes the part as one JSON object ending ``"tasks":[ROW,ROW,...],"version":
N}}``, each row ``["key",[values]]``. The array's end is where that fixed tail begins; its
start is the last ``,"tasks":[`` before it. From the start, each row is the shortest
piece up to a ``]]`` followed by ``,[`` (or the array's end) that parses as one JSON value
on its own: a proper prefix of a JSON array never parses, nor does a piece holding one
value and more, so each piece is exactly one row, and the next begins after its comma.
What is left, the part without its rows (``"tasks":[]``), must parse with an empty
``tasks`` in the state, the envelope's last key: had the start been found inside a row,
the rows before it would be in it, or it would not parse. Anything else (another layout,
a piece that parses as no row, a row that needs more than :data:`_TRIES` pieces tried)
gives None, and the caller decodes the part whole, which names what is wrong. The tests
mutate parts byte by byte: what the cut gives is always what the whole parse gives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from streams.events import JSON

_TAIL = b'],"version":'
_START = b',"tasks":['
#: where a row may end (its values' list, then the row) and the next begin
_BETWEEN = b"]],["
#: the pieces tried for one row before the part is left to be decoded whole
_TRIES = 64
#: the keys of a part's envelope (:func:`projections.base.encode_state`), in order
_ENVELOPE = ["format", "position", "projection", "state"]


@dataclass
class Rows:
    """A cluster part in rows: its envelope's position and state (the tasks' rows in it,
    as one parse of the whole part gives them), and each row's bytes in order."""

    position: int
    body: JSON
    pieces: list[bytes]


def cut(part: bytes) -> Rows | None:
    """The cluster part of a format-3 checkpoint, row by row (see the module docstring);
    None when it is not laid out as :func:`projections.rowcache.cluster_part` writes it."""
    end = part.rfind(_TAIL)
    if end < 0 or not part.endswith(b"}}") or not part[end + len(_TAIL) : -2].isdigit():
        return None
    start = part.rfind(_START, 0, end)
    if start < 0:
        return None
    start += len(_START)
    rows = _rows(part, start, end)
    if rows is None:
        return None
    try:
        envelope = orjson.loads(part[:start] + part[end:])
    except orjson.JSONDecodeError:
        return None
    if not isinstance(envelope, dict) or list(envelope) != _ENVELOPE:
        return None  # the rows' array is the state's only if the state is the last key
    body, position = envelope["state"], envelope["position"]
    if (
        not isinstance(body, dict)
        or body.get("tasks") != []
        or envelope.get("projection") != "cluster"
        or envelope.get("format") != 3
        or not isinstance(position, int)
        or position < 0
    ):
        return None
    pieces, values = rows
    body["tasks"] = values
    return Rows(position, body, pieces)


def _rows(part: bytes, start: int, end: int) -> tuple[list[bytes], list[Any]] | None:
    """Each row between ``start`` and ``end``, its bytes and its value (None: a piece that
    parses as no row)."""
    pieces: list[bytes] = []
    values: list[Any] = []
    find, loads, error = part.find, orjson.loads, orjson.JSONDecodeError
    at = start
    while at < end:
        mark = find(_BETWEEN, at, end)
        for _ in range(_TRIES):
            stop = end if mark < 0 else mark + 2
            piece = part[at:stop]
            try:
                value = loads(piece)
                break
            except error:
                if mark < 0:
                    return None
                mark = find(_BETWEEN, mark + 1, end)
        else:  # a row full of what looks like a row's end: parsed whole, not piece by piece
            return None
        if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)):
            return None
        pieces.append(piece)
        values.append(value)
        at = stop + 1
        if at < end and part[stop] != 44:  # a comma between two rows
            return None
    if pieces and at != end + 1:  # a comma after the last row
        return None
    return pieces, values
