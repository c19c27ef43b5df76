"""How the host keeps standing grants in the store, and the facts it reads back for the judge.

Three places, all through the store protocol (so memory, SQLite and PostgreSQL alike):

* collection ``grants``: one record per grant, keyed by its id — the signed text (``document``, the
  :meth:`~milpa_chat.grants.StandingGrant.to_json` spelling), where it stands (``state``:
  ``draft``, ``declined``, ``in_force``, ``suspended``, ``superseded``, ``revoked``), who drafted
  and who signed it (the platform identity of an approval's decider), the digest that was signed,
  how often it lent (``uses``), the changes still waiting for a decision (``pending``: approval id
  -> action) and every change made (``history``);
* collection ``grant_receipts``: the measurements that can still speak
  (:meth:`~milpa_chat.grants.ConditionReceipt.to_dict` under ``receipt``, with ``taken``, the
  store time it was taken). The judge reads receipts from the last one back, and only those about the
  call's content by the condition's operation speak: for one content and operation, the latest "no"
  hides every older receipt, and a green hides the older greens of the same instrument and arguments.
  So one record is kept per content, operation and "no" — and per content, operation, instrument and
  arguments for greens (:func:`receipt_key`): a new measurement replaces the one it hides, and the
  judge reads exactly what the whole history would have told it, from a table that stays as small as
  the distinct things measured;
* collection ``grant_watch``: the latest run of each operation with each arguments (:func:`watch_key`),
  the only one a falsifier's sign of life is read from; kept ``watch_retention`` seconds (30 days by
  default), so a watcher silent for longer reads as one that gave no sign of life (the judge refuses).

This module is pure: it turns stored values into :class:`GrantRecord` views and
:class:`~milpa_chat.grants.GrantStanding` facts, faulted wherever the record does not say.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Final

from milpa_chat.command.canonical import Canonical
from milpa_chat.command.effects import EffectProfile
from milpa_chat.command.ids import OperationId
from milpa_chat.grants.calls import NamedCall
from milpa_chat.grants.document import StandingGrant
from milpa_chat.grants.errors import InvalidGrant
from milpa_chat.grants.parts import Condition, Falsifier
from milpa_chat.grants.receipts import ConditionReceipt
from milpa_chat.grants.standing import GrantStanding, GrantState

__all__ = [
    "ACTIONS",
    "COLLECTION",
    "RECEIPTS",
    "STATES",
    "WATCH",
    "GrantOffer",
    "GrantRecord",
    "kept_receipts",
    "receipt_key",
    "standing_of",
    "watch_key",
    "when",
]

COLLECTION: Final = "grants"
RECEIPTS: Final = "grant_receipts"
WATCH: Final = "grant_watch"
#: Where a stored grant can stand. ``draft``: waiting for its signature; ``declined``: never signed.
STATES: Final = ("draft", "declined", "in_force", "suspended", "superseded", "revoked")
#: The changes a person can ask for; each is an approval of its own (subject ``standing:<action>``).
ACTIONS: Final = ("sign", "suspend", "lift", "revoke")
_JUDGED: Final = {
    "in_force": GrantState.IN_FORCE,
    "suspended": GrantState.SUSPENDED,
    "superseded": GrantState.SUPERSEDED,
    "revoked": GrantState.REVOKED,
}


def when(ts: float) -> datetime:
    """A store timestamp as an aware UTC instant."""
    return datetime.fromtimestamp(ts, UTC)


def _key(parts: list[Any]) -> str:
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _identity(operation: str) -> str:
    try:
        return OperationId(operation).canonical
    except (TypeError, ValueError):
        return operation


def receipt_key(receipt: ConditionReceipt) -> str:
    """Where ``receipt`` is kept: one key per content, operation (identity) and "no"; per content,
    operation, instrument and arguments for a green — the receipts a newer one of the same key hides."""
    base: list[Any] = [receipt.content, _identity(receipt.operation)]
    if not receipt.holds:
        return _key([*base, "no"])
    return _key([*base, "yes", receipt.instrument, dict(receipt.arguments)])


def watch_key(operation: str, arguments: Mapping[str, Any]) -> str:
    """Where the latest run of ``operation`` with exactly ``arguments`` is kept."""
    return _key([_identity(operation), dict(arguments)])


def kept_receipts(rows: Sequence[Mapping[str, Any]]) -> list[ConditionReceipt | None]:
    """The kept receipt records, in the order they were taken (``None`` for a row that does not read:
    the judge refuses on it, so it is never dropped)."""

    def taken(row: Mapping[str, Any]) -> float:
        at = row.get("taken")
        return float(at) if isinstance(at, int | float) and not isinstance(at, bool) else 0.0

    return [ConditionReceipt.from_dict(row.get("receipt")) for row in sorted(rows, key=taken)]


@dataclass(frozen=True, slots=True)
class GrantRecord:
    """A stored grant, read-only: ``data`` is the record, ``version`` its store version (compare-and-set)."""

    id: str
    data: dict[str, Any]
    version: int

    @property
    def state(self) -> str:
        return str(self.data.get("state"))

    @property
    def uses(self) -> int:
        return int(self.data.get("uses", 0))

    @property
    def text(self) -> str:
        """The signed text as stored (what a person was shown)."""
        return str(self.data.get("document", ""))

    @property
    def judged(self) -> bool:
        """Whether the judge hears of it: signed once (drafts and declined drafts are no grants yet)."""
        return self.state in _JUDGED

    def document(self) -> StandingGrant:
        """The grant as its text reads (strictly); :class:`InvalidGrant` when it does not."""
        return read_text(self.text)

    def readable(self) -> StandingGrant | None:
        try:
            return self.document()
        except (InvalidGrant, TypeError, ValueError):
            return None

    @property
    def pending(self) -> dict[str, str]:
        """Approval id -> action, for every change still waiting for its decision."""
        return dict(self.data.get("pending") or {})

    @property
    def signer(self) -> str | None:
        signed = self.data.get("signed_by") or {}
        return signed.get("name") or signed.get("principal")

    def summary(self) -> str:
        """One line: id, state, use count (what ``/grants`` and ``milpa-chat grants list`` print)."""
        grant = self.readable()
        ops = ", ".join(Canonical.short(e.operation) for e in grant.operations) if grant else "(unreadable)"
        seats = ", ".join(grant.to) if grant else "?"
        uses = f"{self.uses} use" + ("" if self.uses == 1 else "s")
        return f"{self.id} · {self.state} · {uses} · {ops} for {seats}"


@lru_cache(maxsize=512)
def read_text(text: str) -> StandingGrant:
    """:meth:`StandingGrant.from_json`, remembered by the exact text (a grant is immutable; a text that
    does not read raises every time, since failures are not cached)."""
    return StandingGrant.from_json(text)


def _signature_fault(record: GrantRecord, grant: StandingGrant) -> str | None:
    signed = record.data.get("signed_by") or {}
    if not signed.get("principal"):
        return "no person's signature is recorded"
    if record.data.get("signed_digest") != grant.digest():
        return "the text kept is not the text that was signed (its digest differs)"
    return None


def _seen(watch: Sequence[Mapping[str, Any]], by: NamedCall) -> datetime | None:
    last: datetime | None = None
    for entry in watch:
        run = _Run(str(entry.get("operation", "")), dict(entry.get("arguments") or {}))
        try:
            if not by.matches_exactly(run):
                continue
        except (InvalidGrant, TypeError, ValueError):
            continue
        at = entry.get("at")
        if isinstance(at, int | float) and (last is None or when(at) > last):
            last = when(at)
    return last


@dataclass(frozen=True, slots=True)
class _Run:
    operation: str
    arguments: Mapping[str, Any]


def standing_of(
    record: GrantRecord,
    grant: StandingGrant,
    receipts: Sequence[ConditionReceipt | None],
    watch: Sequence[Mapping[str, Any]],
    instruments: Mapping[str, str],
) -> GrantStanding:
    """The facts of one stored grant, as the judge reads them.

    The signature holds when a person's signature is recorded over exactly the digest of the text
    kept; the record reads (its text was read strictly before this is called); every receipt kept
    is handed in, unreadable ones as ``None`` (the judge refuses on them).
    """
    return GrantStanding(
        _JUDGED[record.state],
        signature_fault=_signature_fault(record, grant),
        record_fault=None,
        receipts=list(receipts),
        stopped_because=record.data.get("stopped_because"),
        falsifier_seen_at=_seen(watch, grant.falsifier.by),
        instruments={k: v for k, v in instruments.items()},
    )


@dataclass(frozen=True, slots=True)
class GrantOffer:
    """What "Always allow…" drafts for one operation: the parts a person cannot pick on a card.

    ``fixed``: the argument names whose values the drafted grant fixes (taken from the call on the
    card). ``ceiling``: the widest effect (default: the operation's declared effect). ``lasts``:
    seconds until the drafted grant expires (``None``: no date).
    """

    conditions: tuple[Condition, ...]
    falsifier: Falsifier
    undo: str
    fixed: tuple[str, ...] = ()
    ceiling: EffectProfile | None = None
    lasts: float | None = 30 * 86400.0
