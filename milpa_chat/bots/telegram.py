"""``TelegramBot``: an :class:`~milpa_chat.chat.Assistant` on Telegram through python-telegram-bot v22.

::

    bot = TelegramBot(assistant, token=os.environ["TELEGRAM_TOKEN"])
    bot.run_polling()                                   # owns the event loop

    async with TelegramBot(assistant, token=...) as bot:  # inside a loop you own: polls until the block ends
        ...

    bot = TelegramBot(assistant, token=..., webhook_secret="long-random-secret")
    await bot.start_webhook("https://bot.example.org/telegram", listen="0.0.0.0", port=8443)

Text messages (commands included) and button taps become :class:`~milpa_chat.chat.Inbound` events; who
acted is Telegram's ``from`` of the update, never the button data. Updates are processed concurrently;
each callback query is answered once, within ``answer_within`` seconds; the assistant's expiry sweeper
runs next to the bot. Webhook mode always checks Telegram's ``X-Telegram-Bot-Api-Secret-Token`` header.

On start the bot's command menu is set (``setMyCommands``) from the registry through
:class:`~milpa_chat.command.TelegramCommandProjector`, per scope where the Bot API allows it: the
default scope gets the tools the identities' default scopes may call; every ``telegram:<id>`` user
of the identities gets their own menu in their private chat (``BotCommandScopeChat``); every
approver chat gets the commands of its scopes, and each listed user there their own
(``BotCommandScopeChatMember``). A scope whose menu equals the one it falls back to is deleted.
"""

# ruff: noqa: E402  (the SDK is imported after the missing-extra check)
from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import secrets
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from milpa_chat._extras import require

require("telegram", extra="telegram", feature="TelegramBot")

from telegram import (
    BotCommand,
    BotCommandScope,
    BotCommandScopeChat,
    BotCommandScopeChatMember,
    BotCommandScopeDefault,
    CallbackQuery,
    Update,
)
from telegram import Message as TgMessage
from telegram import User as TgUser
from telegram.ext import (
    Application,
    ApplicationBuilder,
    CallbackQueryHandler,
    ContextTypes,
    MessageHandler,
    filters,
)

from milpa_chat.bots.telegram_transport import TelegramTransport
from milpa_chat.chat.inbound import ChatUser, Inbound
from milpa_chat.renderers.model import parse_callback_data
from milpa_chat.runtime.context import ToolContext

if TYPE_CHECKING:
    from milpa_chat.chat.assistant import Assistant
    from milpa_chat.command.projectors import TelegramCommand, TelegramCommandProjector
    from milpa_chat.renderers.telegram import TelegramRenderer

__all__ = ["TelegramBot", "TelegramTransport", "chat_user"]

log = logging.getLogger("milpa_chat.bots.telegram")

App: TypeAlias = "Application[Any, Any, Any, Any, Any, Any]"
Builder: TypeAlias = "ApplicationBuilder[Any, Any, Any, Any, Any, Any]"
ALLOWED_UPDATES = ("message", "callback_query")
INVALID_BUTTON = "This button is not valid."
WORKING = "Working on it…"
FAILED = "Something went wrong while handling this button; check the chat for what was done."
_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")
#: One menu to set: the scope, its commands, and the commands shown there without it (``None``: none).
MenuPlan: TypeAlias = "list[tuple[BotCommandScope, list[TelegramCommand], list[TelegramCommand] | None]]"


def chat_user(user: TgUser) -> ChatUser:
    """The platform identity of a Telegram user (``from`` of an update)."""
    return ChatUser(str(user.id), user.full_name, user.username)


