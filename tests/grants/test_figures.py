"""Figures a user can read: what judging costs a call, on memory and on a SQLite file (printed with -s)."""

from __future__ import annotations

from pathlib import Path
from time import perf_counter

import pytest

from milpa_chat.store import MemoryStore, Store
from milpa_chat.store.sqlite import SqliteStore
from tests.grants.house import NOBODY, REQUESTER, grant, house, measured, signed

CLEAN = {"archive": "clean.tgz", "channel": "stable"}


async def _ms(registry: object, ctx: object, n: int) -> float:
    t0 = perf_counter()
    for _ in range(n):
        result = await registry.call("release_publish", CLEAN, ctx)  # type: ignore[attr-defined]
        assert result.success
    return (perf_counter() - t0) * 1000 / n


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_what_judging_costs_a_call(backend: str, tmp_path: Path) -> None:
    store: Store = MemoryStore() if backend == "memory" else SqliteStore(tmp_path / "figures.db")
    registry, desk = house(store)
    await measured(registry, "clean.tgz")
    baseline = await _ms(registry, REQUESTER, 20)  # no grant yet: every call opens its approval
    for i in range(20):  # other grants the house keeps, for other seats
        await signed(desk, grant(id=f"other-{i}", to=(f"slack:U{i}",)))
    await signed(desk)
    lent = await _ms(registry, REQUESTER, 50)
    other_seat = await _ms(registry, NOBODY, 20)
    record = await desk.get("release-stable")
    assert record is not None and record.uses == 50
    print(
        f"\n[{backend}] a call that opens its approval, no grants kept: {baseline:.2f} ms; lent by a grant among 21: "
        f"{lent:.2f} ms; another seat (21 grants judged, card opened): {other_seat:.2f} ms"
    )
    await store.close()
