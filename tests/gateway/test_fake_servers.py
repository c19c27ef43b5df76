"""The fake provider servers themselves, over raw HTTP: auth, headers, validation, script, records."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest

from milpa_chat.gateway import LlmService
from milpa_chat.testing.llm import FakeAnthropicServer, FakeOpenAIServer

from .conftest import FakeServer

ANTHROPIC_HEADERS = {"x-api-key": "test-key", "anthropic-version": "2023-06-01"}
OPENAI_HEADERS = {"authorization": "Bearer test-key"}


async def _post(url: str, body: Any, headers: dict[str, str]) -> tuple[int, dict[str, Any], dict[str, str]]:
    async with aiohttp.ClientSession() as session, session.post(url, json=body, headers=headers) as response:
        return response.status, await response.json(), {k.lower(): v for k, v in response.headers.items()}


def _anthropic_body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "claude-test", "max_tokens": 100, "messages": messages, **extra}


async def test_anthropic_answers_in_its_wire_format() -> None:
    async with FakeAnthropicServer() as server:
        server.reply_tool_call("add", {"a": 1}, id="toolu_1", text="On it.")
        status, body, headers = await _post(
            server.url + "/v1/messages", _anthropic_body([{"role": "user", "content": "x"}]), ANTHROPIC_HEADERS
        )
    assert status == 200
    assert body["type"] == "message" and body["role"] == "assistant" and body["model"] == "claude-test"
    assert body["content"] == [
        {"type": "text", "text": "On it."},
        {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1}},
    ]
    assert body["stop_reason"] == "tool_use"
    assert set(body["usage"]) == {"input_tokens", "output_tokens"}
    assert headers["request-id"].startswith("req_")


@pytest.mark.parametrize(
    ("headers", "status", "kind", "fragment"),
    [
        ({"anthropic-version": "2023-06-01"}, 401, "authentication_error", "invalid x-api-key"),
        ({"x-api-key": "nope", "anthropic-version": "2023-06-01"}, 401, "authentication_error", "x-api-key"),
        ({"x-api-key": "test-key"}, 400, "invalid_request_error", "anthropic-version"),
        ({"authorization": "Bearer test-key", "anthropic-version": "2023-06-01"}, 200, None, None),
    ],
)
async def test_anthropic_checks_key_and_version_headers(
    headers: dict[str, str], status: int, kind: str | None, fragment: str | None
) -> None:
    async with FakeAnthropicServer() as server:
        server.reply_text("ok")
        got, body, _ = await _post(
            server.url + "/v1/messages", _anthropic_body([{"role": "user", "content": "x"}]), headers
        )
    assert got == status
    if kind is not None:
        assert body["type"] == "error" and body["error"]["type"] == kind and fragment in body["error"]["message"]
        assert server.pending == 1  # a refused request does not consume the script
        assert server.requests[0].rejected


TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}
TOOL_RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "r"}


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (_anthropic_body([{"role": "assistant", "content": "hi"}]), 'starting with "user"'),
        (_anthropic_body([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]), "alternate"),
        (_anthropic_body([{"role": "system", "content": "a"}]), "messages.0.role"),
        (_anthropic_body([{"role": "user", "content": " "}]), "non-whitespace"),
        (
            _anthropic_body([{"role": "user", "content": "a"}, {"role": "assistant", "content": [TOOL_USE]}]),
            "without `tool_result` blocks",
        ),
        (
            _anthropic_body(
                [
                    {"role": "user", "content": "a"},
                    {"role": "assistant", "content": [TOOL_USE]},
                    {"role": "user", "content": [{**TOOL_RESULT, "tool_use_id": "toolu_2"}]},
                ]
            ),
            "unexpected `tool_use_id`",
        ),
        (
            _anthropic_body(
                [
                    {"role": "user", "content": "a"},
                    {"role": "assistant", "content": [TOOL_USE]},
                    {"role": "user", "content": [{"type": "text", "text": "x"}, TOOL_RESULT]},
                ]
            ),
            "must come before",
        ),
        (
            _anthropic_body(
                [{"role": "user", "content": "a"}],
                tools=[{"name": "t", "description": "", "input_schema": {"type": "object", "properties": []}}],
            ),
            "properties",
        ),
        (_anthropic_body([{"role": "user", "content": "a"}], tools=[{"name": "t", "input_schema": {}}]), "object"),
        ({"model": "claude-test", "messages": [{"role": "user", "content": "a"}]}, "max_tokens"),
        (_anthropic_body([{"role": "user", "content": "a"}], stream="yes"), "boolean"),
    ],
)
async def test_anthropic_refuses_invalid_requests(body: dict[str, Any], fragment: str) -> None:
    async with FakeAnthropicServer() as server:
        server.reply_text("never sent")
        status, answer, _ = await _post(server.url + "/v1/messages", body, ANTHROPIC_HEADERS)
    assert status == 400
    assert answer["error"]["type"] == "invalid_request_error"
    assert fragment in answer["error"]["message"]
    assert server.requests[0].body == body and server.requests[0].error == answer["error"]["message"]


def _openai_body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-test", "messages": messages, **extra}


CALL = {"id": "call_1", "type": "function", "function": {"name": "t", "arguments": "{}"}}


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (
            _openai_body([{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "x", "content": "r"}]),
            "preceeding",
        ),
        (
            _openai_body(
                [{"role": "user", "content": "a"}, {"role": "assistant", "content": None, "tool_calls": [CALL]}]
            ),
            "call_1",
        ),
        (
            _openai_body(
                [
                    {"role": "user", "content": "a"},
                    {"role": "assistant", "content": None, "tool_calls": [CALL]},
                    {"role": "user", "content": "b"},
                ]
            ),
            "did not have response messages",
        ),
        (_openai_body([{"role": "assistant", "content": "x", "tool_calls": []}]), "empty array"),
        (_openai_body([{"role": "user", "content": None}]), "content"),
        (_openai_body([]), "messages"),
        (
            _openai_body([{"role": "user", "content": "a"}], tools=[{"type": "function", "function": {"name": "a b"}}]),
            "name",
        ),
    ],
)
async def test_openai_refuses_invalid_requests(body: dict[str, Any], fragment: str) -> None:
    async with FakeOpenAIServer() as server:
        status, answer, _ = await _post(server.url + "/v1/chat/completions", body, OPENAI_HEADERS)
    assert status == 400
    assert set(answer["error"]) == {"message", "type", "param", "code"}
    assert fragment in answer["error"]["message"]


async def test_openai_answers_in_its_wire_format_and_checks_the_key() -> None:
    async with FakeOpenAIServer(api_key="sk-right") as server:
        server.reply_text("hello", usage=(5, 1))
        bad, error, _ = await _post(
            server.url + "/v1/chat/completions", _openai_body([{"role": "user", "content": "x"}]), {}
        )
        status, body, headers = await _post(
            server.url + "/v1/chat/completions",
            _openai_body([{"role": "user", "content": "x"}]),
            {"authorization": "Bearer sk-right"},
        )
    assert bad == 401 and error["error"]["code"] == "invalid_api_key"
    assert status == 200
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["content"] == "hello"
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"] == {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
    assert headers["x-request-id"].startswith("req_")


async def test_an_empty_script_is_a_loud_non_retryable_500() -> None:
    async with FakeOpenAIServer(api_key=None) as server:
        status, body, headers = await _post(
            server.url + "/v1/chat/completions", _openai_body([{"role": "user", "content": "x"}]), {}
        )
    assert status == 500 and headers["x-should-retry"] == "false"
    assert "no scripted reply left" in body["error"]["message"]


async def test_scripted_errors_carry_retry_after_and_the_provider_shape() -> None:
    async with FakeAnthropicServer() as server:
        server.fail(429, "slow down", retry_after=1.5).fail(529, "Overloaded")
        url, body = server.url + "/v1/messages", _anthropic_body([{"role": "user", "content": "x"}])
        first = await _post(url, body, ANTHROPIC_HEADERS)
        second = await _post(url, body, ANTHROPIC_HEADERS)
    assert first[0] == 429 and first[2]["retry-after"] == "1.5"
    assert first[1]["error"] == {"type": "rate_limit_error", "message": "slow down"}
    assert second[0] == 529 and second[1]["error"]["type"] == "overloaded_error"
    assert [r.status for r in server.requests] == [429, 529]
    assert not any(r.rejected for r in server.requests)


async def test_url_before_start_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="not started"):
        _ = FakeOpenAIServer().base_url


async def test_streamed_replies_arrive_a_word_at_a_time_through_both_sdks(
    make_llm: Callable[..., LlmService], server: FakeServer
) -> None:
    """``generate(on_text=...)`` streams: the pieces arrive in order, join to the whole answer, and the
    reply (text, tool calls, usage) is the same as without streaming."""
    server.reply_text("Invoices for ACME: two open, one paid.", chunk_delay=0.01)
    server.reply_tool_call("add", {"a": 1, "b": 2}, text="Adding. ")
    llm = make_llm()
    pieces: list[str] = []

    async def seen(piece: str) -> None:
        pieces.append(piece)

    reply = await llm.generate("invoices?", on_text=seen)
    assert pieces == ["Invoices ", "for ", "ACME: ", "two ", "open, ", "one ", "paid."]
    assert reply["content"] == "".join(pieces) and reply.finish_reason == "stop" and reply.usage is not None
    tools = [{"name": "add", "description": "Add.", "inputSchema": {"type": "object", "properties": {}}}]
    called = await llm.generate("add", tools, on_text=seen)
    assert called.tool_calls[0]["function"]["name"] == "add" and called.finish_reason == "tool_calls"
    assert json.loads(called.tool_calls[0]["function"]["arguments"]) == {"a": 1, "b": 2}
    assert pieces[-1] == "Adding. " and len(server.first_tokens) == 2
    assert all(body["stream"] is True for body in server.bodies)
