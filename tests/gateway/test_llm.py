"""LlmService through the real openai / anthropic SDKs against the local fake servers."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any

import httpx2
import pytest

from milpa_chat.errors import MissingExtraError
from milpa_chat.gateway import LlmReply, LlmService, Usage
from milpa_chat.testing.llm import ScriptedToolCall
from tests.gateway.conftest import FakeServer

MakeLlm = Callable[..., LlmService]
ADD = {"name": "add", "description": "Add two numbers", "inputSchema": {"properties": {"a": {"type": "number"}}}}
NOW = {"name": "now", "description": "The current time", "inputSchema": {}}


async def test_text_answer(server: FakeServer, make_llm: MakeLlm, provider: str) -> None:
    server.reply_text("¡Hola! 👋", usage=(12, 3))
    reply = await make_llm().generate("hi")
    assert reply == {"role": "assistant", "content": "¡Hola! 👋"}
    assert isinstance(reply, LlmReply)
    assert reply.tool_calls == []
    assert reply.usage == Usage(input_tokens=12, output_tokens=3)
    assert reply.usage.total_tokens == 15
    assert reply.finish_reason == "stop"
    assert reply.provider == provider
    assert json.loads(json.dumps(reply)) == reply
    assert server.bodies[0]["messages"][-1] == {"role": "user", "content": "hi"}


async def test_one_tool_call_and_its_result_round_trip(server: FakeServer, make_llm: MakeLlm) -> None:
    server.reply_tool_call("add", {"a": 1, "b": "ü"}, id="call_fixed", text="Adding.").reply_text("It is 3.")
    llm = make_llm()
    history: list[dict[str, Any]] = [{"role": "system", "content": "Be exact."}, {"role": "user", "content": "1+2?"}]
    first = await llm.generate(history, tools=[ADD, NOW])
    assert first["content"] == "Adding."
    assert first.tool_calls == [
        {
            "id": "call_fixed",
            "type": "function",
            "function": {"name": "add", "arguments": first.tool_calls[0]["function"]["arguments"]},
        }
    ]
    assert json.loads(first.tool_calls[0]["function"]["arguments"]) == {"a": 1, "b": "ü"}
    assert first.finish_reason == "tool_calls"
    history += [first, {"role": "tool", "tool_call_id": "call_fixed", "content": "3"}]
    second = await llm.generate(history, tools=[ADD, NOW])
    assert second == {"role": "assistant", "content": "It is 3."}
    assert all(not r.rejected for r in server.requests)
    assert server.pending == 0


async def test_several_tool_calls_in_one_step(server: FakeServer, make_llm: MakeLlm, provider: str) -> None:
    calls = [ScriptedToolCall("add", {"a": i}, id=f"call_{i}") for i in range(3)]
    server.reply_tool_calls(calls).reply_text("done")
    llm = make_llm()
    history: list[dict[str, Any]] = [{"role": "user", "content": "three sums"}]
    reply = await llm.generate(history, tools=[ADD])
    assert [c["id"] for c in reply.tool_calls] == ["call_0", "call_1", "call_2"]
    assert [json.loads(c["function"]["arguments"]) for c in reply.tool_calls] == [{"a": 0}, {"a": 1}, {"a": 2}]
    history.append(reply)
    history += [{"role": "tool", "tool_call_id": f"call_{i}", "content": str(i)} for i in (2, 0, 1)]
    assert (await llm.generate(history, tools=[ADD]))["content"] == "done"
    sent = server.bodies[1]["messages"]
    if provider == "anthropic":  # one user turn with the three results, in the order they were given
        assert sent[-1] == {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"call_{i}", "content": str(i)} for i in (2, 0, 1)],
        }
    else:
        assert sent[-3:] == history[-3:]


@pytest.mark.parametrize("provider", ["anthropic"])
async def test_anthropic_request_shape(make_llm: MakeLlm, server: FakeServer) -> None:
    server.reply_text("ok")
    await make_llm().generate(
        [
            {"role": "system", "content": "Rule one."},
            {"role": "user", "content": "x"},
            {"role": "system", "content": "Plan."},
        ],
        tools=[NOW],
        max_tokens=77,
    )
    body = server.bodies[0]
    assert body["system"] == "Rule one.\nPlan."
    assert body["messages"] == [{"role": "user", "content": "x"}]
    assert body["max_tokens"] == 77
    assert body["tools"] == [
        {"name": "now", "description": "The current time", "input_schema": {"type": "object", "properties": {}}}
    ]
    assert server.requests[0].headers["anthropic-version"]


@pytest.mark.parametrize("provider", ["openai"])
async def test_openai_request_shape(make_llm: MakeLlm, server: FakeServer) -> None:
    server.reply_text("ok")
    history = [{"role": "system", "content": "Rule."}, {"role": "user", "content": "x"}]
    await make_llm().generate(history, tools=[NOW], max_tokens=55)
    body = server.bodies[0]
    assert body["messages"] == history
    assert body["tool_choice"] == "auto"
    assert body["tools"][0]["function"]["parameters"] == {"type": "object", "properties": {}}
    assert body["max_tokens"] == 55  # OpenAI-compatible servers (base_url set) get max_tokens
    assert server.requests[0].headers["authorization"] == "Bearer test-key"


async def test_observer_sees_exactly_the_body_sent(server: FakeServer, make_llm: MakeLlm) -> None:
    seen: list[tuple[str, Mapping[str, Any]]] = []

    class Recorder:
        def observe(self, url: str, payload: Mapping[str, Any]) -> None:
            seen.append((url, payload))

    server.reply_text("ok")
    await make_llm(observer=Recorder()).generate([{"role": "system", "content": "S"}, {"role": "user", "content": "u"}])
    assert len(seen) == 1
    url, payload = seen[0]
    assert url == server.url + server.path
    assert payload == server.bodies[0]


async def test_injected_http_client_carries_the_requests(server: FakeServer, make_llm: MakeLlm) -> None:
    sent: list[str] = []

    async def on_request(request: httpx2.Request) -> None:
        sent.append(str(request.url))

    async with httpx2.AsyncClient(event_hooks={"request": [on_request]}) as http_client:
        server.reply_text("via your client").reply_text("again")
        llm = make_llm(http_client=http_client)
        assert (await llm.generate("hi"))["content"] == "via your client"
        await llm.aclose()  # the caller's client stays open
        assert not http_client.is_closed
        assert (await make_llm(http_client=http_client).generate("hi"))["content"] == "again"
    assert sent == [server.url + server.path] * 2


class ToLocalServer(httpx2.AsyncBaseTransport):
    """A transport that sends every request to the fake server, whatever host the SDK aimed at."""

    def __init__(self, server: FakeServer) -> None:
        self.server = server
        self.hosts: list[str] = []
        self.inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.hosts.append(request.url.host)
        request.url = request.url.copy_with(
            scheme="http", host="127.0.0.1", port=int(self.server.url.rsplit(":", 1)[1])
        )
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_the_default_endpoints_through_an_injected_transport(
    server: FakeServer, make_llm: MakeLlm, provider: str
) -> None:
    transport = ToLocalServer(server)
    async with httpx2.AsyncClient(transport=transport) as http_client:
        server.reply_text("from the official endpoint")
        llm = make_llm(base_url=None, http_client=http_client)
        assert (await llm.generate("hi", max_tokens=33))["content"] == "from the official endpoint"
    assert transport.hosts == ["api.anthropic.com" if provider == "anthropic" else "api.openai.com"]
    body = server.bodies[0]
    # api.openai.com gets max_completion_tokens; Anthropic always takes max_tokens
    assert body["max_completion_tokens" if provider == "openai" else "max_tokens"] == 33
    assert llm.endpoint == ("https://api.anthropic.com" if provider == "anthropic" else "https://api.openai.com/v1")


async def test_an_injected_sdk_client_is_used_as_is(server: FakeServer, provider: str) -> None:
    if provider == "anthropic":
        from anthropic import AsyncAnthropic

        client: Any = AsyncAnthropic(api_key="test-key", base_url=server.base_url, max_retries=0)
    else:
        from openai import AsyncOpenAI

        client = AsyncOpenAI(api_key="test-key", base_url=server.base_url, max_retries=0)
    server.reply_text("from your client")
    llm = LlmService(model="some-model", client=client)
    assert llm.provider == provider  # taken from the client, not the model name
    assert (await llm.generate("hi"))["content"] == "from your client"
    await llm.aclose()
    assert not client.is_closed()
    await client.close()


def test_provider_selection() -> None:
    assert LlmService(model="claude-sonnet-4-5").provider == "anthropic"
    assert LlmService(model="gpt-4o").provider == "openai"
    assert LlmService(model="claude-ish", provider="OpenAI").provider == "openai"
    assert LlmService(model="llama3.1", provider="ollama", base_url="http://127.0.0.1:11434/v1/").base_url == (
        "http://127.0.0.1:11434/v1"
    )
    assert LlmService(model="x", provider="Anthropic").provider == "anthropic"
    with pytest.raises(ValueError, match="Unknown provider 'gemini'"):
        LlmService(model="x", provider="gemini")
    with pytest.raises(ValueError, match="already configured"):
        LlmService(model="x", client=object(), api_key="k")
    assert "key" not in repr(LlmService(model="gpt-4o", api_key="sk-secret"))


async def test_a_missing_sdk_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(MissingExtraError, match=r'pip install "milpa-chat\[anthropic\]"'):
        await LlmService(model="claude-test", api_key="k").generate("hi")


def test_importing_the_gateway_does_not_import_the_sdks() -> None:
    code = (
        "import sys, milpa_chat.gateway, milpa_chat.gateway.llm, milpa_chat.gateway.translate;"
        "print(sorted(m for m in ('openai', 'anthropic', 'httpx2') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=".")
    assert out.stdout.strip() == "[]"
