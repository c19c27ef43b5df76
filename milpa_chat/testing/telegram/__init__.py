"""Test a Telegram bot with the real python-telegram-bot and no network.

:class:`BotApiServer` is a local Bot API server on 127.0.0.1 that the bot's ``Application`` talks to
through ``base_url``; the records it keeps (messages with their edit history, button taps, every call)
and the people and chats a test simulates live in :mod:`.models`. Needs ``aiohttp``.

Names are imported on first use, so importing this package (for example for
:func:`~milpa_chat.testing.telegram.html.parse_html`) does not import aiohttp.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from milpa_chat._extras import lazy_exports

if TYPE_CHECKING:
    from milpa_chat.testing.telegram.models import (
        TelegramApiCall,
        TelegramCallbackQuery,
        TelegramChat,
        TelegramChatAction,
        TelegramDraft,
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
            "TelegramDraft",
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
    "TelegramDraft",
    "TelegramFile",
    "TelegramMessage",
    "TelegramMessageVersion",
    "TelegramUpdate",
    "TelegramUser",
    "TelegramWebhookDelivery",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
