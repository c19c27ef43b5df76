"""Approvals in Slack, end to end: confirm/cancel, foreign and concurrent taps, verification in the approver
channel with four-eyes, reject, expiry, and a restart between request and decision (SQLite file)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from milpa_chat.testing import ManualClock, eventually
from milpa_chat.testing.slack import SlackApiServer

from .conftest_slack import (
    ALICE,
    APPROVERS,
    BOB,
    LEAD,
    MARIA,
    MATEO,
    TEAM,
    TOKEN,
    WORK,
    SlackWorld,
    Tools,
    button,
    make_assistant,
    memory_assistant,
    slack_world,
    sqlite_store,
)


@pytest.fixture
def tools() -> Tools:
    return Tools()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def world(tools: Tools, clock: ManualClock) -> AsyncIterator[SlackWorld]:
    async with slack_world(memory_assistant(tools, clock), sweep_interval=0.05) as w:
        yield w


async def test_confirm_runs_once_for_the_requester_and_refuses_everyone_else(world: SlackWorld, tools: Tools) -> None:
    await world.command("delete_note 5", user=ALICE)
    card = world.last(WORK)
    assert [b["text"]["text"] for b in card.buttons()] == ["✅ Confirm", "✖ Cancel"] and tools.deleted == []
    confirm = button(card, "Confirm")
    await world.tap(card, "Confirm", user=BOB)
    assert world.ephemeral(BOB) == ["Only u1001 can confirm this."] and tools.deleted == [] and not card.edited
    await world.tap(card, "Confirm", user=ALICE)
    assert tools.deleted == [5]
    assert card.buttons() == [] and "Done: delete_note" in card.text
    assert "Confirmed by u1001 via Slack" in card.all_text()
    assert "Deleted" in world.last(WORK).all_text()
    await world.tap_element(card, confirm, user=ALICE)  # the old card, tapped again
    assert tools.deleted == [5] and world.ephemeral(ALICE)[-1] == "Already done."


async def test_cancel_does_nothing_and_says_so(world: SlackWorld, tools: Tools) -> None:
    await world.command("delete_note 6", user=ALICE)
    card = world.last(WORK)
    await world.tap(card, "Cancel", user=ALICE)
    assert tools.deleted == [] and card.buttons() == [] and "Cancelled" in card.all_text()
    assert world.ephemeral(ALICE) == []  # the card says it; no extra message


async def test_fifty_concurrent_taps_run_the_tool_once(world: SlackWorld, tools: Tools) -> None:
    await world.command("delete_note 7", user=ALICE)
    card = world.last(WORK)
    action_id = button(card, "Confirm")["action_id"]
    taps = [world.slack.payloads.click(card, action_id, user=ALICE) for _ in range(50)]
    answers = await asyncio.gather(*(world.slack.send(tap) for tap in taps))
    await world.bot.drain()
    assert {a.status for a in answers} == {200}  # each within Slack's 3 s (SlackEvents raises SlackAckTimeout past it)
    print(f"\nfifty concurrent taps: the slowest acknowledged in {max(a.elapsed for a in answers) * 1000:.0f} ms")
    assert tools.deleted == [7]
    notes = world.ephemeral(ALICE)
    assert notes and all(n.startswith("Already") for n in notes)  # the 49 (or fewer: same action_ts) late taps
    [result] = world.api.messages(WORK)[1:]  # one result after the card
    assert "Deleted" in result.all_text() and card.buttons() == []


async def test_verification_is_decided_in_the_approver_channel_with_four_eyes(world: SlackWorld, tools: Tools) -> None:
    await world.command("pay ACME 120.5", user=LEAD)
    mine, group = world.last(WORK), world.last(APPROVERS)
    # the requester's copy offers only Withdraw; the approvers' copy Approve / Reject
    assert [b["text"]["text"] for b in mine.buttons()] == ["↩ Withdraw"]
    assert "Waiting for an approver" in mine.all_text()
    assert [b["text"]["text"] for b in group.buttons()][:2] == ["✅ Approve", "⛔ Reject"]
    assert "ACME" in group.all_text() and tools.paid == []
    await world.tap(group, "Approve", user=LEAD)  # the requester is an approver too, but not of their own request
    assert "four-eyes" in world.ephemeral(LEAD)[-1] and tools.paid == []
    await world.tap(group, "Approve", user=BOB)  # no payments:approve
    assert "payments:approve" in world.ephemeral(BOB)[-1] and tools.paid == []
    await world.tap(group, "Approve", user=MARIA)
    assert tools.paid == [("ACME", 120.5)]
    for card in (group, mine):
        assert card.buttons() == [] and "u2001" in card.all_text() and "Done" in card.text
    assert "Paid" in world.last(WORK).all_text() or "120.5" in world.last(WORK).all_text()
    await world.tap_element(group, group.history[0].blocks[-1]["elements"][0], user=MATEO)
    assert world.ephemeral(MATEO)[-1].startswith("Already") and tools.paid == [("ACME", 120.5)]


async def test_reject_tells_the_requester_and_runs_nothing(world: SlackWorld, tools: Tools) -> None:
    await world.command("pay ACME 10", user=ALICE)
    group = world.last(APPROVERS)
    await world.tap(group, "Reject", user=MARIA)
    assert tools.paid == [] and group.buttons() == [] and "Rejected" in group.text
    assert "rejected by u2001" in world.last(WORK).all_text()
    assert world.ephemeral(MARIA) == []


async def test_expiry_edits_every_card_and_late_taps_are_refused(
    world: SlackWorld, tools: Tools, clock: ManualClock
) -> None:
    await world.command("pay ACME 3", user=ALICE)
    mine, group = world.last(WORK), world.last(APPROVERS)
    approve = button(group, "Approve")
    clock.now += 601  # the bot's sweeper (running while it serves) notices
    await eventually(lambda: "Expired" in group.text and "Expired" in mine.text)
    assert group.buttons() == [] and "Nothing was done" in group.all_text()
    await eventually(lambda: "expired; nothing was done" in world.last(WORK).all_text())
    await world.tap_element(group, approve, user=MARIA)
    assert tools.paid == [] and "expired" in world.ephemeral(MARIA)[-1]


async def test_without_a_sweeper_only_your_own_sweep_expires(tools: Tools, clock: ManualClock) -> None:
    """``sweep_interval=None``: the bot serves without a sweeper (the app runs its own elsewhere), so a request
    overdue when it starts serving stays as it is until that sweep, which then acts on it alone."""
    assistant = memory_assistant(tools, clock)
    async with SlackApiServer(TOKEN, team_id=TEAM, channels={WORK: "work", APPROVERS: "approvers"}) as api:
        async with slack_world(assistant, api=api, sweep_interval=None) as before:
            await before.command("pay ACME 3", user=ALICE)
            group = before.last(APPROVERS)
        clock.now += 601  # overdue while nothing served
        async with slack_world(assistant, api=api, sweep_interval=None):
            await asyncio.sleep(0.3)  # a sweeper sweeps as soon as the bot serves
            assert "Expired" not in group.text and group.buttons()
            assert await assistant.sweep() == 1
            await eventually(lambda: "Expired" in group.text)
        assert tools.paid == []


async def test_a_restart_between_request_and_decision(tools: Tools, clock: ManualClock, tmp_path: Path) -> None:
    db = tmp_path / "assistant.db"
    async with SlackApiServer(TOKEN, team_id=TEAM, channels={WORK: "work", APPROVERS: "approvers"}) as api:
        first = make_assistant(tools, sqlite_store(db, clock))
        async with slack_world(first, api=api) as before:
            await before.command("pay ACME 42", user=ALICE)
            mine, group = before.last(WORK), before.last(APPROVERS)
        await first.store.close()

        after_tools = Tools()  # a new app instance: new tools, registry, assistant, bot, HTTP server; same file
        second = make_assistant(after_tools, sqlite_store(db, clock))
        async with slack_world(second, api=api) as after:
            await after.tap(group, "Approve", user=MARIA)
            assert after_tools.paid == [("ACME", 42.0)] and tools.paid == []
            assert group.buttons() == [] and "Done" in group.text and "Done" in mine.text
            assert "42" in after.last(WORK).all_text()
        await second.store.close()
