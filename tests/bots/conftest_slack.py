"""The Slack adapter's test world: a real slack-bolt app (``SlackBot``) served over HTTP on 127.0.0.1, the local
Slack Web API it posts to, and ``SlackEvents`` sending it correctly signed requests as Slack does.

Imported explicitly by the ``test_slack_*`` modules (``tests/bots/conftest.py`` belongs to the Telegram tests).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from milpa_chat import Param, ToolRegistry, ToolResult, VerifyPolicy, tool
from milpa_chat.bots.slack import SlackBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.chat.assistant import Agent
from milpa_chat.store import MemoryStore
from milpa_chat.store.base import Store
from milpa_chat.testing import ManualClock
from milpa_chat.testing.slack import SlackApiServer, SlackAppResponse, SlackEvents, SlackMessage, serve_bolt_app

TOKEN = "xoxb-milpa-test"
SECRET = "milpa-signing-secret"
TEAM = "T1"
WORK = "C0WORK"
APPROVERS = "C0APPROVE"
ALICE, BOB, MARIA, MATEO, EVE = "U1001", "U1002", "U2001", "U2002", "U9999"
LEAD = "U3001"  # may both request and approve payments

IDENTITIES: dict[str, Any] = {
    "roles": {"writer": ["notes:read", "notes:write", "payments:send"], "manager": ["notes:read", "payments:approve"]},
    "users": {
        f"slack:{TEAM}:{ALICE}": ["writer"],
        f"slack:{TEAM}:{BOB}": ["writer"],
        f"slack:{TEAM}:{MARIA}": ["manager"],
        f"slack:{TEAM}:{MATEO}": ["manager"],
        f"slack:{TEAM}:{LEAD}": ["writer", "manager"],
    },
    "defaults": {"scopes": []},
    "approvers": {"slack": [APPROVERS]},
}


class Tools:
    """Example tools; what they did is recorded so tests can see each run."""

    def __init__(self, slow_seconds: float = 4.0) -> None:
        self.notes = {i: f"note {i}" for i in range(1, 26)}
        self.deleted: list[int] = []
        self.paid: list[tuple[str, float]] = []
        self.slow_seconds = slow_seconds
        self.slow_runs = 0

    @tool("list_notes", "List notes", scopes=["notes:read"], mutating=False)
    def list_notes(self, page: Annotated[int, Param("Page", clamp=(1, 100))] = 1) -> ToolResult:
        items = [{"id": k, "title": v} for k, v in sorted(self.notes.items())]
        return ToolResult.paginated(items[(page - 1) * 10 : page * 10], page, len(items), 10, "Notes")

    @tool("dump_notes", "Every note with a long body", scopes=["notes:read"], mutating=False)
    def dump_notes(self) -> dict[str, Any]:
        return {"notes": [{"id": i, "body": f"note {i} " + "lorem ipsum " * 400} for i in range(1, 40)]}

    @tool("delete_note", "Delete a note", scopes=["notes:write"], mutating=True)
    async def delete_note(self, note_id: int) -> dict[str, Any]:
        self.deleted.append(note_id)
        self.notes.pop(note_id, None)
        return {"deleted": note_id}

    @tool(
        "pay",
        "Send a payment",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",), expires_in=600),
    )
    async def pay(self, to: str, amount: float) -> dict[str, Any]:
        self.paid.append((to, amount))
        return {"paid": amount, "to": to}

    @tool("report", "A report that takes a while", scopes=["notes:read"], mutating=False)
    async def report(self) -> dict[str, Any]:
        self.slow_runs += 1
        await asyncio.sleep(self.slow_seconds)
        return {"notes": len(self.notes)}


def make_assistant(
    tools: Tools, store: Store, *, agent: Agent | None = None, identities: dict[str, Any] | None = None
) -> Assistant:
    registry = ToolRegistry(store=store)
    registry.scan(tools)
    return Assistant(registry, Identities.from_dict(identities or IDENTITIES), agent=agent, approval_ttl=600)


def sqlite_store(path: Path, clock: ManualClock) -> Store:
    from milpa_chat.store.sqlite import SqliteStore

    return SqliteStore(str(path), clock=clock)


@dataclass
class SlackWorld:
    """One running Slack app and the workspace it lives in."""

    api: SlackApiServer
    bot: SlackBot
    slack: SlackEvents
    assistant: Assistant

    async def command(self, text: str, *, user: str, channel: str = WORK) -> SlackAppResponse:
        """``/milpa <text>`` from ``user``; returns the app's HTTP answer once the work after the ack is done."""
        resp = await self.slack.command("/milpa", text, user=user, channel=channel)
        await self.bot.drain()
        return resp

    async def tap(self, message: SlackMessage, label: str, *, user: str) -> SlackAppResponse:
        """``user`` taps the button labelled ``label`` on ``message`` as it is now."""
        element = button(message, label)
        resp = await self.slack.click(message, element["action_id"], user=user)
        await self.bot.drain()
        return resp

    async def tap_element(self, message: SlackMessage, element: dict[str, Any], *, user: str) -> SlackAppResponse:
        """A tap on a button as an earlier version of ``message`` showed it (a stale or replayed card)."""
        request = self.slack.payloads.block_action(
            {k: element[k] for k in ("type", "action_id", "value", "text") if k in element},
            block_id="stale",
            user=user,
            channel=message.channel,
            message_ts=message.ts,
        )
        resp = await self.slack.send(request)
        await self.bot.drain()
        return resp

    def last(self, channel: str) -> SlackMessage:
        found = self.api.messages(channel)
        assert found, f"nothing was posted in {channel}; calls: {[c.method for c in self.api.calls()]}"
        return found[-1]

    def ephemeral(self, user: str) -> list[str]:
        """Texts shown only to ``user``, oldest first."""
        return [m.text for m in self.api.ephemeral_messages(user)]

    def private(self, user: str, channel: str = WORK) -> SlackMessage:
        """The newest message shown only to ``user`` in ``channel`` (``chat.postEphemeral`` or a response_url)."""
        found = self.api.ephemeral_messages(user, channel=channel)
        assert found, f"nothing was shown to {user} alone in {channel}; calls: {[c.method for c in self.api.calls()]}"
        return found[-1]

    def public(self, channel: str = WORK) -> list[SlackMessage]:
        """What the app posted in ``channel`` for everyone."""
        return [m for m in self.api.messages(channel) if m.bot_id]


