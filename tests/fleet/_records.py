"""What the fleet's records say against what the people see: every copy of a card compared with what its
record renders to, and copies the record does not know."""

from __future__ import annotations

from typing import Any

from milpa_chat.chat import cards as chat_cards
from milpa_chat.renderers.slack import SlackRenderer
from milpa_chat.renderers.telegram import TelegramRenderer
from milpa_chat.runtime.approval import FINAL, Approval
from milpa_chat.store import Store
from milpa_chat.testing import TelegramMessage
from milpa_chat.testing.slack import SlackMessage

from ._chaos import Card, slack_cards, telegram_cards
from ._fleet import Fleet


def difference(card: Card, approval: Approval, role: str) -> str:
    """How the platform's copy differs from what the record renders to for this copy's role ("" when it does not)."""
    message = chat_cards.approval_message(approval, role)
    if isinstance(card.raw, TelegramMessage):
        sent = TelegramRenderer(max_messages=1).render_message(message).messages[0]
        got: Any = (card.raw.current.source, card.raw.reply_markup)
        want: Any = (sent["text"], sent.get("reply_markup"))
    else:
        assert isinstance(card.raw, SlackMessage)
        payload = SlackRenderer().render_message(message).message
        blocks = payload.get("blocks") or []
        # Slack gives every block a block_id when the app gave none
        shown = [
            {k: v for k, v in b.items() if k != "block_id" or "block_id" in w}
            for b, w in zip(card.raw.blocks, [*blocks, *[{}] * len(card.raw.blocks)], strict=False)
        ]
        got, want = (card.raw.text, shown), (payload.get("text"), blocks)
    return "" if got == want else f"shows {got!r}, the record renders {want!r}"


def cards_of(fleet: Fleet) -> dict[tuple[str, str, str], Card]:
    every = telegram_cards(fleet) + slack_cards(fleet)
    return {(c.surface, c.chat, c.message_id): c for c in every}


def unconverged(fleet: Fleet, approvals: dict[str, Approval]) -> tuple[list[str], list[Card]]:
    """Recorded copies that do not show their record, and the copies the record does not know (a send
    that completed while its worker died before recording it) that still offer buttons of a settled request."""
    seen = cards_of(fleet)
    # a copy whose buttons are gone is not in cards_of (no buttons left): look it up on the servers
    wrong: list[str] = []
    stale: list[Card] = []
    recorded: set[tuple[str, str, str]] = set()
    for a in approvals.values():
        for slot in a.data.get("cards", []):
            if not slot.get("message_id"):
                wrong.append(f"{a.id} {slot['surface']} {slot['chat_id']}: never sent")
                continue
            key = (slot["surface"], str(slot["chat_id"]), str(slot["message_id"]))
            recorded.add(key)
            card = seen.get(key) or copy_without_buttons(fleet, key, a.id)
            diff = "not found on the server" if card is None else difference(card, a, slot.get("role", "approver"))
            if diff:
                wrong.append(f"{a.id} {key} ({a.state}, role {slot.get('role')}): {diff}")
    for key, copy in seen.items():
        record = approvals.get(copy.approval_id)
        if key not in recorded and (record is None or record.state in FINAL):
            stale.append(copy)
    return wrong, stale


def copy_without_buttons(fleet: Fleet, key: tuple[str, str, str], approval_id: str) -> Card | None:
    surface, chat, message_id = key
    try:
        raw: TelegramMessage | SlackMessage = (
            fleet.tg.message(int(chat), int(message_id))
            if surface == "telegram"
            else fleet.api.message(chat, message_id)
        )
    except (LookupError, KeyError, ValueError):
        return None
    return Card(surface, chat, message_id, approval_id, {}, raw)


async def approvals_in(store: Store) -> dict[str, Approval]:
    return {r.key: Approval(r.key, r.value, r.version, r.due) for r in await store.scan("approvals")}


def settled(a: Approval) -> bool:
    """Terminal, or ``effect_uncertain`` shown to a person with Run again / Mark as done."""
    return a.state in FINAL or (a.state == "effect_uncertain" and bool(a.data.get("cards")))
