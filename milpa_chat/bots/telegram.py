"""``TelegramBot``: an :class:`~milpa_chat.chat.Assistant` on Telegram through python-telegram-bot v22.

::

    bot = TelegramBot(assistant, token=os.environ["TELEGRAM_TOKEN"])
    bot.run_polling()                                   # owns the event loop

    async with TelegramBot(assistant, token=...) as bot:  # inside a loop you own: polls until the block ends
        ...

    bot = TelegramBot(assistant, token=..., webhook_secret="long-random-secret")
    await bot.start_webhook("https://bot.example.org/telegram", port=8443)

    application = ApplicationBuilder().token(...).build()          # your own PTB application
    application.add_handler(CommandHandler("ping", ping))
    bot = TelegramBot.install(application, assistant)               # the kit beside your handlers
    application.run_polling(allowed_updates=bot.allowed_updates)

The kit claims only its own updates (see :mod:`milpa_chat.bots.telegram_routing`): taps on its
buttons and the commands the assistant knows, in handler group ``group``; unknown commands, free text
and buttons nobody claims in ``fallback_group``, and only when no other handler would take them.
Who acted is Telegram's ``from`` of the update, never the button data. Updates are processed
concurrently; each callback query is answered once, within ``answer_within`` seconds; the assistant's
expiry sweeper runs next to the bot. Webhook mode always checks Telegram's secret-token header.

python-telegram-bot is imported when a bot is made, not when this module is imported. On start the
bot's command menu is set from the registry (:mod:`milpa_chat.bots.telegram_menu`).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import re
import secrets
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from milpa_chat._extras import require
from milpa_chat.bots.errors import BotStartupError, telegram_startup_error
from milpa_chat.bots.telegram_handlers import TelegramHandlers, chat_user, known_commands
from milpa_chat.bots.telegram_menu import MenuPlan, menu_plan, merge_commands, own_commands, sync_menu
from milpa_chat.bots.telegram_routing import allowed_updates
from milpa_chat.bots.telegram_webhook import until_signalled
from milpa_chat.errors import MissingExtraError

if TYPE_CHECKING:
    from telegram.ext import Application, ApplicationBuilder, BaseHandler

    from milpa_chat.bots.telegram_transport import TelegramTransport
    from milpa_chat.bots.telegram_webhook import WebhookServer
    from milpa_chat.chat.assistant import Assistant
    from milpa_chat.command.projectors import TelegramCommand, TelegramCommandProjector
    from milpa_chat.renderers.telegram import TelegramRenderer

__all__ = ["DEFAULT_LISTEN", "BotStartupError", "TelegramBot", "TelegramTransport", "chat_user"]

if importlib.util.find_spec("telegram") is None:  # fail at import with the install hint, without importing PTB
    raise MissingExtraError("TelegramBot", "telegram", "telegram")

log = logging.getLogger("milpa_chat.bots.telegram")

App: TypeAlias = "Application[Any, Any, Any, Any, Any, Any]"
Builder: TypeAlias = "ApplicationBuilder[Any, Any, Any, Any, Any, Any]"
Hook: TypeAlias = "Callable[[App], Awaitable[None]] | None"
#: Where webhook modes listen unless told (``start_webhook`` and ``run_webhook`` alike).
DEFAULT_LISTEN = "0.0.0.0"
_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")
_EVERY_GAME = re.compile(r"")  # matches every game's short name (a match object, so PTB counts it as taken)


def __getattr__(name: str) -> Any:
    if name == "TelegramTransport":  # imports python-telegram-bot
        from milpa_chat.bots.telegram_transport import TelegramTransport

        return TelegramTransport
    raise AttributeError(f"module 'milpa_chat.bots.telegram' has no attribute {name!r}")


class TelegramBot(TelegramHandlers):
    """Connects an :class:`~milpa_chat.chat.Assistant` to Telegram.

    ``base_url`` points PTB at another Bot API server (a self-hosted one, or
    :class:`milpa_chat.testing.BotApiServer` in tests); ``base_file_url`` is derived from it when it ends
    in ``/bot``. ``webhook_secret`` (1–256 of ``A-Z a-z 0-9 _ -``) is the secret token webhook
    deliveries must carry; one is generated when webhook mode starts without it. ``answer_within``:
    seconds after which a tap the assistant has not answered yet is answered "Working on it…".
    ``sweep_interval``: seconds between expiry sweeps (``None``: no sweeper). ``configure`` receives
    the ``ApplicationBuilder`` before it is built (persistence, rate limiter, timeouts...).
    ``command_menu``: keep the bot's command menu in sync on start (``True``), with a projector of
    your own, or not at all (``False``). ``group``: the handler group of the kit's handlers;
    ``fallback_group`` (default ``group + 1``): the group of its fallbacks. ``allowed_updates``:
    what to ask Telegram for (default: what the kit and every handler of the application need).
    ``application``: an application of your own instead of a token (see :meth:`install`).
    """

    def __init__(
        self,
        assistant: Assistant,
        token: str | None = None,
        base_url: str | None = None,
        *,
        application: App | None = None,
        group: int = 0,
        fallback_group: int | None = None,
        allowed_updates: Sequence[str] | None = None,
        base_file_url: str | None = None,
        webhook_secret: str | None = None,
        answer_within: float = 1.0,
        sweep_interval: float | None = 15.0,
        renderer: TelegramRenderer | None = None,
        configure: Callable[[Builder], Builder] | None = None,
        command_menu: TelegramCommandProjector | bool = True,
    ) -> None:
        require("telegram", extra="telegram", feature="TelegramBot")
        _check_options(token, application, configure, webhook_secret, group, fallback_group)
        self.assistant = assistant
        self.webhook_secret = webhook_secret
        self.answer_within = answer_within
        self.sweep_interval = sweep_interval
        self.command_menu = command_menu
        self.group = group
        self.fallback_group = group + 1 if fallback_group is None else fallback_group
        self._allowed = list(allowed_updates) if allowed_updates is not None else None
        self.owns_application = application is None
        if application is None:
            assert token is not None
            application = _build(token, base_url, base_file_url, configure)
        self.application: App = application
        from milpa_chat.bots.telegram_transport import TelegramTransport

        self.transport = TelegramTransport(self.application.bot, renderer=renderer)
        assistant.attach(self.transport)
        self._sweeper: asyncio.Task[None] | None = None
        self._late_answers: set[asyncio.Future[bool]] = set()
        self._started = False
        self._webhook: WebhookServer | None = None
        self._ours: set[str] = set()  # what start() started and stop() stops: "initialized", "running", "updater"
        self._handlers: list[BaseHandler[Any, Any, Any]] = []
        self._add_handlers()
        self._chain_hooks()

    @classmethod
    def install(
        cls,
        application: App,
        assistant: Assistant,
        *,
        group: int = 0,
        fallback_group: int | None = None,
        **options: Any,
    ) -> TelegramBot:
        """Add the kit to an existing PTB ``Application``: its handlers in ``group`` (its fallbacks in
        ``fallback_group``, default ``group + 1``), the sweeper and the command menu on the application's
        ``post_init`` (your own hooks still run). Run the application as usual, asking for
        ``allowed_updates=bot.allowed_updates``. ``options``: as for the constructor."""
        return cls(assistant, application=application, group=group, fallback_group=fallback_group, **options)

    def _add_handlers(self) -> None:
        from telegram.ext import CallbackQueryHandler, MessageHandler, filters

        text = filters.UpdateType.MESSAGE & filters.TEXT
        kit = [
            CallbackQueryHandler(self._on_callback, pattern=self._claims_data),
            MessageHandler(text & known_commands(self), self._on_message),
        ]
        # Every other tap, game queries too; a kit button's tap was the kit's handler's, so the fallback does not
        # even start for it (one handler call a tap, not two).
        strays = CallbackQueryHandler(self._on_stray_tap, pattern=self._not_claimed, game_pattern=_EVERY_GAME)
        fallbacks = [MessageHandler(text, self._on_fallback_message), strays]
        self.application.add_handlers(kit, group=self.group)
        self.application.add_handlers(fallbacks, group=self.fallback_group)
        self._handlers = [*kit, *fallbacks]
        if self.owns_application:
            self.application.add_error_handler(self._on_error)

    def _chain_hooks(self) -> None:
        """Run the sweeper and set the menu in ``post_init``, stop the sweeper in ``post_stop``; hooks the
        application already had run as well."""
        app = self.application
        app.post_init = _chained(self._post_init, app.post_init)
        app.post_stop = _chained(self._post_stop, app.post_stop)

    @property
    def allowed_updates(self) -> list[str]:
        """The update types to ask Telegram for: the kit's and those of every other handler of the application."""
        if self._allowed is not None:
            return list(self._allowed)
        every = [h for group in self.application.handlers.values() for h in group]
        return allowed_updates(every, kit=self._handlers)

    # ------------------------------------------------------------ embedding
    async def start(
        self, *, polling: bool = True, poll_timeout: float = 10.0, drop_pending_updates: bool = False
    ) -> None:
        """Initialize and start the application and the expiry sweeper; then poll for updates unless
        ``polling=False`` (for :meth:`start_webhook`, or when you feed ``application.update_queue``).
        A rejected token or an unreachable Bot API raises :class:`BotStartupError`."""
        if not self._started:
            await self._initialize_bot()
            app = self.application
            self._ours = set() if getattr(app, "_initialized", False) else {"initialized"}
            await app.initialize()
            if not app.running:
                await app.start()
                self._ours.add("running")
            self._started = True
            self._start_sweeper()
            await self.sync_commands()
        if polling:
            await self._updater().start_polling(
                timeout=int(poll_timeout),
                allowed_updates=self.allowed_updates,
                drop_pending_updates=drop_pending_updates,
            )
            self._ours.add("updater")
            log.info("Telegram bot @%s is polling %s for updates", self.transport.bot_username, self.api_root)

    async def start_webhook(
        self,
        webhook_url: str,
        *,
        listen: str = DEFAULT_LISTEN,
        port: int = 8443,
        url_path: str = "telegram",
        drop_pending_updates: bool = False,
        max_connections: int = 40,
    ) -> None:
        """Start, serve ``listen:port/url_path`` (:class:`~milpa_chat.bots.telegram_webhook.WebhookServer`,
        tornado) and register ``webhook_url`` with Telegram. Deliveries without the right secret token are
        refused with 403, bodies that are not an ``Update`` with 400. :meth:`stop` stops accepting deliveries
        and finishes the updates already accepted."""
        from milpa_chat.bots.telegram_webhook import WebhookServer

        await self.start(polling=False)
        server = WebhookServer(self.application, url_path=url_path, secret=self._secret())
        await server.start(listen, port)
        self._webhook = server
        await self.application.bot.set_webhook(
            webhook_url,
            secret_token=self._secret(),
            allowed_updates=self.allowed_updates,
            drop_pending_updates=drop_pending_updates,
            max_connections=max_connections,
        )
        log.info(
            "Telegram webhook listening on http://%s:%s/%s (registered as %s)",
            listen,
            port,
            url_path.strip("/"),
            webhook_url,
        )

    async def stop(self) -> None:
        """Stop what :meth:`start` started — fetching updates, the application (running handlers finish), the
        sweeper — and shut down what it initialized. An updater or application your own code started before is
        left running (stop it as you started it)."""
        if not self._started:
            return
        webhook, self._webhook = self._webhook, None
        if webhook is not None:
            await webhook.stop()
        updater, app = self.application.updater, self.application
        if "updater" in self._ours and updater is not None and updater.running:
            await updater.stop()
        if "running" in self._ours and app.running:
            await app.stop()
        await self._stop_sweeper()
        if "initialized" in self._ours:
            await app.shutdown()
        self._ours, self._started = set(), False

    async def __aenter__(self) -> TelegramBot:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # ------------------------------------------------------------ running
    def run_polling(self, *, poll_timeout: float = 10.0, drop_pending_updates: bool = False) -> None:
        """Poll until Ctrl-C / SIGTERM (PTB owns the event loop); a rejected token or an unreachable Bot
        API raises :class:`BotStartupError`."""
        self._running(
            lambda: f"Telegram bot @{self.transport.bot_username} polling {self.api_root} for updates (Ctrl-C to stop)",
            lambda: self.application.run_polling(
                timeout=int(poll_timeout),
                allowed_updates=self.allowed_updates,
                drop_pending_updates=drop_pending_updates,
            ),
        )

    def run_webhook(
        self,
        webhook_url: str,
        *,
        listen: str = DEFAULT_LISTEN,
        port: int = 8443,
        url_path: str = "telegram",
        drop_pending_updates: bool = False,
    ) -> None:
        """Serve the webhook (as :meth:`start_webhook`) until Ctrl-C / SIGTERM, then finish what was accepted.
        A port another program holds raises :class:`~milpa_chat._ports.PortInUseError` before anything starts."""
        from milpa_chat._ports import check_port

        check_port(listen, port, option="run_webhook(port=...)")
        self._running(
            lambda: (
                f"Telegram webhook listening on http://{listen}:{port}/{url_path.strip('/')} "
                f"(registered as {webhook_url}; Ctrl-C to stop)"
            ),
            lambda: asyncio.get_event_loop().run_until_complete(
                until_signalled(
                    self.start_webhook(
                        webhook_url,
                        listen=listen,
                        port=port,
                        url_path=url_path,
                        drop_pending_updates=drop_pending_updates,
                    ),
                    self.stop,
                )
            ),
        )

    def _running(self, line: Callable[[], str], run: Callable[[], None]) -> None:
        """Check the token on the loop PTB's ``run_*`` will use, say where the bot serves, then run."""
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
        loop.run_until_complete(self._initialize_bot())
        print(line(), flush=True)
        run()

    @property
    def api_root(self) -> str:
        """The Bot API this bot talks to, without its token (``https://api.telegram.org/bot<token>``)."""
        bot = self.application.bot
        return str(bot.base_url).replace(bot.token, "<token>")

    async def _initialize_bot(self) -> None:
        """``getMe`` before anything else: a rejected token or an unreachable Bot API is one
        :class:`BotStartupError` (PTB's own start-up would log a traceback that shows the token)."""
        bot = self.application.bot
        try:
            await bot.initialize()
        except Exception as exc:
            error = telegram_startup_error(exc, bot.base_url, bot.token)
            if error is None:
                raise
            await bot.shutdown()
            raise error from None

    def _secret(self) -> str:
        if self.webhook_secret is None:
            self.webhook_secret = secrets.token_urlsafe(32)
        return self.webhook_secret

    def _updater(self) -> Any:
        if self.application.updater is None:
            raise RuntimeError(
                "this application was built without an Updater (configure=... removed it); "
                "feed updates through application.update_queue instead"
            )
        return self.application.updater

    async def _post_init(self, application: App) -> None:
        self._start_sweeper()
        await self.sync_commands()

    async def _post_stop(self, application: App) -> None:
        await self._stop_sweeper()

    # ------------------------------------------------------------ command menu
    def _projector(self) -> TelegramCommandProjector | None:
        if self.command_menu is False:
            return None
        if self.command_menu is True:
            from milpa_chat.command.projectors import BUILTIN_COMMANDS, TelegramCommandProjector

            grants = (("grants", "Standing grants: what is allowed without asking"),) if self.assistant.grants else ()
            self.command_menu = TelegramCommandProjector(builtins=(*BUILTIN_COMMANDS, *grants))
        return self.command_menu

    def menu_plan(self) -> MenuPlan:
        """Every scope's menu from the registry and the identities (what :meth:`sync_commands` sets)."""
        projector = self._projector()
        return [] if projector is None else menu_plan(projector, self.assistant.registry, self.assistant.identities)

    async def sync_commands(self) -> int:
        """Set the command menu of every scope (``setMyCommands``); returns how many menus were set.

        A private chat or approver chat whose menu equals the default is deleted (so an earlier menu
        goes); a member's menu equal to the chat's is not set. A refusal is logged, never raised.
        """
        plan = self.menu_plan()
        own = await self._own_commands()
        if own:  # installed beside the application's own commands: they stay in every menu, after the kit's
            plan = [
                (scope, merge_commands(kit, own), None if shown is None else merge_commands(shown, own))
                for scope, kit, shown in plan
            ]
        return await sync_menu(self.application.bot, plan)

    async def _own_commands(self) -> list[TelegramCommand]:
        """The commands of the application's own ``CommandHandler``s (none when the kit built the application),
        described as the bot's current default menu describes them, else by their name."""
        from telegram.ext import CommandHandler

        if self.owns_application:
            return []
        names = [
            name
            for handlers in self.application.handlers.values()
            for h in handlers
            if isinstance(h, CommandHandler) and h not in self._handlers
            for name in sorted(h.commands)
        ]
        if not names:
            return []
        try:
            current = {c.command: c.description for c in await self.application.bot.get_my_commands()}
        except Exception as exc:  # the menu is a convenience: the names alone will do
            log.info("Could not read the bot's current command menu (%s); your commands are described by name", exc)
            current = {}
        return own_commands(names, current)

    def _start_sweeper(self) -> None:
        if self.sweep_interval is not None and self._sweeper is None:
            self._sweeper = asyncio.create_task(
                self.assistant.run_sweeper(self.sweep_interval), name="milpa-approval-sweeper"
            )

    async def _stop_sweeper(self) -> None:
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper


