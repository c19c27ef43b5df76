"""The tools the fleet tests' workers serve (``MILPA_TOOLS=tests.fleet._tools:FleetTools``).

Every run of a mutating tool appends one entry to the store's ``executions`` stream with the
idempotency key it was given (the approval's id): the test counts real executions per approval there.
"""

from __future__ import annotations

import asyncio
import os
from typing import Annotated

from pydantic import Field

from milpa_chat import Param, ToolContext, ToolResult, VerifyPolicy, tool
from milpa_chat.store import Store


class FleetTools:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def _executed(self, name: str, ctx: ToolContext) -> None:
        await self.store.append("executions", {"tool": name, "key": ctx.idempotency_key, "pid": os.getpid()})

    @tool(
        "pay",
        "Send a payment; a manager must approve it",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",), four_eyes=True, expires_in=3600),
    )
    async def pay(
        self,
        to: Annotated[str, Param("Who receives it")],
        amount: Annotated[float, Field(gt=0, le=100_000, description="Amount in EUR")],
        ctx: ToolContext,
    ) -> ToolResult:
        await self._executed("pay", ctx)
        return ToolResult.success({"to": to, "amount": amount}, f"Paid {amount:.2f} EUR to {to}.")

    @tool("archive", "Archive an item (its requester confirms)", scopes=["items:write"], mutating=True)
    async def archive(self, item: Annotated[int, Param("The item's number")], ctx: ToolContext) -> ToolResult:
        await self._executed("archive", ctx)
        return ToolResult.success({"item": item}, f"Archived item {item}.")

    @tool("slow_archive", "Archive an item slowly (seconds given)", scopes=["items:write"], mutating=True)
    async def slow_archive(
        self,
        item: Annotated[int, Param("The item's number")],
        seconds: Annotated[float, Param("How long")],
        ctx: ToolContext,
    ) -> ToolResult:
        await asyncio.sleep(seconds)
        await self._executed("slow_archive", ctx)
        return ToolResult.success({"item": item}, f"Archived item {item} slowly.")

    @tool("status", "Say that the service answers", scopes=["items:read"], mutating=False)
    async def status(self) -> str:
        return f"Service up (worker {os.getpid()})."
