"""The playground's world: both local platform servers, the real adapters, one assistant, one store.

Everything runs in one process on 127.0.0.1: the local Telegram Bot API server and the local Slack Web API
of :mod:`milpa_chat.testing`, the real :class:`~milpa_chat.bots.telegram.TelegramBot` (python-telegram-bot,
polling) and :class:`~milpa_chat.bots.slack.SlackBot` (slack-bolt over HTTP, requests signed as Slack signs
them) on one :class:`~milpa_chat.chat.Assistant` over an embedded SQLite store. People are simulated the way
the platforms would deliver them: a Telegram update, a signed slash command, event or button tap.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from milpa_chat.playground.agent import AgentSetup, start_agent

if TYPE_CHECKING:
    from milpa_chat.bots.slack import SlackBot
    from milpa_chat.bots.telegram import TelegramBot
    from milpa_chat.chat import Assistant
    from milpa_chat.store.base import Store
    from milpa_chat.testing import BotApiServer, SlackApiServer, SlackEvents

__all__ = [
    "DEFAULT_TOOLS",
    "PERSONAS",
    "SLACK_APPROVERS",
    "SLACK_WORK",
    "TELEGRAM_APPROVERS",
    "Persona",
    "PlaygroundError",
    "World",
]

DEFAULT_TOOLS = "milpa_chat.examples:PlaygroundTools"
#: Set (to anything) to try approving at scale in the playground (docs/approving-at-scale.md).
AT_SCALE_ENV = "MILPA_PLAYGROUND_AT_SCALE"
TEAM = "T0PLAY"
SLACK_TOKEN = "xoxb-playground"
SLACK_SECRET = "playground-signing-secret"
SLACK_WORK = "C0GENERAL"
SLACK_APPROVERS = "C0APPROVALS"
TELEGRAM_APPROVERS = -500
#: People here, and the tour, approve at machine speed: the check that a high-risk card was on screen long
#: enough to be read before it was approved (``Assistant(fast_approval=)``) is set below any such delay.
FAST_APPROVAL = 0.001


class PlaygroundError(ValueError):
    """The playground cannot start as asked; the message says what to change."""


@dataclass(frozen=True)
class Persona:
    """A person of the playground: one Telegram user and one Slack member, with a role."""

    key: str
    name: str
    role: str
    telegram_id: int
    slack_id: str

    @property
    def handle(self) -> str:
        return self.key

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "name": self.name, "role": self.role, "telegram_id": self.telegram_id,
                "slack_id": self.slack_id, "slack_dm": "D" + self.slack_id[1:]}  # fmt: skip


PERSONAS = (
    Persona("alice", "Alice", "requester", 1001, "U1001"),
    Persona("gus", "Gus", "read-only guest", 1003, "U1003"),
    Persona("maria", "Maria", "approver", 2001, "U2001"),
    Persona("mateo", "Mateo", "approver", 2002, "U2002"),
)

ROLES = {"alice": "writer", "maria": "manager", "mateo": "manager"}  # gus has the default scopes only
#: Who may do what: the example scopes, for both platforms' ids of the personas.
IDENTITIES: dict[str, Any] = {
    "roles": {"writer": ["notes:read", "notes:write", "payments:send"], "manager": ["notes:read", "payments:approve"]},
    "users": {
        **{f"telegram:{p.telegram_id}": [ROLES[p.key]] for p in PERSONAS if p.key in ROLES},
        **{f"slack:{TEAM}:{p.slack_id}": [ROLES[p.key]] for p in PERSONAS if p.key in ROLES},
    },
    "defaults": {"scopes": ["notes:read"]},
    "approvers": {"telegram": [str(TELEGRAM_APPROVERS)], "slack": [SLACK_APPROVERS]},
    # an undecided request past its policy's escalate_after also goes to Mateo, in his chats with the bot
    "escalation": {"telegram": ["2002"], "slack": ["D2002"]},
}


class Clock:
    """The store's clock: real time plus what the page moved it forward by (to watch approvals expire)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


