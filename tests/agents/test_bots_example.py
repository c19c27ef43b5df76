"""``bots/agent_payments.py`` for each framework, through real python-telegram-bot against the local Bot API server
and (pydantic-ai, the OpenAI Agents SDK, LangChain's ``ChatOpenAI``) its model through the openai wire against the
kit's local OpenAI server: "pay ACME 120" -> the managers' card -> Approve -> the payment runs once, keyed by the
approval id. For LangChain (``create_agent`` gated by ``HumanInTheLoopMiddleware``), also: the card ends with the
tool's own value, the model is told it once and its answer is posted; a rejection with a reason reaches the model."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from bots.agent_payments import FRAMEWORKS, build
from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.cli.approvals import show_lines
from milpa_chat.testing import BotApiServer, TelegramUser
from milpa_chat.testing.llm import FakeOpenAIServer

ALICE = TelegramUser(1001, "Alice", "alice")
MARIA = TelegramUser(2001, "Maria", "maria")
MATEO = TelegramUser(2002, "Mateo", "mateo")  # also rejects with a reason (the typed command)
IDENTITIES = """
[roles]
writer = ["payments:send"]
manager = ["payments:approve"]
approver = ["payments:approve", "verification:approve"]
[users]
"telegram:1001" = ["writer"]
"telegram:2001" = ["manager"]
"telegram:2002" = ["approver"]
[approvers]
telegram = ["-500"]
"""


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
async def test_the_example_bot_pays_once_after_a_managers_tap(framework: str, tmp_path: Path) -> None:
    (tmp_path / "identities.toml").write_text(IDENTITIES)
    async with AsyncExitStack() as stack:
        llm = await stack.enter_async_context(FakeOpenAIServer())
        llm.reply_tool_call("send_payment", {"to": "ACME", "amount": 120}).reply_text("Paid ACME, as approved.")
        tg = await stack.enter_async_context(BotApiServer())
        tg.group(-500, "Managers", members=[MARIA])
        env = {
            "AGENT_FRAMEWORK": framework,
            "MILPA_STORE": str(tmp_path / "agent.db"),
            "MILPA_IDENTITIES": str(tmp_path / "identities.toml"),
            "OPENAI_API_KEY": llm.api_key or "",
            "OPENAI_BASE_URL": llm.base_url,
        }
        assistant, _ = await build(env, stack)
        bot = TelegramBot(assistant, tg.token, tg.base_url, sweep_interval=None)
        await bot.start(poll_timeout=1)
        stack.push_async_callback(bot.stop)
        asked = await tg.send_message(ALICE.id, ALICE, "pay ACME 120")
        card = await tg.wait_for_message(-500, since=asked, timeout=20)
        assert "send_payment" in (card.text or "") and "ACME" in (card.text or "")
        for _ in range(500):  # Maria taps once the cards are out (the record knows every copy)
            (approval,) = await assistant.approvals.listing()
            if all(c.get("message_id") for c in approval.data["cards"]):
                break
            await asyncio.sleep(0.01)
        tap = await tg.tap_button(card, next(b for b in card.button_labels if "Approve" in b), MARIA)
        await tg.wait_until(lambda: tg.callback_query(tap).answered, 20)
        paid = await tg.wait_until(
            lambda: [m.text for m in tg.messages(ALICE.id) if "Paid 120.00 EUR to ACME" in (m.text or "")],
            20,
            what="the payment's result",
        )
        assert paid[0] is not None and f"payment key {approval.id}" in paid[0]
        done = await assistant.approvals.get(approval.id)
        assert done is not None and done.state == "executed"
        # the record's result is the tool's own value, on every framework
        assert done.data["outcome"] == f"Paid 120.00 EUR to ACME (payment key {approval.id}).", done.data["outcome"]


async def start_example(framework: str, tmp_path: Path, stack: AsyncExitStack) -> tuple[Any, BotApiServer, Any]:
    """The example bot on ``framework`` polling the local Bot API server; its model on the local OpenAI server."""
    (tmp_path / "identities.toml").write_text(IDENTITIES)
    llm = await stack.enter_async_context(FakeOpenAIServer())
    tg = await stack.enter_async_context(BotApiServer())
    tg.group(-500, "Managers", members=[MARIA, MATEO])
    env = {
        "AGENT_FRAMEWORK": framework,
        "MILPA_STORE": str(tmp_path / "agent.db"),
        "MILPA_IDENTITIES": str(tmp_path / "identities.toml"),
        "OPENAI_API_KEY": llm.api_key or "",
        "OPENAI_BASE_URL": llm.base_url,
    }
    assistant, _ = await build(env, stack)
    bot = TelegramBot(assistant, tg.token, tg.base_url, sweep_interval=None)
    await bot.start(poll_timeout=1)
    stack.push_async_callback(bot.stop)
    return llm, tg, assistant


def tool_messages(llm: FakeOpenAIServer) -> list[str]:
    """Every tool result the model was sent, over all its requests (one request sees the earlier ones too)."""
    return [str(m["content"]) for m in llm.bodies[-1]["messages"] if m.get("role") == "tool"] if llm.bodies else []


async def test_the_langchain_agent_pays_once_and_answers_with_the_tool_value_on_the_card(tmp_path: Path) -> None:
    async with AsyncExitStack() as stack:
        llm, tg, assistant = await start_example("langchain", tmp_path, stack)
        llm.reply_tool_call("send_payment", {"to": "ACME", "amount": 120}).reply_text("ACME is paid.")
        asked = await tg.send_message(ALICE.id, ALICE, "pay ACME 120")
        card = await tg.wait_for_message(-500, since=asked, timeout=20)
        assert "send_payment" in (card.text or "") and "ACME" in (card.text or "") and "120" in (card.text or "")
        assert llm.bodies[0]["tools"][0]["function"]["name"] == "send_payment"  # ChatOpenAI offered the tool
        (approval,) = await assistant.approvals.listing()
        tap = await tg.tap_button(card, next(b for b in card.button_labels if "Approve" in b), MARIA)
        await tg.wait_until(lambda: tg.callback_query(tap).answered, 20)
        await tg.wait_until(lambda: "ACME is paid." in [m.text for m in tg.messages(ALICE.id)], 20, what="the answer")
        paid = f"Paid 120.00 EUR to ACME (payment key {approval.id})."
        # the tool ran once: the model was sent its one result, and the record holds that value
        assert tool_messages(llm) == [paid] and len(llm.bodies) == 2
        done = await assistant.approvals.get(approval.id)
        assert done is not None and done.state == "executed" and done.data["outcome"] == paid
        shown = show_lines(done)  # what `milpa-chat approvals show` prints
        assert f"  outcome:    {paid}" in shown and "  runs:       1 time(s)" in shown, shown
        final: str = await tg.wait_until(
            lambda: next((t for t in [tg.message(card.chat.id, card.message_id).text or ""] if paid in t), None),
            20,
            what="the card's Done line with the tool's value",
        )
        assert "ACME is paid." not in final  # the card shows the tool's value, not the model's answer
        said = [m.text or "" for m in tg.messages(ALICE.id)]
        assert said.count("ACME is paid.") == 1 and any(paid in t for t in said[:-1]), said


async def test_a_rejection_with_a_reason_reaches_the_langchain_agent(tmp_path: Path) -> None:
    async with AsyncExitStack() as stack:
        llm, tg, assistant = await start_example("langchain", tmp_path, stack)
        llm.reply_tool_call("send_payment", {"to": "ACME", "amount": 120}).reply_text("Not paid: over budget.")
        asked = await tg.send_message(ALICE.id, ALICE, "pay ACME 120")
        card = await tg.wait_for_message(-500, since=asked, timeout=20)
        (approval,) = await assistant.approvals.listing()
        await tg.send_message(-500, MATEO, f'/resolve_verification {approval.id} reject "over budget"')
        await tg.wait_until(
            lambda: "Not paid: over budget." in [m.text for m in tg.messages(ALICE.id)], 20, what="the answer"
        )
        (told,) = tool_messages(llm)  # the middleware's own rejection, with Mateo's reason
        assert "over budget" in told and "Rejected by Mateo" in told, told
        assert "Paid" not in told
        done = await assistant.approvals.get(approval.id)
        assert done is not None and done.state == "rejected"
        assert "Rejected" in (tg.message(card.chat.id, card.message_id).text or "")
