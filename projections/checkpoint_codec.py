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

Version 3 writes the cluster in rows of format 3 (:mod:`projections.rowcache`: maps named
by a digest of their content, so a writer writes again only the tasks that moved since its
last checkpoint); version 2 compresses format 2's rows (:mod:`projections.snapshot_rows`)
with Zstandard (level 1: ~5x quicker than zlib's level 1 and smaller,
``benchmarks/README.md``); version 1, zlib, is what tides before it wrote. All three are
read. A state digest is computed from the parts of the checkpoint's version (the same for
1 and 2): :func:`state_digest` takes the version of the checkpoint it is compared with.

Anything else — another magic, another version, a digest that does not match, parts that
do not decode into a default World — raises :class:`~projections.base.CheckpointError`
naming what is wrong; the reader skips that checkpoint for an earlier one.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass, field

import orjson
import zstandard

from projections.base import CheckpointError, decode_state, paused_gc
from projections.cluster import ClusterState
from projections.effects import EffectsState
from projections.known import KnownObjects
from projections.rowcache import RowCache, cluster_part, seeded
from projections.rowslices import cut
from projections.snapshot_rows import dump_rows, dumps, load_rows
from projections.world import World
from streams.events import JSON

#: the version of this layout written (and of the World's parts in it)
VERSION = 3
#: the versions read: 1 is zlib-compressed, 2 Zstandard-compressed (the same parts), 3
#: Zstandard-compressed with the cluster's rows of format 3
READS = (1, 2, 3)
MAGIC = b"tide-checkpoint "


def _rows_format(version: int) -> int:
    """The format of the cluster's part (the rows, told apart from a ``dump()`` by it)."""
    return 3 if version >= 3 else 2


#: Zstandard level: 1 compresses a 12,000-pod World ~8x in ~20 ms (zlib's level 1: 90 ms)
LEVEL = 1
#: the parts of a checkpoint, in order; the last is optional
PARTS = ("world", "effects", "chain", "known")


#: the header's version text → the version
_READ = {str(v).encode(): v for v in READS}


#: a part of a checkpoint as the pieces it was encoded in, in order (joined, its bytes):
#: they are hashed and compressed one after another, never copied into one (a 12,000-pod
#: World's part is ~17 MB, and each copy of it costs a writer ~10 ms of fresh memory)
Pieces = tuple[bytes, ...]


def compress(body: Pieces) -> bytes:
    """A checkpoint's state, from its pieces in order, compressed as :data:`VERSION` does
    (one frame, its size in it)."""
    stream = zstandard.ZstdCompressor(level=LEVEL).compressobj(
        size=sum(len(piece) for piece in body)
    )
    packed = [stream.compress(piece) for piece in body]
    packed.append(stream.flush())
    return b"".join(packed)


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
    #: the cluster's rows the World was decoded from, as a writer keeps them
    #: (:func:`decode_checked` with ``keep_rows``): a dump of this World encodes again
    #: only the tasks its fold touches from here on (None: not kept)
    rows: RowCache | None = field(default=None, compare=False, repr=False)

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


def _world_pieces(world: World, cache: RowCache | None = None, version: int = VERSION) -> Pieces:
    if world.extra:
        raise ValueError("only a default World is checkpointed by position")
    parts: list[Pieces] = []
    # the rows are many small objects: with the collector on, its full collections walk
    # the whole heap (the World too) over and over while they are made
    with paused_gc():
        for member in world.members:
            if member.name != "cluster":
                parts.append((member.dump(),))
            elif _rows_format(version) == 3:
                parts.append(cluster_part(world.cluster, cache))
            else:
                body = dump_rows(world.cluster)
                parts.append((dumps("cluster", member.position, body, fmt=2),))
    lengths = [sum(len(piece) for piece in pieces) for pieces in parts]
    head = orjson.dumps(
        {
            "config": world.config,
            "position": world.position,
            "members": [[m.name, n] for m, n in zip(world.members, lengths, strict=True)],
        },
        option=orjson.OPT_SORT_KEYS,
    )
    return (head, b"\n", *(piece for pieces in parts for piece in pieces))


