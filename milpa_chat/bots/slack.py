"""``SlackBot``: an :class:`~milpa_chat.chat.Assistant` in Slack through slack-bolt (extra ``slack``).

::

    bot = SlackBot(assistant, bot_token="xoxb-…", signing_secret="…")
    bot.start(port=3000)                      # HTTP: POST /slack/events (commands, events, interactivity)
    # or: uvicorn with ``bot.asgi``; or Socket Mode: SlackBot(..., app_token="xapp-…").start_socket_mode()

What it listens to: the slash command ``/milpa`` (``/milpa tools``, ``/milpa help``, ``/milpa <tool> args``;
help and tools list the subcommands the person's scopes may call, from
:class:`~milpa_chat.command.SlackSubcommandProjector`, see :mod:`milpa_chat.bots.slack_menu`),
``app_mention`` events and direct messages (``message.im``), and ``block_actions`` of every button the
renderers draw (``action_id`` ``milpa:…``). Every request is acknowledged at once (well within Slack's 3
seconds) and the work continues after the ack in a task of the bot's own; ``await bot.drain()`` waits for it.
Who acted is the Slack user of the request (``slack:<team>:<user>``), never a button's value. Slack's retries
and repeated deliveries are ignored through the store (see :mod:`milpa_chat.bots.slack_inbound`).
With ``pane=True`` it also serves Slack's assistant pane through bolt's ``AsyncAssistant`` (suggested prompts
from the person's tools, statuses while the model or a tool works, a title per thread; see
:mod:`milpa_chat.bots.slack_pane`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from milpa_chat._extras import require
from milpa_chat.bots.slack_edit import CALLBACK_ID, REASON_ID, field_errors, submitted
from milpa_chat.bots.slack_guard import guarded_verification
from milpa_chat.bots.slack_inbound import (
    SURFACE,
    _team,
    action_inbound,
    command_inbound,
    event_inbound,
    tap_delivery_id,
)
from milpa_chat.bots.slack_menu import MenuCommands
from milpa_chat.bots.slack_people import SlackPeople
from milpa_chat.bots.slack_serving import SlackServing
from milpa_chat.bots.slack_transport import SlackTransport
from milpa_chat.chat.inbound import ChatUser, Inbound
from milpa_chat.chat.routes import APPROVAL_ACTIONS
from milpa_chat.renderers.model import parse_callback_data

if TYPE_CHECKING:
    from slack_bolt.async_app import AsyncApp, AsyncAssistant
    from slack_sdk.web.async_client import AsyncWebClient

    from milpa_chat.bots.slack_pane import SlackPane
    from milpa_chat.chat.assistant import Assistant
    from milpa_chat.command.projectors import SlackSubcommandProjector

__all__ = ["SlackBot", "SlackTransport"]

log = logging.getLogger("milpa_chat.bots.slack")

#: Buttons drawn by the Slack renderer have ``action_id`` ``milpa:<action>:<n>``.
ACTION_IDS = re.compile(r"^milpa:")
#: Taps the assistant de-duplicates in its memory (``Assistant._first_delivery``): decisions and pages; and how
#: many of their delivery ids a bot remembers to drop a redelivery before it starts a task (as many as the
#: assistant keeps).
TAPS_IN_MEMORY = APPROVAL_ACTIONS | {"page"}
REMEMBERED_TAPS = 10_000
Listener = Callable[..., Awaitable[None]]


class SlackBot(SlackServing):
    """Runs ``assistant`` in one Slack workspace.

    ``bot_token``: the Bot User OAuth Token (``xoxb-…``). ``signing_secret``: verifies that HTTP requests
    come from Slack (required for HTTP mode; bolt's verification is always on). ``base_url``: the Web API
    root (``https://slack.com/api/`` unless given; tests point it at a local server). ``app_token``: an
    app-level token (``xapp-…``, scope ``connections:write``) for Socket Mode. ``command``: the slash
    command's name. ``notices``: also show progress answers to taps ("Confirmed — running it now.",
    "Page 2") as ephemeral messages; by default only refusals and errors are (the card itself shows
    progress). ``sweep_interval``: how often pending approvals are checked for expiry while serving
    (``None``: no sweeper, when another part of your app runs :meth:`Assistant.run_sweeper`).
    ``rate_limit_retries``: how often a Web API call answered 429 is retried after ``Retry-After``.
    ``pane``: also serve Slack's assistant pane (the app needs the "Agents & AI Apps" feature, the
    ``assistant:write`` scope and the ``assistant_thread_started``, ``assistant_thread_context_changed`` and
    ``message.im`` events); ``True`` adds a bolt ``AsyncAssistant`` of the kit's own to the app, or pass your
    own ``AsyncAssistant`` for the kit to add its listeners to (see :mod:`milpa_chat.bots.slack_pane`).
    """

    def __init__(
        self,
        assistant: Assistant,
        bot_token: str | None = None,
        signing_secret: str | None = None,
        base_url: str | None = None,
        *,
        app: AsyncApp | None = None,
        app_token: str | None = None,
        command: str = "/milpa",
        path: str = "/slack/events",
        notices: bool = False,
        sweep_interval: float | None = 15.0,
        rate_limit_retries: int = 2,
        configure: Callable[[AsyncApp], object] | None = None,
        pane: bool | AsyncAssistant = False,
    ) -> None:
        require("slack_bolt", extra="slack", feature="SlackBot")
        require("aiohttp", extra="slack", feature="SlackBot")
        if app is None:
            _check_credentials(bot_token or "", signing_secret, app_token, command)
        else:
            _check_installed(bot_token, base_url, app_token, command)
        self.assistant = assistant
        self.app_token = app_token or None
        self.command = command
        self.path = path
        self.sweep_interval = sweep_interval
        self.owns_app = app is None
        if app is None:
            self.client: AsyncWebClient = _web_client(bot_token or "", base_url, rate_limit_retries)
            self.app: AsyncApp = _bolt_app(self.client, signing_secret or "")
            self.signing_secret = signing_secret or None
            guarded_verification(self.app)  # what the guard verified, bolt does not verify again
        else:
            self.app, self.client = app, app.client
            self.signing_secret = signing_secret or getattr(app, "_signing_secret", None) or None
        self.transport = SlackTransport(self.client, command=command, notices=notices)
        self.people = SlackPeople(self.client)
        self._menu: SlackSubcommandProjector | None = None
        assistant.attach(self.transport)
        # the menu is a route of the assistant's, asked first: de-duplicated (Slack's retries) like any delivery
        assistant.routes.insert(0, MenuCommands(assistant, self.transport, command, lambda: self.subcommands))
        self._tasks: set[asyncio.Task[None]] = set()
        self._taps: OrderedDict[str, None] = OrderedDict()  # delivery ids of taps de-duplicated in memory
        self._sweeper: asyncio.Task[None] | None = None
        self._fallbacks: list[object] = []
        self._register()
        #: The assistant pane, when served (``pane=``).
        self.pane: SlackPane | None = None
        if pane is not False:
            from milpa_chat.bots.slack_pane import SlackPane

            self.pane = SlackPane(self, middleware=None if pane is True else pane)
        if configure is not None:
            configure(self.app)

    @classmethod
    def install(cls, app: AsyncApp, assistant: Assistant, *, command: str = "/milpa", **options: Any) -> SlackBot:
        """Add the kit to an existing bolt ``AsyncApp`` (its client posts, its signing secret verifies):
        the slash command ``command``, the kit's buttons, and mentions and direct messages that none of
        your listeners takes; with ``pane=True`` (or your ``AsyncAssistant``) the assistant pane as well.
        Serve the app as you do (``app.start()``, an adapter, Socket Mode), or with this bot's serving
        methods; ``options``: as for the constructor."""
        return cls(assistant, app=app, command=command, **options)

    # ------------------------------------------------------------- listeners
    def _register(self) -> None:
        app = self.app
        # bolt tries listeners in order; button taps come in bursts, so their listener is checked first
        app.action(ACTION_IDS)(self._tap_listener())
        app.command(self.command)(self._listener(lambda body, _: command_inbound(body)))
        app.view(CALLBACK_ID)(self._edit_submitted)
        app.view(REASON_ID)(self._edit_submitted)
        listeners = _listeners(app)
        before = len(listeners)
        app.event("app_mention")(self._listener(lambda body, _: event_inbound(body)))
        app.event("message")(self._listener(lambda body, _: event_inbound(body)))
        self._fallbacks = listeners[before:]
        app.use(_fallbacks_last(listeners, self._fallbacks))

    def _listener(self, convert: Callable[[dict[str, Any], dict[str, Any] | None], Inbound | None]) -> Listener:
        async def listener(ack: Callable[[], Awaitable[None]], body: dict[str, Any], payload: dict[str, Any]) -> None:
            await ack()  # at once: the work below runs after Slack has its answer
            self._keep_alive()
            inbound = convert(body, payload)
            if inbound is not None:
                self.spawn(self._handle(inbound))

        return listener

    def _tap_listener(self) -> Listener:
        """A button's listener: a tap this process has handed to the assistant already, of a kind the assistant
        de-duplicates in memory (a decision, a page), is dropped here with no task started for it."""

        async def listener(ack: Callable[[], Awaitable[None]], body: dict[str, Any], payload: dict[str, Any]) -> None:
            await ack()  # at once: the work below runs after Slack has its answer
            action = payload or {}
            if self._redelivered(body, action):
                return
            self._keep_alive()
            inbound = self._action_inbound(body, action)
            if inbound is not None:
                if inbound.delivery_id is not None and inbound.action in TAPS_IN_MEMORY:
                    self._taps[inbound.delivery_id] = None
                    if len(self._taps) > REMEMBERED_TAPS:
                        self._taps.popitem(last=False)
                self.spawn(self._handle(inbound))

        return listener

    def _redelivered(self, body: dict[str, Any], action: dict[str, Any]) -> bool:
        """Whether this tap is one this bot handed to the assistant before and the assistant would drop now: the
        assistant keeps the last taps of decisions and pages in memory (:data:`REMEMBERED_TAPS` of them) and drops
        their redeliveries; the same rule here spares such a redelivery its inbound and a task, read from the
        request before anything else. Every other kind of tap is de-duplicated in the store by the assistant."""
        try:
            verb, _ = parse_callback_data(str(action.get("value") or ""))
        except ValueError:
            return False  # not our button: refused below, as every time
        key = tap_delivery_id(body, action) if verb in TAPS_IN_MEMORY else None
        if key is None or key not in self._taps:
            return False
        log.info("Ignoring redelivered %s update %s", SURFACE, key)
        return True

    async def _edit_submitted(
        self, ack: Callable[..., Awaitable[None]], body: dict[str, Any], view: dict[str, Any]
    ) -> None:
        """The Edit modal (or the reason to approve a high-risk request) submitted: amend (or approve) as the
        submitting user, then ack (errors per field keep it open); every copy of the card is edited, and an
        approved run runs, after the ack."""
        from milpa_chat.runtime.approval import ApprovalRefused

        self._keep_alive()
        ref, chat, texts = submitted(view)
        raw = body.get("user") or {}
        user = ChatUser(str(raw.get("id") or ""), str(raw.get("name") or ""), raw.get("username") or None, _team(body))
        inbound = await self._named(Inbound(SURFACE, chat, user, raw=body))
        ctx, editor = self.assistant.context_for(inbound), self.assistant.editor
        try:
            if view.get("callback_id") == REASON_ID:
                change = await editor.approve_with_reason(ctx, ref, texts.get("reason", ""), via=SURFACE, follow=False)
            else:
                change = await editor.submit(ctx, ref, texts, via=SURFACE, follow=False)
        except ApprovalRefused as exc:
            await ack(response_action="errors", errors=field_errors(exc, texts))
            return
        await ack()
        follower = self.assistant.approvals.hooks.follower
        if follower is not None:
            self.spawn(follower(change))

    def _action_inbound(self, body: dict[str, Any], action: dict[str, Any] | None) -> Inbound | None:
        inbound = action_inbound(body, action or {})
        if inbound is None:  # a button no card of ours carries
            self.spawn(self._refuse(body, "This button is not valid (it was not made by this app)."))
        return inbound

    def _keep_alive(self) -> None:
        """Share one HTTP session (keep-alive connections) among the Web API calls made on this event loop;
        without it slack_sdk opens a new session, and connection, for every call."""
        session = self.client.session
        if session is None or session.closed:
            import aiohttp

            self.client.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.client.timeout))

    def spawn(self, work: Awaitable[None]) -> None:
        """Run ``work`` after the ack, tracked so that :meth:`drain` can wait for it."""

        task = asyncio.get_running_loop().create_task(work if asyncio.iscoroutine(work) else _awaited(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Wait until the work of every request acknowledged so far is finished."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    @property
    def subcommands(self) -> SlackSubcommandProjector:
        """The projector of ``/milpa`` subcommands (``/milpa help`` and ``/milpa tools`` list from it)."""
        if self._menu is None:
            from milpa_chat.command.projectors import SlackSubcommandProjector

            self._menu = SlackSubcommandProjector(self.command)
        return self._menu

    async def _named(self, inbound: Inbound) -> Inbound:
        """The actor with the name Slack knows them by (cached ``users.info``), else as the request named them."""
        try:
            name = await self.people.name(inbound.user.id)
        except Exception as exc:  # a name is a courtesy: the request goes on without it
            log.debug("users.info failed: %s", exc)
            name = None
        if not name or name == inbound.user.name:
            return inbound
        return dataclasses.replace(inbound, user=dataclasses.replace(inbound.user, name=name))

    async def _handle(self, inbound: Inbound) -> None:
        try:
            if self.pane is not None and inbound.kind == "action":  # a tap in a thread of the assistant pane
                inbound = await self.pane.thread_of(inbound)
            inbound = await self._named(inbound)
            await self.assistant.handle(inbound, self.transport)
        except Exception as exc:  # naming the actor failed (the assistant itself never raises)
            log.exception("handling Slack %s %s failed", inbound.kind, inbound.delivery_id)
            await self.transport.report_failure(inbound, exc)

    async def _refuse(self, body: Mapping[str, Any], text: str) -> None:
        user = body.get("user") or {}
        channel = (body.get("container") or {}).get("channel_id") or (body.get("channel") or {}).get("id")
        inbound = Inbound(SURFACE, str(channel or ""), ChatUser(str(user.get("id", ""))), action="", ref="", raw=body)
        try:
            await self.transport.answer(inbound, text, alert=True)
        except Exception:
            log.exception("could not refuse an unknown button")

    # --------------------------------------------------------------- sweeper
    def start_sweeper(self) -> None:
        """Expire overdue approvals every ``sweep_interval`` seconds (started by every serving method; none
        when ``sweep_interval`` is ``None``)."""
        if self.sweep_interval is None:
            return
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.get_running_loop().create_task(self.assistant.run_sweeper(self.sweep_interval))

    async def close(self) -> None:
        """Stop the sweeper, wait for work in progress and close the Web API session."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
            self._sweeper = None
        await self.drain()
        if self.pane is not None:
            self.pane.close()
        session, self.client.session = self.client.session, None
        if session is not None:
            await session.close()


