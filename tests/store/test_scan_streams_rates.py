"""Conformance of every backend: scan, streams and sliding-window rate counters."""

from __future__ import annotations

import math

import pytest

from milpa_chat.errors import StoreError
from milpa_chat.store import Store
from milpa_chat.testing import ManualClock
from tests.store.conftest import BACKENDS

pytestmark = pytest.mark.parametrize("opener", BACKENDS, indirect=True)

# Python's str order is code-point order; every backend must agree with it.
KEYS = ["b", "a", "ab", "a%", "a_", "B", "é", "雨", "z\U0001f600", "\U0001f600", "a\uffff", "a\U0010ffff"]


# ------------------------------------------------------------------ scan
async def test_scan_orders_by_key_in_code_point_order(store: Store) -> None:
    for key in KEYS:
        await store.put("c", key, {"k": key})
    assert [r.key for r in await store.scan("c")] == sorted(KEYS)


@pytest.mark.parametrize("prefix", ["a", "a%", "a_", "", "\U0001f600", "a\uffff", "a\U0010ffff", "x"])
async def test_scan_prefix(store: Store, prefix: str) -> None:
    for key in KEYS:
        await store.put("c", key, {})
    expected = sorted(k for k in KEYS if k.startswith(prefix))
    assert [r.key for r in await store.scan("c", prefix=prefix)] == expected


async def test_scan_skips_expired_and_other_collections(store: Store, clock: ManualClock) -> None:
    await store.put("c", "live", {})
    await store.put("c", "dying", {}, ttl=1)
    await store.put("d", "elsewhere", {})
    clock.advance(1)
    assert [r.key for r in await store.scan("c")] == ["live"]


async def test_scan_where_matches_top_level_fields(store: Store) -> None:
    await store.put("ap", "1", {"status": "pending", "chat": 7, "note": None, "text": "nul \u0000 inside"})
    await store.put("ap", "2", {"status": "approved", "chat": 7, "note": "x"})
    await store.put("ap", "3", {"status": "pending", "chat": 8, "tags": ["a"]})
    await store.put("ap", "4", {"status": "pending", "chat": 7.0, "meta": {"by": "ana"}})
    await store.put("ap", "5", {"status": ["pending"], "chat": "7"})

    async def keys(**where: object) -> list[str]:
        return [r.key for r in await store.scan("ap", where=where)]

    assert await keys(status="pending") == ["1", "3", "4"]
    assert await keys(status="pending", chat=7) == ["1", "4"]
    assert await keys(chat="7") == ["5"]
    assert await keys(note=None) == ["1"]  # a missing field is not null
    assert await keys(tags=["a"]) == ["3"]
    assert await keys(meta={"by": "ana"}) == ["4"]
    assert await keys(status=["pending"]) == ["5"]
    assert await keys(status="nobody") == []
    assert await keys(**{"odd field'\"": 1}) == []


async def test_scan_limit(store: Store) -> None:
    for i in range(5):
        await store.put("c", f"k{i}", {"even": i % 2 == 0})
    assert [r.key for r in await store.scan("c", limit=2)] == ["k0", "k1"]
    assert [r.key for r in await store.scan("c", where={"even": True}, limit=2)] == ["k0", "k2"]
    assert await store.scan("c", limit=0) == []
    assert len(await store.scan("c", limit=50)) == 5


async def test_scan_limit_finds_matches_after_many_non_matching_records(store: Store) -> None:
    for i in range(260):
        await store.put("c", f"k{i:03d}", {"n": i, "hit": i in (3, 150, 259)})
    found = await store.scan("c", where={"hit": True}, limit=2)
    assert [r.value["n"] for r in found] == [3, 150]
    assert [r.value["n"] for r in await store.scan("c", where={"n": 259}, limit=1)] == [259]


# --------------------------------------------------------------- streams
async def test_append_numbers_entries_from_one_in_order(store: Store, clock: ManualClock) -> None:
    entries = []
    for i in range(3):
        entries.append(await store.append("history:1", {"i": i}))
        clock.advance(1)
    assert [(e.stream, e.seq, e.value) for e in entries] == [("history:1", n + 1, {"i": n}) for n in range(3)]
    assert [e.at for e in entries] == [clock.now - 3, clock.now - 2, clock.now - 1]
    assert await store.read("history:1") == entries


async def test_streams_are_separate(store: Store) -> None:
    await store.append("s1", {"n": 1})
    second = await store.append("s2", {"n": 1})
    assert second.seq == 1
    assert [e.value for e in await store.read("s1")] == [{"n": 1}]
    assert await store.read("never-written") == []


