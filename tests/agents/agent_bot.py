"""A bot process whose agent (pydantic-ai, the OpenAI Agents SDK or LangGraph) asks for payments that managers
approve, over a SQLite store: what the restart test kills with SIGKILL and starts again.

Environment: ``AGENT_SURFACE`` (``telegram``, the default, or ``slack``), ``TELEGRAM_TOKEN``, ``TELEGRAM_BASE_URL``;
``SLACK_BOT_TOKEN``, ``SLACK_SIGNING_SECRET``, ``SLACK_BASE_URL`` (the app serves on 127.0.0.1 and a free port,
written to ``AGENT_READY``), ``MILPA_STORE`` (SQLite file), ``AGENT_FRAMEWORK``,
``AGENT_LEDGER`` (payments made, one JSON line each), ``AGENT_WORKDIR`` (LangGraph's checkpoints),
``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` (the OpenAI Agents SDK's model server)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from contextlib import AsyncExitStack
from pathlib import Path

from milpa_chat import ToolRegistry
from milpa_chat.agents import ApprovalHost
from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.store.sqlite import SqliteStore

from .frameworks import FRAMEWORKS, IDENTITIES, MANAGERS, Ledger, OpenAIAgents


async def main() -> None:
    env = os.environ
    store = SqliteStore(env["MILPA_STORE"])
    assistant = Assistant(ToolRegistry(store=store), Identities.from_dict(IDENTITIES), edits=True)
    host = ApprovalHost(assistant, poll=0.05)
    name = env["AGENT_FRAMEWORK"]
    driver = (
        OpenAIAgents(env["OPENAI_BASE_URL"], env["OPENAI_API_KEY"]) if name == "openai-agents" else (FRAMEWORKS[name]())
    )
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with AsyncExitStack() as stack:
        approvals, assistant.agent = await driver.build(
            host, Ledger(Path(env["AGENT_LEDGER"])), MANAGERS, stack, Path(env["AGENT_WORKDIR"])
        )
        if env.get("AGENT_SURFACE", "telegram") == "slack":
            from milpa_chat.bots.slack import SlackBot
            from milpa_chat.testing.slack import serve_bolt_app

            slack = SlackBot(
                assistant,
                env["SLACK_BOT_TOKEN"],
                env["SLACK_SIGNING_SECRET"],
                env["SLACK_BASE_URL"],
                sweep_interval=0.5,
            )
            url = await stack.enter_async_context(serve_bolt_app(slack.web_app()))
            await asyncio.to_thread(Path(env["AGENT_READY"]).write_text, url)
        else:
            bot = TelegramBot(assistant, env["TELEGRAM_TOKEN"], env["TELEGRAM_BASE_URL"], sweep_interval=0.5)
            await bot.start(poll_timeout=1)
            stack.push_async_callback(bot.stop)
        resumed = asyncio.create_task(approvals.resume_pending())  # the runs a killed process left paused
        await stop.wait()
        resumed.cancel()
    await store.close()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main())
