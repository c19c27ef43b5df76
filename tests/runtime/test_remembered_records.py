"""A worker decides a live approval it wrote on the version it remembers, without reading it first: a stale one
(another worker decided meanwhile) never decides or runs anything again, and a tap it would refuse is judged
on the record as stored, the same as on a worker that remembers nothing. The pending cap frees the same way."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from milpa_chat import ToolRegistry, tool
from milpa_chat.chat import Assistant, ChatUser, Identities
from milpa_chat.runtime.caps import COLLECTION as CAPS
from milpa_chat.store import Store
from milpa_chat.testing.transport import RecordingTransport
from tests.runtime.conftest import backend_spec
from tests.store._workers import open_spec

ALICE, BOB = ChatUser("1001", "Alice"), ChatUser("1002", "Bob")
IDENTITIES = {"users": {"telegram:1001": ["notes:write"], "telegram:1002": ["notes:write"]}}


class Notes:
    def __init__(self) -> None:
        self.deleted: list[int] = []

    @tool("delete_note", "Delete a note", scopes=["notes:write"], mutating=True)
    async def delete_note(self, note_id: int) -> dict[str, Any]:
        self.deleted.append(note_id)
        return {"deleted": note_id}


@pytest.fixture(params=["memory", "sqlite"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    yield from backend_spec(request.param, tmp_path)


def another(spec: dict[str, Any], store: Store) -> Store:
    """Another worker's store on the same database (in memory: the same store)."""
    return store if spec["backend"] == "memory" else open_spec(spec)


def worker(store: Store, notes: Notes, surface: RecordingTransport) -> Assistant:
    registry = ToolRegistry(store=store)
    registry.scan(notes)
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES), approval_ttl=600)
    assistant.attach(surface)
    return assistant


def confirm_button(surface: RecordingTransport) -> dict[str, Any]:
    """Alice's last card's Confirm button, as a tap on it carries it (the card is edited afterwards)."""
    card = surface.last(ALICE.id)
    button = card.button("Confirm")
    return {"chat_id": card.chat_id, "action": button.action, "ref": button.ref, "message_id": card.message_id}


async def tap(assistant: Assistant, surface: RecordingTransport, who: ChatUser, pressed: dict[str, Any]) -> str:
    fields = dict(pressed)
    inbound = surface.inbound(who, fields.pop("chat_id"), **fields)
    before = len(surface.answers)
    await assistant.handle(inbound, surface)
    return surface.answers[-1].text if len(surface.answers) > before else ""


async def test_a_stale_remembered_record_never_decides_or_runs_again(spec: dict[str, Any]) -> None:
    store = open_spec(spec)
    notes, surface = Notes(), RecordingTransport("telegram")
    first, second = worker(store, notes, surface), worker(another(spec, store), notes, surface)
    await surface.say(first, ALICE, "/delete_note 7")  # the first worker wrote (and remembers) the card's record
    pressed = confirm_button(surface)
    await tap(second, surface, ALICE, pressed)  # decided and run on the other worker
    assert notes.deleted == [7]
    answer = await tap(first, surface, ALICE, pressed)  # the same button again, on the worker that remembers
    assert notes.deleted == [7], "a stale snapshot ran the tool again"
    fresh = worker(another(spec, store), Notes(), surface)  # remembers nothing: reads the record
    assert answer == await tap(fresh, surface, ALICE, pressed) and answer
    await store.close()


async def test_a_refusal_is_judged_on_the_stored_record(spec: dict[str, Any]) -> None:
    store = open_spec(spec)
    notes, surface = Notes(), RecordingTransport("telegram")
    first, second = worker(store, notes, surface), worker(another(spec, store), notes, surface)
    await surface.say(first, ALICE, "/delete_note 8")
    pressed = confirm_button(surface)
    await tap(second, surface, ALICE, pressed)
    stale = await tap(first, surface, BOB, pressed)  # Bob on the card the first worker remembers as pending
    fresh = await tap(worker(another(spec, store), Notes(), surface), surface, BOB, pressed)
    assert stale == fresh and stale, (stale, fresh)
    assert notes.deleted == [8]
    await store.close()


async def test_the_pending_cap_frees_on_the_version_it_wrote_and_reads_after_a_lost_race(
    spec: dict[str, Any],
) -> None:
    store = open_spec(spec)
    notes, surface = Notes(), RecordingTransport("telegram")
    first, second = worker(store, notes, surface), worker(another(spec, store), notes, surface)
    await surface.say(first, ALICE, "/delete_note 1")
    await surface.say(second, ALICE, "/delete_note 2")  # the cap record moved on: the first worker's is stale
    await tap(first, surface, ALICE, confirm_button(surface))  # confirms note 2's card, on the first worker
    assert notes.deleted == [2]
    cap = await store.get(CAPS, "pending requests:telegram:1001")
    assert cap is not None and len(cap.value["open"]) == 1  # note 1's request still counts, note 2's was freed
    await store.close()


async def test_what_a_worker_keeps_is_what_is_stored_and_only_changed_fields_are_encoded_again(
    spec: dict[str, Any],
) -> None:
    """A write re-encodes only the fields it changed (the rest of its JSON is the last write's): whatever the
    workers, the store holds exactly the record each worker keeps, and a read of a kept version is that record."""
    store = open_spec(spec)
    notes, surface = Notes(), RecordingTransport("telegram")
    first, second = worker(store, notes, surface), worker(another(spec, store), notes, surface)
    desks = (first.registry.approvals, second.registry.approvals)

    async def stored_as_kept() -> None:
        for desk in desks:
            for kept in [*desk._live.values(), *desk._settled.values()]:
                rec = await store.get("approvals", kept.id)
                assert rec is not None
                if rec.version == kept.version:
                    assert rec.value == json.loads(json.dumps(kept.data)), kept.id
                    assert await desk.get(kept.id) is kept  # a kept version is not decoded again

    await surface.say(first, ALICE, "/delete_note 4")
    await stored_as_kept()
    pressed = confirm_button(surface)
    await tap(second, surface, ALICE, pressed)  # the other worker decides on what it reads
    await stored_as_kept()
    await surface.say(second, ALICE, "/delete_note 5")
    await tap(second, surface, ALICE, confirm_button(surface))  # decided on the version it wrote
    await tap(first, surface, ALICE, pressed)  # a tap on a stale snapshot: refused on the stored record
    await stored_as_kept()
    assert notes.deleted == [4, 5]
    await store.close()
