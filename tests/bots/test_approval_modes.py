"""A per-conversation approval mode, set with ``/mode`` through real python-telegram-bot against the local Bot API:
it tightens for anyone, a loosening is refused (never silently downgraded) to someone without the waive scope, and a
waiver's loosening runs out and leaves the tighter mode."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from milpa_chat import ToolRegistry, tool
from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.chat import Assistant, ChatUser, Identities
from milpa_chat.chat.batching import Batching
from milpa_chat.command import EffectProfile, Operation, RegistryProjector
from milpa_chat.grants.desk import GrantOffer
from milpa_chat.runtime.approval import ApprovalRefused
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.modes import ModeDesk
from milpa_chat.runtime.policy import ChannelPolicy, PolicyGate
from milpa_chat.runtime.trail import AuditTrail
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer, ManualClock, TelegramUser
from milpa_chat.testing.transport import RecordingTransport
from tests.grants.house import ARCHIVE, SCANNED, SIGNER, WATCHED, content, house, measured

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


async def test_a_model_never_sets_or_loosens_a_mode_even_with_the_waive_scope() -> None:
    clock = ManualClock()
    store = MemoryStore(clock=clock)
    policy = PolicyGate({"telegram": ChannelPolicy(require_auth=True, require_confirmation_for_mutating=False)})
    registry = ToolRegistry(store=store, policy=policy)
    registry.scan(Notes())
    trail = AuditTrail(store).attach(registry)
    desk = ModeDesk(registry).install()
    alice = ToolContext.telegram(7, ALICE.id, scopes=("notes:write", "notes:read", "approvals:waive"))
    assert "exceeds 10" in await desk.set(alice, "confirm writes over 10")
    before = await desk.current(alice)

    for text in ("no confirmation for reads for 1 hour", "off", "confirm every write"):
        with pytest.raises(ApprovalRefused) as refused:
            await desk.set(alice.as_model(), text)
        assert refused.value.code == "FORBIDDEN" and "A model cannot" in str(refused.value)
    assert await desk.current(alice) == before  # nothing changed: still over 10, no loosening

    refusals = [e for e in await trail.entries() if e.kind == "refused"]
    assert len(refusals) == 3 and all(e.fields["by_model"] for e in refusals)
    assert [e.kind for e in await trail.entries() if e.kind.startswith("mode")] == ["mode_set"]
    assert (await trail.verify()).ok


EXPORTED: list[str] = []


def _export(arguments: Mapping[str, Any]) -> str:
    EXPORTED.append(str(arguments["archive"]))
    return f"exported {arguments['archive']}"


EXPORT_OP = Operation(
    "release:export",
    "Export a release archive (asks first: it is large)",
    _export,
    effects=EffectProfile.read_only(),
    acts_on=content,
    requires_confirmation=True,
    input_schema={"type": "object", "properties": {"archive": ARCHIVE}, "required": ["archive"]},
)
READ_OFFER = GrantOffer((SCANNED,), WATCHED, "nothing to take back: an export changes nothing")
RITA, SARA, NICO = ChatUser("100", "Rita", "rita"), ChatUser("300", "Sara", "sara"), ChatUser("400", "Nico", "nico")
APPROVERS = "-900"
GRANT_IDENTITIES: dict[str, Any] = {
    "roles": {"dev": ["release:publish"], "waiver": ["approvals:waive"], "signer": ["grants:sign"]},
    "users": {"telegram:100": ["dev", "waiver"], "telegram:300": ["signer"], "telegram:400": ["dev"]},
    "approvers": {"telegram": [APPROVERS]},
}


async def test_with_standing_grants_a_loosening_is_a_time_boxed_grant_a_signer_signs() -> None:
    clock = ManualClock()
    store = MemoryStore(clock=clock)
    registry, desk = house(store)
    RegistryProjector(registry).register(EXPORT_OP)
    desk.know(EXPORT_OP, offer=READ_OFFER)
    trail = AuditTrail(store).attach(registry)
    assistant = Assistant(registry, Identities.from_dict(GRANT_IDENTITIES))
    tg = RecordingTransport("telegram")
    assistant.attach(tg)
    Batching(assistant)
    EXPORTED.clear()
    await measured(registry, "clean.tgz")  # the offer's condition holds on this archive, its watcher is alive

    await tg.say(assistant, RITA, "/release_export clean.tgz")
    assert EXPORTED == [] and any("Confirm" in b.label for b in tg.last(RITA.id).buttons)

    # Nico may not waive: refused, and nothing is drafted
    await tg.say(assistant, NICO, "/mode no confirmation for reads for 1 hour")
    assert "can only get stricter" in tg.last(NICO.id).text and await desk.listing() == []

    # Rita may waive: a loosening drafts a standing grant; it lends nothing until someone signs it
    await tg.say(assistant, RITA, "/mode no confirmation for reads for 1 hour")
    assert "Drafted standing grant" in tg.last(RITA.id).text
    [draft] = await desk.listing()
    document = draft.document()
    assert draft.state == "draft" and document.to == ("telegram:100",)
    assert [c.operation for c in document.operations] == ["release:export"]  # reads only: never publish
    assert document.ceiling == EffectProfile.read_only()
    assert document.expires_at is not None and document.expires_at.timestamp() == int(clock() + 3600)
    await tg.say(assistant, RITA, "/mode")
    assert draft.id in tg.last(RITA.id).text
    await tg.say(assistant, RITA, "/release_export clean.tgz")
    assert EXPORTED == []  # not signed yet: it still asks

    [signature] = [a for a in await assistant.approvals.listing(state="pending") if a.kind == "verification"]
    with pytest.raises(ApprovalRefused):  # a model never signs, even for a person who may
        await desk.decide(signature.id, "approve", SIGNER.as_model(), via="telegram")
    card = tg.last(APPROVERS)
    await tg.tap(assistant, RITA, card, "Approve")  # the person who drafted it cannot sign it
    assert (await desk.get(draft.id)).state == "draft"  # type: ignore[union-attr]
    await tg.tap(assistant, SARA, card, "Approve")
    assert (await desk.get(draft.id)).state == "in_force"  # type: ignore[union-attr]

    await tg.say(assistant, RITA, "/release_export clean.tgz")  # lent by the grant: no confirmation
    assert EXPORTED == ["clean.tgz"] and "exported clean.tgz" in tg.last(RITA.id).text
    await tg.say(assistant, RITA, "/release_export leaky.tgz")  # its condition does not hold there: it asks
    assert EXPORTED == ["clean.tgz"]
    await tg.say(assistant, NICO, "/release_export clean.tgz")  # another person's seat: it asks
    assert EXPORTED == ["clean.tgz"]
    await tg.say(assistant, RITA, "/release_export clean.tgz", "-500")  # another chat: the mode is this chat's
    assert EXPORTED == ["clean.tgz"] and any("Confirm" in b.label for b in tg.last("-500").buttons)
    assert (await desk.get(draft.id)).data["lends_in"] == "telegram:100"  # type: ignore[union-attr]

    clock.advance(3601)  # the grant expired: the call asks again
    await tg.say(assistant, RITA, "/release_export clean.tgz")
    assert EXPORTED == ["clean.tgz"] and any("Confirm" in b.label for b in tg.last(RITA.id).buttons)

    kinds = [e.kind for e in await trail.entries()]
    assert "mode_refused" in kinds and "mode_grant_drafted" in kinds and kinds.count("lent") == 1
    drafted = next(e for e in await trail.entries() if e.kind == "mode_grant_drafted")
    assert drafted.fields["grants"] == [draft.id] and drafted.fields["by"] == "telegram:100"
    assert (await trail.verify()).ok


async def test_with_standing_grants_but_no_read_offered_a_loosening_is_refused_and_audited() -> None:
    store = MemoryStore(clock=ManualClock())
    registry, desk = house(store)  # publish offers a grant, but it writes; no read offers one
    trail = AuditTrail(store).attach(registry)
    assistant = Assistant(registry, Identities.from_dict(GRANT_IDENTITIES))
    tg = RecordingTransport("telegram")
    assistant.attach(tg)
    Batching(assistant)
    await tg.say(assistant, RITA, "/mode no confirmation for reads for 30 minutes")
    assert "offers a standing grant" in tg.last(RITA.id).text and "Nothing was changed" in tg.last(RITA.id).text
    assert await desk.listing() == [] and tg.in_chat(APPROVERS) == []
    refused = [e for e in await trail.entries() if e.kind == "mode_refused"]
    assert len(refused) == 1 and refused[0].fields["by"] == "telegram:100"
