"""SlackBot end to end: signed requests over HTTP to the running bolt app, replies on the local Slack Web API.

Commands, mentions and DMs, errors users see, signature checks, retries, the 3-second ack, pagination.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from milpa_chat.chat.inbound import Inbound
from milpa_chat.runtime.context import ToolContext
from milpa_chat.testing import ManualClock

from .conftest_slack import (
    ALICE,
    BOB,
    EVE,
    WORK,
    SlackWorld,
    Tools,
    button,
    memory_assistant,
    slack_world,
)


@pytest.fixture
def tools() -> Tools:
    return Tools(slow_seconds=3.5)


@pytest.fixture
async def world(tools: Tools) -> AsyncIterator[SlackWorld]:
    async with slack_world(memory_assistant(tools, ManualClock())) as w:
        yield w


# --- commands --------------------------------------------------------------------------------------------------


async def test_tools_and_help_through_the_slash_command(world: SlackWorld) -> None:
    resp = await world.command("tools", user=ALICE)
    assert resp.status == 200 and resp.text == ""
    listing = world.private(ALICE).all_text()  # one person's permissions are shown to that person alone
    assert "/milpa delete_note" in listing and "/milpa pay" in listing
    await world.command("tools", user=EVE)
    assert "no tools available" in world.private(EVE).all_text()
    await world.command("help", user=ALICE)
    assert "/milpa tools" in world.private(ALICE).all_text()
    await world.command("", user=ALICE)  # a bare /milpa is help
    shown = world.api.ephemeral_messages(ALICE)
    assert shown[-1].all_text() == shown[-2].all_text()
    assert world.public() == []


async def test_bad_arguments_and_unknown_commands_get_a_clear_message(world: SlackWorld, tools: Tools) -> None:
    await world.command("delete_note five", user=ALICE)
    text = world.private(ALICE).all_text()
    assert "note_id: Input should be a valid integer" in text and tools.deleted == []
    assert "Usage: /milpa delete_note &lt;note_id&gt;" in text  # the usage line on every argument error
    await world.command('pay "ACME', user=ALICE)
    assert "close every quote" in world.private(ALICE).all_text()
    await world.command("delete_not 5", user=ALICE)
    assert "Did you mean /milpa delete_note" in world.private(ALICE).all_text()
    await world.command("delete_note 5", user=EVE)
    denial = world.private(EVE).all_text()
    assert "notes:write" in denial and f"slack:T1:{EVE}" in denial and tools.deleted == []
    assert world.public() == []  # every refusal went to the actor alone


async def test_a_slow_tool_is_acknowledged_at_once_and_answers_later(world: SlackWorld, tools: Tools) -> None:
    # SlackEvents raises SlackAckTimeout after Slack's 3 s; the report takes 4 s
    resp = await world.slack.command("/milpa", "report", user=ALICE, channel=WORK)
    assert resp.status == 200
    assert not any("Notes" in m.all_text() for m in world.api.messages(WORK))  # acknowledged before it answered
    # others are served while it runs
    await world.slack.command("/milpa", "delete_note 4", user=ALICE, channel=WORK)
    card = await world.api.wait_for_message(WORK, lambda m: bool(m.buttons()))
    tap = await world.slack.click(card, button(card, "Confirm")["action_id"], user=ALICE)
    await world.api.wait_for(lambda: tools.deleted == [4])
    assert "Notes" not in world.last(WORK).all_text()  # the tap was served while the report still ran
    print(f"\nslow tool: /milpa acknowledged in {resp.elapsed * 1000:.0f} ms, tap in {tap.elapsed * 1000:.0f} ms")
    await world.bot.drain()
    assert tools.slow_runs == 1 and "Notes" in world.last(WORK).all_text()


async def test_when_the_app_cannot_post_the_user_is_told_through_the_response_url(world: SlackWorld) -> None:
    world.api.fail_next("chat.postMessage", "not_in_channel", times=2)  # the result, then the apology
    await world.command("list_notes", user=ALICE)
    [note] = world.api.ephemeral_messages(ALICE)
    assert "cannot post in this conversation (not_in_channel)" in note.text and note.via == "response_url"
    assert "/invite" in note.text


async def test_a_rate_limited_update_is_retried_after_retry_after(world: SlackWorld, tools: Tools) -> None:
    await world.command("delete_note 2", user=ALICE)
    card = world.last(WORK)
    world.api.rate_limit("chat.update", times=1, retry_after=1)
    await world.tap(card, "Confirm", user=ALICE)
    assert tools.deleted == [2] and card.buttons() == [] and "Done" in card.all_text()
    assert [c.status for c in world.api.calls("chat.update")][:2] == [429, 200]


async def test_a_result_too_long_for_slack_is_shortened_and_its_file_offered(
    world: SlackWorld, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, "milpa_chat.bots.slack"):
        await world.command("dump_notes", user=ALICE)
    message = world.last(WORK)
    assert "Shortened for Slack" in message.all_text() and len(message.blocks) <= 50
    # the local server has no files API: the upload fails, is logged with the fix, and the message stays
    assert world.api.calls("files.getUploadURLExternal")
    assert "files:write" in caplog.text


# --- buttons ---------------------------------------------------------------------------------------------------


async def test_page_buttons_edit_the_same_message_and_only_for_whoever_ran_it(world: SlackWorld) -> None:
    await world.command("list_notes", user=ALICE)
    page = world.last(WORK)
    assert "note 1" in page.all_text() and "note 11" not in page.all_text()
    await world.tap(page, "Next", user=ALICE)
    assert "note 11" in page.all_text() and world.api.messages(WORK) == [page] and page.edited
    await world.tap(page, "Next", user=BOB)
    assert "Only the person who ran this" in world.ephemeral(BOB)[-1]


async def test_buttons_this_app_did_not_make_are_refused(world: SlackWorld, tools: Tools) -> None:
    await world.command("delete_note 9", user=ALICE)
    card = world.last(WORK)
    forged = {"type": "button", "action_id": "milpa:confirm:0", "value": "confirm:no-such-approval"}
    await world.tap_element(card, forged, user=ALICE)
    assert "not valid" in world.ephemeral(ALICE)[-1] and tools.deleted == []
    garbage = {"type": "button", "action_id": "milpa:confirm:0", "value": "not button data"}
    resp = await world.tap_element(card, garbage, user=ALICE)
    assert resp.status == 200 and "not made by this app" in world.ephemeral(ALICE)[-1] and tools.deleted == []


# --- mentions, direct messages, the agent ----------------------------------------------------------------------


async def test_mentions_and_direct_messages_without_an_agent_point_to_the_commands(world: SlackWorld) -> None:
    resp = await world.slack.app_mention("what can you do?", user=ALICE, channel=WORK)
    await world.bot.drain()
    assert resp.status == 200 and "/milpa tools" in world.private(ALICE).all_text()
    await world.slack.direct_message("hello", user=ALICE)
    await world.bot.drain()
    assert "/milpa tools" in world.private(ALICE, "D1001").all_text()
    await world.slack.app_mention("/tools", user=ALICE, channel=WORK)  # a command written after the mention
    await world.bot.drain()
    assert "/milpa delete_note" in world.private(ALICE).all_text()
    assert world.public() == []


async def test_free_text_goes_to_the_agent_as_the_slack_user(tools: Tools) -> None:
    seen: list[tuple[str | None, str | None]] = []

    async def agent(inbound: Inbound, ctx: ToolContext) -> str:
        seen.append((inbound.text, ctx.principal))
        return f"You said: {inbound.text} (in <#C0WORK>)"

    async with slack_world(memory_assistant(tools, ManualClock(), agent=agent)) as world:
        await world.slack.app_mention("summarise <#C0WORK> please", user=ALICE, channel=WORK)
        await world.slack.direct_message("and now?", user=BOB)
        await world.bot.drain()
        assert seen == [("summarise #C0WORK please", "slack:T1:U1001"), ("and now?", "slack:T1:U1002")]
        assert "You said: and now?" in world.last("D1002").all_text()
        # the agent's text is shown, never acted on: the channel link stays text
        assert "&lt;#C0WORK&gt;" in world.last(WORK).all_text()


async def test_edits_bot_messages_and_channel_chatter_are_ignored_but_acknowledged(world: SlackWorld) -> None:
    events: list[dict[str, Any]] = [
        {"type": "message", "subtype": "message_changed", "channel": "D1001", "channel_type": "im", "ts": "1.1"},
        {"type": "message", "channel": "D1001", "channel_type": "im", "user": ALICE, "bot_id": "B9", "text": "x"},
        {"type": "message", "channel": WORK, "channel_type": "channel", "user": ALICE, "text": "lunch?"},
    ]
    for event in events:
        resp = await world.slack.event(event)
        assert resp.status == 200  # not 404: Slack would retry it
    await world.bot.drain()
    assert world.api.calls("chat.postMessage") == []


async def test_url_verification_is_answered(world: SlackWorld) -> None:
    resp = await world.slack.url_verification("challenge-123")
    assert resp.status == 200 and resp.json() == {"challenge": "challenge-123"}


# --- what Slack guarantees and the app must check ---------------------------------------------------------------


async def test_bad_signatures_and_old_timestamps_are_refused_and_change_nothing(
    world: SlackWorld, tools: Tools
) -> None:
    await world.command("delete_note 6", user=ALICE)
    card = world.last(WORK)
    confirm = card.find_action("milpa:confirm:0")[1]["action_id"]
    calls = len(world.api.calls())
    for bad_signature, stale in ((True, False), (False, True)):
        requests = (
            world.slack.payloads.click(card, confirm, user=ALICE),
            world.slack.payloads.command("/milpa", "delete_note 7", user=ALICE),
            world.slack.payloads.app_mention("hi", user=ALICE),
        )
        answers = [await world.slack.send(r, bad_signature=bad_signature, stale=stale) for r in requests]
        assert [a.status for a in answers] == [401, 401, 401]
    await world.bot.drain()
    assert tools.deleted == [] and not card.edited and len(world.api.calls()) == calls
    assert [m.ts for m in world.api.messages(WORK) if m.user != ALICE] == [card.ts]
    await world.tap(card, "Confirm", user=ALICE)  # the real tap still works
    assert tools.deleted == [6]


async def test_retried_and_repeated_deliveries_run_nothing_twice(world: SlackWorld, tools: Tools) -> None:
    mention = await world.slack.app_mention("hello", user=ALICE, channel=WORK)
    await world.slack.retry(mention, num=1, reason="http_timeout")
    await world.slack.retry(mention, num=2, reason="http_error")
    await world.bot.drain()
    assert len(world.api.ephemeral_messages(ALICE)) == 1  # the one answer to the mention

    first = await world.slack.command("/milpa", "delete_note 8", user=ALICE, channel=WORK)
    # the same command (same trigger_id) delivered twice, each delivery signed by Slack when it is sent (the very
    # same signed request again is a replay, refused by the signature check: see test_slack_requests.py)
    sent_at = int(first.signed.headers["X-Slack-Request-Timestamp"])
    again = await world.slack.send(first.request, timestamp=sent_at - 1)
    await world.bot.drain()
    assert again.status == 200 and len([m for m in world.api.messages(WORK) if m.buttons()]) == 1

    card = world.last(WORK)
    tap = await world.tap(card, "Confirm", user=ALICE)
    answers = world.ephemeral(ALICE)
    for _ in range(3):
        await world.slack.send(tap.request)
    await world.bot.drain()
    assert tools.deleted == [8] and world.ephemeral(ALICE) == answers


async def test_a_redelivered_decision_or_page_tap_is_dropped_before_the_assistant_is_asked(
    world: SlackWorld, tools: Tools, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Taps the assistant de-duplicates in memory (decisions, pages) are dropped by the bot when it has handed the
    same tap over before: acknowledged, and nothing more; another tap on the same button is a new tap."""
    asked: list[str | None] = []
    handle = world.assistant.handle

    async def counted(inbound: Inbound, transport: Any = None) -> None:
        asked.append(inbound.delivery_id)
        await handle(inbound, transport)

    monkeypatch.setattr(world.assistant, "handle", counted)
    await world.command("list_notes", user=ALICE)
    page = world.last(WORK)
    turned = await world.tap(page, "Next", user=ALICE)
    await world.command("delete_note 3", user=ALICE)
    confirmed = await world.tap(world.last(WORK), "Confirm", user=ALICE)
    asked_before, calls = len(asked), len(world.api.calls())
    for tap in (turned, confirmed):
        for num in (1, 2):
            assert (await world.slack.retry(tap, num=num)).status == 200
    await world.bot.drain()
    assert len(asked) == asked_before and len(world.api.calls()) == calls and tools.deleted == [3]
    await world.slack.click(page, button(page, "Next")["action_id"], user=ALICE)  # a new tap on the same button
    await world.bot.drain()
    assert len(asked) == asked_before + 1


async def test_progress_notices_are_ephemeral_messages_when_switched_on(tools: Tools) -> None:
    async with slack_world(memory_assistant(tools, ManualClock()), notices=True) as world:
        await world.command("delete_note 3", user=ALICE)
        await world.tap(world.last(WORK), "Confirm", user=ALICE)
        await world.command("list_notes", user=ALICE)
        await world.tap(world.last(WORK), "Next", user=ALICE)
        assert world.ephemeral(ALICE) == ["Confirmed — running it now.", "Page 2"]