def button(message: SlackMessage, label: str) -> dict[str, Any]:
    for element in message.buttons():
        if label.lower() in str(element.get("text", {}).get("text", "")).lower():
            return element
    labels = [e.get("text", {}).get("text") for e in message.buttons()]
    raise LookupError(f"no button {label!r} on message {message.ts}; buttons: {labels}")


@asynccontextmanager
async def slack_world(
    assistant: Assistant, *, api: SlackApiServer | None = None, **bot_options: Any
) -> AsyncIterator[SlackWorld]:
    """Serve a ``SlackBot`` for ``assistant`` through its aiohttp app against ``api`` (or a new local server)."""
    async with _api(api) as server:
        bot = SlackBot(assistant, TOKEN, SECRET, base_url=server.base_url, **bot_options)
        async with serve_bolt_app(bot.web_app()) as url, SlackEvents(url, SECRET, api=server) as slack:
            yield SlackWorld(server, bot, slack, assistant)


@asynccontextmanager
async def _api(api: SlackApiServer | None) -> AsyncIterator[SlackApiServer]:
    if api is not None:
        yield api
        return
    async with SlackApiServer(TOKEN, team_id=TEAM, channels={WORK: "work", APPROVERS: "approvers"}) as server:
        yield server


def memory_assistant(tools: Tools, clock: ManualClock, **options: Any) -> Assistant:
    return make_assistant(tools, MemoryStore(clock=clock), **options)
