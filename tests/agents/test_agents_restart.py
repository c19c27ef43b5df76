"""A real bot process (``python -m tests.agents.agent_bot``) whose framework agent asked for a payment is killed with
SIGKILL before anyone decides; a new process over the same SQLite file resumes the framework's run from the store
once a manager approved (on Telegram the tap is made while no bot runs), and the tool runs once with the approved
arguments. On Telegram (polling the local Bot API) and on Slack (signed HTTP requests, the local Web API)."""

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
from milpa_chat.testing.slack import SlackEvents

from .chats import SLACK_SECRET, SLACK_TOKEN, slack_api, until
from .frameworks import APPROVERS, FRAMEWORKS, PAYMENT, SLACK_APPROVERS, SLACK_PEOPLE

ROOT = Path(__file__).resolve().parents[2]
ALICE = TelegramUser(1001, "Alice", "alice")
MARIA = TelegramUser(2001, "Maria", "maria")
MATEO = TelegramUser(2002, "Mateo", "mateo")


@asynccontextmanager
async def spawned(env: dict[str, str], log: Path) -> AsyncIterator[Process]:
    """The bot in its own process (killed on the way out if still running)."""
    with log.open("ab") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.agents.agent_bot", cwd=ROOT, env=env, stdout=out, stderr=out
        )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


@asynccontextmanager
async def bot_process(server: BotApiServer, env: dict[str, str], log: Path) -> AsyncIterator[Process]:
    """The bot in its own process, polling ``server``; yields once it polls."""
    mark = server.mark()
    async with spawned(env, log) as process:
        await server.wait_for(lambda c: c.method == "getUpdates", since=mark, timeout=60)
        yield process


@asynccontextmanager
async def slack_process(env: dict[str, str], log: Path) -> AsyncIterator[tuple[Process, str]]:
    """The Slack app in its own process; yields it and its events URL once it serves."""
    ready = Path(env["AGENT_READY"])
    _text(ready, remove=True)
    async with spawned(env, log) as process:
        for _ in range(1200):
            if _text(ready):
                break
            assert process.returncode is None, _text(log)
            await asyncio.sleep(0.05)
        yield process, _text(ready)


def _text(path: Path, *, remove: bool = False) -> str:
    """What ``path`` holds ("" when it does not exist); ``remove``: delete it."""
    if remove:
        path.unlink(missing_ok=True)
    return path.read_text() if path.exists() else ""


def common_env(framework: str, tmp_path: Path, llm: FakeOpenAIServer) -> dict[str, str]:
    return {
        **os.environ,
        "MILPA_STORE": str(tmp_path / "bot.db"),
        "AGENT_FRAMEWORK": framework,
        "AGENT_LEDGER": str(tmp_path / "ledger.jsonl"),
        "AGENT_WORKDIR": str(tmp_path),
        "OPENAI_BASE_URL": llm.base_url,
        "OPENAI_API_KEY": llm.api_key or "",
    }


async def paid_once(framework: str, surface: str, tmp_path: Path) -> None:
    """The tool ran once, with the approved arguments and the approval id as its key; the run is no longer kept."""
    paid = [json.loads(line) for line in _text(tmp_path / "ledger.jsonl").splitlines()]
    print(f"\n{framework} on {surface}: killed before the decision, resumed by a new process -> {len(paid)} run(s)")
    assert len(paid) == 1 and paid[0][:2] == ["ACME", 120.0], paid
    store = SqliteStore(tmp_path / "bot.db")
    try:
        (approval,) = await store.scan("approvals")
        assert approval.value["state"] == "executed" and paid[0][2] == approval.key  # the idempotency key
        assert await store.scan("agent_runs") == []  # the resumed run finished
    finally:
        await store.close()


