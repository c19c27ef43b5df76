"""Standing grants in chat: "Always allow…" on an approver's card, ``/grants``, and the grant's own cards.

* **Always allow…** (action ``always``, ref: the approval id) on the approver's copy of a card whose
  operation offers a grant (:meth:`GrantDesk.offer_for`), and on the requester's copy of an agent's call
  that the requester confirms (the kit never "always approves" on its own: the tap drafts a grant). The
  person who taps it must be one who may decide that request; it drafts the grant and opens its signature,
  an approval of its own whose card (sent to the approver chats like every card, edited on every copy)
  shows the whole text in canonical spelling. Signing is the Approve on *that* card — a second, separate
  tap, by another person unless the grant's rule lets the drafter sign.
* ``/grants`` lists the grants with their state and use count, one card each, with Suspend / Lift /
  Revoke for a person who may sign (actions ``grant_suspend``, ``grant_lift``, ``grant_revoke``; ref:
  the grant id). Each change is a decision through the one decision path, with the tapper's platform
  identity (never the button's data).
* Every copy of a grant's card (kept in collection ``grant_cards``) is edited when the grant changes,
  from whichever surface the change came.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from milpa_chat.chat.inbound import MessageRef
from milpa_chat.chat.replies import privately
from milpa_chat.renderers.model import (
    MAX_CALLBACK_BYTES,
    Actions,
    Button,
    ButtonStyle,
    Code,
    Fields,
    Heading,
    Message,
    Note,
    Paragraph,
)
from milpa_chat.runtime.approval import ApprovalRefused

if TYPE_CHECKING:
    from milpa_chat.chat.assistant import Assistant
    from milpa_chat.chat.inbound import Inbound
    from milpa_chat.chat.surface import Transport
    from milpa_chat.grants.desk import GrantDesk
    from milpa_chat.grants.records import GrantRecord
    from milpa_chat.runtime.approval import Approval

__all__ = ["ALWAYS", "CARDS", "GRANT_ACTIONS", "GrantChat", "grant_card", "shown_key"]

log = logging.getLogger("milpa_chat.grants")

ALWAYS = "always"
GRANT_ACTIONS = (ALWAYS, "grant_suspend", "grant_lift", "grant_revoke")
#: Where the copies of each grant's card are kept (key: the grant id).
CARDS = "grant_cards"
_ICONS = {"draft": "📝", "declined": "🚫", "in_force": "✅", "suspended": "⏸", "superseded": "↪", "revoked": "⛔"}
_MOVES: dict[str, tuple[tuple[str, str, ButtonStyle], ...]] = {
    "in_force": (("Suspend", "grant_suspend", "danger"), ("Revoke", "grant_revoke", "danger")),
    "suspended": (("Lift", "grant_lift", "primary"), ("Revoke", "grant_revoke", "danger")),
}
MAX_LISTED = 10


def grant_card(record: GrantRecord, *, buttons: bool = True) -> Message:
    """One grant's card, from its record: state, use count, who signed, why stopped, its whole text."""
    facts: list[tuple[str, str]] = [("State", record.state.replace("_", " ")), ("Uses", str(record.uses))]
    if record.signer:
        facts.append(("Signed by", record.signer))
    drafted = record.data.get("drafted_by") or {}
    facts.append(("Drafted by", str(drafted.get("name") or drafted.get("principal") or "-")))
    if record.data.get("lends_in"):
        facts.append(("Lends only in", str(record.data["lends_in"])))
    if record.data.get("stopped_because"):
        facts.append(("Stopped because", str(record.data["stopped_because"])))
    blocks: list[Any] = [
        Heading(f"Standing grant {record.id}", _ICONS.get(record.state, "")),
        Paragraph.of(record.summary()),
        Fields(tuple(facts)),
        Code(record.text, "json"),
    ]
    moves = _MOVES.get(record.state, ())
    fits = all(len(f"{action}:{record.id}".encode()) <= MAX_CALLBACK_BYTES for _, action, _ in moves)
    if buttons and moves and fits:
        blocks.append(Actions.row(*(Button(label, action, record.id, style) for label, action, style in moves)))
    elif buttons and moves:  # an id too long for a button's data: the shell still manages it
        blocks.append(Note(f"Manage it with: milpa-chat grants suspend|revoke {record.id} --as YOU"))
    if record.pending:
        blocks.append(Note("Waiting for a decision: " + ", ".join(record.pending.values())))
    return Message(tuple(blocks), f"Standing grant {record.id}: {record.state}, {record.uses} uses")


