"""Batches: related pending approvals decided from one card, each item still through the one decision function.

A batch (collection ``approval_batches``) names pending verification approvals of one requester — one
agent turn, or a selection in the notebook inbox or the CLI — and shows them as one pre-flight table
(tool, the arguments that will run, digest, risk). "Approve all N" / "Reject all N" call
:meth:`ApprovalDesk.decide` once per item (``via`` ends in ``/batch``, so the signals count batch
decisions), so every rule still applies per item: approver scopes, four-eyes, quorum (an item may only
collect a vote), a reassignment, the item's revision. A high-risk item never joins a batch (it asks on
its own card, with a typed reason); a batch never creates a standing grant; each item runs once, under
its own lease, and reports its own result. Someone whose recent approvals came faster than their cards
can be read is refused the batch (:func:`batch_refusal`): they decide one by one.

The batch itself is data: its items, where its cards are, who decided it and each item's outcome. Its
id is opaque and is all a button carries; who taps is always the platform's identity.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from milpa_chat.runtime.approval import Approval, ApprovalRefused, state_message
from milpa_chat.runtime.approval_actions import refuse_model
from milpa_chat.runtime.approval_stats import approver_stats

if TYPE_CHECKING:
    from milpa_chat.runtime.approvals import ApprovalDesk, Change
    from milpa_chat.runtime.context import ToolContext

__all__ = ["BATCHES", "MAX_ITEMS", "Batch", "BatchDesk", "ItemOutcome", "batch_refusal", "is_batch_via", "leave"]

log = logging.getLogger("milpa_chat.approvals")

BATCHES = "approval_batches"
#: Most items one batch holds (a larger selection is several batches).
MAX_ITEMS = 50
#: What ``via`` of a decision taken from a batch ends with.
BATCH_VIA = "/batch"


def is_batch_via(via: object) -> bool:
    return isinstance(via, str) and via.endswith(BATCH_VIA)


@dataclass(frozen=True, slots=True)
class Batch:
    id: str
    data: dict[str, Any]
    version: int

    @property
    def items(self) -> list[str]:
        return list(self.data["items"])

    @property
    def state(self) -> str:
        return str(self.data["state"])

    @property
    def requester(self) -> str:
        return str(self.data.get("requester_name") or self.data.get("requester") or "someone")


@dataclass(frozen=True, slots=True)
class ItemOutcome:
    """One item after a batch decision: its state now, and what the person is told about it."""

    id: str
    tool: str
    state: str
    text: str
    refused: bool = False


def batch_refusal(
    approvals: Iterable[Approval], principal: str | None, now: float, *, window: float, min_decisions: int, share: float
) -> str | None:
    """Why ``principal`` may not approve a batch now: over the last ``window`` seconds they decided at least
    ``min_decisions`` requests and at least ``share`` of their approvals came faster than the card can be
    read. ``None``: they may."""
    if not principal:
        return "Only an identified person can decide a batch."
    mine = [s for s in approver_stats(approvals, since=now - window) if s.principal == principal]
    if not mine or mine[0].decisions < min_decisions or not mine[0].approved:
        return None
    fast = mine[0].too_fast / mine[0].approved
    if fast < share:
        return None
    return (
        f"Your last {mine[0].approved} approvals came faster than their cards can be read ({fast:.0%} of them), "
        "so this batch is not approved at once: decide its requests one by one."
    )


class BatchDesk:
    """Batches of ``desk``'s approvals (kept in ``desk.store``).

    ``fast_window``, ``fast_min`` and ``fast_share``: the signal that refuses a batch to someone deciding too
    fast (:func:`batch_refusal`); ``fast_min=0`` turns it off."""

    def __init__(
        self,
        desk: ApprovalDesk,
        *,
        fast_window: float = 3600.0,
        fast_min: int = 5,
        fast_share: float = 0.5,
    ) -> None:
        self.desk = desk
        self.store = desk.store
        self.fast_window = fast_window
        self.fast_min = fast_min
        self.fast_share = fast_share

    # ----------------------------------------------------------------------------------- open
    async def open(
        self,
        items: Sequence[str],
        ctx: ToolContext,
        *,
        source: str = "selection",
        cards: Sequence[dict[str, Any]] = (),
        batch_id: str | None = None,
    ) -> Batch:
        """Store a batch of the pending verification requests ``items`` (one requester's). ``ctx`` is the
        person who forms it (a selection) or the requester (an agent turn)."""
        if ctx.by_model and source != "turn":  # a turn's batch is formed by the kit around the model's requests
            await refuse_model(self.desk, "batch", "batch", ctx)
        ids = list(dict.fromkeys(items))
        if not 1 <= len(ids) <= MAX_ITEMS:
            raise ApprovalRefused(f"A batch holds 1 to {MAX_ITEMS} requests, got {len(ids)}.", code="VALIDATION_ERROR")
        found = [await self.desk.get(i) for i in ids]
        missing = [i for i, a in zip(ids, found, strict=True) if a is None]
        if missing:
            raise ApprovalRefused(f"Unknown request(s): {', '.join(missing)}.", code="NOT_FOUND")
        approvals = [a for a in found if a is not None]
        requesters = {a.requester_principal for a in approvals}
        if len(requesters) != 1:
            raise ApprovalRefused("A batch holds the requests of one requester; these come from several.")
        wrong = [a.id for a in approvals if a.kind != "verification" or a.tool is None]
        if wrong:
            raise ApprovalRefused(
                f"Only approvers' requests that run a tool can be batched, not {', '.join(wrong)}.", code="WRONG_KIND"
            )
        now = self.store.clock()
        bid = batch_id or secrets.token_hex(12)
        value = {
            "items": ids,
            "source": source,
            "state": "open",
            "requester": approvals[0].requester_principal,
            "requester_name": approvals[0].requester_name,
            "created_at": now,
            "formed_by": ctx.principal,
            "cards": [dict(c) for c in cards],
            "decisions": [],
            "outcomes": {},
        }
        expires = max(a.expires_at for a in approvals)
        await self.store.insert(BATCHES, bid, value, ttl=max(60.0, expires - now) + self.desk.retention)
        await self._trail("batched", bid, {"items": len(ids), "source": source, "by": ctx.principal})
        return Batch(bid, value, 1)

    async def get(self, batch_id: object) -> Batch | None:
        if not isinstance(batch_id, str) or not batch_id or len(batch_id) > 64:
            return None
        rec = await self.store.get(BATCHES, batch_id)
        return None if rec is None else Batch(rec.key, rec.value, rec.version)

    async def update(self, batch_id: str, fn: Callable[[dict[str, Any]], None]) -> Batch:
        """Change the batch record (compare-and-set, retried on a lost race)."""
        while True:
            current = await self.get(batch_id)
            if current is None:
                raise ApprovalRefused("This batch is no longer kept.", code="NOT_FOUND")
            value = {**current.data}
            fn(value)
            rec = await self.store.update(BATCHES, batch_id, value, expected_version=current.version)
            if rec is not None:
                return Batch(batch_id, value, rec.version)

    async def members(self, batch: Batch) -> list[Approval]:
        found = [await self.desk.get(i) for i in batch.items]
        return [a for a in found if a is not None]

    # --------------------------------------------------------------------------------- decide
    async def decide(
        self,
        batch_id: str,
        decision: str,
        ctx: ToolContext,
        *,
        via: str,
        note: str | None = None,
    ) -> tuple[Batch, list[Change], list[ItemOutcome]]:
        """Decide every item of the batch as ``ctx`` (``approve`` or ``reject``), each through
        :meth:`ApprovalDesk.decide` with ``follow=False``: returns the batch, the changes (the caller runs
        what they claimed: :meth:`run`) and each item's outcome. Refused as a whole (nothing decided) for a
        model, an unknown batch or someone deciding too fast; otherwise refused per item."""
        if ctx.by_model:
            await refuse_model(self.desk, batch_id, f"{decision} a batch of", ctx)
        if decision not in ("approve", "reject"):
            raise ApprovalRefused(f"A batch is approved or rejected, not {decision!r}.", code="VALIDATION_ERROR")
        batch = await self.get(batch_id)
        if batch is None:
            raise ApprovalRefused("This batch is no longer kept.", code="NOT_FOUND")
        if batch.state == "split":
            raise ApprovalRefused("This batch was split: decide each request on its own card.", code="CONFLICT")
        if decision == "approve" and self.fast_min:
            why = batch_refusal(
                await self.desk.listing(),
                ctx.principal,
                self.store.clock(),
                window=self.fast_window,
                min_decisions=self.fast_min,
                share=self.fast_share,
            )
            if why is not None:
                await self._trail("batch_refused", batch_id, {"by": ctx.principal, "why": why})
                raise ApprovalRefused(why, code="TOO_FAST")
        changes: list[Change] = []
        outcomes: list[ItemOutcome] = []
        for aid in batch.items:
            current = await self.desk.get(aid)
            if current is None:
                outcomes.append(ItemOutcome(aid, aid, "gone", "No longer kept.", refused=True))
                continue
            mark = current.data.get("batch")
            if mark != batch_id and (mark or batch.data.get("source") == "turn"):  # split off, or reassigned
                outcomes.append(
                    ItemOutcome(aid, current.label, current.state, "Left the batch: decide it on its own card.", True)
                )
                continue
            if (current.data.get("risk") or {}).get("level") == "high":
                outcomes.append(
                    ItemOutcome(
                        aid, current.label, current.state, "High risk: decide it on its own card, with a reason.", True
                    )
                )
                continue
            try:
                change = await self.desk.decide(aid, decision, ctx, via=f"{via}{BATCH_VIA}", note=note, follow=False)
            except ApprovalRefused as exc:
                state = exc.approval.state if exc.approval is not None else current.state
                outcomes.append(ItemOutcome(aid, current.label, state, str(exc), refused=True))
                continue
            changes.append(change)
            outcomes.append(ItemOutcome(aid, current.label, change.approval.state, change.message))
        decided = sum(not o.refused for o in outcomes)
        entry = {
            "decision": decision,
            "by": ctx.principal,
            "name": str(ctx.extra.get("user_name") or ctx.principal),
            "at": self.store.clock(),
            "decided": decided,
            "refused": len(outcomes) - decided,
        }

        def record(v: dict[str, Any]) -> None:
            v["decisions"] = [*v.get("decisions", []), entry]
            v["outcomes"] = {**v.get("outcomes", {}), **{o.id: o.text for o in outcomes if not o.refused}}
            if decided:
                v["state"] = "decided"

        batch = await self.update(batch_id, record)
        await self._trail("batch_decided", batch_id, {k: entry[k] for k in ("decision", "by", "decided", "refused")})
        return batch, changes, outcomes

    async def run(self, changes: Sequence[Change], follow: Callable[[Change], Awaitable[None]]) -> None:
        """Run what each change claimed (and deliver what it owes) through ``follow``, one after another; one
        item failing never stops the others."""
        for change in changes:
            try:
                await follow(change)
            except Exception:
                log.exception("approval %s: following a batch decision failed", change.approval.id)

    async def outcomes(self, batch: Batch) -> list[ItemOutcome]:
        """Each item as it is now (its state, its result or why it waits)."""
        out = []
        for a in await self.members(batch):
            text = a.data.get("outcome") or ("Waiting for a decision." if a.state == "pending" else state_message(a))
            if a.state == "pending" and a.votes:
                text = f"{len(a.votes)} of {a.quorum} approvals so far."
            out.append(ItemOutcome(a.id, a.label, a.state, str(text)))
        return out

    # ---------------------------------------------------------------------------------- split
    async def split(self, batch_id: str, ctx: ToolContext) -> tuple[Batch, list[Approval]]:
        """ "One by one": every item still pending leaves the batch and gets its own cards back (returned,
        for the chat layer to deliver). Its requester or an approver of one of its items may split it."""
        if ctx.by_model:
            await refuse_model(self.desk, batch_id, "split a batch of", ctx)
        batch = await self.get(batch_id)
        if batch is None:
            raise ApprovalRefused("This batch is no longer kept.", code="NOT_FOUND")
        members = await self.members(batch)
        allowed = ctx.principal == batch.data.get("requester") or any(
            ctx.has_any_scope(a.data["policy"]["approver_scopes"]) or not a.data["policy"]["approver_scopes"]
            for a in members
        )
        if not ctx.principal or not allowed:
            raise ApprovalRefused("Only the requester or an approver of these requests can split this batch.")
        left: list[Approval] = []
        for a in members:
            if a.state != "pending" or a.data.get("batch") != batch_id:
                continue
            change = await self.desk.annotate(a.id, leave, follow=False)
            if change.event == "left_batch":
                left.append(change.approval)
        batch = await self.update(batch_id, lambda v: v.update(state="split", split_by=ctx.principal))
        await self._trail("batch_split", batch_id, {"by": ctx.principal, "items": len(left)})
        return batch, left

    async def _trail(self, kind: str, subject: str, fields: dict[str, Any]) -> None:
        if self.desk.trail is None:
            return
        try:
            await self.desk.trail.append(kind, subject, fields)
        except Exception:
            log.exception("batch %s: the audit trail could not record %s", subject, kind)


def leave(a: Approval, v: dict[str, Any], now: float) -> tuple[str, bool, str] | None:
    """An item leaves its batch: its own cards back (none sent yet), reported on its own again."""
    if a.state != "pending" or not a.data.get("batch"):
        return None
    v.pop("batch", None)
    v["cards"] = [*v.get("cards", []), *[{**c, "message_id": None, "shown": None} for c in v.pop("held_cards", [])]]
    return "left_batch", False, ""
