"""A per-conversation approval mode, set with ``/mode`` through real python-telegram-bot against the local Bot API:
it tightens for anyone, a loosening is refused (never silently downgraded) to someone without the waive scope, and a
waiver's loosening runs out and leaves the tighter mode."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from milpa_chat import ToolRegistry, tool
from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.chat.batching import Batching
from milpa_chat.runtime.policy import ChannelPolicy, PolicyGate
from milpa_chat.runtime.trail import AuditTrail
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer, ManualClock, TelegramUser

ALICE = TelegramUser(1001, "Alice", "alice")  # may waive
BOB = TelegramUser(1002, "Bob", "bob")  # may not
WAIT = 15.0
IDENTITIES: dict[str, Any] = {
    "roles": {"writer": ["notes:write", "notes:read"], "waiver": ["approvals:waive"]},
    "users": {"telegram:1001": ["writer", "waiver"], "telegram:1002": ["writer"]},
}


class Notes:
    def __init__(self) -> None:
        self.done: list[str] = []

    @tool("rename_note", "Rename a note", scopes=["notes:write"], mutating=True)
    async def rename_note(self, note_id: int, title: str) -> str:
        self.done.append(f"rename {note_id}")
        return f"Renamed note {note_id}."

    @tool(
        "export_notes",
        "Export every note (asks first: it is large)",
        scopes=["notes:read"],
        mutating=False,
        confirm=True,
    )
    async def export_notes(self) -> str:
        self.done.append("export")
        return "Exported."


@dataclass
class World:
    tg: BotApiServer
    notes: Notes
    clock: ManualClock
    trail: AuditTrail

    async def say(self, user: TelegramUser, text: str) -> str:
        before = len(self.tg.messages(user.id))
        await self.tg.send_message(user.id, user, text)
        found = await self.tg.wait_until(lambda: self.tg.messages(user.id)[before:] or None, WAIT, what="a reply")
        return found[0].text or ""


@asynccontextmanager
async def world() -> AsyncIterator[World]:
    clock = ManualClock()
    store = MemoryStore(clock=clock)
    # on this deployment writes in Telegram run without confirmation unless a person asks for it
    policy = PolicyGate({"telegram": ChannelPolicy(require_auth=True, require_confirmation_for_mutating=False)})
    registry = ToolRegistry(store=store, policy=policy)
    notes = Notes()
    registry.scan(notes)
    trail = AuditTrail(store).attach(registry)
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES))
    Batching(assistant)
    async with BotApiServer() as tg:
        bot = TelegramBot(assistant, tg.token, tg.base_url, sweep_interval=None)
        await bot.start(poll_timeout=1)
        try:
            yield World(tg, notes, clock, trail)
        finally:
            await bot.stop()


async def test_tighten_for_anyone_loosen_only_with_the_right_and_the_loosening_runs_out() -> None:
    async with world() as w:
        assert "Renamed note 1" in await w.say(BOB, "/rename_note 1 draft")  # the policy lets writes run
        assert "Every call with effects asks you to confirm" in await w.say(BOB, "/mode confirm every write")
        assert "Confirm" in await w.say(BOB, "/rename_note 2 draft") and w.notes.done == ["rename 1"]
        # Bob may only tighten: a loosening is refused, and nothing changes
        refused = await w.say(BOB, "/mode no confirmation for reads for 1 hour")
        assert "can only get stricter" in refused and "approvals:waive" in refused
        assert "Confirm" in await w.say(BOB, "/export_notes")

        # Alice tightens over a limit, then (she may waive) loosens reads for an hour
        assert "exceeds 10" in await w.say(ALICE, "/mode confirm writes over 10")
        assert "Renamed note 3" in await w.say(ALICE, "/rename_note 3 small")
        assert "Confirm" in await w.say(ALICE, "/rename_note 30 big")
        assert "next 60 minutes" in await w.say(ALICE, "/mode no confirmation for reads for 1 hour")
        assert "Exported" in await w.say(ALICE, "/export_notes")
        assert "Confirm" in await w.say(ALICE, "/rename_note 40 big")  # the tighter mode stays meanwhile

        w.clock.advance(3601)  # the loosening ran out; the tighter mode is left
        assert "Confirm" in await w.say(ALICE, "/export_notes")
        assert "Confirm" in await w.say(ALICE, "/rename_note 50 big")
        assert "exceeds 10" in await w.say(ALICE, "/mode")
        assert w.notes.done == ["rename 1", "rename 3", "export"]

        kinds = [(e.kind, e.fields.get("by")) for e in await w.trail.entries() if e.kind.startswith("mode")]
        assert kinds == [
            ("mode_set", "telegram:1002"),
            ("mode_refused", "telegram:1002"),
            ("mode_set", "telegram:1001"),
            ("mode_loosened", "telegram:1001"),
        ]
        assert (await w.trail.verify()).ok
