"""Small message builders the assistant uses (help, tool lists, plain replies), plus result/card glue."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from milpa_chat.renderers.model import Heading, ItemList, Message, Note, Paragraph, Span

if TYPE_CHECKING:
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.runtime.result import ToolResult


def text(body: str, *, tone: str = "info") -> Message:
    return Message((Paragraph.of(body),), body.split("\n", 1)[0][:200], tone)  # type: ignore[arg-type]


def help_message(name: str, prefix: str = "/") -> Message:
    p = prefix
    return Message(
        (
            Heading(f"{name}", "🤖"),
            Paragraph.of("Every tool is a command. Send ", Span(f"{p}tools", "code"), " to see yours."),
            ItemList((
                f"{p}delete_note 5 — values in parameter order",
                f'{p}search_notes query="two words" page=2 — named values',
                f'{p}search_notes {{"query": "milk"}} — a JSON object',
            )),
            Note("Actions that change things ask you to confirm; some need an approver."),
        ),
        f"{name}: send {p}tools to see what you can do",
    )


def usage(name: str, schema: dict[str, Any], prefix: str = "/") -> str:
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    parts = [f"<{p}>" if p in required else f"[{p}=…]" for p in props]
    return " ".join([f"{prefix}{name}", *parts])


def tools_message(summaries: list[dict[str, Any]], prefix: str = "/") -> Message:
    if not summaries:
        return text("You have no tools available. Ask an administrator for access.")
    lines = tuple(f"{usage(s['name'], s['inputSchema'], prefix)} — {s['description']}" for s in summaries)
    return Message((Heading("Your tools", "🧰"), ItemList(lines)), f"{len(summaries)} tools available")


def result_message(result: ToolResult) -> Message:
    from milpa_chat.renderers.compose import compose_result

    return compose_result(result)


def approval_message(approval: Approval, role: str = "approver") -> Message:
    """This copy of the approval card (``role``: approver, requester or viewer), from the record's state."""
    from milpa_chat.chat.approvals import view
    from milpa_chat.renderers.approval import compose_approval

    message = compose_approval(view(approval, role))  # type: ignore[arg-type]
    if role != "requester" or approval.kind != "verification" or approval.state != "pending":
        return message
    note = Note("Waiting for an approver — you will be told here when it is decided.")
    return Message((*message.blocks, note), message.summary, message.tone, message.truncated, message.full)
