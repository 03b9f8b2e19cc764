"""The bytes of a log's checkpoint: a header that can be trusted, then the state, compressed.

Why a codec of its own (not ``World.dump()``): ``dump()`` is the canonical, readable state
that the fold reference pins (``tests/projections/test_fold_reference.py``); a checkpoint
is written every so many records by every writer and loaded by every reader, so it must
be small and quick, and a reader must tell a bad one from a good one before using it.

Layout::

    tide-checkpoint <VERSION>\\n
    {"at": ..., "digest": ..., "last": ..., "parts": [[name, length], ...],
     "position": ..., "state": ...}\\n
    zstd(world part + effects part + chain part [+ known part])

* ``position`` is the number of the log's records folded (the next offset to read), ``at``
  the latest record time among them (RFC 3339, "" for none), ``last`` the id of the record
  at ``position - 1``: a reader checks it against its log, so a checkpoint of another log
  (or of a log since rewritten) is refused as foreign.
* ``digest`` is the sha256 of the compressed bytes (checked before decompressing: a
  corrupt or truncated checkpoint is refused), ``state`` the sha256 of the uncompressed
  World, ledger and chain parts: equal states give equal parts, so two folds that reach
  the same position can be compared by it (a segment's end against the checkpoint the
  next segment starts from).
* The parts: the World (each member's state; the cluster in rows,
  :mod:`projections.snapshot_rows`, the others their ``dump()``), the ledger of decisions
  waiting for their outcome (:class:`projections.effects.EffectsState`) and the chain
  checker's state (:meth:`streams.chain_check.ChainChecker.state`, None when the
  checkpoint was written from a fold that did not start at offset 0 with one), and, when
  the writer's fold had it, the recorder's own fold (:class:`projections.known.KnownObjects`:
  the identity of every watched object, for a restarted ``tide record`` / ``tide run``).
  The known part is optional (checkpoints of earlier tides lack it) and outside ``state``:
  replay verifies the World, the ledger and the chain; the known part is kept whole by
  ``digest``, and a recorder without it folds the log from offset 0.

Version 2 compresses with Zstandard (level 1: ~5x quicker than zlib's level 1 and smaller,
``benchmarks/README.md``); version 1, zlib, is what tides before it wrote, and is still
read (the parts are the same, so a state digest is the same in both).

Anything else — another magic, another version, a digest that does not match, parts that
do not decode into a default World — raises :class:`~projections.base.CheckpointError`
naming what is wrong; the reader skips that checkpoint for an earlier one.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass

import orjson
import zstandard

from projections.base import CheckpointError, decode_state, paused_gc
from projections.cluster import ClusterState
from projections.effects import EffectsState
from projections.known import KnownObjects
from projections.snapshot_rows import MapKeys, dump_rows, dumps, load_rows
from projections.world import World
from streams.events import JSON

#: the version of this layout written (and of the World's parts in it)
VERSION = 2
#: the versions read: 1 is zlib-compressed, 2 Zstandard-compressed (the same parts)
READS = (1, 2)
MAGIC = b"tide-checkpoint "
#: the cluster's part: the rows encoding, told apart from a ``dump()`` by its format
_ROWS = 2
#: Zstandard level: 1 compresses a 12,000-pod World ~8x in ~20 ms (zlib's level 1: 90 ms)
LEVEL = 1
#: the parts of a checkpoint, in order; the last is optional
PARTS = ("world", "effects", "chain", "known")


#: the header's version text → the version
_READ = {str(v).encode(): v for v in READS}


def compress(body: bytes) -> bytes:
    """A checkpoint's state, compressed as :data:`VERSION` does (one frame, its size in it)."""
    return zstandard.ZstdCompressor(level=LEVEL).compress(body)


def decompress(packed: bytes, version: int) -> bytes:
    """A checkpoint's state, decompressed as ``version`` wrote it (raises ``zlib.error`` or
    ``zstandard.ZstdError`` on bytes that are not)."""
    if version == 1:
        return zlib.decompress(packed)
    return zstandard.ZstdDecompressor().decompress(packed)


@dataclass
class Snapshot:
    """What a checkpoint holds: the fold of the log's first ``position`` records."""

    position: int
    at: str
    last: str | None
    world: World
    effects: EffectsState
    chain: JSON | None
    #: sha256 of the uncompressed parts (see the module docstring)
    state: str = ""
    #: the recorder's fold of the same records, encoded (:meth:`known_objects`), if kept
    known: bytes | None = None

    def known_objects(self) -> KnownObjects | None:
        """The recorder's fold of the same records, if the checkpoint holds it."""
        return KnownObjects.load(self.known) if self.known is not None else None


