"""Receipts and signs of life stay as small as the distinct things measured, and say what the whole
history would have said.

The judge reads receipts from the last one back (``read_condition``) and a falsifier's latest matching
run (``_seen``). The desk keeps one record per key (:func:`receipt_key`, :func:`watch_key`): the property
test replays random measurement histories both ways and compares every reading the judge can make.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from milpa_chat.command.grants import ConditionReceipt, NamedCall
from milpa_chat.grants.receipts import read_condition
from milpa_chat.grants.records import kept_receipts, receipt_key
from milpa_chat.store import SqliteStore
from tests.grants.house import REQUESTER, house, signed

CONTENTS = ("sha256:" + "ab" * 32, "sha256:" + "cd" * 32)
INSTRUMENTS = ("sha256:" + "11" * 32, "sha256:" + "22" * 32)
SPELLINGS = ("release:scan", "Release_Scan", "reports:watch")  # two spellings of one identity, and another
ARGUMENTS = ({"strict": True}, {"strict": True, "archive": "a.tgz"}, {"strict": False}, {"strict": 1})
START = datetime(2026, 11, 1, tzinfo=UTC)

measurement = st.tuples(
    st.sampled_from(SPELLINGS),
    st.sampled_from(ARGUMENTS),
    st.sampled_from(CONTENTS),
    st.sampled_from(INSTRUMENTS),
    st.booleans(),
)
QUERIES = [
    (NamedCall(operation, arguments, free=free), content, instrument)
    for operation in ("release:scan", "reports:watch")
    for arguments, free in (({"strict": True}, ("archive",)), ({"strict": True}, ()), ({}, ("strict", "archive")))
    for content in CONTENTS
    for instrument in (*INSTRUMENTS, None)
]


def receipts_of(history: list[tuple[str, dict[str, Any], str, str, bool]]) -> list[ConditionReceipt]:
    return [
        ConditionReceipt(op, args, content, instrument, holds, at=START + timedelta(seconds=i))
        for i, (op, args, content, instrument, holds) in enumerate(history)
    ]


@settings(max_examples=300, deadline=None)
@given(st.lists(measurement, max_size=40))
def test_the_kept_receipts_read_as_the_whole_history(history: list[Any]) -> None:
    everything = receipts_of(history)
    table: dict[str, dict[str, Any]] = {}
    for taken, receipt in enumerate(everything):  # what GrantDesk.measure does: one put per measurement
        table[receipt_key(receipt)] = {"receipt": receipt.to_dict(), "taken": float(taken)}
    kept = kept_receipts(list(table.values()))

    assert None not in kept
    assert len(kept) <= len(everything)
    for by, content, instrument in QUERIES:
        whole = read_condition(by, content, everything, instrument)
        compact = read_condition(by, content, [r for r in kept if r is not None], instrument)
        assert (compact.measured, compact.receipt) == (whole.measured, whole.receipt), (by, content, instrument)


def test_a_kept_row_that_does_not_read_stays_a_fault_in_its_place() -> None:
    good = ConditionReceipt("release:scan", {"strict": True}, CONTENTS[0], INSTRUMENTS[0], True, at=START)
    rows: list[dict[str, Any]] = [
        {"receipt": good.to_dict(), "taken": 2.0},
        {"receipt": {"by": "tampered"}, "taken": 1.0},
        {"taken": 3.0},
    ]
    assert kept_receipts(rows) == [None, good, None]


async def test_a_thousand_runs_keep_a_handful_of_records_and_the_grant_still_lends(tmp_path: Any) -> None:
    store = SqliteStore(tmp_path / "grants.db")
    registry, desk = house(store)
    try:
        await signed(desk)
        for i in range(500):
            archive = ("clean.tgz", "other.tgz", "leaky.tgz")[i % 3]
            assert (await registry.call("release_scan", {"archive": archive, "strict": True}, REQUESTER)).success
            assert (await registry.call("reports_watch", {}, REQUESTER)).success
        receipts = await store.scan("grant_receipts")
        watch = await store.scan("grant_watch")
        print(f"\n1,000 measured runs kept {len(receipts)} receipts and {len(watch)} signs of life")
        assert len(receipts) == 3  # clean and other: a green each; leaky: its "no"
        assert len(watch) == 4  # the latest run of each: release:scan per archive, reports:watch
        lent = await registry.call("release_publish", {"archive": "clean.tgz", "channel": "stable"}, REQUESTER)
        assert lent.success and lent.meta.get("standing_grant") == "release-stable", lent
        carded = await registry.call("release_publish", {"archive": "leaky.tgz", "channel": "stable"}, REQUESTER)
        assert carded.meta.get("requires_verification") is True and "standing_grant" not in carded.meta
    finally:
        await store.close()


@pytest.mark.parametrize("retention", [0, -1.0, float("nan")])
def test_watch_retention_must_be_a_positive_number_of_seconds(retention: float) -> None:
    from milpa_chat.grants.desk import GrantDesk
    from milpa_chat.runtime import ToolRegistry

    with pytest.raises(ValueError, match="watch_retention"):
        GrantDesk(ToolRegistry(), watch_retention=retention)
