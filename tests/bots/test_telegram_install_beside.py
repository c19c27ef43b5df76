"""The kit installed in the user's own PTB application: ``bot.stop()`` stops only what the kit started, and the
kit's command menu keeps the application's own commands (``/ping``) after the kit's."""

from __future__ import annotations

import datetime as dtm

from telegram import BotCommand, Update
from telegram.ext import Application, CommandHandler, ContextTypes

from milpa_chat import ToolRegistry, tool
from milpa_chat.bots import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer, TelegramUser

ALICE = TelegramUser(42, "Alice", "alice")


class Notes:
    @tool("list_notes", "List my notes", scopes=["notes:read"], mutating=False)
    def list_notes(self) -> list[str]:
        return ["buy milk"]


def assistant() -> Assistant:
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(Notes())
    return Assistant(registry, Identities(default_scopes=["notes:read"]))


async def ping(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    assert update.effective_message is not None
    await update.effective_message.reply_text("pong")


def application(server: BotApiServer) -> Application:
    app = Application.builder().token(server.token).base_url(server.base_url).build()
    app.add_handler(CommandHandler("ping", ping))
    return app


async def test_stop_leaves_the_updater_and_application_the_user_started_running() -> None:
    async with BotApiServer() as server:
        app = application(server)
        bot = TelegramBot.install(app, assistant(), sweep_interval=None)
        async with app:
            await app.start()
            assert app.updater is not None
            await app.updater.start_polling(poll_interval=0, timeout=dtm.timedelta(seconds=1))
            await bot.start(polling=False)  # the kit's sweeper and menu, on the user's running application
            await bot.stop()
            assert app.updater.running and app.running, "the kit stopped what the user started"
            sent = await server.send_message(ALICE.id, ALICE, "/ping")
            assert (await server.wait_for_message(ALICE.id, since=sent)).text == "pong"  # still polling
            await app.updater.stop()
            await app.stop()


async def test_stop_stops_what_the_kit_started() -> None:
    async with BotApiServer() as server:
        app = application(server)
        bot = TelegramBot.install(app, assistant(), sweep_interval=None)
        await bot.start(poll_timeout=1)
        assert app.updater is not None and app.updater.running
        await bot.stop()
        assert not app.updater.running and not app.running


async def test_the_menu_keeps_the_applications_own_commands_after_the_kits() -> None:
    async with BotApiServer() as server:
        app = application(server)
        await app.bot.initialize()
        await app.bot.set_my_commands([BotCommand("ping", "Check that the bot answers")])  # the app's menu before
        bot = TelegramBot.install(app, assistant(), sweep_interval=None)
        await bot.start(poll_timeout=1)
        try:
            menu = {c["command"]: c["description"] for c in server.commands()}
            assert "list_notes" in menu and "tools" in menu, menu  # the kit's
            assert menu["ping"] == "Check that the bot answers", menu  # yours, as you described it
            assert list(menu)[-1] == "ping", menu  # after the kit's
        finally:
            await bot.stop()


async def test_a_command_without_a_description_is_listed_by_its_name() -> None:
    async with BotApiServer() as server:
        bot = TelegramBot.install(application(server), assistant(), sweep_interval=None)
        await bot.start(poll_timeout=1)
        try:
            menu = {c["command"]: c["description"] for c in server.commands()}
            assert menu["ping"] == "/ping", menu
        finally:
            await bot.stop()