@dataclass
class Modal:
    """A modal the Slack app opened (``views.open``) for the person whose click carried its ``trigger_id``."""

    id: str
    user: str
    closed: bool = False
    errors: dict[str, str] | None = None


class Modals:
    """The modals opened for the personas; ``version`` grows on every change (the feed reads it)."""

    def __init__(self) -> None:
        self.items: dict[str, Modal] = {}
        self.version = 0

    def changed(self) -> None:
        self.version += 1


class World:
    """Start with ``async with World() as world:``; ``world.telegram`` / ``world.slack_api`` are the servers."""

    def __init__(
        self,
        *,
        tools: str = DEFAULT_TOOLS,
        identities: str | Path | None = None,
        store: str | Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.tools_spec = tools
        self.identities_path = Path(identities) if identities is not None else None
        self.store_path = Path(store) if store is not None else None
        self.env = env
        self.clock = Clock()
        self.personas = {p.key: p for p in PERSONAS}
        self.modals = Modals()
        self.agent_setup: AgentSetup = AgentSetup(None, "")
        self._tmp: Path | None = None
        self._stack = contextlib.AsyncExitStack()
        self.store: Store
        self.assistant: Assistant
        self.telegram: BotApiServer
        self.slack_api: SlackApiServer
        self.slack: SlackEvents
        self.telegram_bot: TelegramBot
        self.slack_bot: SlackBot

    # -- lifecycle ------------------------------------------------------------------------------
    async def __aenter__(self) -> World:
        try:
            await self._start()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _start(self) -> None:
        from milpa_chat.testing import BotApiServer, SlackApiServer

        self.assistant = await self._build_assistant()
        self.telegram = await self._stack.enter_async_context(
            BotApiServer(bot_first_name="Playground bot", bot_username="milpa_playground_bot")
        )
        members = [self._tg_user(p) for p in PERSONAS if p.role == "approver"]
        self.telegram.group(TELEGRAM_APPROVERS, "Approvers", members=members)
        channels = {SLACK_WORK: "general", SLACK_APPROVERS: "approvals"}
        self.slack_api = await self._stack.enter_async_context(
            SlackApiServer(SLACK_TOKEN, team_id=TEAM, team_name="Playground", channels=channels)
        )
        for persona in PERSONAS:  # users.info knows them, so cards name them as Slack shows them
            self.slack_api.add_user(persona.slack_id, persona.key, real_name=persona.name, display_name=persona.name)
            # everyone has opened the bot's chat and the app's DM: an escalation can reach Mateo there
            self.telegram.private_chat(self._tg_user(persona))
            self.slack_api.workspace.open_im(persona.slack_id)
        await self._start_bots()

    async def _start_bots(self) -> None:
        from milpa_chat.bots.slack import SlackBot
        from milpa_chat.bots.telegram import TelegramBot
        from milpa_chat.testing import SlackEvents, serve_bolt_app

        self.telegram_bot = TelegramBot(self.assistant, self.telegram.token, self.telegram.base_url, sweep_interval=2.0)
        await self.telegram_bot.start(poll_timeout=1)
        self._stack.push_async_callback(self.telegram_bot.stop)
        self.slack_bot = SlackBot(self.assistant, SLACK_TOKEN, SLACK_SECRET, self.slack_api.base_url)
        from milpa_chat.bots.slack_pane import SlackPane, suggested_prompts

        if self.agent_setup.scripted:  # the pane suggests requests the scripted model understands
            from milpa_chat.playground.scripted_model import suggested_requests

            self.slack_bot.pane = SlackPane(self.slack_bot, prompts=suggested_requests)
        else:
            self.slack_bot.pane = SlackPane(self.slack_bot, prompts=suggested_prompts)
        self._stack.push_async_callback(self.slack_bot.close)
        url = await self._stack.enter_async_context(serve_bolt_app(self.slack_bot.web_app()))
        self.slack = await self._stack.enter_async_context(
            SlackEvents(url, SLACK_SECRET, api=self.slack_api, ack_timeout=10.0)
        )

    async def close(self) -> None:
        try:
            await self._stack.aclose()
        finally:
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)
                self._tmp = None

    async def _build_assistant(self) -> Assistant:
        from milpa_chat.chat import Assistant, Identities
        from milpa_chat.store.sqlite import SqliteStore

        if self.store_path is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="milpa-playground-"))
            path = self._tmp / "playground.db"
        else:
            path = self.store_path
        self.store = SqliteStore(str(path), clock=self.clock)
        self._stack.push_async_callback(self.store.close)
        registry = await load_registry(self.tools_spec, self.store)
        identities = (
            Identities.from_toml(self.identities_path)
            if self.identities_path is not None
            else Identities.from_dict(IDENTITIES)
        )
        self.agent_setup = await start_agent(self.env, self._stack)
        assistant = Assistant(
            registry,
            identities,
            agent=self.agent_setup.agent,
            name="Playground assistant",
            approval_ttl=900.0,
            edits=True,
            risk_tiers=True,
            fast_approval=FAST_APPROVAL,
        )
        if (self.env if self.env is not None else os.environ).get(AT_SCALE_ENV):
            from milpa_chat.chat.batching import Batching  # batch cards, /reassign, /ask, /answer, /comment, /mode

            Batching(assistant)
        return assistant

    # -- people ---------------------------------------------------------------------------------
    def persona(self, key: object) -> Persona:
        persona = self.personas.get(str(key))
        if persona is None:
            raise PlaygroundError(f"unknown persona {key!r}; the personas are {', '.join(self.personas)}")
        return persona

    def _tg_user(self, persona: Persona) -> Any:
        from milpa_chat.testing import TelegramUser

        return TelegramUser(persona.telegram_id, persona.name, persona.key)

    def telegram_chat(self, persona: Persona, chat_id: int) -> int:
        """The chat ``persona`` may write in: their private chat with the bot, or a group they are in."""
        if chat_id == persona.telegram_id:
            return chat_id
        if chat_id == TELEGRAM_APPROVERS and persona.role == "approver":
            return chat_id
        raise PlaygroundError(f"{persona.name} is not in Telegram chat {chat_id}")

    async def telegram_say(self, persona: Persona, chat_id: int, text: str, reply_to: int | None = None) -> int:
        """``persona`` writes ``text`` in the chat (as a reply to message ``reply_to``, as Telegram sends the
        answer to a ForceReply prompt): the bot receives a ``message`` update. Returns its id."""
        chat = self.telegram_chat(persona, chat_id)
        replied = None
        if reply_to is not None:
            replied = self.telegram.state.messages.get((chat, reply_to))
            if replied is None or replied.deleted:
                raise PlaygroundError(f"no message {reply_to} in Telegram chat {chat} to reply to")
        update = await self.telegram.send_message(chat, self._tg_user(persona), text, reply_to=replied)
        return int(update.update_id)

    async def telegram_tap(self, persona: Persona, chat_id: int, message_id: int, data: str) -> str:
        """``persona`` taps a button: a ``callback_query`` carrying ``data``. Returns the query id."""
        self.telegram_chat(persona, chat_id)
        try:
            update = await self.telegram.tap(chat_id, message_id, self._tg_user(persona), data)
        except LookupError as exc:
            raise PlaygroundError(str(exc)) from None
        return str(update.payload["callback_query"]["id"])

    def slack_channel(self, persona: Persona, channel: str) -> str:
        if channel in (SLACK_WORK, "D" + persona.slack_id[1:]):
            return channel
        if channel == SLACK_APPROVERS and persona.role == "approver":
            return channel
        raise PlaygroundError(f"{persona.name} is not in Slack channel {channel}")

    async def slack_open_pane(self, persona: Persona) -> str:
        """``persona`` opens the app's assistant pane (from #general): Slack starts a thread in their DM with the
        app and delivers ``assistant_thread_started``. Returns the thread's ts."""
        resp = await self.slack.assistant_thread_started(user=persona.slack_id, context_channel=SLACK_WORK)
        await self.slack_bot.drain()
        if resp.status != 200:
            raise PlaygroundError(f"the Slack app answered the pane's opening with HTTP {resp.status}")
        return str(resp.request.payload["event"]["assistant_thread"]["thread_ts"])

    async def slack_say(self, persona: Persona, channel: str, text: str, thread_ts: str | None = None) -> int:
        """In a channel: the slash command ``/milpa <text>``; in the persona's DM with the app: a message event
        (``thread_ts``: in that thread of the assistant pane). Returns the app's HTTP status."""
        channel = self.slack_channel(persona, channel)
        if thread_ts is not None and (
            not channel.startswith("D") or (channel, thread_ts) not in self.slack_api.assistant_threads.threads
        ):
            raise PlaygroundError(f"{thread_ts} is not a thread of {persona.name}'s assistant pane")
        if channel.startswith("D"):
            resp = await self.slack.direct_message(text, user=persona.slack_id, channel=channel, thread_ts=thread_ts)
        else:
            command = text.strip()
            if command.startswith("/milpa"):
                command = command[len("/milpa") :].strip()
            resp = await self.slack.command(
                "/milpa", command, user=persona.slack_id, channel=channel, user_name=persona.key
            )
        await self.slack_bot.drain()
        return int(resp.status)

    async def slack_click(
        self, persona: Persona, channel: str, ts: str, action_id: str, value: str | None = None
    ) -> int:
        """``persona`` clicks an element of a message as it is now: a signed ``block_actions`` request.
        ``value`` other than the element's is sent as given (a modified client)."""
        from milpa_chat.testing.slack import SlackRequest

        self.slack_channel(persona, channel)
        try:
            message = self.slack_api.message(channel, ts)
            request = self.slack.payloads.click(message, action_id, user=persona.slack_id)
        except LookupError as exc:
            raise PlaygroundError(str(exc)) from None
        payload = dict(request.payload)
        payload["user"] = {**payload["user"], "name": persona.key, "username": persona.key}
        if value is not None:
            payload["actions"] = [{**payload["actions"][0], "value": value}]
        opened = {v.id for v in self.slack_api.views()}
        resp = await self.slack.send(SlackRequest.interactive(payload))
        await self.slack_bot.drain()
        self._own_new_views(opened, persona)
        return int(resp.status)

    def _own_new_views(self, before: set[str], persona: Persona) -> None:
        """A modal opened while handling ``persona``'s click was opened with its trigger_id: it is theirs."""
        for view in self.slack_api.views():
            if view.id not in before and view.id not in self.modals.items:
                self.modals.items[view.id] = Modal(view.id, persona.slack_id)
                self.modals.changed()

    def modal(self, persona: Persona, view_id: str) -> tuple[Modal, Any]:
        """``persona``'s open modal ``view_id`` and the view as ``views.open`` stored it."""
        modal = self.modals.items.get(view_id)
        if modal is None or modal.user != persona.slack_id:
            raise PlaygroundError(f"{persona.name} has no Slack modal {view_id!r} open")
        if modal.closed:
            raise PlaygroundError(f"the Slack modal {view_id} was closed")
        view = next(v for v in self.slack_api.views() if v.id == view_id)
        return modal, view

    async def slack_submit(self, persona: Persona, view_id: str, values: dict[str, str]) -> dict[str, str]:
        """``persona`` presses Submit on their modal, each input holding ``values[block_id]`` (else what it
        was opened with): a signed ``view_submission``. Returns the errors the app answered per input
        (``response_action: errors``: the modal stays open), or ``{}`` when it closed."""
        from milpa_chat.testing.slack import SlackRequest

        modal, view = self.modal(persona, view_id)
        request = self.slack.payloads.view_submission(view, values, user=persona.slack_id)
        payload = dict(request.payload)
        payload["user"] = {**payload["user"], "name": persona.key, "username": persona.key}
        resp = await self.slack.send(SlackRequest.interactive(payload))
        await self.slack_bot.drain()
        if resp.status != 200:
            raise PlaygroundError(f"the Slack app answered the submission with HTTP {resp.status}")
        answer = resp.json() if resp.text.strip() else {}
        refused = isinstance(answer, dict) and answer.get("response_action") == "errors"
        errors = answer.get("errors") if refused else None
        modal.errors = {str(k): str(v) for k, v in errors.items()} if isinstance(errors, dict) else None
        modal.closed = modal.errors is None
        self.modals.changed()
        return modal.errors or {}

    def slack_close(self, persona: Persona, view_id: str) -> None:
        """``persona`` presses Cancel (Slack closes the modal; the app asked for no ``view_closed``)."""
        modal, _view = self.modal(persona, view_id)
        modal.closed = True
        self.modals.changed()

    async def advance(self, seconds: float) -> int:
        """Move the store's clock forward and sweep: what is overdue expires now. Returns what was acted on."""
        if not 0 < seconds <= 30 * 86400:
            raise PlaygroundError(f"advance the clock by 1 s to 30 days, got {seconds!r} s")
        self.clock.offset += seconds
        return await self.assistant.sweep()

    async def inbox(self) -> list[dict[str, Any]]:
        """The approvals, newest first, as the inbox shows them."""
        listing = await self.assistant.approvals.listing()
        rows = [_inbox_row(a) for a in listing]
        rows.sort(key=lambda r: r["created"], reverse=True)
        return rows


