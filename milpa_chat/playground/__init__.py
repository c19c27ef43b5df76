"""The playground: the real Telegram and Slack adapters on local platform servers, shown in a browser page.

``milpa-chat playground`` (or ``python -m milpa_chat.playground``) starts, in one process on 127.0.0.1, the
local Bot API and Slack Web API servers of :mod:`milpa_chat.testing`, the real ``TelegramBot`` and ``SlackBot``
on one ``Assistant`` with an embedded SQLite store, and a Starlette page that shows both chats as the platforms
would, fed by what the adapters really sent. Needs the ``playground`` extra.
"""

from __future__ import annotations

__all__ = ["World", "create_app", "run_tour"]

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from milpa_chat.playground.app import create_app
    from milpa_chat.playground.tour import run_tour
    from milpa_chat.playground.world import World

_EXPORTS = {"World": "milpa_chat.playground.world", "create_app": "milpa_chat.playground.app",
            "run_tour": "milpa_chat.playground.tour"}


def __getattr__(name: str) -> Any:
    import importlib

    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'milpa_chat.playground' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
