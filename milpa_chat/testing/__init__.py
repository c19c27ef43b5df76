"""Test doubles users need for their own tests: local servers that real client libraries talk to.

Everything here is imported on first use, so ``import milpa_chat.testing`` costs nothing and
each server's dependencies are only needed when it is used.

* ``BotApiServer`` — a local Telegram Bot API server (needs ``aiohttp``); with ``TelegramUser`` and
  ``TelegramChat`` to simulate people, and the records it keeps (``TelegramMessage``, ``TelegramApiCall``, ...).
* ``SlackApiServer`` / ``SlackEvents`` — a local Slack Web API and correctly signed Slack requests.
* ``FakeOpenAIServer`` / ``FakeAnthropicServer`` — local LLM servers with scripted replies.
* ``RecordingTransport`` — a chat surface in memory, to test an ``Assistant`` without a platform.
* ``ManualClock`` / ``eventually`` / ``Activity`` — the waiting contract: every server notifies its
  ``activity`` on each call it records and its ``wait_until`` wakes on that; ``eventually`` does the
  same for user code; ``ManualClock`` is a clock the test moves by hand.

Subpackages: ``milpa_chat.testing.telegram``, ``milpa_chat.testing.slack``, ``milpa_chat.testing.llm``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from milpa_chat._extras import lazy_exports
from milpa_chat.testing import telegram as _telegram  # its names load on first use too

if TYPE_CHECKING:
    from milpa_chat.testing.llm import (
        FakeAnthropicServer,
        FakeOpenAIServer,
        RecordedRequest,
        ScriptedReply,
        ScriptedToolCall,
    )
    from milpa_chat.testing.slack import (
        SlackAckTimeout,
        SlackApiCall,
        SlackApiServer,
        SlackAppResponse,
        SlackChannel,
        SlackEvents,
        SlackMessage,
        SlackMessageVersion,
        SlackMethodError,
        SlackPayloads,
        SlackRequest,
        SlackRequestSigner,
        SlackSignedRequest,
        SlackView,
        block_errors,
        serve_bolt_app,
    )
    from milpa_chat.testing.telegram import BotApiServer
    from milpa_chat.testing.telegram.models import (
        TelegramApiCall,
        TelegramCallbackQuery,
        TelegramChat,
        TelegramChatAction,
        TelegramFile,
        TelegramMessage,
        TelegramMessageVersion,
        TelegramUpdate,
        TelegramUser,
        TelegramWebhookDelivery,
    )
    from milpa_chat.testing.transport import Answer, RecordedMessage, RecordingTransport
    from milpa_chat.testing.waiting import Activity, ManualClock, eventually

# name -> module that defines it; add new test doubles here.
_EXPORTS = {
    **{name: "milpa_chat.testing.telegram" for name in _telegram.__all__},
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
    "SlackMethodError": "milpa_chat.testing.slack",
    "block_errors": "milpa_chat.testing.slack",
    "FakeOpenAIServer": "milpa_chat.testing.llm",
    "FakeAnthropicServer": "milpa_chat.testing.llm",
    "ScriptedReply": "milpa_chat.testing.llm",
    "ScriptedToolCall": "milpa_chat.testing.llm",
    "RecordedRequest": "milpa_chat.testing.llm",
    "RecordingTransport": "milpa_chat.testing.transport",
    "RecordedMessage": "milpa_chat.testing.transport",
    "Answer": "milpa_chat.testing.transport",
    "ManualClock": "milpa_chat.testing.waiting",
    "eventually": "milpa_chat.testing.waiting",
    "Activity": "milpa_chat.testing.waiting",
}

__all__ = [
    "Activity",
    "Answer",
    "BotApiServer",
    "FakeAnthropicServer",
    "FakeOpenAIServer",
    "ManualClock",
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
    "SlackMethodError",
    "SlackPayloads",
    "SlackRequest",
    "SlackRequestSigner",
    "SlackSignedRequest",
    "SlackView",
    "TelegramApiCall",
    "TelegramCallbackQuery",
    "TelegramChat",
    "TelegramChatAction",
    "TelegramFile",
    "TelegramMessage",
    "TelegramMessageVersion",
    "TelegramUpdate",
    "TelegramUser",
    "TelegramWebhookDelivery",
    "block_errors",
    "eventually",
    "serve_bolt_app",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
