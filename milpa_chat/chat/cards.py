"""Small message builders the assistant uses (tool lists, plain replies), plus result/card glue; the help is
in :mod:`milpa_chat.chat.replies`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from milpa_chat.chat.annotations import annotated
from milpa_chat.chat.approvals import view
from milpa_chat.renderers.approval import compose_approval
from milpa_chat.renderers.compose import compose_result
from milpa_chat.renderers.model import Actions, Block, Button, Heading, ItemList, Message, Note, Paragraph

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
    message = risk_noted(approval, versioned(approval, role, compose_approval(view(approval, role))))  # type: ignore[arg-type]
    message = annotated(approval, message)
    if role == "requester" and approval.kind == "verification" and approval.state == "pending":
        errors = unreached(approval, failing)
        if errors:
            why = _reason(errors[0])
            note = Note(
                f"No approver could be reached yet: the approvers' card could not be posted ({why}). "
                "It is tried again; tell an approver yourself if it cannot wait."
            )
        else:
            note = Note("Waiting for an approver — you will be told here when it is decided.")
        message = Message((*message.blocks, note), message.summary, message.tone, message.truncated, message.full)
    return with_show_all(approval, message)


#: The action of "📄 Show all" on a card whose values were shortened.
SHOW_ALL = "show_all"


def with_show_all(approval: Approval, message: Message) -> Message:
    """A card whose values had to be shortened says so and offers "📄 Show all" (every argument, on a tap)
    instead of attaching the whole document to the card, and again to each of its edits."""
    if not message.truncated:
        return message
    blocks = (
        *message.blocks,
        Note("Some values are shortened here; 📄 Show all shows every argument."),
        Actions.row(Button("📄 Show all", SHOW_ALL, approval.id)),
    )
    return Message(blocks, message.summary, message.tone, False, message.full)


def all_arguments(approval: Approval) -> Message:
    """Every argument of ``approval`` as it runs (secrets redacted), for "📄 Show all": as much as the chat
    can show, and the whole document as a file where even that is not enough."""
    from milpa_chat.renderers._plain import json_document
    from milpa_chat.renderers._redact import redacted_plain
    from milpa_chat.renderers._text import json_text
    from milpa_chat.renderers.model import Code, Document, LazyDocument

    shown = redacted_plain(view(approval).arguments)
    document = LazyDocument(
        "arguments.json", lambda: Document("arguments.json", json_document(shown), "application/json")
    )
    title = f"All arguments: {approval.label}"
    return Message((Heading(title, "📄"), Code(json_text(shown), "json")), title, "info", False, document)


#: Decisions whose buttons carry the revision of the arguments the card shows (a tap on an older one is refused).
VERSIONED = frozenset({"confirm", "approve", "reject", "edit"})
#: Revisions shown on a card (the latest ones).
SHOWN_REVISIONS = 3


def button_ref(approval: Approval) -> str:
    """The ref of a decision button: the id, with ``.<revision>`` once the arguments were edited."""
    return f"{approval.id}.{approval.revision}" if approval.revision else approval.id


def parse_ref(ref: str) -> tuple[str, int]:
    """``(approval id, revision the card showed)`` from a button's ref (a bad revision reads as -1: stale)."""
    aid, dot, rev = ref.partition(".")
    if not dot:
        return aid, 0
    return aid, int(rev) if rev.isdigit() else -1


def may_edit(approval: Approval, role: str) -> bool:
    """Whether this copy of a pending card offers Edit: the requester's confirm, an approver's verification."""
    if approval.state != "pending" or approval.tool is None or role == "viewer":
        return False
    if (approval.data.get("payload") or {}).get("editable") is False:  # an agent that takes no edited call
        return False
    return approval.kind == "confirm" or role == "approver"


def edit_button(approval: Approval, role: str) -> Button | None:
    """ "✏️ Edit" on the copies of a pending card whose holder may edit it (an outbox extra, see
    ``Assistant(edits=True)``); who really may edit is checked on the tap."""
    return Button("✏️ Edit", "edit", button_ref(approval)) if may_edit(approval, role) else None


def edit_lines(approval: Approval) -> list[str]:
    """``amount: 120 → 80`` per changed field of the latest revisions (values redacted like the card's)."""
    from milpa_chat.renderers._redact import redacted_plain
    from milpa_chat.renderers._text import json_text

    lines = []
    for rev in approval.revisions[-SHOWN_REVISIONS:]:
        shown = redacted_plain({k: {"old": old, "new": new} for k, (old, new) in rev["changes"].items()})
        fields = "; ".join(
            f"{k}: {_short(json_text(d['old'], None))} → {_short(json_text(d['new'], None))}" for k, d in shown.items()
        )
        lines.append(f"Edited by {rev.get('by_name') or rev.get('by')} via {rev.get('via')}: {fields}")
    return lines


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def versioned(approval: Approval, role: str, message: Message) -> Message:
    """The card with old → new for every edit, and decision buttons that name the revision they were drawn at."""
    if not approval.revision:
        return message
    ref = button_ref(approval)
    blocks: list[Block] = []
    for block in message.blocks:
        if isinstance(block, Actions):
            block = Actions(
                tuple(
                    tuple(
                        Button(b.label, b.action, ref, b.style) if b.action in VERSIONED and b.ref == approval.id else b
                        for b in row
                    )
                    for row in block.rows
                )
            )
        elif isinstance(block, Paragraph) and approval.revision and _is_arguments_heading(block):
            blocks += [Note(line) for line in edit_lines(approval)]
        blocks.append(block)
    return Message(tuple(blocks), message.summary, message.tone, message.truncated, message.full)


def _is_arguments_heading(block: Paragraph) -> bool:
    return block.text == "Arguments:"


def risk_noted(approval: Approval, message: Message) -> Message:
    """A pending high-risk card says, above its buttons, that approving needs a typed reason (and when a
    fast approval asked for a second approver)."""
    tier = approval.data.get("risk") or {}
    if approval.state != "pending" or tier.get("level") != "high":
        return message
    notes = [Note(f"High risk ({tier.get('why')}): approving needs a typed reason.")]
    fast = approval.data.get("second_approver")
    if fast:
        notes.append(
            Note(
                f"Approved after {fast['seconds']:.0f} s, faster than the card can be read "
                f"({fast['limit']:.0f} s): a second approver must also approve."
            )
        )
    blocks = list(message.blocks)
    at = next((i for i, b in enumerate(blocks) if isinstance(b, Actions)), len(blocks))
    blocks[at:at] = notes
    return Message(tuple(blocks), message.summary, message.tone, message.truncated, message.full)
