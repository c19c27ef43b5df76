"""The plan step of a gated call across a SIGKILL'd bot process: Alice asks the agent on Slack to pay; her
thread shows the step "Waiting for approval by payments:approve — card in chat -500 on Telegram" as pending;
the process (``python -m tests.bots.streaming_bot``) is killed with SIGKILL; Maria approves on Telegram while no
bot runs; a new process over the same SQLite file finds the waiting step in the store, runs the payment once,
and streams into Alice's thread the same step, complete, and the agent's answer."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from asyncio.subprocess import Process
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

from milpa_chat.store.sqlite import SqliteStore
from milpa_chat.testing import BotApiServer, TelegramUser
from milpa_chat.testing.llm import FakeOpenAIServer
from milpa_chat.testing.slack import SlackApiServer, SlackEvents, SlackMessage

from .streaming_bot import ALICE, TEAM, TG_APPROVERS

ROOT = Path(__file__).resolve().parents[2]
TG_MARIA = TelegramUser(2001, "Maria", "maria")
SECRET = "milpa-signing-secret"


def _forget(path: Path) -> None:
    path.unlink(missing_ok=True)


def _read(path: Path) -> str:
    return path.read_text()


@asynccontextmanager
async def bot_process(tg: BotApiServer, env: dict[str, str], log: Path) -> AsyncIterator[tuple[Process, str]]:
    """The bot in its own process; yields it and the URL its Slack events go to once it polls Telegram."""
    mark = tg.mark()
    url_file = Path(env["SLACK_URL_FILE"])
    _forget(url_file)
    with log.open("ab") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.bots.streaming_bot", cwd=ROOT, env=env, stdout=out, stderr=out
        )
    try:
        await tg.wait_for(lambda c: c.method == "getUpdates", since=mark, timeout=60)
        yield process, _read(url_file)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def cards_sent(db: Path) -> None:
    """Until the approval's cards are recorded as sent in the SQLite file."""
    store = SqliteStore(db)
    try:
        for _ in range(400):
            approvals = await store.scan("approvals")
            if approvals and all(c.get("message_id") for c in approvals[0].value["cards"]):
                return
            await asyncio.sleep(0.05)
        raise TimeoutError(f"the bot recorded no sent card in {db}")
    finally:
        await store.close()


def streamed(api: SlackApiServer, channel: str) -> list[SlackMessage]:
    return [m for m in api.messages(channel) if m.via == "chat.startStream"]


async def test_the_waiting_plan_step_moves_on_after_a_sigkilled_restart_when_approved_on_the_other_platform(
    tmp_path: Path,
) -> None:
    db, log, dm = tmp_path / "bot.db", tmp_path / "bot.log", "D" + ALICE[1:]
    async with AsyncExitStack() as stack:
        tg = await stack.enter_async_context(BotApiServer())
        api = await stack.enter_async_context(SlackApiServer("xoxb-milpa-test", team_id=TEAM))
        llm = await stack.enter_async_context(FakeOpenAIServer())
        llm.reply_tool_call("pay", {"to": "ACME", "amount": 120}, id="pay1")
        llm.reply_text("Paid ACME 120. Anything else?", chunk_delay=0.02)
        tg.group(TG_APPROVERS, "Approvers", members=[TG_MARIA])
        env = {
            **os.environ,
            "TELEGRAM_TOKEN": tg.token,
            "TELEGRAM_BASE_URL": tg.base_url,
            "SLACK_BASE_URL": api.base_url,
            "SLACK_URL_FILE": str(tmp_path / "slack-url"),
            "MILPA_STORE": str(db),
            "OPENAI_BASE_URL": llm.base_url,
            "OPENAI_API_KEY": llm.api_key or "",
        }
        async with bot_process(tg, env, log) as (first, url), SlackEvents(url, SECRET, api=api) as slack:
            await slack.direct_message("pay ACME 120", user=ALICE)
            await api.wait_until(lambda: any(m.stream_state == "stopped" for m in streamed(api, dm)), timeout=20)
            card = await tg.wait_for_message(TG_APPROVERS, timeout=10)
            await cards_sent(db)
            first.send_signal(signal.SIGKILL)
            assert await first.wait() == -signal.SIGKILL

        waiting = streamed(api, dm)[0]
        assert list(waiting.tasks()) == ["pay1"] and waiting.tasks()["pay1"][-1] == "pending"
        title = waiting.task_titles()["pay1"]
        assert title == f"Waiting for approval by payments:approve — card in chat {TG_APPROVERS} on Telegram"

        tap = await tg.tap_button(card, next(b for b in card.button_labels if "Approve" in b), TG_MARIA)
        restarted = time.perf_counter()
        async with bot_process(tg, env, log) as (second, _):
            await api.wait_until(
                lambda: len(streamed(api, dm)) == 2 and streamed(api, dm)[1].stream_state == "stopped", timeout=30
            )
            seen = time.perf_counter() - restarted
            assert tg.callback_query(tap).answered
            second.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(second.wait(), 15) == 0, log.read_text()

        moved = streamed(api, dm)[1]
        assert moved.thread_ts == waiting.thread_ts  # Alice's thread, found from the store after the restart
        assert moved.task_titles()["pay1"] == title and moved.tasks()["pay1"] == ["complete"]
        assert moved.text == "Paid ACME 120. Anything else?"
        store = SqliteStore(db)
        try:
            payments = [e.value for e in await store.read("payments")]
        finally:
            await store.close()
        assert payments == [{"to": "ACME", "amount": 120.0}]  # once
        print(f"\nthe waiting step moved on {seen:.2f} s after the restart (process spawn included)")
