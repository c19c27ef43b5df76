"""Conformance of every backend to the record operations of the store protocol (base.py)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from milpa_chat.errors import StoreError
from milpa_chat.store import Store
from milpa_chat.testing import ManualClock
from tests.store.conftest import BACKENDS

pytestmark = pytest.mark.parametrize("opener", BACKENDS, indirect=True)

VALUE: dict[str, Any] = {
    "status": "pending",
    "amount": 12.5,
    "count": 3,
    "big": 2**53 + 1,
    "whole_float": 2.0,
    "ok": True,
    "none": None,
    "tags": ["a", "b", {"deep": [1, 2.5, None]}],
    "text": 'ñandú — 雨 ✓ "quoted" \\ \u0000 end',
    "empty": {},
}


async def test_store_satisfies_the_protocol(store: Store) -> None:
    assert isinstance(store, Store)


async def test_insert_creates_version_one_at_clock_time(store: Store, clock: ManualClock) -> None:
    rec = await store.insert("approvals", "a1", VALUE)
    assert rec is not None
    assert (rec.collection, rec.key, rec.version) == ("approvals", "a1", 1)
    assert rec.created_at == rec.updated_at == clock.now
    assert rec.expires_at is None
    got = await store.get("approvals", "a1")
    assert got == rec


async def test_values_round_trip_with_their_json_types(store: Store) -> None:
    await store.put("c", "k", VALUE)
    got = await store.get("c", "k")
    assert got is not None
    assert got.value == VALUE
    assert isinstance(got.value["whole_float"], float)
    assert isinstance(got.value["big"], int) and got.value["big"] == 2**53 + 1
    assert got.value["ok"] is True


async def test_returned_values_are_copies(store: Store) -> None:
    rec = await store.put("c", "k", {"list": [1]})
    rec.value["list"].append(2)
    again = await store.get("c", "k")
    assert again is not None
    again.value["list"].append(3)
    final = await store.get("c", "k")
    assert final is not None and final.value == {"list": [1]}


async def test_get_of_unknown_key_is_none(store: Store) -> None:
    assert await store.get("c", "missing") is None


async def test_insert_refuses_a_live_key_and_keeps_the_first(store: Store) -> None:
    assert await store.insert("dedup", "update-42", {"n": 1}) is not None
    assert await store.insert("dedup", "update-42", {"n": 2}) is None
    got = await store.get("dedup", "update-42")
    assert got is not None and got.value == {"n": 1} and got.version == 1


async def test_records_expire_exactly_at_expires_at(store: Store, clock: ManualClock) -> None:
    rec = await store.insert("tokens", "t", {"x": 1}, ttl=10)
    assert rec is not None and rec.expires_at == clock.now + 10
    clock.advance(9.5)
    assert await store.get("tokens", "t") is not None
    clock.advance(0.5)
    assert await store.get("tokens", "t") is None


async def test_insert_reuses_the_key_of_an_expired_record(store: Store, clock: ManualClock) -> None:
    await store.insert("tokens", "t", {"gen": 1}, ttl=5)
    clock.advance(5)
    rec = await store.insert("tokens", "t", {"gen": 2})
    assert rec is not None
    assert (rec.version, rec.value, rec.created_at, rec.expires_at) == (1, {"gen": 2}, clock.now, None)


async def test_put_creates_then_replaces_growing_the_version(store: Store, clock: ManualClock) -> None:
    first = await store.put("c", "k", {"v": 1}, ttl=100)
    created = clock.now
    clock.advance(3)
    second = await store.put("c", "k", {"v": 2})
    assert first.version == 1 and second.version == 2
    assert second.created_at == created and second.updated_at == clock.now
    assert second.expires_at is None  # ttl=None: never expires
    clock.advance(1000)
    got = await store.get("c", "k")
    assert got is not None and got.value == {"v": 2}


async def test_put_over_an_expired_record_starts_again(store: Store, clock: ManualClock) -> None:
    await store.put("c", "k", {"v": 1}, ttl=1)
    await store.put("c", "k", {"v": 2}, ttl=1)
    clock.advance(1)
    rec = await store.put("c", "k", {"v": 3})
    assert (rec.version, rec.created_at) == (1, clock.now)


async def test_update_is_a_compare_and_set_on_version(store: Store, clock: ManualClock) -> None:
    await store.insert("approvals", "a", {"status": "pending"})
    clock.advance(2)
    assert await store.update("approvals", "a", {"status": "denied"}, expected_version=2) is None
    won = await store.update("approvals", "a", {"status": "approved"}, expected_version=1)
    assert won is not None
    assert (won.version, won.value, won.updated_at) == (2, {"status": "approved"}, clock.now)
    assert won.created_at == clock.now - 2
    assert await store.update("approvals", "a", {"status": "denied"}, expected_version=1) is None
    got = await store.get("approvals", "a")
    assert got is not None and got.value == {"status": "approved"}


async def test_update_keeps_expiry_unless_ttl_given(store: Store, clock: ManualClock) -> None:
    rec = await store.insert("c", "k", {"v": 1}, ttl=10)
    assert rec is not None
    kept = await store.update("c", "k", {"v": 2}, expected_version=1)
    assert kept is not None and kept.expires_at == rec.expires_at
    clock.advance(4)
    moved = await store.update("c", "k", {"v": 3}, expected_version=2, ttl=30)
    assert moved is not None and moved.expires_at == clock.now + 30


async def test_update_of_missing_or_expired_record_is_none(store: Store, clock: ManualClock) -> None:
    assert await store.update("c", "nope", {"v": 1}, expected_version=1) is None
    await store.insert("c", "k", {"v": 1}, ttl=1)
    clock.advance(1)
    assert await store.update("c", "k", {"v": 2}, expected_version=1) is None
    assert await store.get("c", "k") is None


async def test_take_returns_the_record_once(store: Store) -> None:
    await store.insert("tokens", "t", {"approval": "a1"})
    taken = await store.take("tokens", "t")
    assert taken is not None and taken.value == {"approval": "a1"} and taken.version == 1
    assert await store.take("tokens", "t") is None
    assert await store.get("tokens", "t") is None


async def test_take_with_expected_version(store: Store) -> None:
    await store.put("tokens", "t", {"n": 1})
    await store.put("tokens", "t", {"n": 2})
    assert await store.take("tokens", "t", expected_version=1) is None
    assert await store.get("tokens", "t") is not None
    taken = await store.take("tokens", "t", expected_version=2)
    assert taken is not None and taken.value == {"n": 2}


async def test_take_of_expired_record_is_none(store: Store, clock: ManualClock) -> None:
    await store.insert("tokens", "t", {"n": 1}, ttl=2)
    clock.advance(2)
    assert await store.take("tokens", "t") is None


async def test_delete_reports_whether_something_live_went(store: Store, clock: ManualClock) -> None:
    await store.put("c", "k", {"v": 1})
    assert await store.delete("c", "k") is True
    assert await store.delete("c", "k") is False
    assert await store.get("c", "k") is None
    await store.put("c", "old", {"v": 1}, ttl=1)
    clock.advance(1)
    assert await store.delete("c", "old") is False


async def test_collections_are_separate(store: Store) -> None:
    await store.put("a", "k", {"in": "a"})
    await store.put("b", "k", {"in": "b"})
    got = await store.get("b", "k")
    assert got is not None and got.value == {"in": "b"}
    assert await store.take("a", "k") is not None
    assert await store.get("b", "k") is not None


async def test_purge_expired_deletes_only_expired_records(store: Store, clock: ManualClock) -> None:
    await store.put("c", "short-1", {}, ttl=1)
    await store.put("other", "short-2", {}, ttl=2)
    await store.put("c", "long", {}, ttl=100)
    await store.put("c", "forever", {})
    clock.advance(5)
    assert await store.purge_expired() == 2
    assert await store.purge_expired() == 0
    assert [r.key for r in await store.scan("c")] == ["forever", "long"]


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (["not", "a", "dict"], "JSON object"),
        ({"when": {1, 2}}, "not JSON-serialisable"),
        ({"x": math.nan}, "not JSON-serialisable"),
        ({"x": object()}, "not JSON-serialisable"),
    ],
)
async def test_bad_values_are_refused_naming_collection_and_key(store: Store, value: Any, why: str) -> None:
    await store.put("c", "kept", {"v": 1})
    for call in (
        store.insert("c", "new", value),
        store.put("c", "kept", value),
        store.update("c", "kept", value, expected_version=1),
    ):
        with pytest.raises(StoreError, match=why) as err:
            await call
        assert "c/" in str(err.value)
    assert await store.get("c", "new") is None
    kept = await store.get("c", "kept")
    assert kept is not None and (kept.value, kept.version) == ({"v": 1}, 1)


@pytest.mark.parametrize("ttl", [0, -1, math.nan, "10"])
async def test_bad_ttl_is_refused_without_writing(store: Store, ttl: Any) -> None:
    await store.put("c", "kept", {"v": 1})
    with pytest.raises(StoreError, match="ttl"):
        await store.insert("c", "new", {"v": 1}, ttl=ttl)
    with pytest.raises(StoreError, match="ttl"):
        await store.put("c", "kept", {"v": 2}, ttl=ttl)
    with pytest.raises(StoreError, match="ttl"):
        await store.update("c", "kept", {"v": 2}, expected_version=1, ttl=ttl)
    assert await store.get("c", "new") is None
    kept = await store.get("c", "kept")
    assert kept is not None and kept.value == {"v": 1}


async def test_empty_collection_or_key_is_refused(store: Store) -> None:
    with pytest.raises(StoreError, match="collection"):
        await store.put("", "k", {})
    with pytest.raises(StoreError, match="key"):
        await store.insert("c", "", {})
    with pytest.raises(StoreError, match=r"stream|collection"):
        await store.append("", {})


async def test_closed_store_refuses_every_operation(store: Store) -> None:
    await store.put("c", "k", {})
    await store.close()
    await store.close()  # closing twice is harmless
    calls = [
        store.get("c", "k"),
        store.insert("c", "k2", {}),
        store.put("c", "k", {}),
        store.update("c", "k", {}, expected_version=1),
        store.take("c", "k"),
        store.delete("c", "k"),
        store.scan("c"),
        store.append("s", {}),
        store.read("s"),
        store.trim("s", keep_last=0),
        store.hit("r", cost=1, limit=1, window=1),
        store.purge_expired(),
    ]
    for call in calls:
        with pytest.raises(StoreError, match="closed"):
            await call
