"""``update_with``: one record's compare-and-set and the records it creates, written together or not at all."""

from __future__ import annotations

import pytest

from milpa_chat.errors import StoreError
from milpa_chat.store import Store
from milpa_chat.testing import ManualClock
from tests.store.conftest import BACKENDS

pytestmark = pytest.mark.parametrize("opener", BACKENDS, indirect=True)


async def test_moves_the_record_and_creates_the_others_together(store: Store, clock: ManualClock) -> None:
    head = await store.insert("heads", "h", {"seq": 0}, ttl=600, due=clock() + 60)
    assert head is not None
    clock.advance(5)
    moved = await store.update_with(
        "heads", "h", {"seq": 2}, expected_version=1, inserts=[("log", "1", {"n": 1}), ("log", "2", {"n": 2})]
    )
    assert moved is not None and moved.value == {"seq": 2} and moved.version == 2
    assert moved.updated_at == clock() and moved.created_at == head.created_at
    assert moved.expires_at == head.expires_at and moved.due == head.due  # kept, as update keeps them
    assert moved == await store.get("heads", "h")
    entries = await store.scan("log")
    assert [(r.key, r.value, r.version, r.created_at, r.expires_at, r.due) for r in entries] == [
        ("1", {"n": 1}, 1, clock(), None, None),
        ("2", {"n": 2}, 1, clock(), None, None),
    ]
    again = await store.update_with("heads", "h", {"seq": 3}, expected_version=2, inserts=[])
    assert again is not None and again.version == 3


async def test_a_moved_or_missing_record_writes_nothing(store: Store) -> None:
    await store.insert("heads", "h", {"seq": 0})
    assert await store.update("heads", "h", {"seq": 1}, expected_version=1) is not None
    stale = await store.update_with("heads", "h", {"seq": 9}, expected_version=1, inserts=[("log", "1", {"n": 1})])
    assert stale is None
    missing = await store.update_with("heads", "x", {"seq": 9}, expected_version=1, inserts=[("log", "2", {"n": 2})])
    assert missing is None
    assert (await store.get("heads", "h")).value == {"seq": 1}  # type: ignore[union-attr]
    assert await store.scan("log") == []


async def test_a_taken_key_writes_nothing_live_or_expired(store: Store, clock: ManualClock) -> None:
    await store.insert("heads", "h", {"seq": 0})
    await store.insert("log", "2", {"n": "someone else's"})
    await store.insert("log", "5", {"n": "expired"}, ttl=10)
    taken = [("log", "1", {"n": 1}), ("log", "2", {"n": 2}), ("log", "3", {"n": 3})]
    assert await store.update_with("heads", "h", {"seq": 3}, expected_version=1, inserts=taken) is None
    clock.advance(11)  # log/5 expired, but not yet purged: its key is still taken
    expired = [("log", "4", {"n": 4}), ("log", "5", {"n": 5})]
    assert await store.update_with("heads", "h", {"seq": 5}, expected_version=1, inserts=expired) is None
    head = await store.get("heads", "h")
    assert head is not None and head.version == 1 and head.value == {"seq": 0}
    assert [(r.key, r.value) for r in await store.scan("log")] == [("2", {"n": "someone else's"})]
    await store.purge_expired()  # once purged, the key is free
    moved = await store.update_with("heads", "h", {"seq": 5}, expected_version=1, inserts=expired)
    assert moved is not None and [r.key for r in await store.scan("log")] == ["2", "4", "5"]


async def test_an_expired_record_is_not_moved(store: Store, clock: ManualClock) -> None:
    await store.insert("heads", "h", {"seq": 0}, ttl=10)
    clock.advance(11)
    assert await store.update_with("heads", "h", {"seq": 1}, expected_version=1, inserts=[("log", "1", {})]) is None
    assert await store.scan("log") == []


async def test_bad_inserts_are_refused_before_anything_is_written(store: Store) -> None:
    await store.insert("heads", "h", {"seq": 0})
    cases = [
        ([("log", "1", {"n": 1}), ("log", "1", {"n": 2})], "names 'log'/'1' twice"),
        ([("heads", "h", {"n": 1})], "names 'heads'/'h' twice"),
        ([("log", "1")], "takes (collection, key, value) tuples"),
        ([("log", "1", {"n": {1, 2}})], "log"),
    ]
    for inserts, says in cases:
        with pytest.raises(StoreError, match=says.replace("(", r"\(").replace(")", r"\)")):
            await store.update_with("heads", "h", {"seq": 1}, expected_version=1, inserts=inserts)  # type: ignore[arg-type]
    head = await store.get("heads", "h")
    assert head is not None and head.version == 1 and await store.scan("log") == []
