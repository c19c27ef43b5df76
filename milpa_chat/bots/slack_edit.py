"""Edit before approve in Slack: a modal built from the tool's schema, and its submission.

The card's "✏️ Edit" opens a modal (``views.open`` with the tap's ``trigger_id``): one input block per
argument, prefilled with the value that would run. Submitting it sends ``view_submission``; the bot
amends the approval as the submitting user (identity from Slack, never from the modal's metadata) and
acks at once: with no body when the edit was taken (the modal closes, every copy of the card is edited
after the ack), or ``response_action: errors`` naming what is wrong with each field (the modal stays).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from milpa_chat.chat.surface import EditField
    from milpa_chat.runtime.approval import Approval, ApprovalRefused

__all__ = ["CALLBACK_ID", "REASON_ID", "edit_view", "field_errors", "reason_view", "submitted"]

CALLBACK_ID: Final = "milpa_edit"
#: The modal that asks why a high-risk request is approved.
REASON_ID: Final = "milpa_reason"
_PREFIX: Final = "f:"
_MAX_TEXT: Final = 3000  # Slack's plain_text_input allows 3000 characters


def mrkdwn_escape(text: str) -> str:
    """``& < >`` escaped, so text from a request never turns into mentions or links in the modal."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def edit_view(approval: Approval, fields: Sequence[EditField], chat_id: str) -> dict[str, Any]:
    """The modal for editing ``approval`` (drawn at its current revision) from the card in ``chat_id``."""
    from milpa_chat.chat.cards import button_ref

    blocks: list[dict[str, Any]] = [
        {
            "type": "section",
            "text": {
                "type": "mrkdwn",
                "text": mrkdwn_escape(
                    f"Edit the arguments of {approval.label} (asked by {approval.requester_name}). The edit is checked "
                    "as a new call would be; approvals so far are reset and another approver must approve it."
                )[:3000],
            },
        }
    ]
    for field in fields[:50]:
        element: dict[str, Any] = {
            "type": "plain_text_input",
            "action_id": "value",
            "multiline": len(field.now) > 80,
            "max_length": _MAX_TEXT,
        }
        if field.now:
            element["initial_value"] = field.now[:_MAX_TEXT]
        block: dict[str, Any] = {
            "type": "input",
            "block_id": f"{_PREFIX}{field.name}"[:255],
            "optional": field.optional,
            "element": element,
            "label": {"type": "plain_text", "text": field.label[:2000]},
        }
        if field.hint:
            block["hint"] = {"type": "plain_text", "text": field.hint[:2000]}
        blocks.append(block)
    return {
        "type": "modal",
        "callback_id": CALLBACK_ID,
        "private_metadata": f"{button_ref(approval)}|{chat_id}",
        "title": {"type": "plain_text", "text": "Edit request"},
        "submit": {"type": "plain_text", "text": "Save"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": blocks,
    }


def reason_view(approval: Approval, why: str, chat_id: str) -> dict[str, Any]:
    """The modal asking the approver why they approve a high-risk request (the reason is kept as the note)."""
    from milpa_chat.chat.cards import button_ref

    text = (
        f"{approval.label} (asked by {approval.requester_name}) is high-risk: {why}. Say why you approve it; "
        "the reason is shown on the card and kept with the decision."
    )
    return {
        "type": "modal",
        "callback_id": REASON_ID,
        "private_metadata": f"{button_ref(approval)}|{chat_id}",
        "title": {"type": "plain_text", "text": "Approve with a reason"},
        "submit": {"type": "plain_text", "text": "Approve"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": mrkdwn_escape(text)[:3000]}},
            {
                "type": "input",
                "block_id": f"{_PREFIX}reason",
                "label": {"type": "plain_text", "text": "Reason"},
                "element": {
                    "type": "plain_text_input",
                    "action_id": "value",
                    "multiline": True,
                    "min_length": 3,
                    "max_length": 500,
                },
            },
        ],
    }


def submitted(view: Mapping[str, Any]) -> tuple[str, str, dict[str, str]]:
    """``(approval ref, chat id, {field: typed text})`` from a ``view_submission``'s view."""
    ref, _, chat = str(view.get("private_metadata") or "").partition("|")
    texts: dict[str, str] = {}
    for block_id, element in ((view.get("state") or {}).get("values") or {}).items():
        if not str(block_id).startswith(_PREFIX):
            continue
        value = (element.get("value") or {}).get("value") if isinstance(element, Mapping) else None
        texts[str(block_id)[len(_PREFIX) :]] = "" if value is None else str(value)
    return ref, chat, texts


def field_errors(exc: ApprovalRefused, texts: Mapping[str, str]) -> dict[str, str]:
    """Slack's ``errors`` (block id -> message) for a refused edit: per field when the arguments did not
    validate, else the reason on the first field (Slack shows errors only under an input block)."""
    errors = {f"{_PREFIX}{name}": message[:2000] for name, message in exc.errors.items() if name in texts}
    if not errors and texts:
        errors[f"{_PREFIX}{next(iter(texts))}"] = str(exc)[:2000]
    return errors
