"""The LLM gateway: one message shape for OpenAI and Anthropic models, and the agent loop.

``LlmService`` asks a model through the official async SDKs (``pip install "milpa-chat[openai]"``
and/or ``"milpa-chat[anthropic]"``); they are imported on first use, never by this package.
``AgentOrchestrator`` runs ask -> act -> repeat over a ``McpClientService`` (the registry as the
model sees it), stops for people on confirmations, verifications, blocked calls and refusals, and
resumes after they decide. ``ChatAgent`` puts it behind free text in a ``milpa_chat.chat.Assistant``.
"""

from __future__ import annotations

from milpa_chat.gateway.chat_agent import ChatAgent, trouble_reply
from milpa_chat.gateway.errors import (
    LlmAuthError,
    LlmBadResponseError,
    LlmContextTooLongError,
    LlmError,
    LlmRateLimitError,
    LlmRequestError,
    LlmUnavailableError,
)
from milpa_chat.gateway.gates import OptionTable, Refusal, Removal, ToolCall, ToolCallGate
from milpa_chat.gateway.llm import ChannelObserver, LlmReply, LlmService, Usage
from milpa_chat.gateway.mcp_client import McpClientService, result_for_model
from milpa_chat.gateway.orchestrator import AgentOrchestrator
from milpa_chat.gateway.second_opinion import SecondOpinionGate
from milpa_chat.gateway.state import AgentRun, AgentState, PendingCall, ToolOutcome, declined

__all__ = [
    "AgentOrchestrator",
    "AgentRun",
    "AgentState",
    "ChannelObserver",
    "ChatAgent",
    "LlmAuthError",
    "LlmBadResponseError",
    "LlmContextTooLongError",
    "LlmError",
    "LlmRateLimitError",
    "LlmReply",
    "LlmRequestError",
    "LlmService",
    "LlmUnavailableError",
    "McpClientService",
    "OptionTable",
    "PendingCall",
    "Refusal",
    "Removal",
    "SecondOpinionGate",
    "ToolCall",
    "ToolCallGate",
    "ToolOutcome",
    "Usage",
    "declined",
    "result_for_model",
    "trouble_reply",
]
