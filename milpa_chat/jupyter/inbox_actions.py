"""The notebook inbox's share of approving at scale: a selection decided together (each item through the one
decision function, run once, reported on its own) and reassign, ask, answer, comment — as the inbox's user."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from milpa_chat.runtime.approval_actions import ApprovalActions
from milpa_chat.runtime.batches import BatchDesk, ItemOutcome

if TYPE_CHECKING:
    from milpa_chat.chat import Assistant, ChatUser
    from milpa_chat.runtime.context import ToolContext

__all__ = ["InboxActions"]


class InboxActions:
    """``inbox.actions``: what the inbox's user does besides one decision at a time."""

    def __init__(self, assistant: Assistant, user: ChatUser) -> None:
        self.assistant = assistant
        self.user = user
        self.batches = BatchDesk(assistant.approvals)
        self.actions = ApprovalActions(assistant.approvals)

    def context(self) -> ToolContext:
        return self.assistant.identities.context_for("jupyter", self.user, self.user.id)

    async def decide_all(
        self, approval_ids: Sequence[str], decision: str, reason: str | None = None
    ) -> list[ItemOutcome]:
        """``approve`` or ``reject`` a selection of one requester's requests; each item's outcome after its run."""
        ctx = self.context()
        batch = await self.batches.open(approval_ids, ctx)
        _, changes, outcomes = await self.batches.decide(batch.id, decision, ctx, via="jupyter", note=reason)
        await self.batches.run(changes, self.assistant.flows.follow)
        now = {o.id: o for o in await self.batches.outcomes(batch)}
        return [o if o.refused or o.id not in now else now[o.id] for o in outcomes]

    async def reassign(self, approval_id: str, to: str) -> str:
        return (await self.actions.reassign(approval_id, to, self.context(), via="jupyter")).message

    async def ask(self, approval_id: str, question: str) -> str:
        return (await self.actions.ask(approval_id, question, self.context(), via="jupyter")).message

    async def answer(self, approval_id: str, text: str) -> str:
        return (await self.actions.answer(approval_id, text, self.context(), via="jupyter")).message

    async def comment(self, approval_id: str, text: str) -> str:
        return (await self.actions.comment(approval_id, text, self.context(), via="jupyter")).message