def _load_world(data: bytes, version: int, keep: bool = False) -> tuple[World, RowCache | None]:
    """The World of a checkpoint's part, and (``keep``, version 3) a cache of the cluster
    rows it was loaded from (:func:`projections.rowcache.seeded`; None when not kept)."""
    end = data.find(b"\n")
    head = _json(data[:end] if end > 0 else b"", "the World's header")
    world = World()
    members = head.get("members")
    names = [m.name for m in world.members]
    if not isinstance(members, list) or [m[0] for m in members if isinstance(m, list)] != names:
        raise CheckpointError(f"the checkpoint's World holds {members!r}, this tide's {names}")
    at = end + 1
    cache = None
    for member, (_, length) in zip(world.members, members, strict=True):
        part = data[at : at + int(length)]
        at += int(length)
        if member.name == "cluster":
            fmt = _rows_format(version)
            rows = cut(part) if fmt == 3 else None  # row by row: quicker, the rows kept
            position, body = (
                (rows.position, rows.body) if rows else decode_state("cluster", part, fmt=fmt)
            )
            fresh = ClusterState()
            load_rows(fresh, body, fmt)
            fresh.position = position
            vars(world.cluster).update(vars(fresh))
            if keep and rows is not None:
                cache = seeded(world.cluster, rows.pieces, body["tasks"], body["maps"])
        else:
            member.load(part)
    if at != len(data):
        raise CheckpointError("the checkpoint's World has bytes past its members")
    config, folded = head.get("config"), head.get("position")
    if not isinstance(folded, int):
        raise CheckpointError("the checkpoint's World names no position")
    world.config = config if isinstance(config, dict) else None
    world.position = folded
    return world, cache


def _json(data: bytes, what: str) -> JSON:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CheckpointError(f"{what} is not JSON") from exc
    if not isinstance(value, dict):
        raise CheckpointError(f"{what} is not a JSON object")
    return value


def world_part(world: World, *, cache: RowCache | None = None) -> Pieces:
    """The World's part of a checkpoint, encoded now (a writer whose World moves on before
    the rest of the checkpoint is at hand: :meth:`projections.checkpoints.Keeper.hold`);
    ``cache``: the writer's rows of its last checkpoint."""
    return _world_pieces(world, cache)


def encode_snapshot(
    snapshot: Snapshot, *, world: Pieces | None = None, cache: RowCache | None = None
) -> bytes:
    """The checkpoint's bytes (sets ``snapshot.state``, the digest of its state);
    ``world``: the World's part already encoded (:func:`world_part`) at the snapshot's
    position, instead of ``snapshot.world``'s (``cache``: as :func:`world_part`)."""
    parts = _state_parts(snapshot, world, cache)
    snapshot.state = _digest(parts)
    if snapshot.known is not None:
        parts.append(("known", (snapshot.known,)))
    packed = compress(tuple(piece for _, pieces in parts for piece in pieces))
    header = {
        "position": snapshot.position,
        "at": snapshot.at,
        "last": snapshot.last,
        "digest": hashlib.sha256(packed).hexdigest(),
        "state": snapshot.state,
        "parts": [[name, sum(len(piece) for piece in pieces)] for name, pieces in parts],
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


def state_digest(
    snapshot: Snapshot, version: int = VERSION, *, cache: RowCache | None = None
) -> str:
    """The sha256 of the state ``snapshot`` holds, as :func:`encode_snapshot` computes its
    header's ``state`` (sets ``snapshot.state``), without compressing anything: what a
    fold's end state is compared by with the checkpoint the next fold starts from, whose
    ``version`` it is computed for (:data:`READS`: a checkpoint of version 1 or 2 holds
    the cluster in format-2 rows). ``cache``: rows kept from a dump or a decode of this
    World (:attr:`Snapshot.rows`), read for version 3."""
    if version not in READS:
        raise ValueError(f"no checkpoint version {version} (this tide reads {READS})")
    kept = cache if _rows_format(version) == 3 else None
    snapshot.state = _digest(_state_parts(snapshot, None, kept, version))
    return snapshot.state


def _state_parts(
    snapshot: Snapshot, world: Pieces | None, cache: RowCache | None, version: int = VERSION
) -> list[tuple[str, Pieces]]:
    """The parts the state digest covers; ``world``: the World's, encoded already."""
    if world is None and snapshot.world.position != snapshot.position:
        raise ValueError(
            f"a World at {snapshot.world.position} is not the fold of {snapshot.position} records"
        )
    if world is None:
        world = _world_pieces(snapshot.world, cache, version)
    return [
        ("world", world),
        ("effects", (snapshot.effects.dump(),)),
        ("chain", (orjson.dumps(snapshot.chain, option=orjson.OPT_SORT_KEYS),)),
    ]


def _digest(parts: list[tuple[str, Pieces]]) -> str:
    hasher = hashlib.sha256()
    for _, pieces in parts:
        for piece in pieces:
            hasher.update(piece)
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


def decode_checked(data: bytes, *, keep_rows: bool = False) -> tuple[Snapshot, str]:
    """:func:`decode_snapshot` and :func:`state_of` at once (the bytes are checked and
    inflated once): the state, and the sha256 of the state its bytes hold. ``keep_rows``:
    keep the cluster's rows in the snapshot (:attr:`Snapshot.rows`)."""
    header, body = _body(data)
    return _decode(header, body, keep_rows), _state_of(header, body)


def _decode(header: Header, body: bytes, keep_rows: bool = False) -> Snapshot:
    (_, world_len), (_, effects_len), (_, chain_len) = header.parts[:3]
    with paused_gc():  # a World of objects made at once (as :func:`_world_pieces`)
        world, rows = _load_world(body[:world_len], header.version, keep_rows)
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
        rows=rows,
    )
