"""Tools and helpers the agent tests share: a small notes app with read, confirm, verify and blocked tools."""

from __future__ import annotations

import json
from typing import Any

from milpa_chat import ToolRegistry, ToolResult, VerifyPolicy, tool
from milpa_chat.runtime.result import ErrorCode


class Notes:
    def __init__(self) -> None:
        self.notes = {1: "milk", 2: "eggs", 3: "bread"}
        self.deleted: list[int] = []
        self.paid: list[tuple[str, float]] = []

    @tool("list_notes", "List the notes", scopes=["notes:read"], mutating=False)
    def list_notes(self) -> dict[str, Any]:
        return {"notes": [{"id": k, "title": v} for k, v in sorted(self.notes.items())]}

    @tool("get_note", "Read one note", scopes=["notes:read"], mutating=False)
    def get_note(self, note_id: int) -> ToolResult:
        if note_id not in self.notes:
            return ToolResult.error(f"No note {note_id}", code=ErrorCode.NOT_FOUND)
        return ToolResult.success({"id": note_id, "title": self.notes[note_id]})

    @tool("delete_note", "Delete a note", scopes=["notes:write"], mutating=True, confirm=True)
    async def delete_note(self, note_id: int) -> dict[str, Any]:
        self.deleted.append(note_id)
        self.notes.pop(note_id, None)
        return {"deleted": note_id}

    @tool(
        "pay",
        "Send a payment",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",), expires_in=600),
    )
    async def pay(self, to: str, amount: float) -> dict[str, Any]:
        self.paid.append((to, amount))
        return {"paid": amount, "to": to}

    @tool("export_notes", "Export every note", scopes=["notes:read"], mutating=False)
    def export_notes(self) -> ToolResult:
        return ToolResult.blocked("Exporting notes is not allowed by the house rules.", "Read them one by one.")


def registry_with(notes: Notes, store: Any = None) -> ToolRegistry:
    registry = ToolRegistry(store=store) if store is not None else ToolRegistry()
    registry.scan(notes)
    return registry


def tool_messages(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(call id, decoded content)`` of every tool result in a request body, for either provider."""
    found: list[tuple[str, dict[str, Any]]] = []
    for message in body["messages"]:
        if message.get("role") == "tool":
            found.append((message["tool_call_id"], json.loads(message["content"])))
        elif message.get("role") == "user" and isinstance(message.get("content"), list):
            for block in message["content"]:
                if block.get("type") == "tool_result":
                    found.append((block["tool_use_id"], json.loads(block["content"])))
    return found


def tool_names(body: dict[str, Any]) -> list[str]:
    """The names of the tools a request offered, for either provider."""
    return [t["function"]["name"] if "function" in t else t["name"] for t in body.get("tools", [])]
