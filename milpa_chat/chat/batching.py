"""Approving at scale in chat: one card for an agent turn's requests, and the actions around a decision.

``Batching(assistant)`` plugs into an :class:`~milpa_chat.chat.assistant.Assistant`:

* while one agent turn runs, the approvers' requests it opens (one requester, low risk) hold their cards
  back; when the turn ends, two or more of them become one batch card (a pre-flight table: tool, the
  arguments that will run, digest, risk) with "Approve all N", "Reject all N" and "One by one". A high-risk
  request never joins: it asks on its own card. A single request is shown on its own card as before;
* a tap on the batch card decides each item through the one decision function
  (:class:`~milpa_chat.runtime.batches.BatchDesk`) as the person who tapped (the platform's identity; the
  button carries only the batch's opaque id), runs what was claimed, once each, and edits every copy of
  the batch card with each item's outcome;
* ``/reassign``, ``/ask``, ``/answer`` and ``/comment`` act on one request, named by the reference its card
  shows (:class:`~milpa_chat.runtime.approval_actions.ApprovalActions`).

The routes are in :mod:`milpa_chat.chat.routes.batch`.
"""

from __future__ import annotations

import contextvars
import logging
import secrets
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from milpa_chat.chat.approvals import card_slots
from milpa_chat.chat.inbound import MessageRef
from milpa_chat.renderers.model import Actions, Button, Heading, Message, Note, Paragraph, Table
from milpa_chat.runtime.approval import COLLECTION, ApprovalRefused
from milpa_chat.runtime.approval_actions import ApprovalActions, Assignee
from milpa_chat.runtime.batches import Batch, BatchDesk, ItemOutcome
from milpa_chat.runtime.modes import ModeDesk

if TYPE_CHECKING:
    from milpa_chat.chat.assistant import Assistant
    from milpa_chat.chat.inbound import Inbound
    from milpa_chat.chat.surface import Transport
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.runtime.context import ToolContext

__all__ = ["BATCH_ACTIONS", "COMMANDS", "Batching"]

log = logging.getLogger("milpa_chat.chat")

BATCH_ACTIONS = frozenset({"batch_approve", "batch_reject", "batch_split"})
COMMANDS = frozenset({"reassign", "ask", "answer", "comment"})
NOT_THIS_MESSAGE = "This button does not belong to this message."
STATE_ICONS = {
    "pending": "⏳",
    "approved": "✅",
    "executing": "⚙️",
    "executed": "✅",
    "failed": "❌",
    "rejected": "🚫",
    "cancelled": "🚫",
    "expired": "⌛",
    "effect_uncertain": "⚠️",
}


@dataclass
class _Turn:
    id: str
    principal: str | None
    surface: str
    chat_id: str
    held: int = 0
    cards: list[dict[str, Any]] = field(default_factory=list)


_TURN: contextvars.ContextVar[_Turn | None] = contextvars.ContextVar("milpa_batch_turn", default=None)


