"""Example tools: notes (list, search, read, delete) and payments that need a manager's approval.

They ship with the package, so the playground (``milpa-chat playground``), the fleet workers and the
runnable assistants in the repository's ``bots/`` folder serve them without a checkout.

Notes and payments live in the assistant's store (collections ``notes`` and ``payments``), so they
survive restarts like the approvals do. A fresh store is seeded with a few notes.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from pydantic import Field

from milpa_chat import Param, ToolContext, ToolResult, VerifyPolicy, tool
from milpa_chat.errors import ToolError
from milpa_chat.runtime import ErrorCode
from milpa_chat.store import Store

__all__ = ["PAYMENT_POLICY", "SAMPLE_NOTES", "ExampleTools", "PlaygroundTools"]

SAMPLE_NOTES = (
    "Buy milk and eggs",
    "Call the plumber about the kitchen sink",
    "Quarterly report due on Friday",
    "Book train tickets to Lyon",
    "Renew the office internet contract",
    "Water the plants on the balcony",
    "Ask Maria about the vendor invoice",
    "Pick up the dry cleaning",
    "Team lunch on Thursday at noon",
    "Back up the laptop",
    "Send the signed lease to the landlord",
    "Check the car tyres before the trip",
)
PAGE_SIZE = 5
#: Who approves a payment: a manager, never the requester; undecided, it expires after an hour.
PAYMENT_POLICY = VerifyPolicy(approver_scopes=("payments:approve",), four_eyes=True, expires_in=3600)


class ExampleTools:
    """Tools over a store. ``slow_seconds`` makes ``slow_report`` take that long (to watch "typing…")."""

    def __init__(self, store: Store, *, slow_seconds: float = 6.0) -> None:
        self.store = store
        self.slow_seconds = slow_seconds
        self._seeded = False

    async def seed(self) -> None:
        """Add the sample notes to a store that never had any (deleting every note does not re-seed)."""
        if self._seeded:
            return
        if await self.store.insert("notes_meta", "seeded", {"count": len(SAMPLE_NOTES)}) is not None:
            for number, text in enumerate(SAMPLE_NOTES, 1):
                await self.store.insert("notes", _key(number), {"id": number, "text": text})
        self._seeded = True

    async def _notes(self) -> list[dict[str, Any]]:
        await self.seed()
        return [record.value for record in await self.store.scan("notes")]

    @tool("list_notes", "List the notes, five per page", scopes=["notes:read"], mutating=False)
    async def list_notes(self, page: Annotated[int, Param("Page number", clamp=(1, 1000))] = 1) -> ToolResult:
        notes = await self._notes()
        shown = notes[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
        return ToolResult.paginated(shown, page, len(notes), PAGE_SIZE, f"{len(notes)} notes")

    @tool("search_notes", "Find the notes that contain every word of a query", scopes=["notes:read"], mutating=False)
    async def search_notes(self, query: Annotated[str, Param("Words to look for")]) -> ToolResult:
        words = query.lower().split()
        found = [n for n in await self._notes() if all(w in n["text"].lower() for w in words)]
        return ToolResult.paginated(found, 1, len(found), max(len(found), 1), f"{len(found)} notes match {query!r}")

    @tool("delete_note", "Delete a note by its number", scopes=["notes:write"], mutating=True)
    async def delete_note(self, note_id: Annotated[int, Param("The note's number (see /list_notes)")]) -> ToolResult:
        await self.seed()
        taken = await self.store.take("notes", _key(note_id))
        if taken is None:
            raise ToolError(f"There is no note {note_id}; /list_notes shows the numbers.", code=ErrorCode.NOT_FOUND)
        return ToolResult.success(taken.value, f"Deleted note {note_id}: {taken.value['text']}")

    @tool(
        "send_payment",
        "Send a payment; a manager must approve it",
        scopes=["payments:send"],
        mutating=True,
        verify=PAYMENT_POLICY,
    )
    async def send_payment(
        self,
        to: Annotated[str, Param("Who receives the money")],
        amount: Annotated[float, Field(gt=0, le=100_000, description="Amount in EUR")],
        ctx: ToolContext,
    ) -> ToolResult:
        return await self._pay(to, amount, ctx)

    async def _pay(self, to: str, amount: float, ctx: ToolContext) -> ToolResult:
        payment = {"to": to, "amount": amount, "requested_by": ctx.principal}
        entry = await self.store.append("payments", payment)
        return ToolResult.success({"payment": entry.seq, **payment}, f"Paid {amount:.2f} EUR to {to}.")

    @tool("slow_report", "Build a report (takes a few seconds)", scopes=["notes:read"], mutating=False)
    async def slow_report(self) -> str:
        await asyncio.sleep(self.slow_seconds)
        return f"Report: {len(await self._notes())} notes."


class PlaygroundTools(ExampleTools):
    """The example tools with a payment whose approvers are reminded after 15 minutes, and which goes to
    the escalation approvers after 30 (the playground's default tools: its clock can skip ahead)."""

    @tool(
        "send_payment",
        "Send a payment; a manager must approve it",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(
            approver_scopes=("payments:approve",),
            four_eyes=True,
            expires_in=3600,
            remind_after=(900,),
            escalate_after=1800,
        ),
    )
    async def send_payment(
        self,
        to: Annotated[str, Param("Who receives the money")],
        amount: Annotated[float, Field(gt=0, le=100_000, description="Amount in EUR")],
        ctx: ToolContext,
    ) -> ToolResult:
        return await self._pay(to, amount, ctx)


def _key(number: int) -> str:
    return f"{number:08d}"  # keys sort like numbers
