"""The kit's added latency to the first streamed character, against the local model's own first token.

    PYTHONPATH=. python bench/streaming.py [--runs 30] [--think 0.05]

One process, one event loop: the local OpenAI-compatible model server (streaming a 40-word answer, a word
every 10 ms, after ``--think`` seconds of "thinking"), the local Bot API and Slack Web API servers, and the
bots (python-telegram-bot polling; slack-bolt over HTTP) with a ``ChatAgent`` over the openai SDK. For each
message a person sends:

* **model first token**: from the model server receiving the request to it writing the first word (the
  model's own time to first token, set by ``--think``);
* **kit added**: from that first word leaving the model server to the platform server receiving the first
  call that shows it (a ``sendMessageDraft``, a ``sendMessage`` of the edited fallback, a
  ``chat.startStream``): the openai SDK's stream parsing, the agent, the coalescing stream and the
  platform client's HTTP call.

Rows: Telegram private chat (draft), Telegram group (edited message), Slack DM (``chat.startStream``).
Prints one Markdown table of medians and 95th percentiles in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

if sys.path and sys.path[0].endswith("bench"):  # bench/telegram.py and bench/slack.py must not shadow the SDKs
    sys.path.pop(0)

from milpa_chat.bots import TelegramBot
from milpa_chat.bots.slack import SlackBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.gateway import ChatAgent, LlmService
from milpa_chat.runtime.registry import ToolRegistry
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer, TelegramUser
from milpa_chat.testing.llm import FakeOpenAIServer
from milpa_chat.testing.slack import SlackApiServer, SlackEvents, serve_bolt_app

TOKEN, SECRET, TEAM, ALICE = "xoxb-bench", "bench-secret", "T1", "U1001"
TG_ALICE = TelegramUser(1001, "Alice", "alice")
GROUP = -700
ANSWER = " ".join(f"word{i}" for i in range(40))
IDENTITIES: dict[str, Any] = {"defaults": {"scopes": []}}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main(runs: int, think: float) -> None:
    rows: list[tuple[str, list[float], list[float]]] = []
    async with AsyncExitStack() as stack:
        model = await stack.enter_async_context(FakeOpenAIServer())
        tg = await stack.enter_async_context(BotApiServer())
        api = await stack.enter_async_context(SlackApiServer(TOKEN, team_id=TEAM))
        llm = await stack.enter_async_context(
            LlmService(model="bench", api_key=model.api_key, base_url=model.base_url, max_retries=0)
        )
        tg.group(GROUP, "Team", members=[TG_ALICE])
        agent = ChatAgent(llm, history=2)
        assistant = Assistant(ToolRegistry(store=MemoryStore()), Identities.from_dict(IDENTITIES), agent=agent)
        telegram = TelegramBot(assistant, tg.token, tg.base_url, sweep_interval=None)
        await telegram.start(poll_timeout=1)
        stack.push_async_callback(telegram.stop)
        slack_bot = SlackBot(assistant, TOKEN, SECRET, api.base_url)
        url = await stack.enter_async_context(serve_bolt_app(slack_bot.web_app()))
        slack = await stack.enter_async_context(SlackEvents(url, SECRET, api=api))

        async def one(
            send: Callable[[], Any], first_shown: Callable[[int], float | None], mark: int
        ) -> tuple[float, float]:
            model.reply_text(ANSWER, delay=think, chunk_delay=0.01)
            await send()
            shown = await _until(lambda: first_shown(mark))
            await asyncio.sleep(1.0)  # the answer finishes; the next run starts on a quiet loop
            request, token = model.requests[-1].at, model.first_tokens[-1]
            return token - request, shown - token

        async def tg_private() -> Any:
            return await tg.send_message(TG_ALICE.id, TG_ALICE, "hello")

        def tg_draft(mark: int) -> float | None:
            found = [c.at for c in tg.calls[mark:] if c.method == "sendMessageDraft" and c.params.get("text")]
            return found[0] if found else None

        async def tg_group() -> Any:
            return await tg.send_message(GROUP, TG_ALICE, "@milpa_test_bot hello")

        def tg_edit(mark: int) -> float | None:
            found = [c.at for c in tg.calls[mark:] if c.method == "sendMessage" and "word0" in c.params.get("text", "")]
            return found[0] if found else None

        async def slack_dm() -> Any:
            return await slack.direct_message("hello", user=ALICE)

        def slack_start(mark: int) -> float | None:
            found = [c.monotonic for c in api.calls("chat.startStream")[mark:]]
            return found[0] if found else None

        cases = [
            ("Telegram private chat: first draft", tg_private, tg_draft, lambda: len(tg.calls)),
            ("Telegram group: first sendMessage (edited after)", tg_group, tg_edit, lambda: len(tg.calls)),
            ("Slack DM: chat.startStream", slack_dm, slack_start, lambda: len(api.calls("chat.startStream"))),
        ]
        for name, send, shown, mark in cases:
            own, added = [], []
            await one(send, shown, mark())  # warm up: connections, imports
            for _ in range(runs):
                first, extra = await one(send, shown, mark())
                own.append(first * 1000)
                added.append(extra * 1000)
            rows.append((name, own, added))
            await asyncio.sleep(3.1)  # the group's edit interval: the next case starts on a quiet chat
        await slack_bot.drain()

    print(f"\nStreamed answers: {runs} messages per row, model thinks {think * 1000:.0f} ms, a word every 10 ms\n")
    print("| surface | model first token p50 (ms) | kit added p50 (ms) | kit added p95 (ms) |")
    print("|---|---:|---:|---:|")
    for name, own, added in rows:
        print(f"| {name} | {statistics.median(own):.1f} | {statistics.median(added):.1f} | {_pct(added, 0.95):.1f} |")


async def _until(found: Callable[[], float | None], timeout: float = 20.0) -> float:  # noqa: ASYNC109
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = found()
        if value is not None:
            return value
        await asyncio.sleep(0.002)
    raise TimeoutError("the answer was never shown")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--think", type=float, default=0.05)
    options = parser.parse_args()
    asyncio.run(main(options.runs, options.think))