async def paused_run(db: Path) -> dict[str, object]:
    """Once the bot kept the paused run in the SQLite file and recorded the approval's cards as sent."""
    store = SqliteStore(db)
    try:
        for _ in range(1200):
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
    db, log = tmp_path / "bot.db", tmp_path / "bot.log"
    async with AsyncExitStack() as stack:
        server = await stack.enter_async_context(BotApiServer())
        llm = await stack.enter_async_context(FakeOpenAIServer())
        llm.reply_tool_call("send_payment", dict(PAYMENT), id="call_pay").reply_text("Done.")
        server.group(APPROVERS, "Approvers", members=[MARIA, MATEO])
        env = {
            **common_env(framework, tmp_path, llm),
            "TELEGRAM_TOKEN": server.token,
            "TELEGRAM_BASE_URL": server.base_url,
        }
        async with bot_process(server, env, log) as first:
            asked = await server.send_message(ALICE.id, ALICE, "please pay ACME 120 EUR")
            card = await server.wait_for_message(APPROVERS, since=asked, timeout=60)
            run = await paused_run(db)
            assert run["framework"] == FRAMEWORKS[framework].framework
            first.send_signal(signal.SIGKILL)
            assert await first.wait() == -signal.SIGKILL

        approve = next(b for b in card.button_labels if "Approve" in b)
        tap = await server.tap_button(card, approve, MARIA)  # while no bot runs
        async with bot_process(server, env, log) as second:
            await server.wait_until(lambda: server.callback_query(tap).answered, 60, what="the tap's answer")
            await server.wait_until(
                lambda: any("Paid 120.00 EUR to ACME." in (m.text or "") for m in server.messages(ALICE.id)),
                60,
                what="the result",
            )
            await server.wait_until(
                lambda: any((m.text or "").startswith("Done") for m in server.messages(ALICE.id)),
                60,
                what="the agent's answer",
            )
            again = await server.redeliver(tap)  # a retried delivery of the tap runs nothing
            await server.wait_until(lambda: again.handed_out, 60)
            await asyncio.sleep(0.5)
            second.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(second.wait(), 60) == 0, log.read_text()

    await paid_once(framework, "telegram", tmp_path)


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
async def test_a_killed_slack_app_process_resumes_the_frameworks_run_and_the_tool_runs_once(
    framework: str, tmp_path: Path
) -> None:
    db, log = tmp_path / "bot.db", tmp_path / "bot.log"
    alice, maria = SLACK_PEOPLE["alice"], SLACK_PEOPLE["maria"]
    dm = "D" + alice[1:]
    async with AsyncExitStack() as stack:
        api = await stack.enter_async_context(slack_api())
        llm = await stack.enter_async_context(FakeOpenAIServer())
        llm.reply_tool_call("send_payment", dict(PAYMENT), id="call_pay").reply_text("Done.")
        env = {
            **common_env(framework, tmp_path, llm),
            "AGENT_SURFACE": "slack",
            "SLACK_BOT_TOKEN": SLACK_TOKEN,
            "SLACK_SIGNING_SECRET": SLACK_SECRET,
            "SLACK_BASE_URL": api.base_url,
            "AGENT_READY": str(tmp_path / "ready"),
        }
        async with slack_process(env, log) as (first, url), SlackEvents(url, SLACK_SECRET, api=api) as slack:
            await slack.direct_message("please pay ACME 120 EUR", user=alice)
            card = await api.wait_for_message(SLACK_APPROVERS, lambda m: bool(m.buttons()), timeout=60)
            run = await paused_run(db)
            assert run["framework"] == FRAMEWORKS[framework].framework
            first.send_signal(signal.SIGKILL)
            assert await first.wait() == -signal.SIGKILL

        async with slack_process(env, log) as (second, url), SlackEvents(url, SLACK_SECRET, api=api) as slack:
            approve = next(b for b in card.buttons() if "Approve" in b["text"]["text"])
            tap = await slack.click(card, approve["action_id"], user=maria)
            assert tap.status == 200, tap.text

            def alice_says(words: str) -> bool:
                return any(words in m.all_text() for m in api.messages(dm) if m.bot_id)

            await until(lambda: alice_says("Paid 120.00 EUR to ACME."), "the result", 60)
            await until(lambda: any(m.text.startswith("Done") for m in api.messages(dm)[-1:]), "the answer", 60)
            again = await slack.retry(tap)  # Slack's retry of the same tap runs nothing
            assert again.status == 200
            await asyncio.sleep(0.5)
            second.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(second.wait(), 60) == 0, log.read_text()
        assert "Done" in card.text and not card.buttons()

    await paid_once(framework, "slack", tmp_path)
