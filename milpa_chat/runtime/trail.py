"""``AuditTrail``: an append-only, hash-chained record in the store of every call and every approval.

Each entry holds its position (``seq``), the time, a kind (``call``, ``requested``, ``shown``,
``decided``, ``started``, ``result``, ...), its subject (an approval id or a tool name), a few fields,
the hash of the entry before it and its own hash (SHA-256 over all of that, canonical JSON). So any
edit of an entry, any deletion and any reordering breaks the chain, and :meth:`AuditTrail.verify`
says where. Entries never hold argument values: arguments are kept as their digest (what ran is
checked against what was shown by comparing digests), and every field is masked by the kit's
redaction at every depth (:func:`~milpa_chat.runtime.redaction.redact`, the audit log's rule, with the
attached registry's ``sensitive_fields``): a secret-named key's value is ``***REDACTED***`` in nested
objects and lists as at the top, and secrets inside every string are masked. Masking is a pure function of
the fields, so the entry's hash is computed over what is stored and the chain verifies as before.

Appending is safe from any number of workers on one database: an entry is written with
``insert`` at the next position, which exactly one writer gets; a writer that loses reads the
winner's hash and tries the next position. A head record (compare-and-set) remembers the last
position, so appends start near the end and a truncated tail is detected; it only ever moves forward.
Within one process, appends take turns (one lock per trail) and start from the last position this
process saw, so concurrent calls in a worker never race each other for a position.

Appends made while this process is writing wait for it and are then written together (a batch of up to 64).
Once the head exists, a batch is one write: its entries, the head moved to the last of them and any checkpoint
due, in one transaction (:meth:`~milpa_chat.store.base.Store.update_with`), so one wait for the disk a batch, and
a crash or a power cut leaves all of the batch or none of it: never entries past the head. When the head moved
or a position was taken meanwhile (another writer of the same chain), that transaction writes nothing and the
batch is written as the first one is: each entry inserted at the next free position (every one but the last
without waiting for the disk: a durable write puts every write before it on disk too,
:mod:`milpa_chat.store.base`), then the head moved with a compare-and-set that a writer whose compare-and-set
lost retries until the head is at or past its own entry (a head that lags makes every later append walk the
chain forward one read per entry). A crash between those entries and that head leaves entries past the head,
which the next append covers.

The chain shows tampering by anyone who does not rewrite all of it. To detect even that, give the
trail an Ed25519 signing key (``key=``, else ``MILPA_AUDIT_KEY_FILE`` / ``MILPA_AUDIT_KEY``): it signs
the entry it just wrote every ``checkpoint_every`` entries and, when ``checkpoint_minutes`` passed since
the last checkpoint, on the next append (one more write, only then). Export the checkpoints
(``milpa-chat audit checkpoint``) somewhere the store's writers cannot change; ``verify`` with them and
the public key proves that nothing before each was rewritten (see :mod:`milpa_chat.runtime.trail_checkpoints`).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from milpa_chat.runtime import trail_lanes
from milpa_chat.runtime.redaction import STANDARD, Redaction
from milpa_chat.runtime.trail_chain import (
    COLLECTION,
    GENESIS,
    HEAD,
    LANE_HEADS,
    LANES,
    Pin,
    TrailEntry,
    TrailVerdict,
    check_pins,
    earliest,
    entry_hash,
    entry_key,
    lane_key,
    lane_name,
    read_stable,
)
from milpa_chat.runtime.trail_checkpoints import CHECKPOINTS, Checkpoint, CheckpointError, stored_pins
from milpa_chat.runtime.trail_fields import call_fields, change_entries
from milpa_chat.runtime.trail_keys import EVERY_ENV, MINUTES_ENV, PublicKey, SigningKey, TrailKeyError, setting
from milpa_chat.runtime.trail_lanes import LANE_ENV

if TYPE_CHECKING:
    from milpa_chat.runtime.approval_hooks import Change
    from milpa_chat.runtime.registry import ToolRegistry
    from milpa_chat.store.base import Record, Store

__all__ = [
    "COLLECTION",
    "LANE_ENV",
    "AuditTrail",
    "Checkpoint",
    "CheckpointError",
    "PublicKey",
    "SigningKey",
    "TrailEntry",
    "TrailKeyError",
    "TrailVerdict",
]

#: The most entries one batch writes (one head read and one head write for all of them).
MAX_BATCH = 64


@dataclass(slots=True)
class _Wanted:
    """An entry an append asked for, and where its caller waits for it."""

    kind: str
    subject: str
    fields: dict[str, Any]
    done: asyncio.Future[TrailEntry]


class AuditTrail:
    """The trail in ``store``. ``attach(registry)`` records every call and every approval change."""

    def __init__(
        self,
        store: Store,
        *,
        key: SigningKey | str | Path | None = None,
        public_key: PublicKey | str | None = None,
        checkpoint_every: int | None = None,
        checkpoint_minutes: float | None = None,
        lane: str | None = None,
    ) -> None:
        """``key``: the signing key of checkpoints (a ``SigningKey`` or a key file's path; without it,
        ``MILPA_AUDIT_KEY_FILE`` or ``MILPA_AUDIT_KEY``, else none: no checkpoints are signed).
        ``public_key``: what ``verify`` checks stored checkpoints with (without it, the signing key's,
        else ``MILPA_AUDIT_PUBLIC_KEY``). A checkpoint is signed every ``checkpoint_every`` entries
        (``MILPA_AUDIT_CHECKPOINT_EVERY``, 1000) and at the first append ``checkpoint_minutes`` after the
        last one (``MILPA_AUDIT_CHECKPOINT_MINUTES``, 60); 0 turns either off.
        ``lane``: append to a chain of this writer's own (``"worker"``: this process; without it,
        ``MILPA_AUDIT_LANE``, else ``""``: the main chain, as one process needs). Workers that each keep a
        lane never wait for one another; ``verify`` checks the main chain and every lane together."""
        self.store = store
        lane = os.environ.get(LANE_ENV, "") if lane is None else lane
        if lane == "worker":
            from milpa_chat.runtime.leases import this_holder

            lane = this_holder()
        self.lane = lane_name(lane) if lane else ""
        self._registered: TrailEntry | None = None  # the main chain's entry that registered this lane
        self.key = SigningKey.from_file(key) if isinstance(key, str | Path) else key or SigningKey.from_env()
        if isinstance(public_key, str):
            public_key = PublicKey.load(public_key)
        self.public_key = public_key or (self.key.public if self.key else PublicKey.from_env())
        self.checkpoint_every = int(setting(checkpoint_every, EVERY_ENV, 1000))
        self.checkpoint_minutes = setting(checkpoint_minutes, MINUTES_ENV, 60)
        self._waiting: list[_Wanted] = []  # appends waiting for the batch under way to finish
        self._writer: asyncio.Task[None] | None = None  # the task writing batches, while there are any
        self._last: tuple[int, str] = (0, GENESIS)  # the last position this process wrote or read
        #: In a lane: its head as this process last wrote it, so the next batch needs no read of it (a lane has
        #: one writer; were there another, its entry at our next position or a newer head makes us read it).
        self._head: Record | None = None
        self._checkpointed_at = 0.0  # when this process last signed a checkpoint
        self._redaction: Callable[[], Redaction] = lambda: STANDARD  # the attached registry's audit rule

    def attach(self, registry: ToolRegistry) -> AuditTrail:
        """Record the calls of ``registry`` and the changes of its approvals from now on."""
        registry.approvals.install(trail=self)
        self._redaction = lambda: registry.audit.redaction  # its sensitive_fields, as they are at each append

        async def on_call(_name: str, payload: Mapping[str, Any]) -> None:
            event = payload["event"]
            if event.name in ("resolve_verification",):
                return  # a decision: its approval's own entry tells it
            await self.append("call", event.name, call_fields(event))

        registry.dispatcher.subscribe("tool.executed", on_call)
        registry.dispatcher.subscribe("tool.failed", on_call)
        return self

    # ---------------------------------------------------------------- write
    async def append(self, kind: str, subject: str, fields: Mapping[str, Any]) -> TrailEntry:
        """Add an entry at the end of the chain (exactly one writer gets each position); returns once it and
        the head naming it (or a later entry) are on disk."""
        (entry,) = await self.append_all([(kind, subject, fields)])
        return entry

    async def append_all(self, items: Sequence[tuple[str, str, Mapping[str, Any]]]) -> list[TrailEntry]:
        """Add several entries, in this order and in one batch when none is being written (see
        :meth:`append`)."""
        loop = asyncio.get_running_loop()
        redaction = self._redaction()
        wanted = [
            _Wanted(kind, subject, redaction.redact(fields), loop.create_future()) for kind, subject, fields in items
        ]
        self._waiting.extend(wanted)
        writer = self._writer
        if writer is None or writer.done() or writer.get_loop().is_closed():
            self._writer = loop.create_task(self._write_batches())
        return [await w.done for w in wanted]

    async def _write_batches(self) -> None:
        """Write what is waiting, a batch at a time, until nothing is; each caller gets its entry or the error."""
        while self._waiting:
            batch, self._waiting = self._waiting[:MAX_BATCH], self._waiting[MAX_BATCH:]
            try:
                entries = await self._write(batch)
            except BaseException as exc:
                for w in batch:
                    if not w.done.done():
                        if isinstance(exc, asyncio.CancelledError):
                            w.done.cancel()
                        else:
                            w.done.set_exception(exc)
                self._head = None  # read it again: the failed batch may have moved it
                if not isinstance(exc, Exception):
                    for w in self._waiting:
                        w.done.cancel()
                    self._waiting = []
                    raise
                continue
            for w, entry in zip(batch, entries, strict=True):
                if not w.done.done():
                    w.done.set_result(entry)

    def _key(self, seq: int) -> str:
        return lane_key(self.lane, seq) if self.lane else entry_key(seq)

    @property
    def _where(self) -> tuple[str, tuple[str, str]]:
        """The collection of this writer's entries and its head record."""
        return (LANES, (LANE_HEADS, self.lane)) if self.lane else (COLLECTION, HEAD)

    async def _register(self) -> None:
        """Start this process's lane, once (see :func:`~milpa_chat.runtime.trail_lanes.register`)."""
        main = AuditTrail(self.store, key=self.key, public_key=self.public_key, lane="")
        self._registered, last = await trail_lanes.register(
            self.store, self.lane, lambda: main.append("lane", self.lane, {})
        )
        if last is not None:
            self._last = last

    async def _write(self, batch: list[_Wanted]) -> list[TrailEntry]:
        if self.lane and self._registered is None:
            await self._register()
        collection, where = self._where
        head = self._head if self.lane and self._head is not None else await self.store.get(*where)
        seq, prev = self._last
        if head is not None and int(head.value["seq"]) > seq:
            seq, prev = int(head.value["seq"]), str(head.value["hash"])
        if head is not None:
            # the batch's entries and the head naming the last, in one transaction
            together = await self._write_with_head(batch, head, seq, prev)
            if together is not None:
                return together
            # another writer moved the head or took a position first: read where the chain is, one entry at a time
            self._head = None
            head = await self.store.get(*where)
            if head is not None and int(head.value["seq"]) > seq:
                seq, prev = int(head.value["seq"]), str(head.value["hash"])
        written: list[TrailEntry] = []
        signed: float | None = None
        for number, wanted in enumerate(batch, 1):
            # the batch's last entry is written durably, and with it every one before it (see the module doc)
            durable = number == len(batch)
            while True:
                entry = self._entry(wanted, seq, prev)
                stored = await self.store.insert(collection, self._key(entry.seq), entry.to_dict(), durable=durable)
                if stored is not None:
                    break
                # someone appended past what we knew: jump to the head when it is further on (other workers
                # are writing), else follow the chain forward one entry
                head = await self.store.get(*where)
                if head is not None and int(head.value["seq"]) > seq + 1:
                    seq, prev = int(head.value["seq"]), str(head.value["hash"])
                    continue
                after = await self.store.get(collection, self._key(seq + 1))
                if after is not None:
                    seq, prev = seq + 1, str(after.value["hash"])
            seq, prev = entry.seq, entry.hash
            self._last = (seq, prev)
            written.append(entry)
            due = self._checkpoint_due(head, entry, signed)
            if due is not None:
                where_signed, checkpoint = due
                await self.store.insert(CHECKPOINTS, where_signed, checkpoint)
                signed = self._checkpointed_at = checkpoint["at"]
        moved = await self._advance_head(head, written[-1], signed)
        self._head = moved if self.lane else None
        return written

    def _entry(self, wanted: _Wanted, seq: int, prev: str) -> TrailEntry:
        """The entry for ``wanted`` after position ``seq`` (whose hash is ``prev``)."""
        body = {
            "seq": seq + 1,
            "at": self.store.clock(),
            "kind": wanted.kind,
            "subject": wanted.subject,
            "fields": wanted.fields,
            "prev": prev,
        }
        return TrailEntry(**body, hash=entry_hash(body))  # type: ignore[arg-type]

    async def _write_with_head(
        self, batch: list[_Wanted], head: Record, seq: int, prev: str
    ) -> list[TrailEntry] | None:
        """Write the batch after position ``seq`` with the head moved to its last entry (and any checkpoint due),
        all in one transaction (:meth:`~milpa_chat.store.base.Store.update_with`): one write and one wait for the
        disk a batch. ``None``, having written nothing, when the head moved or a position was taken meanwhile."""
        collection, where = self._where
        written: list[TrailEntry] = []
        records: list[tuple[str, str, Mapping[str, Any]]] = []
        signed: float | None = None
        for wanted in batch:
            entry = self._entry(wanted, seq, prev)
            seq, prev = entry.seq, entry.hash
            written.append(entry)
            records.append((collection, self._key(entry.seq), entry.to_dict()))
            due = self._checkpoint_due(head, entry, signed)
            if due is not None:
                where_signed, checkpoint = due
                records.append((CHECKPOINTS, where_signed, checkpoint))
                signed = checkpoint["at"]
        position = self._position(head, written[-1], signed)
        moved = await self.store.update_with(*where, position, expected_version=head.version, inserts=records)
        if moved is None:
            return None
        self._last = (seq, prev)
        if signed is not None:
            self._checkpointed_at = signed
        self._head = moved if self.lane else None
        return written

    def _position(self, head: Record | None, entry: TrailEntry, signed: float | None) -> dict[str, Any]:
        """The head's value naming ``entry``: its position, hash and link, and when the last checkpoint was signed
        (``checkpoint_at``), so every worker knows when the next one is due."""
        known = dict(head.value) if head is not None else {}
        at = max(float(known.get("checkpoint_at") or 0), signed or 0)
        return {
            **known,
            "seq": entry.seq,
            "hash": entry.hash,
            "prev": entry.prev,
            **({"checkpoint_at": at} if at else {}),
        }

    async def _advance_head(self, head: Record | None, entry: TrailEntry, signed: float | None) -> Record | None:
        """Move the head to ``entry`` unless another writer already moved it at or past it; the head written
        (``None`` when another writer's was kept)."""
        while True:
            if head is not None and int(head.value["seq"]) >= entry.seq:  # another writer is already at or past it
                return None
            position = self._position(head, entry, signed)
            where = self._where[1]
            if head is None:
                written = await self.store.insert(*where, position)
            else:
                written = await self.store.update(*where, position, expected_version=head.version)
            if written is not None:
                return written
            head = await self.store.get(*where)

    def _checkpoint_due(
        self, head: Record | None, entry: TrailEntry, signed: float | None
    ) -> tuple[str, dict[str, Any]] | None:
        """The checkpoint record signing ``entry`` (its key and value) when one is due, else ``None``; ``signed``:
        when this batch last signed one."""
        if self.key is None:
            return None
        now = self.store.clock()
        last = max(self._checkpointed_at, signed or 0, float((head.value if head else {}).get("checkpoint_at") or 0))
        due = (self.checkpoint_every and entry.seq % self.checkpoint_every == 0) or (
            self.checkpoint_minutes and now - last >= self.checkpoint_minutes * 60
        )
        if not due:
            return None
        if self._registered is not None:  # a lane: its entry, with the main chain's entry that registered it
            reg = self._registered
            checkpoint = Checkpoint.sign(self.key, reg.seq, reg.hash, now, {self.lane: (entry.seq, entry.hash)})
            return f"{entry_key(reg.seq)}/{self._key(entry.seq)}", checkpoint.to_dict()
        checkpoint = Checkpoint.sign(self.key, entry.seq, entry.hash, now)
        return entry_key(entry.seq), checkpoint.to_dict()

    async def checkpoint(self) -> Checkpoint:
        """Sign the last entry now, once the whole trail verifies (a broken trail is never signed)."""
        if self.key is None:
            raise TrailKeyError("no signing key: pass AuditTrail(store, key=FILE) or set MILPA_AUDIT_KEY_FILE")
        verdict = await self.verify()
        if not verdict.ok:
            raise CheckpointError(f"{verdict} Nothing was signed.")
        if not verdict.checked:
            raise CheckpointError("the audit trail is empty: there is nothing to sign yet")
        lanes = {name: (n, digest) for name, n, digest in verdict.lanes if n}
        checkpoint = Checkpoint.sign(self.key, verdict.checked, verdict.head, self.store.clock(), lanes)
        where = entry_key(checkpoint.seq) + (f"/all/{checkpoint.at!r}" if lanes else "")
        if await self.store.insert(CHECKPOINTS, where, checkpoint.to_dict()) is None:
            stored = await self.store.get(CHECKPOINTS, where)
            if stored is not None:
                return Checkpoint.from_dict(stored.value)
        self._checkpointed_at = checkpoint.at
        return checkpoint

    async def checkpoints(self) -> list[Checkpoint]:
        """The checkpoints kept in the store, in order (signed: a store writer can delete them, not forge them)."""
        return [Checkpoint.from_dict(r.value) for r in await self.store.scan(CHECKPOINTS)]

    async def record(self, change: Change) -> None:
        """The trail entries for one change of an approval (called by the desk)."""
        items = change_entries(change)
        if items:
            await self.append_all(items)

    async def shown(self, approval_id: str, card: Mapping[str, Any], state: str, args_digest: str | None) -> None:
        """A card was put before people: where, as whose copy, in which state, showing which arguments."""
        await self.append(
            "shown",
            approval_id,
            {
                "surface": card.get("surface"),
                "chat": str(card.get("chat_id")),
                "role": card.get("role"),
                "state": state,
                "args_digest": args_digest,
            },
        )

    # ----------------------------------------------------------------- read
    async def entries(self) -> list[TrailEntry]:
        return [TrailEntry.from_dict(r.value) for r in await self.store.scan(COLLECTION)]

    async def lane_entries(self) -> list[tuple[str, TrailEntry]]:
        """The entries of every lane, with their lane's name, lane by lane."""
        return await trail_lanes.lane_entries(self.store)

    async def story(self, approval_id: str) -> list[TrailEntry]:
        """Every entry about one approval, in order (of time, when writers keep lanes)."""
        found = [e for e in await self.entries() if e.subject == approval_id]
        laned = [e for _, e in await self.lane_entries() if e.subject == approval_id]
        return sorted(found + laned, key=lambda e: e.at) if laned else found

    async def verify(self, checkpoints: Iterable[Checkpoint] = (), *, expect: Pin | None = None) -> TrailVerdict:
        """Walk the chain from the first entry (positions, links, hashes), check the head names its last
        entry, and check every pin: the exported ``checkpoints`` given (checked against the public key
        by :func:`~milpa_chat.runtime.trail_checkpoints.parse_checkpoints`), the checkpoints stored
        (when a public key is known) and ``expect``, a head copied elsewhere. The first entry proven
        wrong is ``broken_at``."""
        stored, forged = await stored_pins(
            self.store, self.public_key
        )  # before the chain: each pins an entry already written
        heads_before = {r.key: r.value for r in await self.store.scan(LANE_HEADS)}  # before their entries
        lane_records = await self.store.scan(LANES)
        entries, broken, head = await read_stable(self.store)  # after the lanes: it holds every lane's registration
        pins = [p for c in checkpoints for p in c.pins()] + ([expect] if expect is not None else []) + stored
        main_pins = [p for p in pins if not p.lane]
        if broken is not None:  # entries after a break are not the chain: only pins before it count
            limit = broken[0] or 0
            fault = earliest(broken, forged, check_pins(entries, [p for p in main_pins if (p.seq or limit) < limit]))
        else:
            fault = earliest(head, forged, check_pins(entries, main_pins))
        last = entries[-1].hash if entries else GENESIS
        lanes, lane_fault = await trail_lanes.verify_lanes(self.store, entries, heads_before, lane_records, pins)
        if fault is not None:
            return TrailVerdict(False, len(entries), last, fault[0], fault[1], lanes=lanes)
        if lane_fault is not None:
            name, (at, why) = lane_fault
            return TrailVerdict(False, len(entries), last, at, why, lanes=lanes, lane=name)
        return TrailVerdict(True, len(entries), last, pinned=len({(p.lane, p.seq, p.hash) for p in pins}), lanes=lanes)

    def export_lines(self, entries: list[TrailEntry]) -> Iterator[str]:
        """JSON Lines, one entry a line."""
        for entry in entries:
            yield json.dumps(entry.to_dict(), sort_keys=True, ensure_ascii=False)
