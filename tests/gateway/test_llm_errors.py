"""Provider failures reach callers as clear LlmError subclasses; the SDKs' retries are honoured."""

from __future__ import annotations

import importlib
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from milpa_chat.gateway import (
    LlmAuthError,
    LlmBadResponseError,
    LlmContextTooLongError,
    LlmError,
    LlmRateLimitError,
    LlmRequestError,
    LlmService,
    LlmUnavailableError,
)
from milpa_chat.testing.llm import FakeAnthropicServer, FakeOpenAIServer
from tests.gateway.conftest import MODELS, FakeServer

MakeLlm = Callable[..., LlmService]
LABELS = {"openai": "OpenAI", "anthropic": "Anthropic"}


def _names_provider_and_model(error: LlmError, provider: str) -> None:
    assert error.provider == provider
    assert error.model == MODELS[provider]
    assert LABELS[provider] in str(error)
    assert repr(MODELS[provider]) in str(error)


async def test_a_wrong_key_is_an_auth_error(server: FakeServer, make_llm: MakeLlm, provider: str) -> None:
    with pytest.raises(LlmAuthError) as info:
        await make_llm(api_key="wrong-key", max_retries=2).generate("hi")
    _names_provider_and_model(info.value, provider)
    assert info.value.status_code == 401
    assert "api_key=" in str(info.value)
    assert len(server.requests) == 1  # 401 is not retried
    assert server.requests[0].rejected


async def test_a_scripted_403_is_an_auth_error(server: FakeServer, make_llm: MakeLlm) -> None:
    server.fail(403, "This key may not use this model")
    with pytest.raises(LlmAuthError, match="may not use this model"):
        await make_llm().generate("hi")


@pytest.mark.parametrize("config_dir", ["empty", "missing"])
async def test_a_missing_key_is_an_auth_error_before_any_request(
    server: FakeServer,
    make_llm: MakeLlm,
    provider: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    config_dir: str,
) -> None:
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_ADMIN_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_PROFILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path if config_dir == "empty" else tmp_path / "missing"))
    with pytest.raises(LlmAuthError) as info:
        await make_llm(api_key=None).generate("hi")
    assert ("ANTHROPIC_API_KEY" if provider == "anthropic" else "OPENAI_API_KEY") in str(info.value)
    assert server.requests == []


async def test_rate_limits_are_retried_max_retries_times_then_raised(
    server: FakeServer, make_llm: MakeLlm, provider: str
) -> None:
    server.fail(429, "Slow down", retry_after=0.05, times=3)
    started = time.monotonic()
    with pytest.raises(LlmRateLimitError) as info:
        await make_llm(max_retries=2).generate("hi")
    assert len(server.requests) == 3  # the first try and two retries
    assert time.monotonic() - started >= 0.1  # the SDK waited retry-after between tries
    assert info.value.retry_after == pytest.approx(0.05)
    assert info.value.status_code == 429
    assert "Slow down" in str(info.value)
    _names_provider_and_model(info.value, provider)


async def test_a_rate_limit_followed_by_an_answer_succeeds(server: FakeServer, make_llm: MakeLlm) -> None:
    server.fail(429, retry_after=0.01).reply_text("made it")
    assert (await make_llm(max_retries=1).generate("hi"))["content"] == "made it"
    assert [r.status for r in server.requests] == [429, 200]


async def test_server_errors_are_unavailable(server: FakeServer, make_llm: MakeLlm, provider: str) -> None:
    server.fail(500, "internal trouble", times=2, retry_after=0.01)
    with pytest.raises(LlmUnavailableError, match="internal trouble") as info:
        await make_llm(max_retries=1).generate("hi")
    assert len(server.requests) == 2
    _names_provider_and_model(info.value, provider)


async def test_an_overloaded_provider_is_unavailable(server: FakeServer, make_llm: MakeLlm) -> None:
    server.fail(529, "Overloaded")
    with pytest.raises(LlmUnavailableError, match="retry later"):
        await make_llm().generate("hi")


