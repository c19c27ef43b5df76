"""Test doubles users need for their own tests: local servers that real client libraries talk to.

Everything here is imported on first use, so ``import milpa_chat.testing`` costs nothing and
each server's dependencies are only needed when it is used.

* ``BotApiServer`` — a local Telegram Bot API server (needs ``aiohttp``); with ``User`` and
  ``Chat`` to simulate people, and the records it keeps (``ChatMessage``, ``ApiCall``, ...).
* ``SlackApiServer`` / ``SlackEvents`` — a local Slack Web API and correctly signed Slack requests.
* ``FakeOpenAIServer`` / ``FakeAnthropicServer`` — local LLM servers with scripted replies.
* ``RecordingTransport`` — a chat surface in memory, to test an ``Assistant`` without a platform.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from milpa_chat.testing.telegram import BotApiServer
    from milpa_chat.testing.telegram_models import (
        ApiCall,
        CallbackQueryRecord,
        Chat,
        ChatAction,
        ChatMessage,
        MessageVersion,
        UpdateRecord,
        User,
        WebhookDelivery,
    )

# name -> module that defines it; add new test doubles here.
_EXPORTS = {
    "BotApiServer": "milpa_chat.testing.telegram",
    "ApiCall": "milpa_chat.testing.telegram_models",
    "CallbackQueryRecord": "milpa_chat.testing.telegram_models",
    "Chat": "milpa_chat.testing.telegram_models",
    "ChatAction": "milpa_chat.testing.telegram_models",
    "ChatMessage": "milpa_chat.testing.telegram_models",
    "MessageVersion": "milpa_chat.testing.telegram_models",
    "UpdateRecord": "milpa_chat.testing.telegram_models",
    "User": "milpa_chat.testing.telegram_models",
    "WebhookDelivery": "milpa_chat.testing.telegram_models",
    "SlackApiServer": "milpa_chat.testing.slack",
    "SlackEvents": "milpa_chat.testing.slack",
    "SlackRequestSigner": "milpa_chat.testing.slack",
    "SlackPayloads": "milpa_chat.testing.slack",
    "SlackRequest": "milpa_chat.testing.slack",
    "SlackSignedRequest": "milpa_chat.testing.slack",
    "SlackAppResponse": "milpa_chat.testing.slack",
    "SlackAckTimeout": "milpa_chat.testing.slack",
    "SlackMessage": "milpa_chat.testing.slack",
    "SlackMessageVersion": "milpa_chat.testing.slack",
    "SlackApiCall": "milpa_chat.testing.slack",
    "SlackChannel": "milpa_chat.testing.slack",
    "SlackView": "milpa_chat.testing.slack",
    "serve_bolt_app": "milpa_chat.testing.slack",
    "FakeOpenAIServer": "milpa_chat.testing.llm",
    "FakeAnthropicServer": "milpa_chat.testing.llm",
    "ScriptedReply": "milpa_chat.testing.llm",
    "ScriptedToolCall": "milpa_chat.testing.llm",
    "RecordedRequest": "milpa_chat.testing.llm",
    "RecordingTransport": "milpa_chat.testing.transport",
    "RecordedMessage": "milpa_chat.testing.transport",
    "Answer": "milpa_chat.testing.transport",
}

__all__ = [
    "Answer",
    "ApiCall",
    "BotApiServer",
    "CallbackQueryRecord",
    "Chat",
    "ChatAction",
    "ChatMessage",
    "FakeAnthropicServer",
    "FakeOpenAIServer",
    "MessageVersion",
    "RecordedMessage",
    "RecordedRequest",
    "RecordingTransport",
    "ScriptedReply",
    "ScriptedToolCall",
    "SlackAckTimeout",
    "SlackApiCall",
    "SlackApiServer",
    "SlackAppResponse",
    "SlackChannel",
    "SlackEvents",
    "SlackMessage",
    "SlackMessageVersion",
    "SlackPayloads",
    "SlackRequest",
    "SlackRequestSigner",
    "SlackSignedRequest",
    "SlackView",
    "UpdateRecord",
    "User",
    "WebhookDelivery",
    "serve_bolt_app",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'milpa_chat.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
