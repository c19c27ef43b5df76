"""Where an approval's cards go: the approver chats and direct messages, the requester's chat, and the
escalation chats; read from the identities and the attached surfaces when an approval opens or is nudged."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from milpa_chat.chat.approvals import card_slots, requester_fields

if TYPE_CHECKING:
    from milpa_chat.chat.identity import Identities
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["approver_targets", "nudge_cards", "route"]

Targets = list[tuple[str, str, str]]


def route(
    value: dict[str, Any],
    ctx: ToolContext,
    identities: Identities,
    transports: Mapping[str, object],
    registry: ToolRegistry,
    *,
    tiers: Mapping[str, Any] | None = None,
) -> None:
    """Opener: where a new approval is shown and where its requester is told (chat users only).

    ``tiers`` (risk tiers on): a verification records its tool's tier (``risk``: ``level``, ``why`` and
    ``fast_seconds``), which decides what approving it asks for."""
    surface, chat = ctx.channel, ctx.extra.get("chat_id")
    where = {"surface": surface, "chat_id": str(chat)} if surface in transports and chat is not None else None
    targets: Targets = []
    if value["kind"] == "verification":
        targets = approver_targets(value, identities, transports)
    if where is not None and (surface, where["chat_id"]) not in {(sf, ch) for sf, ch, _ in targets}:
        # no approver reachable anywhere: approvers decide in the requester's chat, and the requester is told
        alone = value["kind"] == "verification" and not targets
        targets.append((surface, where["chat_id"], "approver" if alone else "requester"))
        if alone:
            value.setdefault("notices", []).append(
                "No approver chat or approver is configured for this request here: an approver can decide "
                "on this card when they see it."
            )
    value.update(route=where, cards=card_slots(targets), auto_run=where is not None)
    definition = registry.get(value["tool"]) if value.get("tool") else None
    if definition is not None:
        from milpa_chat.runtime.catalogue import effect_words

        value["effect"] = effect_words(definition)
        if tiers is not None and value["kind"] == "verification":
            from milpa_chat.runtime.approval_rules import risk_tier

            override = getattr(definition.verify, "risk", None)  # VerifyPolicy(risk="low" | "high")
            value["risk"] = {**risk_tier(definition, override), "fast_seconds": tiers.get("fast_seconds")}
    if where is not None:
        value["requester"]["user"] = requester_fields(ctx)


def approver_targets(value: dict[str, Any], identities: Identities, transports: Mapping[str, object]) -> Targets:
    """Where the approvers see a verification: their chats, their direct messages, or both (the policy's
    ``deliver``); never the requester's own direct messages."""
    deliver = value["policy"].get("deliver", "channels")
    targets: Targets = []
    if deliver in ("channels", "both"):
        targets += [(sf, ch, "approver") for sf in transports for ch in identities.approver_chats(sf)]
    if deliver in ("direct", "both"):
        requester = str(value["requester"].get("principal") or "")
        for sf in transports:
            for user_id in identities.people_with(sf, value["policy"].get("approver_scopes", [])):
                if not requester.endswith(f":{user_id}") and (sf, user_id, "approver") not in targets:
                    targets.append((sf, user_id, "approver"))
    return targets


def nudge_cards(value: dict[str, Any], kind: str, identities: Identities, transports: Mapping[str, object]) -> None:
    """Reminder: a fresh copy of the card for the approvers; escalation: cards for the escalation chats."""
    if kind == "reminder":
        targets = approver_targets(value, identities, transports)
    else:
        targets = [(sf, ch, "approver") for sf in transports for ch in identities.escalation_chats(sf)]
    where = value.get("route")
    if not targets and kind == "reminder" and where:  # approvers decide in the requester's chat
        targets = [(where["surface"], where["chat_id"], "approver")]
    value["cards"] = [*value.get("cards", []), *card_slots(targets)]
