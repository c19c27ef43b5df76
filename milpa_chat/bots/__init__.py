"""Chat platform adapters for :class:`~milpa_chat.chat.Assistant`.

* ``TelegramBot`` / ``TelegramTransport`` — python-telegram-bot v22 (``pip install "milpa-chat[telegram]"``).
* ``SlackBot`` / ``SlackTransport`` — slack-bolt (``pip install "milpa-chat[slack]"``).

Names are imported on first use, so ``import milpa_chat.bots`` imports no platform SDK; a missing
extra raises :class:`~milpa_chat.errors.MissingExtraError` naming the ``pip install`` command.
``BotStartupError``: a bot could not start (its token was rejected, or the platform is unreachable).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from milpa_chat._extras import lazy_exports

if TYPE_CHECKING:
    from milpa_chat.bots.errors import BotStartupError
    from milpa_chat.bots.slack import SlackBot
    from milpa_chat.bots.slack_transport import SlackTransport
    from milpa_chat.bots.telegram import TelegramBot, chat_user
    from milpa_chat.bots.telegram_transport import TelegramTransport

# name -> module that defines it; adapters add their names here.
_EXPORTS = {
    "BotStartupError": "milpa_chat.bots.errors",
    "SlackBot": "milpa_chat.bots.slack",
    "SlackTransport": "milpa_chat.bots.slack_transport",
    "TelegramBot": "milpa_chat.bots.telegram",
    "TelegramTransport": "milpa_chat.bots.telegram_transport",
    "chat_user": "milpa_chat.bots.telegram",
}

__all__ = ["BotStartupError", "SlackBot", "SlackTransport", "TelegramBot", "TelegramTransport", "chat_user"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
