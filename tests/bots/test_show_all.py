""" "📄 Show all" on a card whose values were shortened, through real python-telegram-bot and slack-bolt: the card
says so instead of attaching a file to itself and to each of its edits; a tap shows every argument (secrets
redacted) to the person who tapped — Slack: only them; Telegram: in the chat that already shows the card — and a
tap whose data names a request from somewhere the person never saw it is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from milpa_chat import VerifyPolicy, tool
from milpa_chat.testing import ManualClock

from .conftest_slack import APPROVERS, button
from .test_approver_reach import APPROVE, EVE, MARIA, MATEO, TG_APPROVERS, WAIT, Payments, world

MEMO = " ".join(f"line{i:04d}" for i in range(400))  # 3,599 characters: more than a card shows of one value


class MemoPayments(Payments):
    @tool(
        "pay_memo",
        "Pay with a long memo",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=APPROVE, expires_in=900),
    )
    async def pay_memo(self, to: str, memo: str, api_key: str = "") -> dict[str, Any]:
        return self._pay("memo", to, float(len(memo)))


async def test_show_all_instead_of_a_file_on_every_copy_and_edit(tmp_path: Path) -> None:
    payments = MemoPayments()
    async with world(tmp_path / "bot.db", ManualClock(), payments) as w:
        assert w.api is not None and w.slack is not None and w.slack_bot is not None
        await w.ask(f'/pay_memo ACME "{MEMO}" api_key=sk-live-9999')
        card = await w.tg.wait_until(lambda: next(iter(w.cards_in(TG_APPROVERS)), None), WAIT, what="the card")
        slack_card = await w.api.wait_for(lambda: next(iter(w.slack_cards_in(APPROVERS)), None), WAIT)
        assert "📄 Show all" in card.button_labels
        assert "Some values are shortened here" in (card.text or "") and MEMO not in (card.text or "")
        assert "Show all" in slack_card.all_text()

        mark = w.tg.mark()
        assert await w.tap(card, "Show all", MARIA) == "Every argument, below."

        def shown_since_the_tap() -> str:
            return "".join(
                str(c.params.get("text", ""))
                for c in w.tg.calls[mark:]
                if c.method == "sendMessage" and c.ok and str(c.params.get("chat_id")) == str(TG_APPROVERS)
            )

        texts = await w.tg.wait_until(
            lambda: (t := shown_since_the_tap()) and "line0399" in t and t, WAIT, what="every argument in the chat"
        )
        assert isinstance(texts, str) and texts.startswith("<b>📄 All arguments: pay_memo</b>")
        assert all(f"line{i:04d}" in texts for i in range(400))  # the whole memo, over its pages
        assert "sk-live-9999" not in texts and "REDACTED" in texts
        assert payments.paid == []  # showing decides nothing

        await w.slack.click(slack_card, button(slack_card, "Show all")["action_id"], user=MATEO)
        await w.slack_bot.drain()
        whisper = w.api.ephemeral_messages(MATEO)[-1]
        assert "line0000" in whisper.all_text() and "line0399" in whisper.all_text()
        assert "sk-live-9999" not in whisper.all_text()

        await w.tap(card, "Approve", MARIA)
        await w.tg.wait_until(lambda: payments.paid != [], WAIT, what="the approved payment")
        await w.tg.wait_until(
            lambda: not w.now(card).button_labels or w.now(card).button_labels == ["📄 Show all"],
            WAIT,
            what="the decided card",
        )
        assert [c for c in w.tg.calls if c.method == "sendDocument"] == []  # no file on the card, nor on its edits


async def test_a_show_all_tap_from_where_the_request_was_never_shown_is_refused(tmp_path: Path) -> None:
    payments = MemoPayments()
    async with world(tmp_path / "bot.db", ManualClock(), payments, slack=False) as w:
        await w.ask(f'/pay_memo ACME "{MEMO}"')
        card = await w.tg.wait_until(lambda: next(iter(w.cards_in(TG_APPROVERS)), None), WAIT, what="the card")
        approval_id = next(
            c.params
            for c in w.tg.calls
            if c.method == "sendMessage" and "show_all" in str(c.params.get("reply_markup"))
        )
        ref = str(approval_id["reply_markup"]).split("show_all:", 1)[1].split("'", 1)[0].split('"', 1)[0]
        w.tg.private_chat(EVE)
        hello = await w.tg.send_message(EVE.id, EVE, "/start")
        answer = await w.tg.wait_for_message(EVE.id, since=hello, timeout=WAIT)

        mark = w.tg.mark()
        update = await w.tg.tap(EVE.id, answer.message_id, EVE, f"show_all:{ref}")
        query = w.tg.callback_query(update)
        await w.tg.wait_until(lambda: query.answered, WAIT, what="the refusal")
        assert query.answer_text == "This button is not valid any more."
        assert not [c for c in w.tg.calls[mark:] if c.method == "sendMessage"]  # nothing shown to Eve
        assert card.message_id  # the card itself was never touched by her tap
