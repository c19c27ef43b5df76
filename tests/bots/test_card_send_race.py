"""A decision that lands while an approval card is still being sent (the platform shows the card, its answer with
the message id has not come back yet) is carried out once and sends no second copy of any card: the copy in flight
is edited to the decision once its id is known. Real python-telegram-bot against the local Bot API server, which
answers the card's ``sendMessage`` late."""

from __future__ import annotations

import asyncio

from .telegram_support import ALICE, APPROVERS, MARIA, WAIT, running_bot


async def test_a_decision_while_the_card_is_being_sent_sends_no_second_card() -> None:
    async with running_bot() as h:
        h.server.arm_latency("sendMessage", 2.0, times=2)  # both copies are posted at once, answered 2 s late
        asked = await h.server.send_message(ALICE.id, ALICE, "/send_payment ACME 120")
        card = await h.server.wait_for_message(APPROVERS, since=asked, timeout=WAIT)
        approvals = await h.assistant.approvals.listing()
        assert approvals and not any(c.get("message_id") for c in approvals[0].data["cards"])  # the send is in flight
        await h.tap(card, "Approve", MARIA)  # decided before the bot knows the card's id
        await h.server.wait_until(lambda: "send_payment" in h.runs, WAIT, what="the payment")
        for _ in range(1000):  # until the sends in flight came back and their ids were kept
            (approval,) = await h.assistant.approvals.listing()
            if all(c.get("message_id") for c in approval.data["cards"]):
                break
            await asyncio.sleep(0.01)
        await h.server.wait_until(lambda: "Done" in (h.current(card).text or ""), WAIT, what="the group's card edited")
        await asyncio.sleep(0.5)  # anything late (a second copy) would be sent by now
        group = [m for m in h.server.messages(APPROVERS) if m.sender.is_bot]
        mine = [m for m in h.server.messages(ALICE.id) if m.sender.is_bot]
        print(f"\ncards in the approvers' group after a decision during the send: {len(group)}")
        assert [m.message_id for m in group] == [card.message_id], [m.text for m in group]
        assert h.runs == ["send_payment"] and not h.current(card).button_labels
        # Alice: her copy of the card (edited to the outcome), then the result; no second copy
        assert sum("send_payment" in (m.versions[0].text or "") for m in mine) == 1, [m.text for m in mine]
        assert "Done" in (mine[0].text or "") and not mine[0].button_labels  # her copy, sent during the decision
        (approval,) = await h.assistant.approvals.listing()
        assert [c["message_id"] for c in approval.data["cards"]].count(str(card.message_id)) == 1
        assert not any("sending" in c for c in approval.data["cards"])
