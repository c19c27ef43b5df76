"""Approval cards: pending cards ask, decided cards say who decided what, and nothing leaks."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

import pytest

from milpa_chat.renderers import (
    ApprovalView,
    CliRenderer,
    JsonRenderer,
    SlackRenderer,
    TelegramRenderer,
    compose_approval,
)

from .checks import check_slack, check_telegram
from .samples import T0, approvals

CARDS = approvals()
PENDING = CARDS["approval_pending_verification"]


def _cli(view: ApprovalView) -> str:
    return CliRenderer().render_approval(view)


def test_a_pending_verification_card_says_who_what_why_and_until_when() -> None:
    text = _cli(PENDING)
    for expected in (
        "🛂 Approval needed: pay_invoice",
        "Requested by: Alice Ng (telegram:1001)",
        "Changes data: yes",
        "Expires:      2026-08-15 14:08 UTC",
        "Approvals:    1 of 2 (Bob)",
        "Why: Payments over 1,000 EUR need a manager's approval.",
        '"amount": 1250.5',
        '"api_key": "***REDACTED***"',
    ):
        assert expected in text
    assert "sk-live-123" not in text
    message = compose_approval(PENDING)
    assert [(b.label, b.callback_data, b.style) for b in message.buttons] == [
        ("✅ Approve", "approve:ap_7Kq2mZxR4b", "primary"), ("⛔ Reject", "reject:ap_7Kq2mZxR4b", "danger"),
    ]  # fmt: skip
    assert message.summary == "Approval needed: Alice Ng asks to run pay_invoice" and message.tone == "warning"


def test_a_confirm_card_has_confirm_and_cancel() -> None:
    message = compose_approval(CARDS["approval_pending_confirm"])
    assert [b.callback_data for b in message.buttons] == ["confirm:ap_c0nf1rm", "cancel:ap_c0nf1rm"]
    assert "🔐 Confirm: delete_note" in _cli(CARDS["approval_pending_confirm"])


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "approval_confirmed",
            ["✅ Confirmed: delete_note", "Confirmed by Alice Ng via Telegram at 2026-08-15 14:07 UTC."],
        ),
        (
            "approval_approved",
            ["✅ Approved: pay_invoice", "Approved by Carol Diaz via Slack at 2026-08-15 14:05 UTC."],
        ),
        ("approval_executing", ["⏳ Running: pay_invoice", "Running now…"]),
        ("approval_executed", ["✅ Done: pay_invoice", "Outcome: Paid invoice 42 (1,250.50 EUR)."]),
        ("approval_failed", ["❌ Failed: pay_invoice", "Error: Bank refused: account frozen"]),
        (
            "approval_rejected",
            [
                "⛔ Rejected: pay_invoice",
                "Rejected by Carol Diaz via Jupyter at",
                "Note: Wrong amount",
                "Nothing was done.",
            ],
        ),
        ("approval_cancelled", ["✖️ Cancelled: delete_note", "Cancelled by Alice Ng via Telegram", "Nothing was done."]),
        (
            "approval_expired",
            ["⌛ Expired: pay_invoice", "Expired at 2026-08-15 14:08 UTC without a decision. Nothing was done."],
        ),
    ],
)
def test_decided_cards_say_who_decided_what_when_and_where_and_have_no_buttons(name: str, expected: list[str]) -> None:
    view = CARDS[name]
    text = _cli(view)
    for line in expected:
        assert line in text
    assert "Expires:" not in text
    assert compose_approval(view).buttons == ()
    telegram = TelegramRenderer().render_approval(view)
    check_telegram(telegram)
    assert "reply_markup" not in telegram.messages[0]
    slack = SlackRenderer().render_approval(view)
    check_slack(slack)
    assert all(b["type"] != "actions" for b in slack.blocks)


def test_hostile_cards_are_redacted_and_visible() -> None:
    view = CARDS["approval_hostile"]
    text = _cli(view)
    assert "hunter2" not in text and "t0k3n" not in text and "sk-live" not in text
    assert "pay_⟨U+202E⟩eciovni" in text and "Changes data: no (read-only)" in text
    assert "<b>Mallory</b> ⟨U+200B⟩ (slack:T1:U<!channel>)" in text


def test_long_arguments_are_shortened_and_attached_whole() -> None:
    view = replace(PENDING, arguments={"body": "x" * 20_000, "password": "hunter2"})
    telegram = TelegramRenderer().render_approval(view)
    check_telegram(telegram)
    assert len(telegram.messages) == 1 and "characters]" in telegram.messages[0]["text"]
    assert telegram.document is not None and telegram.document.filename == "arguments.json"
    assert telegram.document.content.count(b"x") == 20_000 and b"hunter2" not in telegram.document.content


def test_the_json_card_carries_the_fields_and_the_message() -> None:
    card = JsonRenderer().render_approval(PENDING)
    assert card["approval"]["id"] == "ap_7Kq2mZxR4b"
    assert card["approval"]["expires_at"] == "2026-08-15T14:08:11+00:00"
    assert card["approval"]["arguments"]["api_key"] == "***REDACTED***"
    assert card["card"]["blocks"][-1]["type"] == "actions"


def test_views_refuse_what_a_card_cannot_show() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        replace(PENDING, expires_at=dt.datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="timezone-aware"):
        replace(PENDING, state="approved", decided_at=dt.datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="callback_data allows 64"):
        replace(PENDING, id="a" * 57)
    with pytest.raises(ValueError, match="kind"):
        replace(PENDING, kind="vote")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="state"):
        replace(PENDING, state="done")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="mapping"):
        replace(PENDING, arguments=[1, 2])  # type: ignore[arg-type]
    assert replace(PENDING, expires_at=T0.astimezone(dt.timezone(dt.timedelta(hours=2)))).expires_at == T0