async def _awaited(work: Awaitable[None]) -> None:
    await work


def _check_credentials(bot_token: str, signing_secret: str | None, app_token: str | None, command: str) -> None:
    if not bot_token:
        raise ValueError(
            "SlackBot needs bot_token: the Bot User OAuth Token (xoxb-…) from your app's "
            "'OAuth & Permissions' page (SLACK_BOT_TOKEN)."
        )
    if not signing_secret and not app_token:
        raise ValueError(
            "SlackBot needs signing_secret (your app's 'Basic Information' -> Signing Secret, SLACK_SIGNING_SECRET) "
            "to verify HTTP requests, or app_token (xapp-…, SLACK_APP_TOKEN) to run in Socket Mode."
        )
    if app_token and not app_token.startswith("xapp-"):
        raise ValueError(f"app_token must be an app-level token starting with 'xapp-', got {app_token[:5]!r}…")
    if not re.fullmatch(r"/[a-z0-9_\-]{1,31}", command):
        raise ValueError(f"command must look like '/milpa' (lower case, at most 32 characters), got {command!r}")


def _check_installed(bot_token: str | None, base_url: str | None, app_token: str | None, command: str) -> None:
    if bot_token is not None or base_url is not None:
        raise ValueError(
            "SlackBot.install uses the app's own client: give the token and base_url to your AsyncApp "
            "(AsyncApp(client=AsyncWebClient(token=..., base_url=...))), not to the bot"
        )
    _check_credentials("xoxb-installed", "installed", app_token, command)


