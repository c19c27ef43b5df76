"""End to end: unmodified python-telegram-bot against BotApiServer, the openai SDK against FakeOpenAIServer,
a ChatAgent that pauses on a confirmation, a real button tap, and the agent's answer after it."""

from __future__ import annotations

from milpa_chat.bots import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.gateway import ChatAgent, LlmService
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer, TelegramUser
from milpa_chat.testing.llm import FakeOpenAIServer

from .agent_tools import Notes, registry_with, tool_messages

ALICE = TelegramUser(1001, "Alice", "alice")
IDENTITIES = {"roles": {"writer": ["notes:read", "notes:write"]}, "users": {"telegram:1001": ["writer"]}}


async def test_free_text_confirm_tap_and_the_agent_answers() -> None:
    notes = Notes()
    async with (
        FakeOpenAIServer() as llm_server,
        BotApiServer() as tg_server,
        LlmService(model="gpt-test", api_key=llm_server.api_key, base_url=llm_server.base_url, max_retries=0) as llm,
    ):
        llm_server.reply_tool_call("delete_note", {"note_id": 2}, id="d").reply_text("Done — note 2 (eggs) is gone.")
        assistant = Assistant(
            registry_with(notes, MemoryStore()), Identities.from_dict(IDENTITIES), agent=ChatAgent(llm)
        )
        bot = TelegramBot(assistant, tg_server.token, tg_server.base_url)
        await bot.start(poll_timeout=1)
        try:
            update = await tg_server.send_message(ALICE.id, ALICE, "please delete the eggs note")
            card = await tg_server.wait_for_message(ALICE.id, since=update)
            assert "Confirm: delete_note" in (card.text or "") and notes.deleted == []
            confirm = next(text for text in card.button_labels if "Confirm" in text)
            tap = await tg_server.tap_button(card, confirm, ALICE)

            def answered() -> bool:
                return any(m.text == "Done — note 2 (eggs) is gone." for m in tg_server.messages(ALICE.id))

            await tg_server.wait_until(answered, what="the agent's answer after the tap")
            assert notes.deleted == [2] and tg_server.callback_query(tap).answered
            assert dict(tool_messages(llm_server.bodies[1]))["d"]["data"] == {"deleted": 2}
            await tg_server.wait_until(lambda: tg_server.message(ALICE.id, card.message_id).button_labels == [])
        finally:
            await bot.stop()
