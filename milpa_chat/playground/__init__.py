"""The playground: the real Telegram and Slack adapters on local platform servers, shown in a browser page.

``milpa-chat playground`` (or ``python -m milpa_chat.playground``) starts, in one process on 127.0.0.1, the
local Bot API and Slack Web API servers of :mod:`milpa_chat.testing`, the real ``TelegramBot`` and ``SlackBot``
on one ``Assistant`` with an embedded SQLite store, and a Starlette page that shows both chats as the platforms
would, fed by what the adapters really sent. Needs the ``playground`` extra.
"""

from __future__ import annotations

__all__ = ["World", "create_app", "run_tour"]

from typing import TYPE_CHECKING

from milpa_chat._extras import lazy_exports

if TYPE_CHECKING:
    from milpa_chat.playground.app import create_app
    from milpa_chat.playground.tour import run_tour
    from milpa_chat.playground.world import World

_EXPORTS = {
    "World": "milpa_chat.playground.world",
    "create_app": "milpa_chat.playground.app",
    "run_tour": "milpa_chat.playground.tour",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
