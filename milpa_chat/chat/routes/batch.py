"""Routes of approving at scale (:mod:`milpa_chat.chat.batching`): taps on a batch card, an agent turn whose
requests are gathered into one, and ``/reassign``, ``/ask``, ``/answer``, ``/comment`` on one request."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

from milpa_chat.chat import cards
from milpa_chat.chat.replies import privately
from milpa_chat.chat.routes.base import command_of
from milpa_chat.runtime.approval import ApprovalRefused

if TYPE_CHECKING:
    from milpa_chat.chat.inbound import Inbound
    from milpa_chat.chat.routes.messages import AgentText
    from milpa_chat.chat.surface import Surface
    from milpa_chat.runtime.approval_actions import ApprovalActions
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.modes import ModeDesk

__all__ = ["ApprovalActionCommands", "BatchTaps", "BatchedTurns", "Batching", "ModeCommands"]


class Batching(Protocol):
    """What these routes need of :class:`milpa_chat.chat.batching.Batching`."""

    assistant: Any
    actions: ApprovalActions

    def knows_action(self, action: str) -> bool: ...

    def knows_command(self, name: str) -> bool: ...

    def turn(self, inbound: Inbound) -> AbstractAsyncContextManager[None]: ...

    async def on_tap(self, inbound: Inbound, transport: Any) -> None: ...


USAGE = {
    "reassign": "{p}reassign <ref> <who>: who is a person's id (telegram:1002, slack:T1:U2) or scope:<scope>",
    "ask": "{p}ask <ref> <question for the requester>",
    "answer": "{p}answer <ref> <your answer>",
    "comment": "{p}comment <ref> <comment>",
}


class BatchTaps:
    """ "Approve all N", "Reject all N", "One by one" on a batch card."""

    def __init__(self, batching: Batching) -> None:
        self.batching = batching

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        return inbound.kind == "action" and self.batching.knows_action(inbound.action or "")

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        await self.batching.on_tap(inbound, surface)
        return True


class BatchedTurns:
    """Free text for the agent, with the approvers' requests of the turn gathered into one batch card."""

    def __init__(self, inner: AgentText, batching: Batching) -> None:
        self.inner = inner
        self.batching = batching

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        return self.inner.check(inbound, surface)

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        async with self.batching.turn(inbound):
            return await self.inner.handle(inbound, surface)


class ApprovalActionCommands:
    """``/reassign <ref> <who>``, ``/ask <ref> <question>``, ``/answer <ref> <answer>``, ``/comment <ref> <text>``:
    as the person who wrote it (the platform's identity), on the request the reference names."""

    def __init__(self, batching: Batching) -> None:
        self.batching = batching

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        command = command_of(inbound, surface)
        return command is not None and command.name in USAGE and self.batching.knows_command(command.name)

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        command = command_of(inbound, surface)
        assert command is not None
        ref, _, rest = command.rest.strip().partition(" ")
        actions = self.batching.actions
        ctx = self.batching.assistant.context_for(inbound)
        p = surface.traits.command_prefix
        if not ref or not rest.strip():
            await privately(surface, inbound, cards.text("Usage: " + USAGE[command.name].format(p=p)))
            return True
        try:
            approval = await actions.find(ref)
            via = inbound.surface
            if command.name == "reassign":
                change = await actions.reassign(approval.id, rest, ctx, via=via)
            elif command.name == "ask":
                change = await actions.ask(approval.id, rest, ctx, via=via)
            elif command.name == "answer":
                change = await actions.answer(approval.id, rest, ctx, via=via)
            else:
                here = any(
                    c["surface"] == inbound.surface and str(c["chat_id"]) == inbound.chat_id
                    for c in approval.data.get("cards", [])
                )
                change = await actions.comment(approval.id, rest, ctx, via=via, on_a_card=here)
        except ApprovalRefused as exc:
            await privately(surface, inbound, cards.text(str(exc), tone="error"))
            return True
        await privately(surface, inbound, cards.text(change.message))
        return True


class ModeCommands:
    """``/mode <mode>``: this person's approval mode in this chat (:class:`~milpa_chat.runtime.modes.ModeDesk`);
    ``/mode`` alone says what is in force."""

    def __init__(self, modes: ModeDesk, context_for: Any, deliver: Any = None) -> None:
        self.modes = modes
        self.context_for = context_for
        #: Sends a loosening's standing-grant signature to the approvers (the assistant's outbox).
        self.deliver = deliver

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        command = command_of(inbound, surface)
        return command is not None and command.name == "mode" and "mode" not in self.modes.registry

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        command = command_of(inbound, surface)
        assert command is not None
        ctx: ToolContext = self.context_for(inbound)
        if not command.rest.strip():
            await privately(surface, inbound, cards.text(describe(await self.modes.current(ctx))))
            return True
        try:
            change = await self.modes.change(ctx, command.rest, via=inbound.surface)
        except ApprovalRefused as exc:
            await privately(surface, inbound, cards.text(str(exc), tone="error"))
            return True
        for approval in change.approvals:
            if self.deliver is not None:
                await self.deliver(approval)
        await privately(surface, inbound, cards.text(change.told))
        return True


def describe(mode: dict[str, Any]) -> str:
    tight, loose = mode.get("tight"), mode.get("loose")
    parts = []
    if tight and tight["kind"] == "writes":
        parts.append("every call with effects asks you to confirm")
    elif tight:
        parts.append(f"a call with effects asks you to confirm when a number in it exceeds {tight['limit']:g}")
    if loose:
        parts.append("read-only tools run without asking for confirmation until a waiver runs out")
    if mode.get("grants"):
        ids = ", ".join(mode["grants"]["ids"])
        parts.append(f"read-only tools run without asking for confirmation while standing grant {ids} is signed")
    return ("Here " + "; ".join(parts) + ".") if parts else "No mode of your own here: the policy decides."
