"""``bots/agent_payments.py`` for each framework, through real python-telegram-bot against the local Bot API server
and (pydantic-ai, the OpenAI Agents SDK) its model through the openai wire against the kit's local OpenAI server:
"pay ACME 120" -> the managers' card -> Approve -> the payment runs once, keyed by the approval id."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from bots.agent_payments import FRAMEWORKS, build
from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.testing import BotApiServer, TelegramUser
from milpa_chat.testing.llm import FakeOpenAIServer

ALICE = TelegramUser(1001, "Alice", "alice")
MARIA = TelegramUser(2001, "Maria", "maria")
IDENTITIES = """
[roles]
writer = ["payments:send"]
manager = ["payments:approve"]
[users]
"telegram:1001" = ["writer"]
"telegram:2001" = ["manager"]
[approvers]
telegram = ["-500"]
"""


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
async def test_the_example_bot_pays_once_after_a_managers_tap(framework: str, tmp_path: Path) -> None:
    (tmp_path / "identities.toml").write_text(IDENTITIES)
    async with AsyncExitStack() as stack:
        llm = await stack.enter_async_context(FakeOpenAIServer())
        llm.reply_tool_call("send_payment", {"to": "ACME", "amount": 120}).reply_text("Paid ACME, as approved.")
        tg = await stack.enter_async_context(BotApiServer())
        tg.group(-500, "Managers", members=[MARIA])
        env = {
            "AGENT_FRAMEWORK": framework,
            "MILPA_STORE": str(tmp_path / "agent.db"),
            "MILPA_IDENTITIES": str(tmp_path / "identities.toml"),
            "OPENAI_API_KEY": llm.api_key or "",
            "OPENAI_BASE_URL": llm.base_url,
        }
        assistant, _ = await build(env, stack)
        bot = TelegramBot(assistant, tg.token, tg.base_url, sweep_interval=None)
        await bot.start(poll_timeout=1)
        stack.push_async_callback(bot.stop)
        asked = await tg.send_message(ALICE.id, ALICE, "pay ACME 120")
        card = await tg.wait_for_message(-500, since=asked, timeout=20)
        assert "send_payment" in (card.text or "") and "ACME" in (card.text or "")
        for _ in range(500):  # Maria taps once the cards are out (the record knows every copy)
            (approval,) = await assistant.approvals.listing()
            if all(c.get("message_id") for c in approval.data["cards"]):
                break
            await asyncio.sleep(0.01)
        tap = await tg.tap_button(card, next(b for b in card.button_labels if "Approve" in b), MARIA)
        await tg.wait_until(lambda: tg.callback_query(tap).answered, 20)
        paid = await tg.wait_until(
            lambda: [m.text for m in tg.messages(ALICE.id) if "Paid 120.00 EUR to ACME" in (m.text or "")],
            20,
            what="the payment's result",
        )
        assert paid[0] is not None and f"payment key {approval.id}" in paid[0]
        done = await assistant.approvals.get(approval.id)
        assert done is not None and done.state == "executed"
