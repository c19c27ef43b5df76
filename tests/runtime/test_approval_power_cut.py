"""What a power cut may take from an approval, and what the sweeper re-derives afterwards.

A store write made with ``durable=False`` may be lost on a power cut, together with the other such
writes just before it, never a durable write made after it (``milpa_chat.store.base``). ``PowerCut``
keeps that promise in memory: it remembers what each non-durable write replaced until the next
durable write (which syncs everything before it), and ``cut()`` puts those records back as the disk
held them. The approval's decision, its claim of the run and its result must survive; only the marks
of what the cards and the requester were already shown may go, and the sweeper delivers them again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from milpa_chat.store import MemoryStore, Record
from milpa_chat.testing import ManualClock
from milpa_chat.testing.transport import RecordingTransport
from tests.chat.conftest import ALICE, APPROVERS_CHAT, MANAGER, Tools, make_assistant


class PowerCut:
    """A ``MemoryStore`` whose ``durable=False`` writes since the last durable one are lost by :meth:`cut`."""

    def __init__(self, clock: ManualClock) -> None:
        self.inner = MemoryStore(clock=clock)
        self.clock = clock
        self.unsynced: list[tuple[str, str, Record | None]] = []  # (collection, key, what the disk holds)
        self.lax: list[tuple[str, str, str]] = []  # every non-durable write: (operation, collection, state)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name not in ("insert", "put", "update", "take", "delete", "append", "trim", "hit", "purge_expired"):
            return attr

        async def write(*args: Any, durable: bool = True, **kwargs: Any) -> Any:
            if durable:
                result = await attr(*args, **kwargs)
                self.unsynced.clear()  # a durable commit syncs every write before it
                return result
            collection, key, value = args[0], args[1], args[2] if len(args) > 2 else kwargs.get("value", {})
            before = await self.inner.get(collection, key)
            result = await attr(*args, durable=False, **kwargs)
            self.unsynced.append((collection, key, before))
            self.lax.append((name, collection, str(value.get("state", "")) if isinstance(value, Mapping) else ""))
            return result

        return write

    async def cut(self) -> list[str]:
        """The power goes: every unsynced write is undone (newest first). Returns the keys that lost a write."""
        lost = []
        for collection, key, before in reversed(self.unsynced):
            lost.append(f"{collection}/{key}")
            if before is None:
                await self.inner.delete(collection, key)
                continue
            ttl = None if before.expires_at is None else before.expires_at - self.clock()
            await self.inner.put(collection, key, before.value, ttl=ttl, due=before.due)
        self.unsynced.clear()
        return lost


async def test_a_power_cut_after_a_run_keeps_the_decision_and_the_result_and_the_sweeper_shows_them_again() -> None:
    clock = ManualClock()
    store = PowerCut(clock)
    tools = Tools()
    tg = RecordingTransport("telegram")  # the platform: it keeps the messages across the bot's restart
    first = make_assistant(tools, store)
    first.attach(tg)
    await tg.say(first, ALICE, "/pay ACME 10")
    group = tg.last(APPROVERS_CHAT)
    await tg.tap(first, MANAGER, group, "Approve")
    assert tools.paid == [("ACME", 10.0)]
    (approval,) = await first.approvals.listing()
    assert approval.state == "executed" and approval.effects() == []
    shown = {c["message_id"]: tg.find(c["chat_id"], c["message_id"]).text for c in approval.data["cards"]}
    assert all("Done" in text for text in shown.values())
    results = len([m for m in tg.in_chat(ALICE.id) if "Paid" in m.text or "10" in m.text])
    # the writes that did not wait for the disk: the update's de-duplication key, the requester's count of
    # pending requests (taken at the request, freed at the decision: a lost one is bounded by the request's
    # expiry), and the mark that the run's outcome reached the cards and the requester (the marks of cards
    # first sent, with their ids, did)
    assert store.lax == [
        ("insert", "deliveries", ""),
        ("insert", "caps", ""),
        ("update", "caps", ""),
        ("update", "approvals", "executed"),
    ]

    lost = await store.cut()
    assert lost == [f"approvals/{approval.id}"]  # the last delivery mark, nothing else
    after = await first.approvals.get(approval.id)
    assert after is not None and after.state == "executed" and after.data["result"] == approval.data["result"]
    assert after.data["decided_by"] == approval.data["decided_by"] and after.effects() != []  # owed again

    restarted = make_assistant(tools, store)
    restarted.attach(tg)
    edits_before = tg.not_modified
    clock.now += 31  # past the hand-off time of the worker that died
    assert await restarted.sweep() == 1
    settled = await restarted.approvals.get(approval.id)
    assert settled is not None and settled.state == "executed" and settled.effects() == []
    assert tools.paid == [("ACME", 10.0)]  # the tool never runs again
    for card in settled.data["cards"]:  # every card was edited again, to what it already showed
        assert tg.find(card["chat_id"], card["message_id"]).text == shown[card["message_id"]]
    assert tg.not_modified > edits_before
    # the report goes out once more: at least once, as after a crash between sending it and recording it
    assert len([m for m in tg.in_chat(ALICE.id) if "Paid" in m.text or "10" in m.text]) == results + 1
    assert await restarted.sweep() == 0
