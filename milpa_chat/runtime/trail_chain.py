"""The audit trail's chain: entries, their hashes, and the checks that find where a chain was tampered with.

Three checks, each answering with the first entry it proves wrong:

- the walk: positions, links and hashes from the first entry on (an edit, a deletion in the middle, a
  reordering);
- the head: the record of the last position and hash written, compared with the last entry (a truncated
  end, with or without the head; a last entry edited and re-hashed; entries past the head);
- the pins: hashes someone holds outside the store (signed checkpoints, a copied head), compared with the
  entries at their positions (a whole chain rewritten and re-hashed).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from milpa_chat.store.base import Record, Store

__all__ = [
    "COLLECTION",
    "GENESIS",
    "HEAD",
    "LANES",
    "LANE_HEADS",
    "Break",
    "Pin",
    "TrailEntry",
    "TrailVerdict",
    "check_chain",
    "check_head",
    "check_pins",
    "earliest",
    "entry_hash",
    "entry_key",
    "lane_key",
    "lane_name",
    "read_stable",
]

COLLECTION = "audit_trail"
HEAD = ("audit_trail_head", "head")
GENESIS = "0" * 64
#: The entries of the lanes (key ``LANE/SEQ``) and their heads (key ``LANE``): a chain per writing process.
LANES = "audit_trail_lanes"
LANE_HEADS = "audit_trail_lane_heads"
_LANE_NAME = re.compile(r"[A-Za-z0-9._:@-]{1,120}")

#: The first entry a check proves wrong (``None``: it cannot say which), and why.
Break = tuple[int | None, str]


def entry_key(seq: int) -> str:
    return f"{seq:012d}"


def lane_name(name: str) -> str:
    """``name`` when it can name a lane (letters, digits and ``. _ : @ -``, at most 120), else a clear error."""
    if not _LANE_NAME.fullmatch(name):
        raise ValueError(
            f"audit trail lane {name!r}: a lane name is 1-120 letters, digits and . _ : @ - "
            "(for example the worker's name), or 'worker' for this process"
        )
    return name


def lane_key(lane: str, seq: int) -> str:
    return f"{lane}/{entry_key(seq)}"


def entry_hash(body: Mapping[str, Any]) -> str:
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class TrailEntry:
    seq: int
    at: float
    kind: str
    subject: str
    fields: dict[str, Any]
    prev: str
    hash: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "at": self.at,
            "kind": self.kind,
            "subject": self.subject,
            "fields": self.fields,
            "prev": self.prev,
            "hash": self.hash,
        }

    @classmethod
    def from_dict(cls, v: Mapping[str, Any]) -> TrailEntry:
        return cls(
            int(v["seq"]),
            float(v["at"]),
            str(v["kind"]),
            str(v["subject"]),
            dict(v["fields"]),
            str(v["prev"]),
            str(v["hash"]),
        )


@dataclass(frozen=True, slots=True)
class TrailVerdict:
    """``ok`` when every entry is where it should be and unchanged; else ``broken_at`` and why.

    ``head`` is the hash of the last entry checked (``checked`` entries); ``pinned`` counts the signed
    checkpoints and expected heads the chain matched."""

    ok: bool
    checked: int
    head: str
    broken_at: int | None = None
    reason: str = ""
    pinned: int = 0
    #: Each lane checked (name, entries, hash of its last entry), when writers keep lanes.
    lanes: tuple[tuple[str, int, str], ...] = ()
    #: The lane ``broken_at`` is in (``""``: the main chain).
    lane: str = ""

    def __str__(self) -> str:
        lanes = "".join(f"\n  lane {name}: {n} entries, head {n}:{digest}" for name, n, digest in self.lanes)
        if self.ok:
            pins = f"; {self.pinned} pinned hash(es) match (signed checkpoints, expected head)" if self.pinned else ""
            return f"The audit trail holds: {self.checked} entries, head {self.checked}:{self.head}{pins}.{lanes}"
        where = f"at entry {self.broken_at}" if self.broken_at is not None else "somewhere"
        if self.lane:
            where += f" of lane {self.lane}"
        return f"The audit trail is broken {where}: {self.reason} ({self.checked} checked).{lanes}"


@dataclass(frozen=True, slots=True)
class Pin:
    """A hash held outside the store: entry ``seq`` (``None``: some entry) must have ``hash``."""

    seq: int | None
    hash: str
    what: str  # "the checkpoint signed 2026-12-05 22:31 UTC", "the expected head"
    lane: str = ""  # the lane whose entry it pins ("": the main chain)


def _check(key: str, value: Mapping[str, Any], expected: int, prev: str, keyed: Callable[[int], str]) -> str:
    try:
        body = {k: value[k] for k in ("seq", "at", "kind", "subject", "fields", "prev")}
        seq = int(value["seq"])
    except (KeyError, TypeError, ValueError):
        return "it is not a trail entry (fields missing)"
    if seq != expected or key != keyed(expected):
        return f"entry {expected} is missing or out of place (found entry {seq} under key {key}): deleted or reordered"
    if value["prev"] != prev:
        return "it does not follow the entry before it (its link differs): an entry before it was changed or moved"
    if entry_hash(body) != value.get("hash"):
        return "its content does not match its hash: it was edited"
    return ""


def check_chain(
    records: Sequence[Record], genesis: str = GENESIS, keyed: Callable[[int], str] = entry_key
) -> tuple[list[TrailEntry], Break | None]:
    """Walk the chain from the first entry (which links to ``genesis``; entry N is stored under ``keyed(N)``):
    the entries that hold, and the first break."""
    entries: list[TrailEntry] = []
    prev = genesis
    for expected, record in enumerate(records, 1):
        problem = _check(record.key, record.value, expected, prev, keyed)
        if problem:
            return entries, (expected, problem)
        entries.append(TrailEntry.from_dict(record.value))
        prev = entries[-1].hash
    return entries, None


def check_head(
    entries: Sequence[TrailEntry], head: Mapping[str, Any] | None, moved_to: int | None = None
) -> Break | None:
    """The head must name the last entry: its position, its hash and (when recorded) its link.

    Read the head before the entries: an entry is written before the head moves to it, so a head past
    the last entry read is never a writer at work. ``moved_to``: the head's position read again after
    the entries; entries past the first head are fine when the head has reached them since."""
    last = len(entries)
    if head is None:
        if not entries or (moved_to is not None and moved_to >= last):  # the first append made it since
            return None
        return last + 1, (
            f"the head record is missing while {last} entries exist: it was deleted, and entries "
            f"after {last} may have been deleted with it"
        )
    try:
        seq, digest, link = int(head["seq"]), str(head["hash"]), head.get("prev")
    except (KeyError, TypeError, ValueError):
        return last + 1, "the head record is not a head (seq and hash missing): it was overwritten"
    if seq > last:
        return last + 1, (
            f"the head says {seq} entries were written, the chain ends at {last}: entries {last + 1}-{seq} were deleted"
        )
    named = entries[seq - 1] if seq > 0 else None
    if named is not None and named.hash != digest:
        if link is not None and link != named.prev:
            return seq + 1, (
                f"the head (seq {seq}) does not describe entry {seq} (another hash and link): it was "
                f"moved back, and the entries after {seq} were deleted or rewritten"
            )
        if link is None:
            return seq, (
                f"entry {seq}'s hash differs from the head's: entry {seq} was rewritten, or entries after "
                "it were deleted and the head moved back"
            )
        return seq, f"entry {seq} was changed and its hash recomputed: the head recorded another hash for it"
    if seq < last and (moved_to is None or moved_to < last):
        return seq + 1, (
            f"entries {seq + 1}-{last} are past the head (seq {seq}): added without moving the head, "
            "by hand or by a writer stopped between its two writes (the next append moves the head)"
        )
    return None


def check_pins(entries: Sequence[TrailEntry], pins: Sequence[Pin]) -> Break | None:
    """Every pinned entry must still have its pinned hash; the first that does not, and since where."""
    last, since = len(entries), 1
    for pin in sorted((p for p in pins if p.seq is not None), key=lambda p: p.seq or 0):
        seq = pin.seq or 0
        if seq > last:
            return last + 1, (
                f"{pin.what} pins entry {seq}, the chain ends at {last}: entries {last + 1}-{seq} were deleted"
            )
        if seq < 1 or entries[seq - 1].hash != pin.hash:
            return seq, (
                f"entry {seq} is not the one {pin.what} pins: an entry among {since}-{seq} was rewritten "
                "and the chain re-hashed after it"
            )
        since = seq + 1
    hashes = {e.hash for e in entries}
    for pin in pins:
        if pin.seq is None and pin.hash not in hashes:
            return None, (
                f"no entry has the hash {pin.what} pins ({pin.hash[:16]}...): the entry it pinned was "
                "rewritten or deleted; give SEQ:HASH to say which"
            )
    return None


def earliest(*breaks: Break | None) -> Break | None:
    """The break at the smallest position (one that cannot say where comes last)."""
    found = [b for b in breaks if b is not None]
    return min(found, key=lambda b: (b[0] is None, b[0] or 0)) if found else None


async def read_stable(store: Store) -> tuple[list[TrailEntry], Break | None, Break | None]:
    """The chain, its first break and the head's problem. The head is read before the entries (see
    :func:`check_head`) and again after them; entries past the first head are fine once the head has
    reached them, which a writer between its entry and its head write does a moment later: the head
    is read again a few times before they are reported. (The main chain: ``store``'s ``audit_trail``.)"""
    before = await store.get(*HEAD)
    entries, broken = check_chain(await store.scan(COLLECTION))
    if broken is not None:
        return entries, broken, None
    for attempt in range(4):
        after = await store.get(*HEAD)
        try:
            moved_to = int(after.value["seq"]) if after is not None else None
        except (KeyError, TypeError, ValueError):
            moved_to = None
        problem = check_head(entries, before.value if before else None, moved_to)
        if problem is None or attempt == 3:
            return entries, None, problem
        await asyncio.sleep(0.05 * 2**attempt)
    raise AssertionError("unreachable")
