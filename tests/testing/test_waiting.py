"""The one waiting contract of milpa_chat.testing: every local server notifies on each call it records and its
waits wake on that (never on a timer); eventually() and ManualClock for the user's own code. Real clients
(python-telegram-bot, slack_sdk, the OpenAI SDK) against the local servers."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import urllib.request
from typing import Any

import pytest
from openai import AsyncOpenAI
from slack_sdk import WebClient
from slack_sdk.web.async_client import AsyncWebClient
from telegram import Bot

from milpa_chat.store import MemoryStore
from milpa_chat.testing import (
    Activity,
    BotApiServer,
    FakeOpenAIServer,
    ManualClock,
    SlackApiServer,
    TelegramUser,
    eventually,
)

ALICE = TelegramUser(42, "Alice", "alice")
#: The waits below end on the call they wait for; their own deadline is far away, so waking long before it is
#: waking on the call (a wait that only re-checked at its deadline would take this long), whatever the load.
WAKE_DEADLINE = 60.0


class Counted:
    """A condition that counts how often it was checked."""

    def __init__(self, condition: Any) -> None:
        self.condition, self.checks = condition, 0

    def __call__(self) -> Any:
        self.checks += 1
        return self.condition()


async def test_slack_waits_wake_on_calls_not_on_a_timer() -> None:
    async with SlackApiServer("xoxb-t", channels={"C1": "general"}) as api:
        client = AsyncWebClient(token="xoxb-t", base_url=api.base_url)
        check = Counted(lambda: api.messages("C1"))
        waiter = asyncio.create_task(api.wait_until(check, WAKE_DEADLINE, what="a message in C1"))
        await asyncio.sleep(0.3)  # nothing happens: a 10 ms poll would have checked about 30 times
        assert check.checks == 1
        started = time.monotonic()
        await client.chat_postMessage(channel="C1", text="hello")
        found = await waiter
        woke = time.monotonic() - started
        print(f"\nthe Slack wait woke {woke * 1000:.1f} ms after the call was made")
        assert [m.text for m in found] == ["hello"] and woke < WAKE_DEADLINE / 2  # on the call, not at its deadline
        assert check.checks == 2  # once more, after the one call


async def test_telegram_waits_wake_on_calls_not_on_a_timer() -> None:
    async with BotApiServer() as server:
        server.private_chat(ALICE)
        async with Bot(server.token, base_url=server.base_url) as bot:
            check = Counted(lambda: server.messages(ALICE.id))
            waiter = asyncio.create_task(server.wait_until(check, 5, what="the bot's message"))
            await asyncio.sleep(0.3)
            assert check.checks == 1
            await bot.send_message(ALICE.id, "hi")
            assert [m.text for m in await waiter] == ["hi"]
            call = await server.wait_for_call("sendMessage")
            assert call.ok and call.result["text"] == "hi"


async def test_a_wait_that_times_out_names_what_it_waited_for_and_the_last_calls() -> None:
    async with SlackApiServer("xoxb-t", channels={"C1": "general"}) as api:
        await AsyncWebClient(token="xoxb-t", base_url=api.base_url).auth_test()
        with pytest.raises(TimeoutError, match=r"(?s)waiting for a message in C1.*auth\.test"):
            await api.wait_for_message("C1", timeout=0.2)


def test_a_sync_wait_wakes_on_a_call_from_another_thread() -> None:
    with SlackApiServer("xoxb-t", channels={"C1": "general"}) as api:
        client = WebClient(token="xoxb-t", base_url=api.base_url)
        timer = threading.Timer(0.2, lambda: client.chat_postMessage(channel="C1", text="from a thread"))
        started = time.monotonic()
        timer.start()
        found = api.wait_for_sync(lambda: api.messages("C1"), WAKE_DEADLINE)
        timer.join()
        woke = time.monotonic() - started
        print(f"\nthe sync wait woke {woke:.2f} s after it began (the call was made at 0.2 s)")
        assert found[0].text == "from a thread" and woke < WAKE_DEADLINE / 2  # on the call, not at its deadline


async def test_eventually_wakes_on_the_llm_servers_requests() -> None:
    async with FakeOpenAIServer() as llm:
        llm.reply_text("42")
        client = AsyncOpenAI(api_key=llm.api_key, base_url=llm.base_url, max_retries=0)
        check = Counted(lambda: llm.requests)
        waiter = asyncio.create_task(eventually(check, 5, on=llm))
        await asyncio.sleep(0.3)
        assert check.checks == 1  # with on=, only a request wakes it
        answer = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
        assert answer.choices[0].message.content == "42"
        assert (await waiter)[0].body["messages"][0]["content"] == "q"
        await client.close()


async def test_eventually_takes_assertions_predicates_and_coroutines() -> None:
    state: dict[str, Any] = {}
    asyncio.get_running_loop().call_later(0.05, state.update, {"done": True, "value": 7})

    def settled() -> None:
        assert state.get("done"), "not done yet"

    assert await eventually(settled, 2) is None
    assert await eventually(lambda: state.get("value"), 2) == 7

    async def read() -> int | None:
        return state.get("value")

    assert await eventually(read, 2) == 7


async def test_eventually_says_why_it_gave_up() -> None:
    def never() -> None:
        assert 1 + 1 == 3, "arithmetic is still arithmetic"

    with pytest.raises(TimeoutError, match=r"did not hold within 0\.1 s: arithmetic is still arithmetic"):
        await eventually(never, 0.1)
    with pytest.raises(TimeoutError, match=r"the last result was None"):
        await eventually(lambda: None, 0.1)  # a predicate's None is "not yet", not "done"
    with pytest.raises(TypeError, match=r"takes servers of milpa_chat\.testing or Activity objects"):
        await eventually(lambda: True, 0.1, on=[object()])  # type: ignore[list-item]


async def test_activity_wakes_waiters_on_another_event_loop() -> None:
    activity, seen = Activity(), []

    def other_loop() -> None:
        seen.append(asyncio.run(activity.wait_until(lambda: activity.count >= 1, 5)))

    thread = threading.Thread(target=other_loop)
    thread.start()
    await asyncio.sleep(0.1)
    activity.notify()
    await asyncio.to_thread(thread.join, 5)
    assert seen == [True]


def test_manual_clock_moves_only_when_told() -> None:
    clock = ManualClock()
    store = MemoryStore(clock=clock)
    assert store is not None and clock() == 1_800_000_000.0
    assert clock.advance(90) == 1_800_000_090.0 == clock()
    clock.now = 5.0
    assert clock() == 5.0
    with pytest.raises(ValueError, match=r"a clock moves forward; set clock\.now to go back"):
        clock.advance(-1)


async def test_every_server_shares_one_lifecycle() -> None:
    for server in (BotApiServer(), SlackApiServer(), FakeOpenAIServer()):
        with pytest.raises(RuntimeError, match="is not started; use 'async with' or 'with' first"):
            _ = server.url
        async with server:
            assert server.running and server.url == f"http://127.0.0.1:{server.port}" and server.port > 0
            with pytest.raises(RuntimeError, match="is already running"):
                await server.start()
        assert not server.running
        await server.stop()  # stopping twice is harmless


async def test_a_taken_port_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=rf"BotApiServer cannot listen on 127.0.0.1:{port}: .*pass port=0"):
            await BotApiServer(port=port).start()


def test_the_bot_api_server_also_runs_in_a_thread_for_sync_code() -> None:
    with BotApiServer() as server:
        with urllib.request.urlopen(f"{server.base_url}{server.token}/getMe", timeout=5) as response:
            answer = json.load(response)
        assert answer["result"]["username"] == server.bot.username
        assert server.calls[0].method == "getMe"
