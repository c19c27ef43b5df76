"""How the chat core reads the runtime's one :class:`~milpa_chat.runtime.Approval`.

The record, its states and the decision function live in :mod:`milpa_chat.runtime.approvals`;
the chat core only adds, when a record is opened, where it is shown (``cards``: one per chat, with
the role of that copy) and where the requester is told (``route``), then presents it. This module
turns the record into what the chat needs: the requester as a :class:`ChatUser`, the card model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from milpa_chat.chat.inbound import ChatUser, MessageRef
from milpa_chat.renderers.approval import ApprovalView
from milpa_chat.runtime.approval import COLLECTION, Approval, ApprovalKind, ApprovalState

if TYPE_CHECKING:
    from milpa_chat.renderers.approval import ApprovalRole
    from milpa_chat.runtime.context import ToolContext

__all__ = [
    "COLLECTION",
    "Approval",
    "ApprovalKind",
    "ApprovalState",
    "card_slots",
    "messages",
    "requester_chat",
    "requester_surface",
    "requester_user",
    "view",
]


def requester_user(a: Approval) -> ChatUser:
    """The person who asked, as their platform showed them."""
    user = a.data["requester"].get("user") or {}
    return ChatUser(
        str(user.get("id") or a.requester_principal),
        str(user.get("name") or a.requester_name),
        user.get("username"),
        user.get("team"),
    )


def requester_surface(a: Approval) -> str:
    route = a.route
    return route["surface"] if route else str(a.data["requester"].get("channel", "unknown"))


def requester_chat(a: Approval) -> str:
    route = a.route
    return route["chat_id"] if route else ""


def messages(a: Approval) -> list[MessageRef]:
    """The cards that were sent (cards whose first send has not happened yet are left out)."""
    return [
        MessageRef(c["surface"], str(c["chat_id"]), str(c["message_id"]))
        for c in a.data.get("cards", [])
        if c.get("message_id")
    ]


def card_slots(targets: Iterable[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """``(surface, chat_id, role)`` as the record's card entries, none sent yet."""
    return [
        {"surface": sf, "chat_id": str(ch), "role": role, "message_id": None, "shown": None} for sf, ch, role in targets
    ]


def requester_fields(ctx: ToolContext) -> dict[str, Any]:
    """The requester's platform identity, from the context the identities gave them."""
    extra: Mapping[str, Any] = ctx.extra
    return {
        "id": str(extra.get("user_id") or ctx.principal or ""),
        "name": str(extra.get("user_name") or ""),
        "username": extra.get("user_username"),
        "team": extra.get("user_team"),
    }


def view(a: Approval, role: ApprovalRole = "approver") -> ApprovalView:
    """The card model the renderers draw for this copy of the card."""
    d = a.data  # (read directly: a card is drawn on every decision, and each property is a call)
    decided_at = d.get("decided_at")
    runs_tool = d.get("tool") is not None
    arguments = dict(d["args"]) if runs_tool else {"subject": d.get("subject"), **dict(d.get("payload") or {})}
    return ApprovalView(
        id=a.id,
        kind=d["kind"],
        tool=a.label,
        arguments=arguments,
        requester=requester_user(a).display,
        requester_principal=str(d["requester"]["principal"]),
        expires_at=datetime.fromtimestamp(float(d["expires_at"]), UTC),
        state=d["state"],
        reason=d.get("reason"),
        mutating=bool(d.get("mutating", True)),
        decided_by=d.get("decided_by_name") or d.get("decided_by"),
        decided_at=None if decided_at is None else datetime.fromtimestamp(decided_at, UTC),
        decided_via=d.get("decided_via"),
        decision_note=d.get("decision_note"),
        outcome=d.get("outcome"),
        approvals_required=int(d["policy"]["quorum"]),
        approved_by=tuple([v["name"] for v in d.get("votes", ())]),
        role=role,
        digest=d.get("digest") if runs_tool else None,
        effect=d.get("effect"),
    )