def _check_options(
    token: str | None,
    application: object,
    configure: object,
    webhook_secret: str | None,
    group: int,
    fallback_group: int | None,
) -> None:
    if application is not None:
        if token is not None or configure is not None:
            raise ValueError(
                "give TelegramBot either token= (it builds the application) or application= "
                "(yours, already built), not both; configure= only applies to a token"
            )
    elif not token or ":" not in token:
        got = "an empty token" if not token else "a token without ':'"  # never echo a secret
        raise ValueError(f"TelegramBot needs the bot token @BotFather gave you (token='123456:ABC...'), got {got}")
    if webhook_secret is not None and not _SECRET.fullmatch(webhook_secret):
        raise ValueError(
            "webhook_secret must be 1-256 characters of A-Z, a-z, 0-9, '_' and '-' (Telegram's rule); "
            "generate one with secrets.token_urlsafe(32)"
        )
    if fallback_group is not None and fallback_group <= group:
        raise ValueError(
            f"fallback_group ({fallback_group}) must come after group ({group}): the fallbacks "
            "answer what no other handler takes"
        )


def _build(
    token: str, base_url: str | None, base_file_url: str | None, configure: Callable[[Builder], Builder] | None
) -> App:
    from telegram.ext import Application

    builder: Builder = Application.builder().token(token).concurrent_updates(True)
    if base_url is not None:
        builder = builder.base_url(base_url)
        if base_file_url is None and base_url.endswith("/bot"):
            base_file_url = base_url[: -len("/bot")] + "/file/bot"
    if base_file_url is not None:
        builder = builder.base_file_url(base_file_url)
    if configure is not None:
        builder = configure(builder)
    app: App = builder.build()
    return app


def _chained(first: Callable[[App], Awaitable[None]], then: Hook) -> Callable[[App], Coroutine[Any, Any, None]]:
    async def hook(application: App) -> None:
        await first(application)
        if then is not None:
            await then(application)

    return hook
