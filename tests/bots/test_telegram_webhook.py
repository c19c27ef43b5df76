"""TelegramBot in webhook mode: PTB's own webhook server, deliveries POSTed by BotApiServer with the secret token."""

from __future__ import annotations

import tornado  # noqa: F401  # python-telegram-bot[webhooks] (the telegram extra): PTB's webhook server

from .telegram_support import ALICE, BOB, label, running_bot


async def test_webhook_runs_the_flow_and_refuses_a_wrong_secret() -> None:
    async with running_bot(webhook=True, webhook_secret="right-secret_1") as h:
        assert h.server.webhook is not None and h.server.webhook.secret_token == "right-secret_1"
        command = await h.server.send_message(ALICE.id, ALICE, "/delete_note 2")
        card = await h.server.wait_for_message(ALICE.id, since=command)
        assert [d.status for d in command.deliveries] == [200]

        confirm = card.button(label(card, "Confirm"))["callback_data"]
        forged_tap = await h.server.tap(ALICE.id, card.message_id, ALICE, confirm)  # delivered with the secret...
        await h.server.wait_until(lambda: h.server.callback_query(forged_tap).answered)
        await h.server.wait_until(lambda: "Deleted note 2" in (h.current(card).text or ""))
        # ... and then an attacker replays it, or sends one of their own, without the secret
        wrong = await h.server.post_to_webhook(forged_tap, secret_token="wrong-secret")
        missing = await h.server.post_to_webhook(forged_tap, secret_token=None)
        assert (wrong.status, missing.status) == (403, 403)

        cancel_card = await h.say(BOB, "/delete_note 3")
        cancel = cancel_card.button(label(cancel_card, "Cancel"))["callback_data"]
        update = await h.server.tap(BOB.id, cancel_card.message_id, BOB, cancel)
        assert [d.status for d in update.deliveries] == [200]
        refused = await h.server.post_to_webhook(command, secret_token="wrong-secret")
        assert refused.status == 403
        await h.server.wait_until(lambda: h.server.callback_query(update).answered)
        assert h.runs == ["delete_note"]  # the refused deliveries ran nothing
        cards = [m for m in h.server.messages(ALICE.id) if "Confirm: delete_note" in (m.versions[0].text or "")]
        assert len(cards) == 1
        h.assert_every_tap_answered_once()


async def test_webhook_secret_is_generated_when_not_given() -> None:
    async with running_bot(webhook=True) as h:
        secret = h.bot.webhook_secret
        assert secret is not None and len(secret) >= 32
        assert h.server.webhook is not None and h.server.webhook.secret_token == secret
        reply = await h.say(ALICE, "/start")
        assert "Test assistant" in (reply.text or "")
