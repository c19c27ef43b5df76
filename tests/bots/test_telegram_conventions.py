"""What a person is told on Telegram, through real python-telegram-bot against the local Bot API server: the
usage line on argument errors, help built from the bot's own tools, who they are and which scope they lack,
and the truth when no approver can be reached."""

from __future__ import annotations

from typing import Any

from milpa_chat import ToolRegistry, tool
from milpa_chat.bots import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer

from .telegram_support import ALICE, EVE, IDENTITIES, WAIT, make_assistant, running_bot


async def test_an_argument_error_the_validator_finds_carries_the_usage_line() -> None:
    async with running_bot() as h:
        reply = await h.say(ALICE, "/delete_note abc")
        text = reply.text or ""
        assert "note_id" in text and "valid integer" in text
        assert "Usage: /delete_note <note_id>" in text
        assert h.runs == []


async def test_a_denial_and_start_name_the_principal_and_the_missing_scope() -> None:
    async with running_bot() as h:
        denied = (await h.say(EVE, "/delete_note 5")).text or ""
        assert "/delete_note needs the scope notes:write" in denied
        assert (
            "You are telegram:9999, with no scopes: ask an administrator to grant notes:write to telegram:9999"
            in denied
        )
        start = (await h.say(EVE, "/start")).text or ""
        assert "You are telegram:9999 and hold no scopes here yet" in start
        start = (await h.say(ALICE, "/start")).text or ""
        assert "You are telegram:1001, with the scopes notes:read, notes:write, payments:send." in start
        assert h.runs == []


class Greeter:
    @tool("greet", "Greet someone", scopes=[], mutating=False)
    def greet(self, name: str, times: int = 1) -> str:
        return " ".join([f"Hello, {name}!"] * times)


async def test_help_examples_come_from_the_bots_own_tools() -> None:
    async with BotApiServer() as server:
        store = MemoryStore()
        registry = ToolRegistry(store=store)
        registry.scan(Greeter())
        bot = TelegramBot(Assistant(registry, Identities()), server.token, server.base_url, sweep_interval=None)
        await bot.start(poll_timeout=1)
        try:
            asked = await server.send_message(ALICE.id, ALICE, "/help")
            text = (await server.wait_for_message(ALICE.id, since=asked, timeout=WAIT)).text or ""
            assert '/greet "two words" — values in parameter order' in text
            assert '/greet name="two words" times=1 — named values' in text
            assert '/greet {"name": "two words"} — a JSON object' in text
            assert "search_notes" not in text and "delete_note" not in text
            asked = await server.send_message(ALICE.id, ALICE, '/greet "Ana María" times=2')
            reply = await server.wait_for_message(ALICE.id, since=asked, timeout=WAIT)
            assert "Hello, Ana María! Hello, Ana María!" in (reply.text or "")  # the example's form works
        finally:
            await bot.stop()
            await store.close()


async def test_the_requester_is_told_when_no_approver_chat_can_be_reached() -> None:
    identities: dict[str, Any] = {**IDENTITIES, "approvers": {"telegram": ["-777"]}}  # a chat the bot is not in
    async with BotApiServer() as server:
        store = MemoryStore()
        assistant, _ = make_assistant(store)
        assistant.identities = Identities.from_dict(identities)
        bot = TelegramBot(assistant, server.token, server.base_url, sweep_interval=None)
        await bot.start(poll_timeout=1)
        try:
            asked = await server.send_message(ALICE.id, ALICE, "/send_payment ACME 10")
            card = await server.wait_for_message(ALICE.id, since=asked, timeout=WAIT)
            await server.wait_until(
                lambda: "No approver could be reached yet" in (server.message(ALICE.id, card.message_id).text or ""),
                WAIT,
                what="the requester's card",
            )
            text = server.message(ALICE.id, card.message_id).text or ""
            assert "Waiting for an approver" not in text and "chat not found" in text.lower()
        finally:
            await bot.stop()
            await store.close()