class Batching:
    """Batch cards and the approval actions for ``assistant`` (see the module's docstring).

    ``min_items``: fewest requests of one turn shown as a batch. ``pause_expiry``: a request's expiry waits
    while its requester is asked a question. ``fast_min``: the signal refusing a batch to someone whose
    recent approvals came too fast (``0``: off; see :class:`~milpa_chat.runtime.batches.BatchDesk`)."""

    def __init__(
        self,
        assistant: Assistant,
        *,
        min_items: int = 2,
        pause_expiry: bool = False,
        fast_min: int = 5,
        modes: bool = True,
        waive_scopes: tuple[str, ...] = ("approvals:waive",),
    ) -> None:
        self.assistant = assistant
        self.desk = assistant.approvals
        self.batches = BatchDesk(self.desk, fast_min=fast_min)
        self.actions = ApprovalActions(self.desk, pause_expiry=pause_expiry, placer=self._place)
        self.min_items = min_items
        #: Per-conversation approval modes (``/mode``), applied by a step of the registry's pipeline.
        self.modes = ModeDesk(assistant.registry, waive_scopes=waive_scopes).install() if modes else None
        self.desk.install(opener=self._hold, reminder=_no_single_cards)
        assistant.extensions.append(self)
        from milpa_chat.chat.routes import AgentText, ApprovalTaps, BuiltinCommands
        from milpa_chat.chat.routes.batch import ApprovalActionCommands, BatchedTurns, BatchTaps, ModeCommands

        routes = assistant.routes
        for i, r in enumerate(routes):
            if isinstance(r, AgentText):
                routes[i] = BatchedTurns(r, self)
        assistant.add_route(BatchTaps(self), before=ApprovalTaps)
        assistant.add_route(ApprovalActionCommands(self), before=BuiltinCommands)
        if self.modes is not None:
            assistant.add_route(
                ModeCommands(self.modes, assistant.context_for, assistant.outbox.deliver), before=BuiltinCommands
            )

    def knows_command(self, name: str) -> bool:
        mode = name == "mode" and self.modes is not None
        return (name in COMMANDS or mode) and name not in self.assistant.registry

    def knows_action(self, action: str) -> bool:
        return action in BATCH_ACTIONS

    # ------------------------------------------------------------------------------------ turns
    def _hold(self, value: dict[str, Any], ctx: ToolContext) -> None:
        """Opener (after the assistant's): mark the request for the actions; inside a turn, hold back the cards
        of an approvers' request of the turn's requester that is not high-risk."""
        value["actions"] = True
        turn = _TURN.get()
        if (
            turn is None
            or ctx.principal != turn.principal
            or value["kind"] != "verification"
            or value.get("tool") is None
            or value.get("guard")
            or not value.get("route")
            or (value.get("risk") or {}).get("level") == "high"
        ):
            return
        value["held_cards"] = value.get("cards", [])
        value["cards"] = []
        value["batch"] = turn.id
        value["batch_seq"] = turn.held
        turn.held += 1
        for card in value["held_cards"]:
            key = (card["surface"], str(card["chat_id"]), card.get("role"))
            if key not in {(c["surface"], str(c["chat_id"]), c.get("role")) for c in turn.cards}:
                turn.cards.append({**card})

    @asynccontextmanager
    async def turn(self, inbound: Inbound) -> AsyncIterator[None]:
        """While the body runs, the requests the person opens are gathered; then shown as one batch card."""
        ctx = self.assistant.context_for(inbound)
        turn = _Turn(secrets.token_hex(12), ctx.principal, inbound.surface, inbound.chat_id)
        token = _TURN.set(turn)
        try:
            yield
        finally:
            _TURN.reset(token)
            if turn.held:
                await self._close(turn, ctx)

    async def _close(self, turn: _Turn, ctx: ToolContext) -> None:
        recs = await self.desk.store.scan(COLLECTION, where={"batch": turn.id})
        ids = [r.key for r in sorted(recs, key=lambda r: int(r.value.get("batch_seq", 0)))]
        if len(ids) < self.min_items:
            for aid in ids:
                await self._release(aid)
            return
        batch = await self.batches.open(
            ids, ctx, source="turn", cards=[{**c, "message_id": None} for c in turn.cards], batch_id=turn.id
        )
        await self.show(batch)

    async def _release(self, approval_id: str) -> None:
        from milpa_chat.runtime.batches import leave

        change = await self.desk.annotate(approval_id, leave, follow=False)
        await self.assistant.outbox.deliver(change.approval)

    # ------------------------------------------------------------------------------------ cards
    async def show(self, batch: Batch) -> Batch:
        """Send the batch's cards not sent yet, or edit those sent, from the items as they are now."""
        batch = await self.batches.get(batch.id) or batch
        outcomes = await self.batches.outcomes(batch)
        members = {a.id: a for a in await self.batches.members(batch)}
        for i, card in enumerate(batch.data.get("cards", [])):
            transport = self.assistant.transports.get(card["surface"])
            if transport is None:
                continue
            if not card.get("message_id"):  # one sender per copy: whoever marks it first sends it
                mine: list[bool] = []

                def claim(v: dict[str, Any], i: int = i, mine: list[bool] = mine) -> None:
                    mine[:] = [not v["cards"][i].get("sending")]
                    v["cards"] = [{**c, "sending": True} if j == i else c for j, c in enumerate(v["cards"])]

                batch = await self.batches.update(batch.id, claim)
                card = batch.data["cards"][i]
                if not mine[0] and not card.get("message_id"):
                    continue
            message = batch_message(batch, members, outcomes, card.get("role", "approver"))
            try:
                if card.get("message_id"):
                    await transport.edit(MessageRef(card["surface"], str(card["chat_id"]), card["message_id"]), message)
                    continue
                ref = await transport.send(str(card["chat_id"]), message)
            except Exception as exc:  # the items stay pending and durable; the card is tried on the next event
                log.warning("batch %s: its card for %s %s failed: %s", batch.id, card["surface"], card["chat_id"], exc)
                continue

            def record(v: dict[str, Any], i: int = i, sent: str = ref.message_id) -> None:
                v["cards"] = [{**c, "message_id": sent} if j == i else c for j, c in enumerate(v["cards"])]

            batch = await self.batches.update(batch.id, record)
            await self._shown(batch, members, card)
        return batch

    async def _shown(self, batch: Batch, members: Mapping[str, Approval], card: Mapping[str, Any]) -> None:
        trail = self.desk.trail
        if trail is None:
            return
        for a in members.values():
            try:
                await trail.shown(a.id, {**card, "batch": batch.id}, a.state, a.data.get("digest"))
            except Exception:
                log.exception("batch %s: the audit trail could not record a card", batch.id)

    # ------------------------------------------------------------------------------------- taps
    @staticmethod
    def on_its_card(batch: Batch, inbound: Inbound) -> bool:
        if not inbound.message_id:
            return False
        return any(
            c["surface"] == inbound.surface
            and str(c["chat_id"]) == inbound.chat_id
            and str(c.get("message_id")) == inbound.message_id
            and c.get("role") == "approver"
            for c in batch.data.get("cards", [])
        )

    async def on_tap(self, inbound: Inbound, transport: Transport) -> None:
        """Approve all, Reject all, One by one: as the person who tapped, on a copy of this batch's card."""
        action = inbound.action or ""
        batch = await self.batches.get(inbound.ref or "")
        if batch is None:
            await transport.answer(inbound, "This button is not valid (unknown or removed batch).", alert=True)
            return
        if not self.on_its_card(batch, inbound):
            posting = any(not c.get("message_id") for c in batch.data.get("cards", []))
            answer = "This card is still being posted; tap again in a moment." if posting else NOT_THIS_MESSAGE
            await transport.answer(inbound, answer, alert=True)
            return
        ctx = self.assistant.context_for(inbound)
        try:
            if action == "batch_split":
                batch, left = await self.batches.split(batch.id, ctx)
                await transport.answer(inbound, f"Split: {len(left)} request(s), each on its own card.")
                for approval in left:
                    await self.assistant.outbox.deliver(approval)
                await self.show(batch)
                return
            decision = "approve" if action == "batch_approve" else "reject"
            batch, changes, outcomes = await self.batches.decide(
                batch.id, decision, ctx, via=inbound.surface, note=inbound.note
            )
        except ApprovalRefused as exc:
            await transport.answer(inbound, str(exc)[:200], alert=True)
            return
        await transport.answer(inbound, tap_answer(decision, outcomes)[:200], alert=not changes)
        if not changes:
            return
        await self.batches.run(changes, self.assistant.flows.follow)
        await self.show(batch)

    # ------------------------------------------------------------------------------- reassign
    def _place(self, value: dict[str, Any], assignee: Assignee) -> None:
        """Cards for whom a request is reassigned to: a person's direct messages, or the people of a group."""
        transports = self.assistant.transports
        targets: list[tuple[str, str, str]] = []
        if assignee.principal:
            surface, _, rest = assignee.principal.partition(":")
            if surface in transports and rest:
                targets.append((surface, rest.rpartition(":")[2], "approver"))
        elif assignee.scope:
            for sf in transports:
                targets += [
                    (sf, uid, "approver") for uid in self.assistant.identities.people_with(sf, [assignee.scope])
                ]
        have = {(c["surface"], str(c["chat_id"])) for c in value.get("cards", [])}
        new = [t for t in targets if (t[0], t[1]) not in have]
        if value.get("batch"):  # its batch's cards do not show who may decide now: it leaves the batch
            value.pop("batch", None)
            new += [(c["surface"], str(c["chat_id"]), c.get("role", "approver")) for c in value.pop("held_cards", [])]
        value["cards"] = [*value.get("cards", []), *card_slots(new)]


