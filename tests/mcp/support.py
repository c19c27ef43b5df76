"""What both transports' tests do with an MCP ``ClientSession``, and the Telegram side of an approval."""

from __future__ import annotations

import asyncio
from typing import Any

from mcp import ClientSession

from milpa_chat.store import Store
from milpa_chat.testing import BotApiServer, TelegramMessage, TelegramUser
from tests.mcp.app import APPROVERS

MARIA = TelegramUser(2001, "Maria", "maria")
BOB = TelegramUser(1002, "Bob", "bob")
WAIT = 15.0


def wire(result: Any) -> dict[str, Any]:
    """A CallToolResult as the JSON the client received."""
    dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


async def lists_tools_with_annotations(session: ClientSession) -> dict[str, Any]:
    listed = await session.list_tools()
    tools = {t.name: t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listed.tools}
    assert "resolve_verification" not in tools  # approvers decide on their own surfaces
    assert tools["list_notes"]["annotations"] == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
    }
    assert tools["delete_note"]["annotations"]["readOnlyHint"] is False
    assert tools["delete_note"]["annotations"]["destructiveHint"] is True
    # declared operations: the hints come from their effect profiles
    assert tools["notes_archive"]["annotations"] == {
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": False,
    }
    assert tools["notes_count"]["annotations"]["readOnlyHint"] is True
    assert tools["list_notes"]["outputSchema"]["properties"]["notes"]["type"] == "array"
    assert tools["send_payment"]["inputSchema"]["required"] == ["to", "amount"]
    assert {"approval_status", "approval_run"} <= set(tools)
    return tools


async def calls_and_validates(session: ClientSession) -> None:
    listed = wire(await session.call_tool("list_notes", {"page": 2}))
    assert listed["isError"] is False
    assert listed["structuredContent"] == {"notes": ["buy milk", "call mom", "water the plants"], "page": 2}
    counted = wire(await session.call_tool("notes_count", {}))
    assert counted["structuredContent"] == {"count": 3}

    bad = wire(await session.call_tool("list_notes", {"page": "two"}))
    assert bad["isError"] is True
    assert bad["content"][0]["text"] == "page: Input should be a valid integer"
    assert bad["structuredContent"]["error"]["code"] == "VALIDATION_ERROR"
    missing = wire(await session.call_tool("send_payment", {"to": "ACME"}))
    assert missing["isError"] is True and "amount" in missing["content"][0]["text"]


async def asks_for_a_payment(session: ClientSession, server: BotApiServer) -> tuple[str, TelegramMessage]:
    """``send_payment`` over MCP: a pending approval, and its card in the approvers' Telegram group."""
    asked = wire(await session.call_tool("send_payment", {"to": "ACME", "amount": 42}))
    assert asked["isError"] is False
    approval = asked["structuredContent"]["approval"]
    assert approval["state"] == "pending" and approval["kind"] == "verification"
    assert approval["shown_to"] == [{"surface": "telegram", "role": "approver", "sent": True}]
    assert "shown to the approvers on Telegram" in approval["next"] and "approval_status" in approval["next"]
    card = await server.wait_for_message(APPROVERS, timeout=WAIT)
    assert "Approval needed: send_payment" in (card.text or "") and '"to": "ACME"' in (card.text or "")
    early = wire(await session.call_tool("approval_run", {"approval_id": approval["approval_id"]}))
    assert early["isError"] is True and early["content"][0]["text"].startswith("Not run: send_payment is pending")
    return str(approval["approval_id"]), card


async def tap(server: BotApiServer, card: TelegramMessage, word: str, user: TelegramUser) -> str:
    label = next(t for t in card.button_labels if word.lower() in t.lower())
    update = await server.tap_button(card, label, user)
    query = server.callback_query(update)
    await server.wait_until(lambda: query.answered, WAIT, what="the tap's answer")
    return query.answer_text or ""


async def learns_the_outcome(
    session: ClientSession, server: BotApiServer, approval_id: str, card: TelegramMessage, store: Store
) -> None:
    """Maria approves on Telegram; the MCP client waits for it, runs it once, and reads the result."""
    waiting = asyncio.ensure_future(
        session.call_tool("approval_status", {"approval_id": approval_id, "wait_seconds": 30})
    )
    assert (
        await tap(server, card, "Approve", BOB) == "You cannot approve this request: it needs one of these "
        "scopes: payments:approve."
    )
    assert await tap(server, card, "Approve", MARIA) == "Approved."
    status = wire(await waiting)["structuredContent"]
    assert status["state"] == "approved" and status["decided_by"] == "Maria" and status["decided_via"] == "telegram"
    assert status["approvals"]["given"] == ["Maria"] and "approval_run" in status["next"]
    assert await store.read("payments") == []  # nothing ran on the approval alone: the requester runs it

    ran = wire(await session.call_tool("approval_run", {"approval_id": approval_id}))
    assert ran["isError"] is False and ran["structuredContent"] == {"to": "ACME", "amount": 42.0}
    assert ran["content"][0]["text"].startswith("Paid 42.00 EUR to ACME.")
    again = wire(await session.call_tool("approval_run", {"approval_id": approval_id}))
    assert again["structuredContent"] == {"to": "ACME", "amount": 42.0}  # the recorded result
    assert [p.value["amount"] for p in await store.read("payments")] == [42]  # once

    done = wire(await session.call_tool("approval_status", {"approval_id": approval_id}))["structuredContent"]
    assert done["state"] == "executed" and done["result"]["message"] == "Paid 42.00 EUR to ACME."
    assert done["outcome"] == "Paid 42.00 EUR to ACME."
    await server.wait_until(
        lambda: "Paid 42.00" in (server.message(card.chat.id, card.message_id).text or ""),
        WAIT,
        what="the card showing the outcome",
    )
    assert server.message(card.chat.id, card.message_id).button_labels == []
