"""A verify= tool's first result: waiting for approvers, with nothing for the requester to tap."""

from __future__ import annotations

from milpa_chat import ToolContext, ToolRegistry, VerifyPolicy, tool
from milpa_chat.renderers import CliRenderer, SlackRenderer, TelegramRenderer, compose_result


async def test_pending_verification_is_shown_as_waiting_without_buttons() -> None:
    @tool("pay", "Pay", mutating=True, verify=VerifyPolicy(approver_scopes=("payments:approve",), quorum=2))
    async def pay(to: str, amount: float) -> str:
        return "paid"

    reg = ToolRegistry()
    reg.scan(pay)
    result = await reg.call("pay", {"to": "ACME", "amount": 5}, ToolContext.telegram(1, 2))
    message = compose_result(result)
    assert message.buttons == ()
    text = CliRenderer().render(result)
    assert "Waiting for approval" in text and "2 with payments:approve" in text and "Confirm" not in text
    assert result.data["request_id"] in text
    assert "reply_markup" not in TelegramRenderer().render(result).messages[-1]
    assert not any(b.get("type") == "actions" for b in SlackRenderer().render(result).message["blocks"])