async def test_read_after_and_limit(store: Store) -> None:
    for i in range(1, 6):
        await store.append("s", {"i": i})
    assert [e.seq for e in await store.read("s", after=2)] == [3, 4, 5]
    assert [e.seq for e in await store.read("s", after=2, limit=2)] == [3, 4]
    assert [e.seq for e in await store.read("s", limit=1)] == [1]
    assert await store.read("s", after=5) == []
    assert await store.read("s", limit=0) == []


async def test_trim_keeps_the_newest_and_sequence_keeps_growing(store: Store) -> None:
    for i in range(5):
        await store.append("s", {"i": i})
    assert await store.trim("s", keep_last=2) == 3
    assert [e.seq for e in await store.read("s")] == [4, 5]
    assert await store.trim("s", keep_last=10) == 0
    assert await store.trim("s", keep_last=0) == 2
    assert await store.read("s") == []
    assert (await store.append("s", {"i": 5})).seq == 6
    assert await store.trim("nothing-here", keep_last=1) == 0


async def test_bad_stream_value_names_the_stream(store: Store) -> None:
    with pytest.raises(StoreError, match="audit"):
        await store.append("audit", {"x": {1}})
    assert await store.read("audit") == []


# ----------------------------------------------------------------- rates
async def test_hit_counts_down_and_denies_without_recording(store: Store, clock: ManualClock) -> None:
    decisions = [await store.hit("user:1", cost=1, limit=3, window=60) for _ in range(3)]
    assert [(d.allowed, d.remaining, d.retry_after) for d in decisions] == [
        (True, 2, 0.0),
        (True, 1, 0.0),
        (True, 0, 0.0),
    ]
    clock.advance(10)
    denied = await store.hit("user:1", cost=1, limit=3, window=60)
    assert (denied.allowed, denied.remaining, denied.retry_after) == (False, 0, 50.0)
    clock.advance(50)  # the three first hits leave the window together; the denied one was never counted
    again = await store.hit("user:1", cost=3, limit=3, window=60)
    assert (again.allowed, again.remaining) == (True, 0)


async def test_window_slides_one_hit_at_a_time(store: Store, clock: ManualClock) -> None:
    for _ in range(3):
        assert (await store.hit("k", cost=1, limit=3, window=10)).allowed
        clock.advance(1)
    # now = t0+3; hits at t0, t0+1, t0+2. A cost of 2 needs the two oldest gone: at t0+1+10.
    denied = await store.hit("k", cost=2, limit=3, window=10)
    assert not denied.allowed and denied.retry_after == pytest.approx(8.0)
    clock.advance(7)  # t0+10: the first hit just left
    assert (await store.hit("k", cost=2, limit=3, window=10)).allowed is False
    one = await store.hit("k", cost=1, limit=3, window=10)
    assert (one.allowed, one.remaining) == (True, 0)


async def test_denied_hit_reports_zero_remaining_even_with_budget_left(store: Store) -> None:
    assert (await store.hit("k", cost=2, limit=3, window=60)).remaining == 1
    denied = await store.hit("k", cost=2, limit=3, window=60)
    assert (denied.allowed, denied.remaining) == (False, 0)
    small = await store.hit("k", cost=1, limit=3, window=60)
    assert (small.allowed, small.remaining) == (True, 0)


async def test_cost_above_limit_never_fits(store: Store) -> None:
    decision = await store.hit("k", cost=5, limit=4, window=60)
    assert (decision.allowed, decision.remaining) == (False, 0)
    assert math.isinf(decision.retry_after)
    assert (await store.hit("k", cost=4, limit=4, window=60)).allowed


async def test_rate_keys_are_separate(store: Store) -> None:
    assert (await store.hit("a", cost=1, limit=1, window=60)).allowed
    assert not (await store.hit("a", cost=1, limit=1, window=60)).allowed
    assert (await store.hit("b", cost=1, limit=1, window=60)).allowed


async def test_purge_keeps_rate_windows_working(store: Store, clock: ManualClock) -> None:
    assert (await store.hit("k", cost=2, limit=2, window=5)).allowed
    clock.advance(3)
    await store.purge_expired()
    assert not (await store.hit("k", cost=1, limit=2, window=5)).allowed
    clock.advance(2)
    await store.purge_expired()
    assert (await store.hit("k", cost=2, limit=2, window=5)).allowed