async def test_context_too_long(server: FakeServer, make_llm: MakeLlm, provider: str) -> None:
    server.fail_context_too_long()
    with pytest.raises(LlmContextTooLongError) as info:
        await make_llm(max_retries=2).generate("a very long story")
    assert len(server.requests) == 1
    assert "drop or summarise" in str(info.value)
    _names_provider_and_model(info.value, provider)


async def test_a_slow_answer_times_out_as_unavailable(server: FakeServer, make_llm: MakeLlm, provider: str) -> None:
    # The answer comes after 3 s; a 0.15 s timeout gives up before it. A call that waited for it would
    # return "too late" instead of raising, so the raise itself proves the answer was not waited for
    # (no wall-clock bound: a loaded machine cannot turn a correct timeout into a failure).
    server.reply_text("too late", delay=3.0)
    llm = make_llm(timeout=0.15)
    importlib.import_module(provider)  # the SDK's first import is not part of the wait being measured
    started = time.monotonic()
    with pytest.raises(LlmUnavailableError, match="did not answer in time") as info:
        await llm.generate("hi")
    print(f"\n{provider}: a 0.15 s timeout gave up after {time.monotonic() - started:.2f} s")
    assert len(server.requests) == 1  # one try (max_retries=0), given up: not retried until an answer came
    assert "timeout=" in str(info.value)
    _names_provider_and_model(info.value, provider)


async def test_a_timeout_is_retried(server: FakeServer, make_llm: MakeLlm) -> None:
    server.reply_text("too late", delay=0.5).reply_text("in time")
    assert (await make_llm(timeout=0.2, max_retries=1).generate("hi"))["content"] == "in time"
    assert len(server.requests) == 2


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_nobody_listening_is_unavailable(provider: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = LlmService(model=MODELS[provider], api_key="k", base_url=f"http://127.0.0.1:{port}", max_retries=0)
    with pytest.raises(LlmUnavailableError, match="Could not reach") as info:
        await llm.generate("hi")
    assert f"127.0.0.1:{port}" in str(info.value)


async def test_an_unknown_model_is_a_request_error(server: FakeServer, make_llm: MakeLlm) -> None:
    server.fail(404, "The model `gpt-test` does not exist")
    with pytest.raises(LlmRequestError, match="Check the model name"):
        await make_llm().generate("hi")


async def test_an_invalid_history_is_refused_by_the_server(server: FakeServer, make_llm: MakeLlm) -> None:
    history = [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "call_nobody", "content": "?"}]
    with pytest.raises(LlmRequestError, match="call_nobody") as info:
        await make_llm().generate(history)
    assert info.value.status_code == 400
    assert server.requests[0].rejected


@pytest.mark.parametrize(
    "body", ["this is not json", '{"id": "x"}', '{"choices": [], "content": "flat"}'], ids=["text", "empty", "shape"]
)
async def test_unreadable_answers_are_bad_responses(server: FakeServer, make_llm: MakeLlm, body: str) -> None:
    server.reply_raw(body, content_type="application/json" if body.startswith("{") else "text/plain")
    with pytest.raises(LlmBadResponseError, match="answered for model"):
        await make_llm().generate("hi")


async def test_errors_chain_the_sdk_exception() -> None:
    async with FakeOpenAIServer() as openai_server, FakeAnthropicServer() as anthropic_server:
        for fake, model, package in (
            (openai_server, "gpt-test", "openai"),
            (anthropic_server, "claude-t", "anthropic"),
        ):
            fake.fail(429, retry_after=0.01)
            llm = LlmService(model=model, api_key="test-key", base_url=fake.base_url, max_retries=0)
            with pytest.raises(LlmRateLimitError) as info:
                await llm.generate("hi")
            assert type(info.value.__cause__).__module__.split(".")[0] == package
            await llm.aclose()
