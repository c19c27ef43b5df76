"""A real bot process (``python -m tests.agents.agent_bot``) whose framework agent asked for a payment is killed with
SIGKILL before anyone decides; a manager approves while no bot runs; a new process over the same SQLite file
resumes the framework's run from the store, and the tool runs once with the approved arguments."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from asyncio.subprocess import Process
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import pytest

from milpa_chat.store.sqlite import SqliteStore
from milpa_chat.testing import BotApiServer, TelegramUser
from milpa_chat.testing.llm import FakeOpenAIServer

from .frameworks import APPROVERS, FRAMEWORKS, PAYMENT

ROOT = Path(__file__).resolve().parents[2]
ALICE = TelegramUser(1001, "Alice", "alice")
MARIA = TelegramUser(2001, "Maria", "maria")
MATEO = TelegramUser(2002, "Mateo", "mateo")


@asynccontextmanager
async def bot_process(server: BotApiServer, env: dict[str, str], log: Path) -> AsyncIterator[Process]:
    """The bot in its own process, polling ``server``; yields once it polls."""
    mark = server.mark()
    with log.open("ab") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.agents.agent_bot", cwd=ROOT, env=env, stdout=out, stderr=out
        )
    try:
        await server.wait_for(lambda c: c.method == "getUpdates", since=mark, timeout=60)
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def paused_run(db: Path) -> dict[str, object]:
    """Once the bot kept the paused run in the SQLite file and recorded the approval's cards as sent."""
    store = SqliteStore(db)
    try:
        for _ in range(400):
            runs, approvals = await store.scan("agent_runs"), await store.scan("approvals")
            if runs and approvals and all(c.get("message_id") for c in approvals[0].value["cards"]):
                return dict(runs[0].value)
            await asyncio.sleep(0.05)
        raise TimeoutError(f"the bot kept no paused run in {db}")
    finally:
        await store.close()


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
async def test_a_killed_bot_process_resumes_the_frameworks_run_and_the_tool_runs_once(
    framework: str, tmp_path: Path
) -> None:
    db, ledger, log = tmp_path / "bot.db", tmp_path / "ledger.jsonl", tmp_path / "bot.log"
    async with AsyncExitStack() as stack:
        server = await stack.enter_async_context(BotApiServer())
        llm = await stack.enter_async_context(FakeOpenAIServer())
        llm.reply_tool_call("send_payment", dict(PAYMENT), id="call_pay").reply_text("Done.")
        server.group(APPROVERS, "Approvers", members=[MARIA, MATEO])
        env = {
            **os.environ,
            "TELEGRAM_TOKEN": server.token,
            "TELEGRAM_BASE_URL": server.base_url,
            "MILPA_STORE": str(db),
            "AGENT_FRAMEWORK": framework,
            "AGENT_LEDGER": str(ledger),
            "AGENT_WORKDIR": str(tmp_path),
            "OPENAI_BASE_URL": llm.base_url,
            "OPENAI_API_KEY": llm.api_key or "",
        }
        async with bot_process(server, env, log) as first:
            asked = await server.send_message(ALICE.id, ALICE, "please pay ACME 120 EUR")
            card = await server.wait_for_message(APPROVERS, since=asked, timeout=20)
            run = await paused_run(db)
            assert run["framework"] == f"{framework}:{'graph' if framework == 'langgraph' else 'agent'}"
            first.send_signal(signal.SIGKILL)
            assert await first.wait() == -signal.SIGKILL

        approve = next(b for b in card.button_labels if "Approve" in b)
        tap = await server.tap_button(card, approve, MARIA)  # while no bot runs
        async with bot_process(server, env, log) as second:
            await server.wait_until(lambda: server.callback_query(tap).answered, 20, what="the tap's answer")
            await server.wait_until(
                lambda: any("Paid 120.00 EUR to ACME." in (m.text or "") for m in server.messages(ALICE.id)),
                20,
                what="the result",
            )
            await server.wait_until(
                lambda: any((m.text or "").startswith("Done") for m in server.messages(ALICE.id)),
                20,
                what="the agent's answer",
            )
            again = await server.redeliver(tap)  # a retried delivery of the tap runs nothing
            await server.wait_until(lambda: again.handed_out, 20)
            await asyncio.sleep(0.5)
            second.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(second.wait(), 20) == 0, log.read_text()

    paid = [json.loads(line) for line in ledger.read_text().splitlines()]
    print(f"\n{framework}: killed between request and decision, resumed by a new process -> {len(paid)} run(s)")
    assert len(paid) == 1 and paid[0][:2] == ["ACME", 120.0], paid
    store = SqliteStore(db)
    try:
        (approval,) = await store.scan("approvals")
        assert approval.value["state"] == "executed" and paid[0][2] == approval.key  # the idempotency key
        assert await store.scan("agent_runs") == []  # the resumed run finished
    finally:
        await store.close()
