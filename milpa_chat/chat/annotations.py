"""What a card shows of the actions around a decision: a reassignment, questions to the requester and their
answers, comments, and the reference people name the request by in ``/ask``, ``/answer``, ``/comment`` and
``/reassign`` (see :mod:`milpa_chat.runtime.approval_actions`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from milpa_chat.renderers.model import Actions, Message, Note

if TYPE_CHECKING:
    from milpa_chat.runtime.approval import Approval

__all__ = ["SHOWN_NOTES", "annotated", "note_lines"]

#: Notes shown on a card (the latest ones; the record keeps them all).
SHOWN_NOTES = 6


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def note_lines(approval: Approval) -> list[str]:
    """One line per reassignment, question (with its answer) and comment, oldest first."""
    lines = []
    for n in approval.data.get("notes", [])[-SHOWN_NOTES:]:
        who = n.get("by_name") or n.get("by")
        if n["kind"] == "reassigned":
            lines.append(f"↪️ {who} {n['text']}.")
        elif n["kind"] == "question":
            answer = n.get("answer")
            lines.append(f"❓ {who} asked: {_short(n['text'])}")
            lines.append(
                f"💬 {approval.requester_name} answered: {_short(answer)}" if answer else "⏳ Waiting for the answer."
            )
        elif n["kind"] == "comment":
            lines.append(f"🗨️ {who}: {_short(n['text'])}")
    return lines


def annotated(approval: Approval, message: Message) -> Message:
    """The card with its notes above the buttons, and, while it is pending, the reference to name it by."""
    lines = note_lines(approval)
    if approval.state == "pending" and approval.kind == "verification" and approval.data.get("actions"):
        ref = approval.id[:8]
        lines.append(f"Ref {ref}: /ask {ref} …, /comment {ref} …, /reassign {ref} <who>")
    if not lines:
        return message
    blocks = list(message.blocks)
    at = next((i for i, b in enumerate(blocks) if isinstance(b, Actions)), len(blocks))
    blocks[at:at] = [Note(line) for line in lines]
    return Message(tuple(blocks), message.summary, message.tone, message.truncated, message.full)