class TelegramBot:
    """Connects an :class:`~milpa_chat.chat.Assistant` to Telegram.

    ``base_url`` points PTB at another Bot API server (a self-hosted one, or
    :class:`milpa_chat.testing.BotApiServer` in tests); ``base_file_url`` is derived from it when it ends
    in ``/bot``. ``webhook_secret`` (1–256 of ``A-Z a-z 0-9 _ -``) is the secret token webhook
    deliveries must carry; one is generated when webhook mode starts without it. ``answer_within``:
    seconds after which a tap the assistant has not answered yet is answered "Working on it…".
    ``sweep_interval``: seconds between expiry sweeps (``None``: no sweeper). ``configure`` receives
    the ``ApplicationBuilder`` before it is built (persistence, rate limiter, timeouts...).
    ``command_menu``: keep the bot's command menu in sync on start (``True``), with a projector of
    your own, or not at all (``False``).
    """

    def __init__(
        self,
        assistant: Assistant,
        token: str,
        base_url: str | None = None,
        *,
        base_file_url: str | None = None,
        webhook_secret: str | None = None,
        answer_within: float = 1.0,
        sweep_interval: float | None = 15.0,
        renderer: TelegramRenderer | None = None,
        configure: Callable[[Builder], Builder] | None = None,
        command_menu: TelegramCommandProjector | bool = True,
    ) -> None:
        if not token or ":" not in token:
            got = "an empty token" if not token else "a token without ':'"  # never echo a secret
            raise ValueError(f"TelegramBot needs the bot token @BotFather gave you (token='123456:ABC...'), got {got}")
        if webhook_secret is not None and not _SECRET.fullmatch(webhook_secret):
            raise ValueError(
                "webhook_secret must be 1-256 characters of A-Z, a-z, 0-9, '_' and '-' (Telegram's rule); "
                "generate one with secrets.token_urlsafe(32)"
            )
        self.assistant = assistant
        self.webhook_secret = webhook_secret
        self.answer_within = answer_within
        self.sweep_interval = sweep_interval
        self.command_menu = command_menu
        self.application: App = self._build(token, base_url, base_file_url, configure)
        self.transport = TelegramTransport(self.application.bot, renderer=renderer)
        assistant.attach(self.transport)
        self._sweeper: asyncio.Task[None] | None = None
        self._late_answers: set[asyncio.Future[bool]] = set()
        self._started = False

    def _build(
        self, token: str, base_url: str | None, base_file_url: str | None,
        configure: Callable[[Builder], Builder] | None,
    ) -> App:
        builder: Builder = Application.builder().token(token).concurrent_updates(True)
        if base_url is not None:
            builder = builder.base_url(base_url)
            if base_file_url is None and base_url.endswith("/bot"):
                base_file_url = base_url[: -len("/bot")] + "/file/bot"
        if base_file_url is not None:
            builder = builder.base_file_url(base_file_url)
        builder = builder.post_init(self._post_init).post_stop(self._post_stop)
        if configure is not None:
            builder = configure(builder)
        app: App = builder.build()
        app.add_handler(MessageHandler(filters.UpdateType.MESSAGE & filters.TEXT, self._on_message))
        app.add_handler(CallbackQueryHandler(self._on_callback))
        app.add_error_handler(self._on_error)
        return app

    # ------------------------------------------------------------ embedding
    async def start(self, *, polling: bool = True, poll_timeout: float = 10.0,
                    drop_pending_updates: bool = False) -> None:
        """Initialize and start the application and the expiry sweeper; then poll for updates unless
        ``polling=False`` (for :meth:`start_webhook`, or when you feed ``application.update_queue``)."""
        if not self._started:
            await self.application.initialize()
            await self.application.start()
            self._started = True
            self._start_sweeper()
            await self.sync_commands()
        if polling:
            await self._updater().start_polling(
                timeout=int(poll_timeout), allowed_updates=ALLOWED_UPDATES, drop_pending_updates=drop_pending_updates)

    async def start_webhook(
        self, webhook_url: str, *, listen: str = "127.0.0.1", port: int = 8443, url_path: str = "telegram",
        drop_pending_updates: bool = False, max_connections: int = 40,
    ) -> None:
        """Start, register ``webhook_url`` with Telegram and serve it on ``listen:port/url_path`` with PTB's
        webhook server (tornado). Deliveries without the right secret token are refused with 403."""
        await self.start(polling=False)
        await self._updater().start_webhook(
            listen=listen, port=port, url_path=url_path, webhook_url=webhook_url, secret_token=self._secret(),
            allowed_updates=ALLOWED_UPDATES, drop_pending_updates=drop_pending_updates,
            max_connections=max_connections,
        )

    async def stop(self) -> None:
        """Stop fetching updates, let running handlers finish, stop the sweeper and shut down."""
        if not self._started:
            return
        updater = self.application.updater
        if updater is not None and updater.running:
            await updater.stop()
        await self.application.stop()
        await self._stop_sweeper()
        await self.application.shutdown()
        self._started = False

    async def __aenter__(self) -> TelegramBot:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # ------------------------------------------------------------ running
    def run_polling(self, *, poll_timeout: float = 10.0, drop_pending_updates: bool = False) -> None:
        """Poll until Ctrl-C / SIGTERM (PTB owns the event loop)."""
        self.application.run_polling(timeout=int(poll_timeout), allowed_updates=ALLOWED_UPDATES,
                                     drop_pending_updates=drop_pending_updates)

    def run_webhook(self, webhook_url: str, *, listen: str = "0.0.0.0", port: int = 8443,
                    url_path: str = "telegram", drop_pending_updates: bool = False) -> None:
        """Serve the webhook until Ctrl-C / SIGTERM (PTB owns the event loop)."""
        self.application.run_webhook(
            listen=listen, port=port, url_path=url_path, webhook_url=webhook_url, secret_token=self._secret(),
            allowed_updates=ALLOWED_UPDATES, drop_pending_updates=drop_pending_updates,
        )

    def _secret(self) -> str:
        if self.webhook_secret is None:
            self.webhook_secret = secrets.token_urlsafe(32)
        return self.webhook_secret

    def _updater(self) -> Any:
        if self.application.updater is None:
            raise RuntimeError("this application was built without an Updater (configure=... removed it); "
                               "feed updates through application.update_queue instead")
        return self.application.updater

    async def _post_init(self, application: App) -> None:
        self._start_sweeper()
        await self.sync_commands()

    # ------------------------------------------------------------ command menu
    def _projector(self) -> TelegramCommandProjector | None:
        if self.command_menu is False:
            return None
        if self.command_menu is True:
            from milpa_chat.command.projectors import TelegramCommandProjector

            self.command_menu = TelegramCommandProjector()
        return self.command_menu

    def menu_plan(self) -> MenuPlan:
        """Every scope's menu from the registry and the identities (what :meth:`sync_commands` sets)."""
        projector = self._projector()
        if projector is None:
            return []
        ids, registry = self.assistant.identities, self.assistant.registry

        def menu(scopes: tuple[str, ...]) -> list[TelegramCommand]:
            return projector.menu(registry, ToolContext("telegram:menu", "telegram", scopes))

        default = menu(tuple(ids.default_scopes))
        plan: MenuPlan = [(BotCommandScopeDefault(), default, None)]
        users = _telegram_users(ids.users)
        plan += [(BotCommandScopeChat(u), menu(ids.scopes_for("telegram", ChatUser(str(u)), str(u))), default)
                 for u in users]
        for chat in ids.approver_chats("telegram"):
            if not _is_int(chat):
                log.info("Approver chat %r is not a Telegram chat id; it gets no command menu", chat)
                continue
            in_chat = menu(ids.scopes_for("telegram", ChatUser(""), chat))
            plan.append((BotCommandScopeChat(int(chat)), in_chat, default))
            plan += [(BotCommandScopeChatMember(int(chat), u),
                      menu(ids.scopes_for("telegram", ChatUser(str(u)), chat)), in_chat) for u in users]
        return plan

    async def sync_commands(self) -> int:
        """Set the command menu of every scope (``setMyCommands``); returns how many menus were set.

        A private chat or approver chat whose menu equals the default is deleted (so an earlier menu
        goes); a member's menu equal to the chat's is not set. A refusal is logged, never raised.
        """
        done = 0
        for scope, commands, fallback in self.menu_plan():
            same = fallback is not None and commands == fallback
            if same and isinstance(scope, BotCommandScopeChatMember):
                continue
            try:
                if same:
                    await self.application.bot.delete_my_commands(scope=scope)
                else:
                    await self.application.bot.set_my_commands(
                        [BotCommand(c.command, c.description) for c in commands], scope=scope)
                    done += 1
            except Exception as exc:  # the menu is a convenience: the bot runs without it
                log.warning("Could not set the Telegram command menu of %s: %s: %s", _scope_text(scope),
                            type(exc).__name__, exc)
        return done

    async def _post_stop(self, application: App) -> None:
        await self._stop_sweeper()

    def _start_sweeper(self) -> None:
        if self.sweep_interval is not None and self._sweeper is None:
            self._sweeper = asyncio.create_task(self.assistant.run_sweeper(self.sweep_interval),
                                                name="milpa-approval-sweeper")

    async def _stop_sweeper(self) -> None:
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper

    # ------------------------------------------------------------ handlers
    async def _on_message(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message, user = update.message, update.effective_user
        if message is None or message.text is None or user is None or user.is_bot:
            return
        if message.chat.type != "private" and not self._addressed(message):
            return  # group chatter that is not for the bot
        inbound = Inbound(
            "telegram", str(message.chat.id), chat_user(user), text=message.text,
            delivery_id=str(update.update_id), chat_type=message.chat.type, raw=update,
        )
        await self.assistant.handle(inbound, self.transport)

    def _addressed(self, message: TgMessage) -> bool:
        text = message.text or ""
        if text.startswith("/"):
            return True
        reply = message.reply_to_message
        if reply is not None and reply.from_user is not None and reply.from_user.id == self.application.bot.id:
            return True
        username = self.transport.bot_username
        return username is not None and f"@{username.lower()}" in text.lower()

    async def _on_callback(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        query = update.callback_query
        if query is None:
            return
        inbound = _tap(update, query)
        if inbound is None:
            await self.transport.answer_query(query.id, INVALID_BUTTON, alert=True)
            return
        if self.answer_within <= 0:
            await self.transport.answer_query(query.id, WORKING)
            timer = None
        else:  # a spinner must not outlive answer_within, whatever the assistant is doing
            timer = asyncio.get_running_loop().call_later(self.answer_within, self._answer_late, query.id)
        try:
            await self.assistant.handle(inbound, self.transport)
        except Exception:
            await self.transport.answer_query(query.id, FAILED, alert=True)
            raise
        finally:
            if timer is not None:
                timer.cancel()
        await self.transport.answer_query(query.id)  # every query is answered once, also when ignored

    def _answer_late(self, query_id: str) -> None:
        if not self.transport.answered(query_id):
            task = asyncio.ensure_future(self.transport.answer_query(query_id, WORKING))
            self._late_answers.add(task)
            task.add_done_callback(self._late_answers.discard)

    async def _on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        update_id = update.update_id if isinstance(update, Update) else None
        log.error("error while handling Telegram update %s", update_id, exc_info=context.error)


def _scope_text(scope: BotCommandScope) -> str:
    """``the default scope``, ``chat 1001``, ``member 1001 of chat -500``."""
    if isinstance(scope, BotCommandScopeChatMember):
        return f"member {scope.user_id} of chat {scope.chat_id}"
    if isinstance(scope, BotCommandScopeChat):
        return f"chat {scope.chat_id}"
    return "the default scope"


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


def _telegram_users(users: Mapping[str, object]) -> list[int]:
    """The user ids of ``telegram:<id>`` principals (each a private chat of that id)."""
    ids = [key.removeprefix("telegram:") for key in users if key.startswith("telegram:")]
    for odd in (i for i in ids if not i.isdigit()):
        log.info("Identity telegram:%s is not a Telegram user id; it gets no command menu of its own", odd)
    return [int(i) for i in ids if i.isdigit()]


def _tap(update: Update, query: CallbackQuery) -> Inbound | None:
    """A button tap as an ``Inbound``, or ``None`` for data no milpa button produced (or no message)."""
    message = query.message
    if message is None or query.data is None:
        return None
    try:
        action, ref = parse_callback_data(query.data)
    except ValueError:
        return None
    return Inbound(
        "telegram", str(message.chat.id), chat_user(query.from_user), action=action, ref=ref,
        delivery_id=str(update.update_id), message_id=str(message.message_id), chat_type=message.chat.type,
        raw=query,
    )
