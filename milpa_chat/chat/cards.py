"""Small message builders the assistant uses (tool lists, plain replies), plus result/card glue; the help is
in :mod:`milpa_chat.chat.replies`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from milpa_chat.renderers.model import Heading, ItemList, Message, Note, Paragraph

if TYPE_CHECKING:
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.runtime.result import ToolResult


def text(body: str, *, tone: str = "info") -> Message:
    return Message((Paragraph.of(body),), body.split("\n", 1)[0][:200], tone)  # type: ignore[arg-type]


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


def _reason(error: str) -> str:
    """A platform error in a few words: Slack's error code, else the message without the exception's name."""
    code = re.search(r"""['"]error['"]: ['"]([a-z_]+)""", error)
    if code:
        return code.group(1)
    return error.split(": ", 1)[-1].split("\n", 1)[0][:120] or "no answer"


def unreached(approval: Approval, failing: Mapping[str, str] | None = None) -> list[str]:
    """Why no approver has this card: the errors of its approver cards when none reached its chat (sent
    cards, or cards not tried yet: ``[]``). ``failing``: errors of this delivery pass, not recorded yet."""
    slots = approval.data.get("cards", [])
    approver = [f"card:{i}" for i, c in enumerate(slots) if c.get("role") == "approver"]
    if not approver or any(slots[int(e[5:])].get("message_id") for e in approver):
        return []
    failures = approval.data.get("failures", {})
    errors = [str(failures[e].get("error") or "") for e in approver if e in failures]
    errors += [error for effect, error in (failing or {}).items() if effect in approver]
    errors += ["given up" for e in approver if slots[int(e[5:])].get("shown")]  # tried until it gave up
    return errors


def approval_message(
    approval: Approval, role: str = "approver", *, failing: Mapping[str, str] | None = None
) -> Message:
    """This copy of the approval card (``role``: approver, requester or viewer), from the record's state.
    The requester's copy of a pending verification says whether an approver could be reached."""
    from milpa_chat.chat.approvals import view
    from milpa_chat.renderers.approval import compose_approval

    message = compose_approval(view(approval, role))  # type: ignore[arg-type]
    if role != "requester" or approval.kind != "verification" or approval.state != "pending":
        return message
    errors = unreached(approval, failing)
    if errors:
        why = _reason(errors[0])
        note = Note(f"No approver could be reached yet: the approvers' card could not be posted ({why}). "
                    "It is tried again; tell an approver yourself if it cannot wait.")
    else:
        note = Note("Waiting for an approver — you will be told here when it is decided.")
    return Message((*message.blocks, note), message.summary, message.tone, message.truncated, message.full)
