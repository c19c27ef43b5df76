"""One OS process racing others on the same approval (``tests/runtime/test_approval_processes.py``).

``python -m tests.runtime._approval_worker '<spec json>'`` waits until ``spec["start_at"]``, then acts
``spec["repeats"]`` times at once in the given ``mode`` and prints one JSON line of outcomes. Every
run of a tool appends to the store stream ``runs``, so the parent counts executions across processes.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from milpa_chat import ToolContext, ToolRegistry, VerifyPolicy, tool
from milpa_chat.chat import Assistant, ChatUser, Identities, Inbound
from milpa_chat.store import Store
from milpa_chat.testing.transport import RecordingTransport
from tests.store._workers import open_spec

CLERK = ChatUser("100", "Clara")
MANAGERS = [ChatUser(str(200 + i), f"Manager {i}") for i in range(8)]
APPROVERS = "-900"
IDENTITIES = {
    "roles": {"clerk": ["payments:send", "notes:write"], "manager": ["payments:approve"]},
    "users": {"telegram:100": ["clerk"], **{f"telegram:{m.id}": ["manager"] for m in MANAGERS}},
    "approvers": {"telegram": [APPROVERS]},
}


class RaceTools:
    def __init__(self, store: Store) -> None:
        self.store = store

    @tool(
        "pay",
        "Send a payment",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",)),
    )
    async def pay(self, to: str, amount: int, ctx: ToolContext) -> dict[str, Any]:
        await self.store.append("runs", {"tool": "pay", "key": ctx.idempotency_key})
        return {"paid": amount, "to": to}

    @tool("delete_note", "Delete a note", scopes=["notes:write"], mutating=True)
    async def delete_note(self, note_id: int, ctx: ToolContext) -> dict[str, Any]:
        await self.store.append("runs", {"tool": "delete_note", "key": ctx.idempotency_key})
        return {"deleted": note_id}


def build(store: Store) -> tuple[ToolRegistry, Assistant, RecordingTransport]:
    registry = ToolRegistry(store=store, confirm_ttl=600)
    registry.scan(RaceTools(store))
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES), approval_ttl=600)
    surface = RecordingTransport("telegram")
    assistant.attach(surface)
    return registry, assistant, surface


def clerk_context(assistant: Assistant) -> ToolContext:
    return assistant.identities.context_for("telegram", CLERK, CLERK.id)


async def act(spec: dict[str, Any]) -> list[str]:
    store = open_spec(spec["store"])
    registry, assistant, surface = build(store)
    clerk = clerk_context(assistant)
    aid, mode, n = spec["approval_id"], spec["mode"], spec["repeats"]
    await asyncio.sleep(max(0.0, spec["start_at"] - time.time()))

    async def one(i: int) -> str:
        if mode == "replay":
            result = await registry.call("pay", {"verification_id": aid}, clerk)
            return "ran" if result.success else "refused"
        if mode == "confirm":
            result = await registry.call("delete_note", {"confirm_token": aid}, clerk)
            return "ran" if result.success else "refused"
        manager = MANAGERS[(spec["worker"] * n + i) % len(MANAGERS)]
        if mode == "tap":
            await assistant.handle(Inbound("telegram", APPROVERS, manager, action="approve", ref=aid), surface)
            return surface.answers[-1].text if surface.answers else ""
        if mode == "typed":
            await assistant.handle(
                Inbound("telegram", APPROVERS, manager, text=f"/resolve_verification {aid} grant"), surface
            )
            return "typed"
        if mode == "sweep":
            return str(await assistant.sweep())
        raise ValueError(f"unknown mode {mode!r}")

    outcomes = list(await asyncio.gather(*[one(i) for i in range(n)]))
    await store.close()
    return outcomes


if __name__ == "__main__":
    print(json.dumps(asyncio.run(act(json.loads(sys.argv[1])))))