@dataclass(frozen=True)
class Header:
    """A checkpoint's header, read without the state."""

    position: int
    at: str
    last: str | None
    digest: str
    state: str
    parts: list[tuple[str, int]]
    body: int  # where the compressed bytes start
    version: int  # the layout's (:data:`READS`)


def _world_bytes(world: World, keys: MapKeys | None = None) -> bytes:
    if world.extra:
        raise ValueError("only a default World is checkpointed by position")
    parts: list[bytes] = []
    # the rows are many small objects: with the collector on, its full collections walk
    # the whole heap (the World too) over and over while they are made
    with paused_gc():
        for member in world.members:
            if member.name == "cluster":
                body = dump_rows(world.cluster, keys)
                parts.append(dumps("cluster", member.position, body, fmt=_ROWS))
            else:
                parts.append(member.dump())
    head = orjson.dumps(
        {
            "config": world.config,
            "position": world.position,
            "members": [[m.name, len(p)] for m, p in zip(world.members, parts, strict=True)],
        },
        option=orjson.OPT_SORT_KEYS,
    )
    return b"".join([head, b"\n", *parts])


def _load_world(data: bytes) -> World:
    end = data.find(b"\n")
    head = _json(data[:end] if end > 0 else b"", "the World's header")
    world = World()
    members = head.get("members")
    names = [m.name for m in world.members]
    if not isinstance(members, list) or [m[0] for m in members if isinstance(m, list)] != names:
        raise CheckpointError(f"the checkpoint's World holds {members!r}, this tide's {names}")
    at = end + 1
    for member, (_, length) in zip(world.members, members, strict=True):
        part = data[at : at + int(length)]
        at += int(length)
        if member.name == "cluster":
            position, body = decode_state("cluster", part, fmt=_ROWS)
            fresh = ClusterState()
            load_rows(fresh, body)
            fresh.position = position
            vars(world.cluster).update(vars(fresh))
        else:
            member.load(part)
    if at != len(data):
        raise CheckpointError("the checkpoint's World has bytes past its members")
    config, folded = head.get("config"), head.get("position")
    if not isinstance(folded, int):
        raise CheckpointError("the checkpoint's World names no position")
    world.config = config if isinstance(config, dict) else None
    world.position = folded
    return world


def _json(data: bytes, what: str) -> JSON:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CheckpointError(f"{what} is not JSON") from exc
    if not isinstance(value, dict):
        raise CheckpointError(f"{what} is not a JSON object")
    return value


def world_part(world: World, *, keys: MapKeys | None = None) -> bytes:
    """The World's part of a checkpoint, encoded now (a writer whose World moves on before
    the rest of the checkpoint is at hand: :meth:`projections.checkpoints.Keeper.hold`);
    ``keys``: the writer's encodings of the maps of its last checkpoint."""
    return _world_bytes(world, keys)


def encode_snapshot(
    snapshot: Snapshot, *, world: bytes | None = None, keys: MapKeys | None = None
) -> bytes:
    """The checkpoint's bytes (sets ``snapshot.state``, the digest of its state);
    ``world``: the World's part already encoded (:func:`world_part`) at the snapshot's
    position, instead of ``snapshot.world``'s (``keys``: as :func:`world_part`)."""
    parts = _state_parts(snapshot, world, keys)
    snapshot.state = _digest(parts)
    if snapshot.known is not None:
        parts.append(("known", snapshot.known))
    body = b"".join(part for _, part in parts)
    packed = compress(body)
    header = {
        "position": snapshot.position,
        "at": snapshot.at,
        "last": snapshot.last,
        "digest": hashlib.sha256(packed).hexdigest(),
        "state": snapshot.state,
        "parts": [[name, len(part)] for name, part in parts],
    }
    return b"".join(
        [
            MAGIC,
            str(VERSION).encode(),
            b"\n",
            orjson.dumps(header, option=orjson.OPT_SORT_KEYS),
            b"\n",
            packed,
        ]
    )


def state_digest(snapshot: Snapshot) -> str:
    """The sha256 of the state ``snapshot`` holds, as :func:`encode_snapshot` computes its
    header's ``state`` (sets ``snapshot.state``), without compressing anything: what a
    fold's end state is compared by with the checkpoint the next fold starts from."""
    snapshot.state = _digest(_state_parts(snapshot, None))
    return snapshot.state


def _state_parts(
    snapshot: Snapshot, world: bytes | None, keys: MapKeys | None = None
) -> list[tuple[str, bytes]]:
    """The parts the state digest covers; ``world``: the World's, encoded already."""
    if world is None and snapshot.world.position != snapshot.position:
        raise ValueError(
            f"a World at {snapshot.world.position} is not the fold of {snapshot.position} records"
        )
    return [
        ("world", world if world is not None else _world_bytes(snapshot.world, keys)),
        ("effects", snapshot.effects.dump()),
        ("chain", orjson.dumps(snapshot.chain, option=orjson.OPT_SORT_KEYS)),
    ]


