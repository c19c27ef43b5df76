"""Property tests through the real SDKs: generated histories reach the fake servers valid, and the
scripted answer comes back with ids, names, arguments and text intact."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from milpa_chat.gateway import LlmReply, LlmService
from milpa_chat.gateway.translate import to_anthropic
from milpa_chat.testing.llm import FakeAnthropicServer, FakeOpenAIServer, ScriptedReply, ScriptedToolCall
from tests.gateway.conftest import MODELS, FakeServer, server_for
from tests.gateway.strategies import assistant_messages, histories


class BackgroundLoop:
    """An event loop in a thread, so that servers outlive the per-example loops of a sync test."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=10)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.loop.close()


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, FakeServer]]:
    background = BackgroundLoop()
    running = {provider: server_for(provider) for provider in MODELS}
    for fake in running.values():
        background.run(fake.start())
    yield running
    for fake in running.values():
        background.run(fake.stop())
    background.close()


def _script(answer: dict[str, Any]) -> ScriptedReply:
    calls = tuple(
        ScriptedToolCall(c["function"]["name"], c["function"]["arguments"], id=c["id"])
        for c in answer.get("tool_calls", [])
    )
    return ScriptedReply(text=answer.get("content") or "", tool_calls=calls)


def _calls(message: dict[str, Any]) -> list[tuple[str, str, Any]]:
    return [
        (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message.get("tool_calls", [])
    ]


async def _ask(server: FakeServer, provider: str, history: list[dict[str, Any]], tools: list[Any]) -> LlmReply:
    async with LlmService(
        model=MODELS[provider], api_key=server.api_key, base_url=server.base_url, max_retries=0, timeout=5
    ) as llm:
        return await llm.generate(history, tools=tools)


@pytest.mark.parametrize("provider", list(MODELS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories(), answer=assistant_messages(step=99))
def test_generated_histories_round_trip_through_the_sdk(
    servers: dict[str, FakeServer], provider: str, history: list[dict[str, Any]], answer: dict[str, Any]
) -> None:
    server = servers[provider]
    server.enqueue(_script(answer))
    seen = len(server.requests)
    names = sorted({c["function"]["name"] for c in answer.get("tool_calls", [])})
    tools = [{"name": n, "description": f"tool {n}", "inputSchema": {}} for n in names]

    reply = asyncio.run(_ask(server, provider, history, tools))

    request = server.requests[seen]
    assert not request.rejected, request.error
    if isinstance(server, FakeAnthropicServer):
        translated = to_anthropic(history)
        assert request.body["messages"] == translated.messages
        assert request.body.get("system") == translated.system
        assert [t["input_schema"] for t in request.body.get("tools", [])] == [
            {"type": "object", "properties": {}}
        ] * len(names)
    else:
        assert isinstance(server, FakeOpenAIServer)
        assert request.body["messages"] == history
    assert reply["content"] == (answer.get("content") or "")
    assert _calls(dict(reply)) == _calls(answer)
    assert reply.finish_reason == ("tool_calls" if answer.get("tool_calls") else "stop")