class GrantChat:
    """The chat side of ``desk`` for ``assistant`` (``assistant.grants``)."""

    def __init__(self, assistant: Assistant, desk: GrantDesk) -> None:
        self.assistant = assistant
        self.desk = desk
        desk.watchers.append(self._changed)
        assistant.grants = self  # the assistant routes /grants and the grant buttons here
        assistant.outbox.extras.append(self.always_button)  # "Always allow…" on approvers' copies

    # ------------------------------------------------------------------ what it claims
    def knows_command(self, name: str) -> bool:
        return name == "grants"

    def knows_action(self, action: str) -> bool:
        return action in GRANT_ACTIONS

    def always_button(self, approval: Approval, role: str) -> Button | None:
        """ "Always allow…" on a pending card whose operation offers a grant: on the approver's copy, and on the
        requester's copy of an agent's call the requester confirms (a ``confirm`` opened by
        :class:`~milpa_chat.agents.ApprovalHost`) — the copy of whoever may decide the request."""
        if approval.state != "pending" or self.desk.offer_for(approval) is None:
            return None
        confirms = role == "requester" and approval.kind == "confirm" and bool(approval.data.get("external"))
        if role != "approver" and not confirms:
            return None
        return Button("Always allow…", ALWAYS, approval.id)

    # ------------------------------------------------------------------ /grants
    async def on_command(self, inbound: Inbound, transport: Transport) -> None:
        ctx = self.assistant.context_for(inbound)
        records = [r for r in await self.desk.listing() if r.judged or r.pending]
        if not records:
            await privately(
                transport, inbound, Message((Paragraph.of("No standing grants yet."),), "No standing grants yet.")
            )
            return
        signer = self.desk.may_sign(ctx)
        for record in records[:MAX_LISTED]:
            ref = await transport.send(inbound.chat_id, grant_card(record, buttons=signer))
            await self._keep(record, ref)
        if len(records) > MAX_LISTED:
            await transport.send(
                inbound.chat_id,
                Message(
                    (Note(f"{len(records) - MAX_LISTED} more: milpa-chat grants list shows them all"),), "more grants"
                ),
            )

    # ------------------------------------------------------------------ taps
    async def on_action(self, inbound: Inbound, transport: Transport, action: str, ref: str) -> None:
        ctx = self.assistant.context_for(inbound)
        try:
            if action == ALWAYS:
                record, approval = await self.desk.draft_from(ref, ctx, via=inbound.surface)
                await self.assistant.outbox.deliver(approval)  # the signature's own card, to the approvers
                await transport.answer(
                    inbound,
                    f"Drafted standing grant {record.id}; it lends nothing until a person signs it on its own card.",
                )
                return
            verb = action.removeprefix("grant_")
            record, approval = await self.desk.request(verb, ref, ctx, via=inbound.surface)
        except ApprovalRefused as exc:
            await transport.answer(inbound, str(exc), alert=True)
            return
        if approval.state == "pending":
            await self.assistant.outbox.deliver(approval)
            await transport.answer(inbound, "Asked: another person who may sign decides it on its card.")
        else:
            await transport.answer(inbound, f"Standing grant {record.id} is {record.state.replace('_', ' ')} now.")

    # ------------------------------------------------------------------ every copy
    async def _keep(self, record: GrantRecord, ref: MessageRef) -> None:
        store = self.desk.store
        while True:
            rec = await store.get(CARDS, record.id)
            copies = [] if rec is None else list(rec.value.get("copies", []))
            copies.append({**ref.to_dict(), "shown": shown_key(record)})
            value = {"copies": copies[-50:]}
            if rec is None:
                if await store.insert(CARDS, record.id, value) is not None:
                    return
            elif await store.update(CARDS, record.id, value, expected_version=rec.version) is not None:
                return

    async def _changed(self, record: GrantRecord, action: str) -> None:
        await self._bring_up_to_date(record)

    async def sweep(self) -> int:
        """Edit every copy of every grant's card that shows an older state (a change made in another
        process, e.g. ``milpa-chat grants suspend``); how many copies were edited. Run it beside the
        assistant's sweeper."""
        edited = 0
        for record in await self.desk.listing():
            edited += await self._bring_up_to_date(record)
        return edited

    async def _bring_up_to_date(self, record: GrantRecord) -> int:
        store, key = self.desk.store, shown_key(record)
        rec = await store.get(CARDS, record.id)
        if rec is None:
            return 0
        copies = [dict(c) for c in rec.value.get("copies", [])]
        edited = 0
        for copy in copies:
            transport = self.assistant.transports.get(str(copy["surface"]))
            if transport is None or copy.get("shown") == key:
                continue
            ref = MessageRef(str(copy["surface"]), str(copy["chat_id"]), str(copy["message_id"]))
            try:
                await transport.edit(ref, grant_card(record))
            except Exception as exc:  # one failed copy never keeps the others from being edited
                log.warning(
                    "could not edit the card of grant %s in %s chat %s: %s", record.id, ref.surface, ref.chat_id, exc
                )
                continue
            copy["shown"] = key
            edited += 1
        if edited:  # a lost race only means a copy is edited once more by the next sweep
            await store.update(CARDS, record.id, {"copies": copies}, expected_version=rec.version)
        return edited


def shown_key(record: GrantRecord) -> str:
    """What a grant's card shows, as a key: a copy whose key differs is edited."""
    return f"{record.state}:{record.signer}:{','.join(sorted(record.pending))}"