def _inbox_row(approval: Any) -> dict[str, Any]:
    data = approval.data
    decided = data.get("decided_by_name") or data.get("decided_by")
    votes = [f"{v.get('name') or v.get('principal')} via {v.get('via')}" for v in data.get("votes", [])]
    return {"id": approval.id, "kind": approval.kind, "state": approval.state, "label": approval.label,
            "args": approval.args, "requester": approval.requester_name, "created": data.get("created_at") or 0,
            "expires_at": approval.expires_at_iso, "decided_by": decided, "decided_via": data.get("decided_via"),
            "votes": votes, "quorum": approval.quorum, "revision": approval.revision,
            "risk": (data.get("risk") or {}).get("level")}  # fmt: skip


async def load_registry(spec: str, store: Store) -> Any:
    """``package.module:object`` -> a registry on ``store``: a class or factory (given the store when it takes
    an argument), an instance with ``@tool`` methods, a module, or a ``ToolRegistry``."""
    from milpa_chat import ToolRegistry

    obj = _import(spec)
    if inspect.isclass(obj) or (
        callable(obj) and not hasattr(obj, "__milpa_tool__") and not isinstance(obj, ToolRegistry)
    ):
        factory: Any = obj
        obj = factory(store) if _wants_argument(factory) else factory()
    if isinstance(obj, ToolRegistry):
        return obj
    registry = ToolRegistry(store=store)
    if registry.scan(obj) == 0:
        raise PlaygroundError(f"--tools {spec}: found no @tool functions or methods there")
    seed = getattr(obj, "seed", None)
    if inspect.iscoroutinefunction(seed):
        await seed()
    return registry


def _wants_argument(obj: Any) -> bool:
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params
    )


def _import(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise PlaygroundError(f"--tools {spec!r}: write it as package.module:object, e.g. {DEFAULT_TOOLS}")
    if str(Path.cwd()) not in sys.path:  # as `python -m` does: the user's own module in the current directory
        sys.path.insert(0, str(Path.cwd()))
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise PlaygroundError(f"--tools {spec}: cannot import {module_name!r}: {exc}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise PlaygroundError(f"--tools {spec}: {module_name!r} has no attribute {part!r}")
        obj = getattr(obj, part)
    return obj


@contextlib.asynccontextmanager
async def running(**options: Any) -> AsyncIterator[World]:
    async with World(**options) as world:
        yield world
