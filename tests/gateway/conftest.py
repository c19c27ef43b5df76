"""Fake provider servers (real HTTP on 127.0.0.1) and LlmService instances pointed at them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from milpa_chat.gateway import LlmService
from milpa_chat.testing.llm import FakeAnthropicServer, FakeOpenAIServer

FakeServer = FakeOpenAIServer | FakeAnthropicServer
MODELS = {"openai": "gpt-test", "anthropic": "claude-test"}


def server_for(provider: str) -> FakeServer:
    return FakeAnthropicServer() if provider == "anthropic" else FakeOpenAIServer()


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def server(provider: str) -> AsyncIterator[FakeServer]:
    async with server_for(provider) as fake:
        yield fake


@pytest.fixture
async def make_llm(provider: str, server: FakeServer) -> AsyncIterator[Callable[..., LlmService]]:
    """``make_llm(**overrides)``: a service for the current provider's fake server, closed afterwards.

    Defaults keep the run fast: no SDK retries, a 5 s timeout.
    """
    made: list[LlmService] = []

    def make(**overrides: Any) -> LlmService:
        options: dict[str, Any] = {
            "model": MODELS[provider],
            "api_key": server.api_key,
            "base_url": server.base_url,
            "max_retries": 0,
            "timeout": 5.0,
        }
        options.update(overrides)
        service = LlmService(**options)
        made.append(service)
        return service

    yield make
    for service in made:
        await service.aclose()
