"""One principal may have at most ``max_pending_per_principal`` requests pending: one more is refused through the
pipeline (``RATE_LIMITED``, naming the cap and how to raise it); others are unaffected; settling frees a slot."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from milpa_chat import ErrorCode, ToolContext, ToolRegistry, VerifyPolicy
from milpa_chat.runtime import ApprovalRefused
from milpa_chat.runtime.approvals import ApprovalDesk
from milpa_chat.store import MemoryStore, SqliteStore
from milpa_chat.testing import ManualClock

CLERK = ToolContext.telegram(1, 100, ["payments:send"])
OTHER = ToolContext.telegram(1, 101, ["payments:send"])
MANAGER = ToolContext.telegram(1, 200, ["payments:approve"])


def registry_on(store: Any, cap: int | None) -> ToolRegistry:
    registry = ToolRegistry(store=store, approval_max_pending=cap)

    async def pay(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        return {"paid": args["amount"]}

    registry.register(
        "pay",
        "Pay",
        {"type": "object", "properties": {"amount": {"type": "integer"}}},
        pay,
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",), expires_in=600),
    )
    return registry


async def test_one_past_the_cap_is_refused_others_are_not_and_settling_frees_a_slot() -> None:
    clock = ManualClock()
    registry = registry_on(MemoryStore(clock=clock), 3)
    ids = [(await registry.call("pay", {"amount": n}, CLERK)).data["request_id"] for n in range(3)]

    refused = await registry.call("pay", {"amount": 9}, CLERK)
    assert not refused.success and refused.code == ErrorCode.RATE_LIMITED
    assert "You have 3 pending requests open" in (refused.error or "")
    assert "max_pending_per_principal=3" in (refused.error or "")  # the cap, and the setting that raises it
    assert len(await registry.approvals.listing()) == 3  # nothing was opened

    assert (await registry.call("pay", {"amount": 1}, OTHER)).success  # another principal: unaffected

    await registry.approvals.decide(ids[0], "reject", MANAGER, via="telegram")  # settled: a slot frees
    assert (await registry.call("pay", {"amount": 4}, CLERK)).success
    assert (await registry.call("pay", {"amount": 5}, CLERK)).code == ErrorCode.RATE_LIMITED

    clock.now += 601  # past their expiry the requests no longer count, swept or not
    assert (await registry.call("pay", {"amount": 6}, CLERK)).success


async def test_the_cap_holds_under_racing_workers(tmp_path: Path) -> None:
    stores = [SqliteStore(tmp_path / "a.db") for _ in range(4)]
    try:
        desks = [ApprovalDesk(s, max_pending_per_principal=5) for s in stores]

        async def open_one(i: int) -> bool:
            try:
                await desks[i % 4].open(
                    "verification", CLERK, tool="pay", args={"amount": i}, summary="pay", expires_in=600
                )
            except ApprovalRefused as exc:
                assert exc.code == "RATE_LIMITED"
                return False
            return True

        opened = await asyncio.gather(*(open_one(i) for i in range(24)))
        assert sum(opened) == 5
        assert len(await desks[0].listing(state="pending")) == 5
    finally:
        for store in stores:
            await store.close()


def test_a_cap_that_is_no_whole_number_is_refused_with_the_setting_named() -> None:
    with pytest.raises(ValueError, match="max_pending_per_principal is a whole number of at least 1"):
        ApprovalDesk(MemoryStore(), max_pending_per_principal=0)