def _digest(parts: list[tuple[str, bytes]]) -> str:
    hasher = hashlib.sha256()
    for _, part in parts:
        hasher.update(part)
    return hasher.hexdigest()


def read_header(data: bytes) -> Header:
    """The header of a checkpoint (raises CheckpointError: foreign, version, malformed)."""
    if not data.startswith(MAGIC):
        raise CheckpointError("not a tide checkpoint (foreign bytes)")
    first = data.find(b"\n")
    second = data.find(b"\n", first + 1) if first > 0 else -1
    version = data[len(MAGIC) : first] if first > 0 else b""
    if version not in _READ:
        raise CheckpointError(
            f"checkpoint version {version.decode(errors='replace')!r}, this tide reads "
            + " and ".join(str(v) for v in READS)
        )
    if second < 0:
        raise CheckpointError("the checkpoint is truncated (no header)")
    head = _json(data[first + 1 : second], "the checkpoint's header")
    try:
        parts = [(str(name), int(length)) for name, length in head["parts"]]
        return Header(
            position=int(head["position"]),
            at=str(head["at"]),
            last=None if head["last"] is None else str(head["last"]),
            digest=str(head["digest"]),
            state=str(head["state"]),
            parts=parts,
            body=second + 1,
            version=_READ[version],
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"the checkpoint's header is malformed: {exc!r}") from exc


def _body(data: bytes) -> tuple[Header, bytes]:
    header = read_header(data)
    packed = data[header.body :]
    if hashlib.sha256(packed).hexdigest() != header.digest:
        raise CheckpointError("the checkpoint's digest does not match (corrupt or truncated)")
    try:
        body = decompress(packed, header.version)
    except (zlib.error, zstandard.ZstdError) as exc:
        raise CheckpointError(f"the checkpoint does not decompress: {exc}") from exc
    names = tuple(name for name, _ in header.parts)
    if names not in (PARTS[:3], PARTS) or sum(length for _, length in header.parts) != len(body):
        raise CheckpointError("the checkpoint's parts are not those of this tide")
    return header, body


def state_of(data: bytes) -> str:
    """The sha256 of the state a checkpoint's bytes hold (computed, not the header's word
    for it: a forged state shows); raises CheckpointError as :func:`decode_snapshot`."""
    return _state_of(*_body(data))


def _state_of(header: Header, body: bytes) -> str:
    return hashlib.sha256(body[: sum(length for _, length in header.parts[:3])]).hexdigest()


def decode_known(data: bytes) -> KnownObjects | None:
    """Only the recorder's fold of a checkpoint (None if it holds none; the World is not
    decoded: quick)."""
    header, body = _body(data)
    if len(header.parts) < len(PARTS):
        return None
    return KnownObjects.load(body[sum(length for _, length in header.parts[:3]) :])


def decode_effects(data: bytes) -> EffectsState:
    """Only the ledger of a checkpoint (its World is not decoded: quick)."""
    header, body = _body(data)
    (_, world_len), (_, effects_len) = header.parts[:2]
    effects = EffectsState()
    effects.load(body[world_len : world_len + effects_len])
    effects.position = header.position
    return effects


def decode_snapshot(data: bytes) -> Snapshot:
    """The state a checkpoint holds (raises CheckpointError naming what is wrong)."""
    return _decode(*_body(data))


def decode_checked(data: bytes) -> tuple[Snapshot, str]:
    """:func:`decode_snapshot` and :func:`state_of` at once (the bytes are checked and
    inflated once): the state, and the sha256 of the state its bytes hold."""
    header, body = _body(data)
    return _decode(header, body), _state_of(header, body)


def _decode(header: Header, body: bytes) -> Snapshot:
    (_, world_len), (_, effects_len), (_, chain_len) = header.parts[:3]
    with paused_gc():  # a World of objects made at once (as :func:`_world_bytes`)
        world = _load_world(body[:world_len])
    effects = EffectsState()
    effects.load(body[world_len : world_len + effects_len])
    end = world_len + effects_len + chain_len
    chain = orjson.loads(body[world_len + effects_len : end])
    if world.position != header.position or effects.position > header.position:
        raise CheckpointError(
            f"the checkpoint says position {header.position}, its World {world.position}"
        )
    effects.position = header.position
    return Snapshot(
        position=header.position,
        at=header.at,
        last=header.last,
        world=world,
        effects=effects,
        chain=chain if isinstance(chain, dict) else None,
        state=header.state,
        known=body[end:] if len(header.parts) == len(PARTS) else None,
    )
