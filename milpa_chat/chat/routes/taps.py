"""Routes of button taps: forged taps, approval decisions, edits, "Show all", tools' own buttons, stale buttons."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from milpa_chat.chat import cards
from milpa_chat.chat.commands import CommandError, parse_arguments
from milpa_chat.chat.editing import EDIT_ACTIONS
from milpa_chat.chat.flows import ACTIONS
from milpa_chat.chat.replies import privately

if TYPE_CHECKING:
    from milpa_chat.chat.editing import ApprovalEditor
    from milpa_chat.chat.flows import ApprovalFlows
    from milpa_chat.chat.inbound import Inbound
    from milpa_chat.chat.outbox import ApprovalOutbox
    from milpa_chat.chat.surface import Surface
    from milpa_chat.runtime.approvals import ApprovalDesk
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.registry import ToolRegistry
    from milpa_chat.runtime.result import ToolResult

__all__ = ["APPROVAL_ACTIONS", "ApprovalTaps", "EditTaps", "ForgedTaps", "ShowAllTaps", "StaleButtons", "ToolButtons"]

APPROVAL_ACTIONS = frozenset(ACTIONS)
ContextFor = Callable[["Inbound"], "ToolContext"]
RunTool = Callable[["Inbound", "Surface", str, dict[str, Any], "ToolContext"], Awaitable["ToolResult"]]


def _tap(inbound: Inbound) -> bool:
    return inbound.kind == "action"


class ForgedTaps:
    """A tap whose data is not among the buttons of the message it was tapped on: decides and edits nothing."""

    def __init__(self, flows: ApprovalFlows) -> None:
        self.flows = flows

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        return _tap(inbound) and inbound.offered is False

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        await self.flows.refuse_forged(inbound, surface)
        return True


class ApprovalTaps:
    """Confirm, Cancel, Approve, Reject, Run again, Mark as done: the one decision function. A high-risk
    Approve without a reason asks for one first, where the surface can ask."""

    def __init__(self, flows: ApprovalFlows, editor: ApprovalEditor, context_for: ContextFor) -> None:
        self.flows = flows
        self.editor = editor
        self.context_for = context_for

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        return _tap(inbound) and inbound.action in APPROVAL_ACTIONS

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        action, ref = inbound.action or "", inbound.ref or ""
        ctx = None
        if action == "approve" and not inbound.note:
            ctx = self.context_for(inbound)  # (the decision is made with it too: one context for the tap)
            needs = await self.editor.wants_reason(ref, ctx, surface)
            if needs is not None:
                await self.editor.ask_reason(inbound, surface, needs)
                return True
        await self.flows.on_tap(inbound, surface, action, ref, ctx=ctx)
        return True


class EditTaps:
    """ "✏️ Edit" and its field choices: a form or reply prompts (:class:`~milpa_chat.chat.editing.ApprovalEditor`)."""

    def __init__(self, editor: ApprovalEditor) -> None:
        self.editor = editor

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        return _tap(inbound) and inbound.action in EDIT_ACTIONS

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        await self.editor.on_tap(inbound, surface, inbound.action or "", inbound.ref or "")
        return True


class ShowAllTaps:
    """ "📄 Show all": every argument of the card tapped, to the person who tapped (Slack: only them; Telegram:
    in the chat that already shows the card). Only from a copy of that card, or to its requester or an
    approver: the button's data names the request, the platform says who taps and where."""

    def __init__(self, desk: ApprovalDesk, outbox: ApprovalOutbox, context_for: ContextFor) -> None:
        self.desk = desk
        self.outbox = outbox
        self.context_for = context_for

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        return _tap(inbound) and inbound.action == cards.SHOW_ALL

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        ref = inbound.ref or ""
        approval = await self.desk.get(cards.parse_ref(ref)[0]) if ref else None
        if approval is None:
            await surface.answer(inbound, "This request is no longer kept.", alert=True)
            return True
        ctx = self.context_for(inbound)
        approver_scopes = set(approval.data.get("policy", {}).get("approver_scopes", ()))
        on_its_card = bool(inbound.message_id) and self.outbox.knows(approval, inbound)
        if not (on_its_card or ctx.principal == approval.requester_principal or approver_scopes & set(ctx.scopes)):
            await surface.answer(inbound, "This button is not valid any more.", alert=True)
            return True
        await surface.answer(inbound, "Every argument, below.")
        await privately(surface, inbound, cards.all_arguments(approval))
        return True


class ToolButtons:
    """A button a tool's own result carries (its action is the tool's name, its data the arguments)."""

    def __init__(self, registry: ToolRegistry, run_tool: RunTool, context_for: ContextFor) -> None:
        self.registry = registry
        self.run_tool = run_tool
        self.context_for = context_for

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        return _tap(inbound) and (inbound.action or "") in self.registry

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        action = inbound.action or ""
        await surface.answer(inbound, "Working on it…")
        definition = self.registry.get(action)
        assert definition is not None
        try:
            args = parse_arguments(inbound.ref or "", definition.input_schema)
        except CommandError as exc:
            await privately(surface, inbound, cards.text(f"{action}: {exc}", tone="error"))
            return True
        await self.run_tool(inbound, surface, action, args, self.context_for(inbound))
        return True


class StaleButtons:
    """Any other tap: a button of an older version of the assistant, or of something since removed."""

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        return _tap(inbound)

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        await surface.answer(inbound, "This button is not valid any more.", alert=True)
        return True
