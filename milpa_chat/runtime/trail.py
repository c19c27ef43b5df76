"""``AuditTrail``: an append-only, hash-chained record in the store of every call and every approval.

Each entry holds its position (``seq``), the time, a kind (``call``, ``requested``, ``shown``,
``decided``, ``started``, ``result``, ...), its subject (an approval id or a tool name), a few fields,
the hash of the entry before it and its own hash (SHA-256 over all of that, canonical JSON). So any
edit of an entry, any deletion and any reordering breaks the chain, and :meth:`AuditTrail.verify`
says where. Entries never hold argument values: arguments are kept as their digest (what ran is
checked against what was shown by comparing digests), and every text is masked by the kit's
redaction.

Appending is safe from any number of workers on one database: an entry is written with
``insert`` at the next position, which exactly one writer gets; a writer that loses reads the
winner's hash and tries the next position. A head record (advisory, compare-and-set) remembers
the last position, so appends start near the end and a truncated tail is detected; it only ever
moves forward, and a writer whose compare-and-set lost reads it again until it is at or past its
own entry, so the head never falls behind under contention (a head that lags makes every later
append walk the chain forward one read per entry). Within one process, appends take turns (one
lock per trail) and start from the last position this process saw, so concurrent calls in a worker
never race each other for a position.

The chain shows tampering by anyone who does not rewrite all of it; to detect even that, keep the
head hash (``milpa-chat audit verify`` prints it) somewhere the store's writers cannot change.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from milpa_chat.runtime.redaction import mask_text

if TYPE_CHECKING:
    from milpa_chat.runtime.approvals import Change
    from milpa_chat.runtime.registry import ToolRegistry
    from milpa_chat.store.base import Record, Store

__all__ = ["AuditTrail", "TrailEntry", "TrailVerdict"]

COLLECTION = "audit_trail"
HEAD = ("audit_trail_head", "head")
GENESIS = "0" * 64
_EVENTS = {"requested": "requested", "confirmed": "decided", "voted": "decided", "approved": "decided",
           "rejected": "decided", "cancelled": "decided", "run_again": "decided", "marked_done": "decided",
           "expired": "expired", "claimed": "started", "retrying": "retrying", "uncertain": "uncertain",
           "finished": "result", "reminded": "reminded", "escalated": "escalated"}


def _key(seq: int) -> str:
    return f"{seq:012d}"


def _hash(body: Mapping[str, Any]) -> str:
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
        return {"seq": self.seq, "at": self.at, "kind": self.kind, "subject": self.subject,
                "fields": self.fields, "prev": self.prev, "hash": self.hash}


@dataclass(frozen=True, slots=True)
class TrailVerdict:
    """``ok`` when every entry is where it should be and unchanged; else ``broken_at`` and why."""

    ok: bool
    checked: int
    head: str
    broken_at: int | None = None
    reason: str = ""

    def __str__(self) -> str:
        if self.ok:
            return f"The audit trail holds: {self.checked} entries, head {self.head}."
        return f"The audit trail is broken at entry {self.broken_at}: {self.reason} ({self.checked} checked)."


class AuditTrail:
    """The trail in ``store``. ``attach(registry)`` records every call and every approval change."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._turn = asyncio.Lock()
        self._last: tuple[int, str] = (0, GENESIS)  # the last position this process wrote or read

    def attach(self, registry: ToolRegistry) -> AuditTrail:
        """Record the calls of ``registry`` and the changes of its approvals from now on."""
        registry.approvals.trail = self

        async def on_call(_name: str, payload: Mapping[str, Any]) -> None:
            event = payload["event"]
            result = getattr(event, "result", None)
            if event.name in ("resolve_verification",):
                return  # a decision: its approval's own entry tells it
            await self.append("call", event.name, {
                "principal": event.ctx.principal, "channel": event.ctx.channel,
                "args_digest": _digest(getattr(event, "args", {}) or {}),
                "ok": bool(result.success) if result is not None else False,
                "code": None if result is None or result.success else result.code,
                "key": event.ctx.idempotency_key,
            })

        registry.dispatcher.subscribe("tool.executed", on_call)
        registry.dispatcher.subscribe("tool.failed", on_call)
        return self

    # ---------------------------------------------------------------- write
    async def append(self, kind: str, subject: str, fields: Mapping[str, Any]) -> TrailEntry:
        """Add an entry at the end of the chain (exactly one writer gets each position)."""
        clean = {k: mask_text(v) if isinstance(v, str) else v for k, v in fields.items()}
        async with self._turn:
            head = await self.store.get(*HEAD)
            seq, prev = self._last
            if head is not None and int(head.value["seq"]) > seq:
                seq, prev = int(head.value["seq"]), str(head.value["hash"])
            while True:
                after = await self.store.get(COLLECTION, _key(seq + 1))
                if after is not None:  # someone appended past what we knew: follow the chain forward
                    seq, prev = seq + 1, str(after.value["hash"])
                    continue
                body = {"seq": seq + 1, "at": self.store.clock(), "kind": kind, "subject": subject,
                        "fields": clean, "prev": prev}
                entry = TrailEntry(**body, hash=_hash(body))  # type: ignore[arg-type]
                if await self.store.insert(COLLECTION, _key(entry.seq), entry.to_dict()) is not None:
                    break
            self._last = (entry.seq, entry.hash)
            await self._advance_head(head, entry)
        return entry

    async def _advance_head(self, head: Record | None, entry: TrailEntry) -> None:
        """Move the head to ``entry`` unless another writer already moved it at or past it."""
        position = {"seq": entry.seq, "hash": entry.hash}
        while True:
            if head is None:
                if await self.store.insert(*HEAD, position) is not None:
                    return
            elif (int(head.value["seq"]) >= entry.seq  # another writer is already at or past it
                  or await self.store.update(*HEAD, position, expected_version=head.version) is not None):
                return
            head = await self.store.get(*HEAD)

    async def record(self, change: Change) -> None:
        """The trail entry for one change of an approval (called by the desk)."""
        kind = _EVENTS.get(change.event)
        if kind is None:
            return
        v = change.approval.data
        fields: dict[str, Any] = {"tool": change.approval.label, "state": change.approval.state,
                                  "args_digest": v.get("digest")}
        if kind == "requested":
            fields.update(requester=v["requester"]["principal"], channel=v["requester"].get("channel"),
                          kind=v["kind"], quorum=change.approval.quorum)
        elif kind == "decided":
            voter = change.approval.votes[-1] if change.event == "voted" and change.approval.votes else {}
            fields.update(by=voter.get("principal") or v.get("rescued_by") or v.get("decided_by"),
                          name=voter.get("name") or v.get("decided_by_name"),
                          via=voter.get("via") or v.get("decided_via"),
                          note=voter.get("note") if voter else v.get("decision_note"), decision=change.event)
        elif kind == "result":
            result = v.get("result") or {}
            fields.update(ok=result.get("success"), code=(result.get("meta") or {}).get("code"),
                          result_digest=_digest(result))
        if kind != "started":
            await self.append(kind, change.approval.id, fields)
        if change.claimed:  # the same write claimed the run: who holds it, with which idempotency key
            await self.append("started", change.approval.id, {
                "tool": change.approval.label, "args_digest": v.get("digest"), "attempt": change.approval.attempt,
                "worker": (v.get("lease") or {}).get("holder"), "key": change.approval.id})

    async def shown(self, approval_id: str, card: Mapping[str, Any], state: str, args_digest: str | None) -> None:
        """A card was put before people: where, as whose copy, in which state, showing which arguments."""
        await self.append("shown", approval_id, {"surface": card.get("surface"), "chat": str(card.get("chat_id")),
                                                 "role": card.get("role"), "state": state, "args_digest": args_digest})

    # ----------------------------------------------------------------- read
    async def entries(self) -> list[TrailEntry]:
        return [_entry(r.value) for r in await self.store.scan(COLLECTION)]

    async def story(self, approval_id: str) -> list[TrailEntry]:
        """Every entry about one approval, in order."""
        return [e for e in await self.entries() if e.subject == approval_id]

    async def verify(self) -> TrailVerdict:
        """Walk the chain from the first entry: positions, links and hashes; the head must be reached."""
        records = await self.store.scan(COLLECTION)
        prev, checked = GENESIS, 0
        for expected, record in enumerate(records, 1):
            problem = _check(record.key, record.value, expected, prev)
            if problem:
                return TrailVerdict(False, checked, prev, expected, problem)
            prev, checked = str(record.value["hash"]), checked + 1
        head = await self.store.get(*HEAD)
        if head is not None and int(head.value["seq"]) > checked:
            return TrailVerdict(False, checked, prev, checked + 1,
                                f"the head says {head.value['seq']} entries were written: entries after "
                                f"{checked} were deleted")
        return TrailVerdict(True, checked, prev)

    def export_lines(self, entries: list[TrailEntry]) -> Iterator[str]:
        """JSON Lines, one entry a line."""
        for entry in entries:
            yield json.dumps(entry.to_dict(), sort_keys=True, ensure_ascii=False)


def _check(key: str, value: Mapping[str, Any], expected: int, prev: str) -> str:
    try:
        body = {k: value[k] for k in ("seq", "at", "kind", "subject", "fields", "prev")}
        seq = int(value["seq"])
    except (KeyError, TypeError, ValueError):
        return "it is not a trail entry (fields missing)"
    if seq != expected or key != _key(expected):
        return f"entry {expected} is missing or out of place (found entry {seq} under key {key}): deleted or reordered"
    if value["prev"] != prev:
        return "it does not follow the entry before it (its link differs): an entry before it was changed or moved"
    if _hash(body) != value.get("hash"):
        return "its content does not match its hash: it was edited"
    return ""


def _entry(v: Mapping[str, Any]) -> TrailEntry:
    return TrailEntry(int(v["seq"]), float(v["at"]), str(v["kind"]), str(v["subject"]), dict(v["fields"]),
                      str(v["prev"]), str(v["hash"]))


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()

