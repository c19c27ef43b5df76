"""A secret written in a sentence ("my password is …", "the PIN is …") never reaches a chat, through real
python-telegram-bot and slack-bolt: the requester's copy, the approvers' cards on both surfaces, the decided
cards and the result say the words and hide the value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from milpa_chat import VerifyPolicy, tool
from milpa_chat.testing import ManualClock

from .conftest_slack import APPROVERS
from .test_approver_reach import APPROVE, MARIA, TG_APPROVERS, WAIT, Payments, world

PASSWORD, PIN = "rifFCI8mQ2x", "80467"
MEMO = f"my password is {PASSWORD}, the PIN is {PIN}"


class MemoPayments(Payments):
    @tool(
        "pay_memo",
        "Pay with a memo",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=APPROVE, expires_in=900),
    )
    async def pay_memo(self, to: str, memo: str) -> dict[str, Any]:
        return {**self._pay("memo", to, 1.0), "memo": memo}


async def test_a_password_in_a_sentence_is_masked_on_every_card_and_in_the_result(tmp_path: Path) -> None:
    payments = MemoPayments()
    async with world(tmp_path / "bot.db", ManualClock(), payments) as w:
        assert w.api is not None and w.slack is not None and w.slack_bot is not None
        waiting = await w.ask(f'/pay_memo ACME "{MEMO}"')
        card = await w.tg.wait_until(lambda: next(iter(w.cards_in(TG_APPROVERS)), None), WAIT, what="the card")
        slack_card = await w.api.wait_for(lambda: next(iter(w.slack_cards_in(APPROVERS)), None), WAIT)
        for shown in (waiting.text or "", card.text or "", slack_card.all_text()):
            assert "my password is" in shown and "the PIN is" in shown and "REDACTED" in shown, shown
            assert PASSWORD not in shown and PIN not in shown, shown

        await w.tap(card, "Approve", MARIA)
        await w.tg.wait_until(lambda: payments.paid != [], WAIT, what="the approved payment")
        await w.tg.wait_until(
            lambda: not w.now(card).button_labels or w.now(card).button_labels == ["📄 Show all"],
            WAIT,
            what="the decided card",
        )
        await w.slack_bot.drain()

        telegram = "\n".join(str(c.params.get("text", "")) for c in w.tg.calls if c.ok)
        slack = "\n".join(m.all_text() for channel in (APPROVERS,) for m in w.api.messages(channel))
        assert "my password is" in telegram and "Approved" in telegram, telegram
        assert PASSWORD not in telegram and PIN not in telegram, telegram
        assert PASSWORD not in slack and PIN not in slack, slack
