"""The LLM gateway (seed 004): one message shape for OpenAI and Anthropic models.

``LlmService`` asks a model through the official async SDKs (``pip install "milpa-chat[openai]"``
and/or ``"milpa-chat[anthropic]"``); they are imported on first use, never by this package.
"""

from __future__ import annotations

from milpa_chat.gateway.errors import (
    LlmAuthError,
    LlmBadResponseError,
    LlmContextTooLongError,
    LlmError,
    LlmRateLimitError,
    LlmRequestError,
    LlmUnavailableError,
)
from milpa_chat.gateway.llm import ChannelObserver, LlmReply, LlmService, Usage

__all__ = [
    "ChannelObserver",
    "LlmAuthError",
    "LlmBadResponseError",
    "LlmContextTooLongError",
    "LlmError",
    "LlmRateLimitError",
    "LlmReply",
    "LlmRequestError",
    "LlmService",
    "LlmUnavailableError",
    "Usage",
]
