"""Edit before approve in Telegram through real python-telegram-bot against the local Bot API server: Edit on
the card, a field to change, a ForceReply prompt, the person's reply taken as the value (or /cancel)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from milpa_chat import ToolRegistry
from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer, ManualClock, TelegramMessage, TelegramUser

from .test_slack_edit import TG_ALICE, TG_APPROVERS, TG_MARIA, Payments

TG_MATEO = TelegramUser(2002, "Mateo", "mateo")
IDENTITIES: dict[str, Any] = {
    "roles": {"writer": ["payments:send"], "manager": ["payments:approve"]},
    "users": {"telegram:1001": ["writer"], "telegram:2001": ["manager"], "telegram:2002": ["manager"]},
    "approvers": {"telegram": [str(TG_APPROVERS)]},
}


@asynccontextmanager
async def telegram(payments: Payments) -> AsyncIterator[BotApiServer]:
    registry = ToolRegistry(store=MemoryStore(clock=ManualClock()))
    registry.scan(payments)
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES), edits=True)
    async with BotApiServer() as tg:
        tg.group(TG_APPROVERS, "Approvers", members=[TG_MARIA, TG_MATEO])
        bot = TelegramBot(assistant, tg.token, tg.base_url, sweep_interval=None)
        await bot.start(poll_timeout=1)
        try:
            yield tg
        finally:
            await bot.stop()


def label(tg: BotApiServer, message: TelegramMessage, word: str) -> str:
    now = tg.message(message.chat.id, message.message_id)
    return next(text for text in now.button_labels if word.lower() in text.lower())


async def test_an_approver_edits_a_field_by_replying_to_a_prompt_and_another_approves() -> None:
    payments = Payments()
    async with telegram(payments) as tg:
        asked = await tg.send_message(TG_ALICE.id, TG_ALICE, "/pay ACME 120")
        card = await tg.wait_for_message(TG_APPROVERS, since=asked)

        tapped = await tg.tap_button(card, label(tg, card, "Edit"), TG_MARIA)
        chooser = await tg.wait_for_message(TG_APPROVERS, since=tapped)
        assert chooser.button_labels == ["to (ACME)", "amount (120.0)"]
        chosen = await tg.tap_button(chooser, "amount (120.0)", TG_MARIA)
        prompt = await tg.wait_for_message(TG_APPROVERS, since=chosen)
        assert "Maria: New value for amount (now 120.0)?" in (prompt.text or "") and "/cancel" in (prompt.text or "")
        sent = [c for c in tg.calls if c.method.lower() == "sendmessage" and "New value" in c.params.get("text", "")]
        assert json.loads(sent[-1].params["reply_markup"])["force_reply"] is True

        # someone else's reply is not Maria's value; Maria's invalid value is refused and asked again
        stray = await tg.send_message(TG_APPROVERS, TG_MATEO, "5", reply_to=prompt)
        assert "I work with commands" in ((await tg.wait_for_message(TG_APPROVERS, since=stray)).text or "")
        bad = await tg.send_message(TG_APPROVERS, TG_MARIA, "plenty", reply_to=prompt)
        told = await tg.wait_for_message(TG_APPROVERS, since=bad)
        assert "not valid" in (told.text or "") and "Reply with another value" in (told.text or "")
        good = await tg.send_message(TG_APPROVERS, TG_MARIA, "80", reply_to=prompt)
        await tg.wait_for_message(TG_APPROVERS, since=good)
        await tg.wait_until(lambda: "amount: 120.0 → 80.0" in (tg.message(card.chat.id, card.message_id).text or ""))

        mine = await tg.tap_button(card, label(tg, card, "Approve"), TG_MARIA)
        await tg.wait_until(lambda: tg.callback_query(mine).answered)
        assert "You edited this version" in (tg.callback_query(mine).answer_text or "") and payments.paid == []
        other = await tg.tap_button(card, label(tg, card, "Approve"), TG_MATEO)
        await tg.wait_until(lambda: tg.callback_query(other).answered)
        await tg.wait_until(lambda: payments.paid == [("ACME", 80.0)])


async def test_cancel_stops_an_edit_and_nothing_changes() -> None:
    payments = Payments()
    async with telegram(payments) as tg:
        asked = await tg.send_message(TG_ALICE.id, TG_ALICE, "/pay ACME 120")
        card = await tg.wait_for_message(TG_APPROVERS, since=asked)
        tapped = await tg.tap_button(card, label(tg, card, "Edit"), TG_MARIA)
        chooser = await tg.wait_for_message(TG_APPROVERS, since=tapped)
        chosen = await tg.tap_button(chooser, "to (ACME)", TG_MARIA)
        prompt = await tg.wait_for_message(TG_APPROVERS, since=chosen)
        stop = await tg.send_message(TG_APPROVERS, TG_MARIA, "/cancel", reply_to=prompt)
        told = await tg.wait_for_message(TG_APPROVERS, since=stop)
        assert "nothing was changed" in (told.text or "")
        assert "Edited" not in (tg.message(card.chat.id, card.message_id).text or "")
