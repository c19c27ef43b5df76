"""Approval flows behind the buttons: Confirm / Cancel for the requester, Approve / Reject for approvers.

Rules (DESIGN section 5):

* who acts is the platform identity of whoever tapped (``Inbound.user``), never the button data;
* a decision is a compare-and-set on the stored approval; a lost race is told what happened;
* the tool runs once, with the arguments that were approved, as the requester;
* after any decision every recorded copy of the card, on every surface, is edited.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from milpa_chat.chat import cards
from milpa_chat.chat.approvals import Approval, ApprovalState
from milpa_chat.chat.inbound import Inbound, MessageRef, Transport

if TYPE_CHECKING:
    from milpa_chat.chat.assistant import Assistant
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.result import ToolResult

log = logging.getLogger("milpa_chat.chat")

KIND_ACTIONS = {"confirm": {"confirm", "cancel"}, "verification": {"approve", "reject", "cancel"}}
STATE_ANSWERS = {
    "approved": "Already approved.",
    "executing": "Already approved and running.",
    "executed": "Already done.",
    "failed": "Already approved; running it failed.",
    "rejected": "Already rejected.",
    "cancelled": "Already cancelled.",
    "expired": "This request expired; nothing was done.",
}


class ApprovalFlows:
    def __init__(self, assistant: Assistant) -> None:
        self.a = assistant

    @property
    def book(self) -> Any:
        return self.a.book

    # ------------------------------------------------------------------- open
    async def open_confirmation(
        self, inbound: Inbound, transport: Transport, name: str, result: ToolResult,
        *, resume: Mapping[str, Any] | None = None,
    ) -> None:
        token = result.confirm_token
        assert token is not None
        pending = await self.a.registry.confirmations.peek(token)
        definition = self.a.registry.get(name)
        expires = pending.expires_at.timestamp() if pending else self.a.store.clock() + self.a.approval_ttl
        approval = await self.book.create(
            kind="confirm", tool=name, args=pending.args if pending else {}, requester=inbound.user,
            principal=self.a.context_for(inbound).principal, surface=inbound.surface, chat_id=inbound.chat_id,
            expires_at=expires, mutating=bool(definition and definition.mutating),
            reason="This changes data: confirm to run it, or cancel.", confirm_token=token, resume=resume,
            posts=[(inbound.surface, inbound.chat_id, "requester")],
        )
        await self._post(approval, transport, inbound.chat_id, "requester")

    async def open_verification(
        self, inbound: Inbound, transport: Transport, name: str, result: ToolResult,
        *, resume: Mapping[str, Any] | None = None,
    ) -> None:
        vid = str(result.data["request_id"])
        req = await self.a.registry.verifier.get(vid)
        assert req is not None
        definition = self.a.registry.get(name)
        targets = [(surface, chat) for surface in self.a.transports
                   for chat in self.a.identities.approver_chats(surface)]
        # no approver chat configured anywhere: approvers decide in the requester's chat
        own_role = "approver" if not targets else "requester"
        posts = [(sf, ch, "approver") for sf, ch in targets]
        if (inbound.surface, inbound.chat_id) not in targets:
            posts.append((inbound.surface, inbound.chat_id, own_role))
        approval = await self.book.create(
            kind="verification", tool=name, args=req.value["args"], requester=inbound.user,
            principal=req.value["requested_by"], surface=inbound.surface, chat_id=inbound.chat_id,
            expires_at=req.value["expires_at"], mutating=bool(definition and definition.mutating),
            reason="Needs approval by someone with: "
            f"{', '.join(req.value['policy']['approver_scopes']) or 'any approver'}.",
            verification_id=vid, quorum=req.value["policy"]["quorum"], resume=resume, posts=posts,
        )
        for surface, chat, role in posts:
            target = transport if surface == inbound.surface else self.a.transports[surface]
            await self._post(approval, target, chat, role)

    async def _post(
        self, approval: Approval, transport: Transport, chat_id: str, role: str, *, with_buttons: bool | None = None
    ) -> None:
        """Send a card announced in ``approval.messages`` and record its message id."""
        buttons = _with_buttons(approval, role) if with_buttons is None else with_buttons
        try:
            ref = await transport.send(chat_id, cards.approval_message(approval, with_buttons=buttons))
        except Exception:
            log.exception("could not post approval %s to %s:%s", approval.id, transport.surface, chat_id)
            return
        await self.book.fill_message(approval.id, ref.surface, ref.chat_id, ref.message_id)

    # ------------------------------------------------------------------- taps
    async def on_tap(self, inbound: Inbound, transport: Transport, action: str, ref: str) -> None:
        approval = await self.book.get(ref)
        if approval is None or action not in KIND_ACTIONS[approval.kind]:
            await transport.answer(inbound, "This button is not valid (unknown or removed request).", alert=True)
            return
        if approval.state == "pending" and approval.expires_at <= self.a.store.clock():
            await self.expire(approval)
            await transport.answer(inbound, STATE_ANSWERS["expired"], alert=True)
            return
        if approval.state != "pending":
            await transport.answer(inbound, self._state_answer(approval), alert=True)
            return
        ctx = self.a.context_for(inbound)
        if action == "confirm":
            await self._confirm(inbound, transport, approval, ctx)
        elif action == "cancel":
            await self._cancel(inbound, transport, approval, ctx)
        else:
            await self._decide(inbound, transport, approval, ctx, "grant" if action == "approve" else "reject")

    def _state_answer(self, approval: Approval) -> str:
        who = approval.data.get("decided_by_name")
        base = STATE_ANSWERS.get(approval.state, f"This request is {approval.state}.")
        return f"{base[:-1]} by {who}." if who and approval.state in ("approved", "rejected", "cancelled") else base

    async def _confirm(self, inbound: Inbound, transport: Transport, approval: Approval, ctx: ToolContext) -> None:
        if ctx.principal != approval.requester_principal:
            await transport.answer(inbound, f"Only {approval.requester.display} can confirm this.", alert=True)
            return
        started = await self.move(approval.id, "executing", ["pending"], **self._decider(inbound, ctx))
        if started is None:
            current = await self.book.get(approval.id)
            await transport.answer(inbound, self._state_answer(current or approval), alert=True)
            return
        await transport.answer(inbound, "Confirmed — running it now.")
        await self.refresh(started)
        result = await self.a.call_with_typing(transport, approval.requester_chat, approval.tool,
                                               {"confirm_token": approval.data["confirm_token"]}, ctx)
        await self._finish(started, result)

    async def _cancel(self, inbound: Inbound, transport: Transport, approval: Approval, ctx: ToolContext) -> None:
        if ctx.principal != approval.requester_principal:
            await transport.answer(inbound, f"Only {approval.requester.display} can cancel this.", alert=True)
            return
        done = await self.move(approval.id, "cancelled", ["pending"], **self._decider(inbound, ctx))
        if done is None:
            current = await self.book.get(approval.id)
            await transport.answer(inbound, self._state_answer(current or approval), alert=True)
            return
        if done.kind == "verification":
            from milpa_chat.runtime.verification import VerificationRefused

            try:
                await self.a.registry.verifier.cancel(done.data["verification_id"], ctx)
            except VerificationRefused:
                log.info("verification %s was already decided when cancelled", done.data["verification_id"])
        await transport.answer(inbound, "Cancelled — nothing was done.")
        await self.refresh(done)
        await self.a.resume_agent(done, None)

    async def _decide(
        self, inbound: Inbound, transport: Transport, approval: Approval, ctx: ToolContext, decision: str
    ) -> None:
        vid = approval.data["verification_id"]
        args = {"request_id": vid, "decision": decision}
        if inbound.note:
            args["reason"] = inbound.note
        outcome = await self.a.registry.call("resolve_verification", args, ctx)
        if not outcome.success:
            await transport.answer(inbound, outcome.error or "Not allowed.", alert=True)
            return
        status = outcome.data["status"]
        who = inbound.user.display
        if status == "pending":
            await transport.answer(inbound, outcome.message or "Approval recorded.")
            updated = await self._append_approver(approval.id, who)
            if updated is not None:
                await self.refresh(updated)
            return
        if status == "passed":
            await self._append_approver(approval.id, who)
            approved = await self.move(approval.id, "approved", ["pending"], **self._decider(inbound, ctx),
                                       decision_note=inbound.note)
            await transport.answer(inbound, "Approved — running it now.")
            if approved is not None:
                await self.run_approved(approved)
            return
        rejected = await self.move(approval.id, "rejected", ["pending"], **self._decider(inbound, ctx),
                                   decision_note=inbound.note or "Rejected by an approver.")
        await transport.answer(inbound, "Rejected — nothing was done.")
        if rejected is not None:
            await self.refresh(rejected)
            await self._tell_requester(rejected, f"Your request to run {rejected.tool} was rejected by {who}. "
                                                 "Nothing was done.")
            await self.a.resume_agent(rejected, None)

    async def run_approved(self, approval: Approval) -> None:
        """``approved -> executing``, run as the requester with the approved arguments, then finish."""
        started = await self.move(approval.id, "executing", ["approved"])
        if started is None:
            return
        await self.refresh(started)
        requester = self.a.identities.context_for(
            approval.requester_surface, approval.requester, approval.requester_chat)
        result = await self.a.call_with_typing(
            self.a.transports.get(approval.requester_surface), approval.requester_chat, approval.tool,
            {"verification_id": approval.data["verification_id"]}, requester)
        await self._finish(started, result)

    async def _finish(self, approval: Approval, result: ToolResult) -> None:
        outcome = (result.message or "Done.") if result.success else f"Failed: {result.error}"
        done = await self.move(approval.id, "executed" if result.success else "failed", ["executing"],
                               outcome=outcome[:500])
        await self.refresh(done or approval)
        transport = self.a.transports.get(approval.requester_surface)
        if transport is not None:
            await transport.send(approval.requester_chat, cards.result_message(result))
        await self.a.resume_agent(done or approval, result)

    # ---------------------------------------------------------------- expiry
    async def expire(self, approval: Approval) -> Approval | None:
        done = await self.move(approval.id, "expired", ["pending"], decided_at=approval.expires_at,
                               decided_via="timeout")
        if done is None:
            return None
        if done.kind == "verification":
            await self.a.registry.verifier.expire_overdue()
        await self.refresh(done)
        await self._tell_requester(done, f"Your request to run {done.tool} expired; nothing was done.")
        await self.a.resume_agent(done, None)
        return done

    async def sweep(self) -> int:
        """Expire overdue approvals; finish approved ones whose run a restart interrupted."""
        now = self.a.store.clock()
        count = 0
        for approval in await self.book.pending():
            if approval.expires_at <= now and await self.expire(approval) is not None:
                count += 1
        for approval in await self.book.in_state("approved"):
            await self.run_approved(approval)
            count += 1
        return count

    # --------------------------------------------------------------- helpers
    def _decider(self, inbound: Inbound, ctx: ToolContext) -> dict[str, Any]:
        return {"decided_by": ctx.principal, "decided_by_name": inbound.user.display,
                "decided_at": self.a.store.clock(), "decided_via": inbound.surface}

    async def move(self, approval_id: str, to: ApprovalState, expect: list[str], **changes: Any) -> Approval | None:
        """Compare-and-set ``approval_id`` into ``to`` while it is in ``expect``; ``None`` if it is not."""
        while True:
            current = await self.book.get(approval_id)
            if current is None or current.state not in expect:
                return None
            done = await self.book.transition(current, to, expect=expect, **changes)
            if done is not None:
                return done  # type: ignore[no-any-return]

    async def _append_approver(self, approval_id: str, who: str) -> Approval | None:
        while True:
            current = await self.book.get(approval_id)
            if current is None:
                return None
            names = [*current.data.get("approved_by", []), who]
            done = await self.book.update(current, approved_by=names)
            if done is not None:
                return done  # type: ignore[no-any-return]

    async def refresh(self, approval: Approval) -> None:
        """Edit every recorded copy of the card to the approval's current state.

        A card that was announced but whose send never completed (a crash, a platform error) cannot
        be edited; once the approval is decided, a fresh card with the outcome is sent there instead.
        """
        for entry in approval.data.get("messages", []):
            transport = self.a.transports.get(entry["surface"])
            if transport is None:
                continue
            role = entry.get("role", "approver")
            if not entry.get("message_id"):
                if approval.state != "pending":
                    await self._post(approval, transport, str(entry["chat_id"]), role)
                continue
            message = cards.approval_message(approval, with_buttons=_with_buttons(approval, role))
            try:
                await transport.edit(MessageRef.from_dict(entry), message)
            except Exception:
                log.exception("could not edit approval card %s on %s", approval.id, entry["surface"])

    async def _tell_requester(self, approval: Approval, text: str) -> None:
        transport = self.a.transports.get(approval.requester_surface)
        if transport is not None:
            await transport.send(approval.requester_chat, cards.text(text))


def _with_buttons(approval: Approval, role: str) -> bool:
    """Approvers see Approve/Reject; the requester sees Confirm/Cancel on their own confirm card only."""
    return role == "approver" or approval.kind == "confirm"
