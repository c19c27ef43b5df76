"""A bot process serving one assistant on Telegram (polling the local Bot API) and Slack (bolt over HTTP), whose
agent streams its answers: what the restart test of plan steps kills with SIGKILL and starts again.

Environment: ``TELEGRAM_TOKEN``, ``TELEGRAM_BASE_URL``, ``SLACK_BASE_URL``, ``SLACK_URL_FILE`` (the process
writes the URL Slack's events go to there once it serves), ``MILPA_STORE`` (SQLite file), ``OPENAI_BASE_URL``,
``OPENAI_API_KEY``. Payments are appended to the store's ``payments`` stream (what "ran once" is read from).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from pathlib import Path
from typing import Any

from milpa_chat import ToolRegistry, VerifyPolicy, tool
from milpa_chat.bots.slack import SlackBot
from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.gateway import ChatAgent, LlmService
from milpa_chat.store.base import Store
from milpa_chat.store.sqlite import SqliteStore
from milpa_chat.testing.slack import serve_bolt_app

TEAM, ALICE, MARIA = "T1", "U1001", "U2001"
TG_APPROVERS = -500
IDENTITIES: dict[str, Any] = {
    "roles": {"writer": ["payments:send"], "manager": ["payments:approve"]},
    "users": {f"slack:{TEAM}:{ALICE}": ["writer"], "telegram:2001": ["manager"], f"slack:{TEAM}:{MARIA}": ["manager"]},
    "approvers": {"telegram": [str(TG_APPROVERS)]},
}


class Payments:
    def __init__(self, store: Store) -> None:
        self.store = store

    @tool(
        "pay",
        "Send a payment",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",), expires_in=600),
    )
    async def pay(self, to: str, amount: float) -> dict[str, Any]:
        await self.store.append("payments", {"to": to, "amount": amount})
        return {"paid": amount, "to": to}


def _write(path: Path, text: str) -> None:
    path.write_text(text)


async def main() -> None:
    env = os.environ
    store = SqliteStore(env["MILPA_STORE"])
    registry = ToolRegistry(store=store)
    registry.scan(Payments(store))
    llm = LlmService(model="gpt-test", api_key=env["OPENAI_API_KEY"], base_url=env["OPENAI_BASE_URL"], max_retries=0)
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES), agent=ChatAgent(llm), approval_ttl=600)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    telegram = TelegramBot(assistant, env["TELEGRAM_TOKEN"], env["TELEGRAM_BASE_URL"], sweep_interval=0.5)
    slack = SlackBot(assistant, "xoxb-milpa-test", "milpa-signing-secret", base_url=env["SLACK_BASE_URL"])
    async with serve_bolt_app(slack.web_app()) as url:
        _write(Path(env["SLACK_URL_FILE"]), url)
        await telegram.start(poll_timeout=1)
        await stop.wait()
        await telegram.stop()
        await slack.close()
    await llm.aclose()
    await store.close()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main())
