"""Slack threads as chat ids: ``"<channel>/<thread_ts>"`` is the thread ``thread_ts`` of ``channel``.

The chat core knows a conversation by one string (where replies, cards and results go, whose agent history
is kept). A thread of Slack's assistant pane is its own conversation inside the person's direct message with
the app, so its chat id names the thread as well: ``"D0123/1712345678.000100"``. :class:`SlackTransport`
posts to such an id with ``thread_ts``; a tap on a message in a thread comes back with the same id.
"""

from __future__ import annotations

__all__ = ["split", "thread_chat"]

SEPARATOR = "/"


def thread_chat(channel: str, thread_ts: str | None) -> str:
    """``("D1", "1712.0001")`` -> ``"D1/1712.0001"``; without a thread, the channel alone."""
    return f"{channel}{SEPARATOR}{thread_ts}" if thread_ts else channel


def split(chat_id: str) -> tuple[str, str | None]:
    """``"D1/1712.0001"`` -> ``("D1", "1712.0001")``; ``"C1"`` -> ``("C1", None)``."""
    channel, _, thread = chat_id.partition(SEPARATOR)
    return channel, thread or None
