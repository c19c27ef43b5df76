"""Slack's conventions through real slack-bolt against the local Web API: answers for the actor alone, text
decoded into values a tool can use, people named by name, and the truth when no approver can be reached."""

from __future__ import annotations

from typing import Any

from milpa_chat.chat import Inbound
from milpa_chat.runtime.context import ToolContext
from milpa_chat.testing import ManualClock
from milpa_chat.testing.slack import SlackApiServer

from .conftest_slack import (
    ALICE,
    APPROVERS,
    EVE,
    IDENTITIES,
    MARIA,
    TEAM,
    TOKEN,
    WORK,
    Tools,
    memory_assistant,
    slack_world,
)


async def test_text_as_slack_sends_it_reaches_the_tool_decoded() -> None:
    tools = Tools()
    async with slack_world(memory_assistant(tools, ManualClock())) as world:
        await world.command('pay "Smith &amp; Sons &lt;UK&gt;" 12', user=ALICE)
        [approval] = await world.assistant.approvals.listing()
        assert approval.args == {"to": "Smith & Sons <UK>", "amount": 12.0}  # asks approval for what was meant
        group = world.last(APPROVERS).all_text()
        assert '"to": "Smith & Sons <UK>"' in group and "&amp;amp;" not in group  # the arguments as meant


async def test_mentions_channels_and_links_become_values() -> None:
    seen: list[str | None] = []

    async def agent(inbound: Inbound, ctx: ToolContext) -> str:
        seen.append(inbound.text)
        return "noted"

    async with slack_world(memory_assistant(Tools(), ManualClock(), agent=agent)) as world:
        await world.slack.app_mention(
            "ask <@U2001|maria> in <#C0WORK|work> about <https://example.org/a?b=1&amp;c=2|the page> "
            "or <mailto:ops@example.org|ops@example.org>, <!here>",
            user=ALICE,
            channel=WORK,
        )
        await world.bot.drain()
    assert seen == ["ask U2001 in #work about https://example.org/a?b=1&c=2 or ops@example.org, @here"]


async def test_a_refused_forged_detail_action_tap_is_shown_to_the_actor_alone() -> None:
    tools = Tools()
    async with slack_world(memory_assistant(tools, ManualClock())) as world:
        await world.command("list_notes", user=ALICE)
        card = world.last(WORK)
        forged = {
            "type": "button",
            "action_id": "milpa:delete_note:0",
            "value": "delete_note:5",
            "text": {"type": "plain_text", "text": "Delete"},
        }
        await world.tap_element(card, forged, user=EVE)
        refusal = world.private(EVE).all_text()
        assert "needs the scope notes:write" in refusal and f"slack:{TEAM}:{EVE}" in refusal
        assert world.public() == [card] and tools.deleted == []


async def test_help_and_start_are_for_the_actor_and_built_from_their_tools() -> None:
    async with slack_world(memory_assistant(Tools(), ManualClock())) as world:
        await world.command("start", user=ALICE)
        start = world.private(ALICE).all_text()
        assert f"You are slack:{TEAM}:{ALICE}, with the scopes notes:read, notes:write, payments:send." in start
        assert "/milpa delete_note 5 — values in parameter order" in start
        await world.command("help", user=EVE)
        assert f"You are slack:{TEAM}:{EVE}" not in world.private(EVE).all_text()  # /help alone: how to write
        await world.command("start", user=EVE)
        assert "hold no scopes here yet" in world.private(EVE).all_text()
        assert world.public() == []


async def test_people_are_named_on_cards_through_cached_users_info() -> None:
    async with SlackApiServer(TOKEN, team_id=TEAM, channels={WORK: "work", APPROVERS: "approvers"}) as api:
        api.add_user(ALICE, "u1001", real_name="Alice Archer", display_name="Alice")
        api.add_user(MARIA, "u2001", real_name="María Moreno")
        async with slack_world(memory_assistant(Tools(), ManualClock()), api=api) as world:
            await world.slack.app_mention("/pay ACME 5", user=ALICE, channel=WORK)  # events carry only an id
            await world.bot.drain()
            group = world.last(APPROVERS)
            assert "Alice asks to run pay" in group.text and "u1001" not in group.all_text()
            await world.tap(group, "Approve", user=MARIA)
            await world.command("pay ACME 6", user=ALICE)
            mine = world.api.messages(WORK)
            assert any("María Moreno" in m.all_text() for m in mine), [m.all_text() for m in mine]
        users = [c.args["user"] for c in api.calls("users.info")]
        assert sorted(users) == sorted({ALICE, MARIA})  # each looked up once


async def test_no_reachable_approver_chat_is_said_to_the_requester() -> None:
    identities: dict[str, Any] = {**IDENTITIES, "approvers": {"slack": ["C0GONE"]}}  # no such channel
    async with slack_world(memory_assistant(Tools(), ManualClock(), identities=identities)) as world:
        await world.command("pay ACME 5", user=ALICE)
        mine = world.last(WORK)
        await world.api.wait_for(
            lambda: "No approver could be reached yet" in world.api.message(WORK, mine.ts).all_text() or None
        )
        text = world.api.message(WORK, mine.ts).all_text()
        assert "Waiting for an approver" not in text and "channel_not_found" in text


async def test_where_the_app_may_not_post_the_private_answer_goes_through_the_response_url() -> None:
    async with slack_world(memory_assistant(Tools(), ManualClock())) as world:
        world.api.fail_next("chat.postEphemeral", "not_in_channel")
        await world.command("tools", user=ALICE)
        shown = world.private(ALICE)
        assert shown.via == "response_url" and "/milpa delete_note" in shown.all_text()
        assert world.public() == []
