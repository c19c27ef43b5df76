"""The kit inside a python-telegram-bot application of the user's: their handlers run beside the kit's."""

from __future__ import annotations

import time
from typing import Any

import pytest
from telegram import Update
from telegram.ext import (
    ApplicationBuilder,
    CallbackQueryHandler,
    CommandHandler,
    ContextTypes,
    MessageHandler,
    filters,
)

from milpa_chat.bots import TelegramBot
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer, TelegramUpdate

from .telegram_support import ALICE, WAIT, Harness, make_assistant, running_bot


async def ping(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    assert update.effective_message is not None
    await update.effective_message.reply_text("pong")


async def texts_after(h: Harness, chat: int, update: TelegramUpdate, count: int) -> list[str]:
    """The bot's first ``count`` messages in ``chat`` after ``update``."""
    await h.server.wait_until(lambda: len(h.server.messages(chat)) >= count, WAIT, what=f"{count} messages")
    return [m.text or "" for m in h.server.messages(chat)]


async def test_a_users_command_handler_answers_and_the_kit_stays_silent() -> None:
    async with running_bot() as h:
        h.bot.application.add_handler(CommandHandler("ping", ping))
        asked = await h.server.send_message(ALICE.id, ALICE, "/ping")
        reply = await h.server.wait_for_message(ALICE.id, since=asked, timeout=WAIT)
        assert reply.text == "pong"
        tools = await h.say(ALICE, "/tools")  # the kit's own commands still work beside it
        assert "Your tools" in (tools.text or "")
        assert [m.text for m in h.server.messages(ALICE.id)] == ["pong", tools.text]
        unknown = await h.say(ALICE, "/pong")  # what nobody handles is still the kit's to answer
        assert (unknown.text or "").startswith("Unknown command /pong.")


async def test_a_users_callback_handler_gets_its_own_buttons() -> None:
    seen: list[str] = []

    async def mine(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.callback_query is not None
        seen.append(update.callback_query.data or "")
        await update.callback_query.answer("yours")

    async with running_bot() as h:
        h.bot.application.add_handler(CallbackQueryHandler(mine, pattern="^x-"))
        card = await h.say(ALICE, "/delete_note 5")
        assert await h.tap_data(card, "x-42", ALICE) == "yours"
        assert seen == ["x-42"]
        assert await h.tap_data(card, "nobody's", ALICE) == "This button is not valid."  # nobody claims it
        await h.tap(card, "Confirm", ALICE)  # the kit's own buttons still go to the kit
        await h.server.wait_until(lambda: h.runs == ["delete_note"], WAIT, what="the confirmed run")
        assert seen == ["x-42"]
        h.assert_every_tap_answered_once()


async def test_a_users_text_handler_takes_its_messages_and_the_kit_answers_the_rest() -> None:
    async def hello(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.effective_message is not None
        await update.effective_message.reply_text("hi yourself")

    async with running_bot() as h:
        h.bot.application.add_handler(MessageHandler(filters.Regex("^hello"), hello))
        said = await h.server.send_message(ALICE.id, ALICE, "hello bot")
        assert (await h.server.wait_for_message(ALICE.id, since=said, timeout=WAIT)).text == "hi yourself"
        other = await h.say(ALICE, "what can you do?")
        assert "I work with commands" in (other.text or "")
        assert len(h.server.messages(ALICE.id)) == 2


async def test_install_adds_the_kit_to_the_users_own_application() -> None:
    ran: list[str] = []

    async def their_post_init(application: Any) -> None:
        ran.append("post_init")

    async with BotApiServer() as server:
        application = (
            ApplicationBuilder().token(server.token).base_url(server.base_url).post_init(their_post_init).build()
        )
        application.add_handler(CommandHandler("ping", ping))
        store = MemoryStore()
        assistant, _ = make_assistant(store)
        bot = TelegramBot.install(application, assistant, sweep_interval=None)
        assert bot.application is application and not bot.owns_application
        await bot.start(poll_timeout=1)
        try:
            asked = await server.send_message(ALICE.id, ALICE, "/ping")
            assert (await server.wait_for_message(ALICE.id, since=asked, timeout=WAIT)).text == "pong"
            asked = await server.send_message(ALICE.id, ALICE, "/tools")
            assert "Your tools" in ((await server.wait_for_message(ALICE.id, since=asked, timeout=WAIT)).text or "")
            assert server.commands(), "the kit set its command menu"
        finally:
            await bot.stop()
            await store.close()
        assert application.post_init is not None
        await application.post_init(application)  # the hook run_polling calls: the kit's, then the user's
        assert ran == ["post_init"]


async def test_allowed_updates_include_what_the_users_handlers_need() -> None:
    edits: list[str] = []

    async def edited(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.edited_message is not None
        edits.append(update.edited_message.text or "")

    async with BotApiServer() as server:
        application = ApplicationBuilder().token(server.token).base_url(server.base_url).build()
        application.add_handler(MessageHandler(filters.UpdateType.EDITED_MESSAGE, edited))
        assistant, _ = make_assistant(MemoryStore())
        bot = TelegramBot.install(application, assistant, sweep_interval=None)
        assert bot.allowed_updates == [
            "message",
            "callback_query",
            "edited_message",
            "channel_post",
            "edited_channel_post",
        ]
        plain = TelegramBot(make_assistant(MemoryStore())[0], server.token, server.base_url)
        assert plain.allowed_updates == ["message", "callback_query"]  # the kit alone asks for its own
        await bot.start(poll_timeout=1)
        try:
            sent = await server.send_message(ALICE.id, ALICE, "first words")
            update_id = server.feed.new_update_id()
            edit = {**sent.payload["message"], "text": "better words", "edit_date": int(time.time())}
            await server.feed.push(
                TelegramUpdate(
                    update_id, {"update_id": update_id, "edited_message": edit}, time.monotonic(), len(server.calls)
                )
            )
            await server.wait_until(lambda: edits, WAIT, what="the user's edited-message handler")
            assert edits == ["better words"]
        finally:
            await bot.stop()


def test_the_groups_are_the_users_to_choose() -> None:
    application = ApplicationBuilder().token("123456:ABC").build()
    application.add_handler(CommandHandler("ping", ping), group=3)
    bot = TelegramBot.install(
        application, make_assistant(MemoryStore())[0], group=2, fallback_group=7, sweep_interval=None
    )
    kinds = {g: sorted(type(h).__name__ for h in hs) for g, hs in application.handlers.items()}
    assert kinds == {
        2: ["CallbackQueryHandler", "MessageHandler"],
        3: ["CommandHandler"],
        7: ["CallbackQueryHandler", "MessageHandler"],
    }
    assert bot.fallback_group == 7
    with pytest.raises(ValueError, match=r"fallback_group \(2\) must come after group \(2\)"):
        TelegramBot.install(application, make_assistant(MemoryStore())[0], group=2, fallback_group=2)
    with pytest.raises(ValueError, match=r"either token= .* or application="):
        TelegramBot(make_assistant(MemoryStore())[0], "123456:ABC", application=application)