def _no_single_cards(value: dict[str, Any], kind: str) -> None:
    """A reminder or an escalation of a request still in its batch posts no card of its own (its batch card is
    where it is decided)."""
    if value.get("batch"):
        value["cards"] = [c for c in value.get("cards", []) if c.get("message_id")]


def tap_answer(decision: str, outcomes: list[ItemOutcome]) -> str:
    done = [o for o in outcomes if not o.refused]
    refused = [o for o in outcomes if o.refused]
    verb = "Approved" if decision == "approve" else "Rejected"
    if not done:
        why = refused[0].text if refused else "nothing to decide"
        return f"Nothing was decided: {why}"
    text = f"{verb} {len(done)} of {len(outcomes)}."
    if refused:
        text += f" {len(refused)} not: {refused[0].text}"
    return text


def _args_text(a: Approval, limit: int = 120) -> str:
    from milpa_chat.renderers._redact import redacted_plain
    from milpa_chat.renderers._text import json_text

    text = " ".join(json_text(redacted_plain(a.args), None).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def batch_message(
    batch: Batch, members: Mapping[str, Approval], outcomes: list[ItemOutcome], role: str = "approver"
) -> Message:
    """The batch card: its pre-flight table (tool, the arguments that will run, digest, risk, state) and, on an
    approver's copy while it is open, "Approve all N", "Reject all N" and "One by one"."""
    n = len(batch.items)
    by_id = {o.id: o for o in outcomes}
    rows = []
    for i, aid in enumerate(batch.items, 1):
        a = members.get(aid)
        if a is None:
            continue
        o = by_id.get(aid)
        risk = (a.data.get("risk") or {}).get("level") or ("changes data" if a.data.get("mutating") else "reads")
        state = f"{STATE_ICONS.get(a.state, '')} {o.text if o else a.state}".strip()
        if a.data.get("batch") != batch.id and a.state == "pending":
            state = "⏳ on its own card"
        rows.append((f"{i}. {a.label}", _args_text(a), str(a.data.get("digest") or "")[:12], str(risk), state))
    heading = f"{n} requests from {batch.requester}"
    blocks: list[Any] = [
        Heading(heading, "🗂️"),
        Paragraph.of(f"One request each; each runs once, as {batch.requester}, with the arguments shown."),
        Table(("request", "arguments", "digest", "risk", "state"), tuple(rows), title_columns=1),
    ]
    decided = batch.data.get("decisions") or []
    if decided:
        last = decided[-1]
        verb = "approved" if last["decision"] == "approve" else "rejected"
        blocks.append(Note(f"{verb.capitalize()} by {last['name']} from this card: {last['decided']} of {n}."))
    if batch.state == "split":
        blocks.append(Note("Split: each request waiting is on its own card."))
    pending = [a for a in members.values() if a.state == "pending" and a.data.get("batch") == batch.id]
    if role == "approver" and batch.state == "open" and pending:
        blocks.append(
            Actions.row(
                Button(f"✅ Approve all {len(pending)}", "batch_approve", batch.id, "primary"),
                Button(f"❌ Reject all {len(pending)}", "batch_reject", batch.id, "danger"),
                Button("One by one", "batch_split", batch.id),
            )
        )
    elif role != "approver" and batch.state == "open":
        blocks.append(Note("Waiting for an approver — this card shows each request's outcome."))
    return Message(tuple(blocks), heading, "info")
