"""Test doubles users need for their own tests: local servers that real client libraries talk to.

Everything here is imported on first use, so ``import milpa_chat.testing`` costs nothing and
each server's dependencies are only needed when it is used.

* ``BotApiServer`` — a local Telegram Bot API server (needs ``aiohttp``); with ``User`` and
  ``Chat`` to simulate people, and the records it keeps (``ChatMessage``, ``ApiCall``, ...).
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
}

__all__ = [
    "ApiCall",
    "BotApiServer",
    "CallbackQueryRecord",
    "Chat",
    "ChatAction",
    "ChatMessage",
    "MessageVersion",
    "UpdateRecord",
    "User",
    "WebhookDelivery",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'milpa_chat.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