def _fallbacks_last(listeners: list[Any], mine: list[Any]) -> Any:
    """Global middleware: the kit's mention and message listeners are tried after every other listener,
    so a listener of yours that matches an event (``@app.message("hello")``) takes it. A bolt
    ``AsyncMiddleware`` object rather than a function, so bolt calls it directly instead of matching its
    arguments by name on every request."""
    from slack_bolt.middleware.async_middleware import AsyncMiddleware

    class FallbacksLast(AsyncMiddleware):
        async def async_process(self, *, req: Any, resp: Any, next: Callable[[], Awaitable[Any]]) -> Any:
            if mine and listeners[-len(mine) :] != mine:
                listeners[:] = [*(entry for entry in listeners if entry not in mine), *mine]
            return await next()

    return FallbacksLast()


def _listeners(app: AsyncApp) -> list[Any]:
    """The app's listeners in the order bolt tries them."""
    listeners: list[Any] = app._async_listeners  # bolt keeps them in this list and has no public accessor
    return listeners


def _web_client(token: str, base_url: str | None, rate_limit_retries: int) -> AsyncWebClient:
    from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler, async_default_handlers
    from slack_sdk.web.async_client import AsyncWebClient

    handlers = [*async_default_handlers(), AsyncRateLimitErrorRetryHandler(max_retry_count=rate_limit_retries)]
    if base_url is None:
        return AsyncWebClient(token=token, retry_handlers=handlers)
    return AsyncWebClient(
        token=token, base_url=base_url if base_url.endswith("/") else base_url + "/", retry_handlers=handlers
    )


def _bolt_app(client: AsyncWebClient, signing_secret: str) -> AsyncApp:
    from slack_bolt.async_app import AsyncApp

    # process_before_response: the listener's ack is the HTTP answer as soon as the listener returns, and
    # the listener returns right after ack() (the work is our own task), so nothing waits on bolt's polling.
    # bolt reads SLACK_BOT_TOKEN itself and warns that it is unused beside our client: that warning is ours to drop.
    with _dropping(logging.getLogger("slack_bolt.AsyncApp"), "`token` will be unused"):
        return AsyncApp(
            client=client,
            signing_secret=signing_secret,
            request_verification_enabled=True,
            process_before_response=True,
        )


@contextlib.contextmanager
def _dropping(logger: logging.Logger, text: str) -> Iterator[None]:
    """Drop ``logger``'s records containing ``text`` inside the block."""

    def keep(record: logging.LogRecord) -> bool:
        return text not in record.getMessage()

    logger.addFilter(keep)
    try:
        yield
    finally:
        logger.removeFilter(keep)
