"""The Slack Web API fails calls (HTTP 429 ratelimited with Retry-After, 500) while approvals are decided:
the state moves on at once, the tool runs once, the cards converge when the API recovers. Real slack-bolt."""

from __future__ import annotations

from milpa_chat.testing import ManualClock

from .conftest_slack import ALICE, APPROVERS, MARIA, WORK, Tools, memory_assistant, slack_world


async def test_cards_converge_after_chat_update_failed_for_a_while() -> None:
    tools, clock = Tools(), ManualClock()
    async with slack_world(memory_assistant(tools, clock)) as world:
        await world.command("pay ACME 25", user=ALICE)
        mine, group = world.last(WORK), world.last(APPROVERS)
        world.api.fail_next("chat.update", "internal_error", status=500, times=5)
        await world.tap(group, "Approve", user=MARIA)
        assert tools.paid == [("ACME", 25.0)]  # the decision and the run did not wait for the API
        (approval,) = await world.assistant.approvals.listing()
        assert approval.state == "executed" and approval.effects()
        assert approval.due is not None and approval.due > clock.now  # retried later, with back-off
        for _ in range(8):
            clock.now += 60
            await world.assistant.sweep()
            await world.bot.drain()
        (approval,) = await world.assistant.approvals.listing()
        assert approval.effects() == [] and approval.due is None
        for card in (mine, group):
            assert card.buttons() == [] and "Done" in card.text
        assert tools.paid == [("ACME", 25.0)]
