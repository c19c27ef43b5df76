"""Test a Telegram bot with the real python-telegram-bot and no network.

:class:`BotApiServer` is a local Bot API server on 127.0.0.1 that the bot's ``Application`` talks to
through ``base_url``; the records it keeps (messages with their edit history, button taps, every call)
and the people and chats a test simulates live in :mod:`.models`. Needs ``aiohttp``.

Names are imported on first use, so importing this package (for example for
:func:`~milpa_chat.testing.telegram.html.parse_html`) does not import aiohttp.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from milpa_chat.testing.telegram.server import BotApiServer

_MODELS = "milpa_chat.testing.telegram.models"
_EXPORTS = {
    "BotApiServer": "milpa_chat.testing.telegram.server",
    **{
        name: _MODELS
        for name in (
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
        )
    },
}

__all__ = [
    "BotApiServer",
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
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
