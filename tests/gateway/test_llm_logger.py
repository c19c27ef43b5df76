"""``LlmService(logger=...)``: the provider's raw response is on that logger at DEBUG, for either provider."""

from __future__ import annotations

import logging

import pytest

from milpa_chat.gateway import LlmService
from milpa_chat.testing.llm import FakeAnthropicServer, FakeOpenAIServer


@pytest.mark.parametrize(("server", "model"), [(FakeOpenAIServer, "gpt-test"), (FakeAnthropicServer, "claude-test")])
async def test_the_raw_response_is_logged_at_debug_on_the_given_logger(
    server: type[FakeOpenAIServer] | type[FakeAnthropicServer],
    model: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    mine = logging.getLogger("myapp.llm")
    async with server() as fake:
        fake.reply_text("the answer is 42")
        llm = LlmService(model=model, api_key=fake.api_key, base_url=fake.base_url, max_retries=0, logger=mine)
        with caplog.at_level(logging.DEBUG, "myapp.llm"):
            reply = await llm.generate("question?")
    assert reply["content"] == "the answer is 42"
    [line] = [r for r in caplog.records if r.name == "myapp.llm"]
    assert line.levelno == logging.DEBUG and "raw response" in line.getMessage()
    assert "the answer is 42" in line.getMessage() and model in line.getMessage()
