"""Signals against rubber-stamping: per approver, decisions, approve rate, time to decide, and approvals that
came faster than the card can be read — in chat (/approvals) and on the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from milpa_chat.chat import Assistant
from milpa_chat.runtime.approval_stats import approver_stats
from milpa_chat.testing import ManualClock
from milpa_chat.testing.transport import RecordingTransport

from .conftest import ALICE, APPROVERS_CHAT, MANAGER, MANAGER2, Tools, make_assistant, sqlite_store


async def decide_some(assistant: Assistant, tg: RecordingTransport, clock: ManualClock) -> None:
    for amount, who, word, after in [
        (1, MANAGER, "Approve", 1.0),
        (2, MANAGER, "Approve", 2.0),
        (3, MANAGER, "Approve", 40.0),
        (4, MANAGER2, "Reject", 90.0),
        (5, MANAGER2, "Approve", 120.0),
    ]:
        await tg.say(assistant, ALICE, f"/pay ACME {amount}")
        clock.now += after
        await tg.tap(assistant, who, tg.last(APPROVERS_CHAT), word)


async def test_each_approver_is_shown_how_they_decide(
    tools: Tools, clock: ManualClock, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "bot.db"
    assistant = make_assistant(tools, sqlite_store(db, clock))
    tg = RecordingTransport("telegram")
    assistant.attach(tg)
    await decide_some(assistant, tg, clock)
    maria, mateo = approver_stats(await assistant.approvals.listing())
    assert (maria.name, maria.decisions, maria.approved, maria.too_fast) == ("Maria", 3, 3, 2)
    assert maria.median_seconds == 2.0 and maria.approve_rate == 1.0
    assert (mateo.decisions, mateo.approved, mateo.rejected, mateo.too_fast) == (2, 1, 1, 0)

    await tg.say(assistant, MANAGER, "/approvals")
    text = tg.last(MANAGER.id).text
    assert "Maria (telegram:2001): 3 decisions, 100% approved, median 2 s" in text
    assert "2 approved faster than the card can be read" in text and "Mateo" in text
    await tg.say(assistant, ALICE, "/approvals")
    assert "for approvers" in tg.last(ALICE.id).text  # a requester does not see approvers' figures
    await assistant.store.close()

    import asyncio

    from milpa_chat.cli import main

    assert await asyncio.to_thread(main, ["approvals", "--stats", "--days", "100000", "--store", str(db)]) == 0
    out = capsys.readouterr().out
    assert "Maria (telegram:2001): 3 decisions" in out and "Mateo (telegram:2002): 2 decisions, 50% approved" in out
