"""Caps per principal on what is open at once (pending approvals, standing-grant drafts), kept in the store.

Each principal has one small record (collection ``caps``, key ``<what>:<principal>``) listing what it has
open and until when. Opening one more reads that record and writes it back with a compare-and-set, so the
cap holds exactly under any number of workers; no scan of the approvals is ever needed. Settling removes
the entry (a write that may be lost on a power cut: an entry also frees itself at the time it was open
until, the request's expiry, so a lost removal only holds a slot until then).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from milpa_chat.runtime.approval import ApprovalRefused

if TYPE_CHECKING:
    from milpa_chat.store.base import Record, Store

__all__ = ["COLLECTION", "Cap"]

log = logging.getLogger("milpa_chat.caps")
COLLECTION = "caps"


@dataclass(frozen=True, slots=True)
class Cap:
    """At most ``limit`` open ``what`` per principal (``None``: no cap). ``setting`` names how to raise it."""

    store: Store
    what: str
    limit: int | None
    setting: str
    #: The record this process last wrote per principal: settling tries its compare-and-set on it without
    #: reading first (another worker's write since then only costs the lost race and a read).
    _written: dict[str, Record] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.limit is not None and (
            isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1
        ):
            raise ValueError(f"{self.setting} is a whole number of at least 1 (or None for no cap), got {self.limit!r}")

    async def take(self, principal: str, key: str, until: float) -> None:
        """Count ``key`` as open for ``principal`` until ``until``, or raise :class:`ApprovalRefused`
        (code ``RATE_LIMITED``) when the principal already has ``limit`` open."""
        if self.limit is None:
            return
        cap_key = f"{self.what}:{principal}"
        while True:
            rec = await self.store.get(COLLECTION, cap_key)
            now = self.store.clock()
            held = {k: float(u) for k, u in (rec.value.get("open", {}) if rec else {}).items() if float(u) > now}
            if len(held) >= self.limit:
                raise ApprovalRefused(self._refusal(len(held)), code="RATE_LIMITED")
            held[key] = until
            value = {"open": held}
            ttl = max(held.values()) - now + 60.0
            if rec is None:
                written = await self.store.insert(COLLECTION, cap_key, value, ttl=ttl, durable=False)
            else:
                written = await self.store.update(
                    COLLECTION, cap_key, value, expected_version=rec.version, ttl=ttl, durable=False
                )
            if written is not None:
                self._keep(cap_key, written)
                return

    async def free(self, principal: str, key: str) -> None:
        """``key`` is no longer open. A failure is logged: the entry then frees itself at its time."""
        if self.limit is None:
            return
        cap_key = f"{self.what}:{principal}"
        try:
            rec = self._written.pop(cap_key, None)
            remembered = rec is not None
            while True:
                if rec is None:
                    rec, remembered = await self.store.get(COLLECTION, cap_key), False
                if rec is None or key not in rec.value.get("open", {}):
                    if remembered:  # what this process wrote last may be stale: judge on the stored record
                        rec = None
                        continue
                    return
                held = {k: u for k, u in rec.value["open"].items() if k != key}
                written = await self.store.update(
                    COLLECTION, cap_key, {"open": held}, expected_version=rec.version, durable=False
                )
                if written is not None:
                    self._keep(cap_key, written)
                    return
                rec = None
        except Exception as exc:
            log.warning(
                "%s of %s: a settled one still counts until it would have expired (%s)", self.what, principal, exc
            )

    def _keep(self, cap_key: str, written: Record) -> None:
        self._written.pop(cap_key, None)
        self._written[cap_key] = written
        if len(self._written) > 1024:  # the most recent principals
            del self._written[next(iter(self._written))]

    def _refusal(self, held: int) -> str:
        return (
            f"You have {held} {self.what} open, the most one person may have at once ({self.setting}="
            f"{self.limit}). Wait until some are decided or expire, or cancel some; an operator can raise the "
            f"cap with {self.setting}."
        )
