"""The webhook server of a :class:`~milpa_chat.bots.telegram.TelegramBot` (tornado, as python-telegram-bot's own).

A delivery is checked before it is read: without Telegram's secret token (``X-Telegram-Bot-Api-Secret-Token``,
compared in constant time) it is refused with 403; a body that is not JSON, or JSON that is not an ``Update``, is
refused with 400 naming what is wrong. Neither is a traceback in the log (one INFO line); an accepted update goes
to the application's ``update_queue``, as python-telegram-bot's webhook server would put it.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tornado.httpserver import HTTPServer

__all__ = ["Delivery", "WebhookServer", "read_delivery", "until_signalled"]

log = logging.getLogger("milpa_chat.bots.telegram")

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
#: The largest body taken (an update is a few kilobytes; a message's text at most 4096 characters).
MAX_BODY = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Delivery:
    """What to answer a delivery: ``status``, a one-line ``reason``, and the ``update`` (PTB's) when accepted."""

    status: int
    reason: str
    update: Any = None


def read_delivery(body: bytes, headers: Any, secret: str, bot: Any) -> Delivery:
    """Check the secret token, then parse ``body`` as one ``telegram.Update`` for ``bot``."""
    from telegram import Update

    token = headers.get(SECRET_HEADER) or ""
    if not hmac.compare_digest(token.encode(), secret.encode()):
        return Delivery(403, "missing secret token" if not token else "wrong secret token")
    kind = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
    if kind != "application/json":
        return Delivery(415, f"the body must be JSON (Content-Type: application/json), got {kind or 'none'!r}")
    try:
        data = json.loads(body)
    except ValueError as exc:  # includes bytes that are not UTF-8
        return Delivery(400, f"the body is not JSON ({exc})")
    update_id = data.get("update_id") if isinstance(data, dict) else None
    if not isinstance(update_id, int) or isinstance(update_id, bool):
        return Delivery(400, "the body is not a Telegram Update (a JSON object with an integer update_id)")
    try:
        update = Update.de_json(data, bot)
    except Exception as exc:
        return Delivery(400, f"the body is not a Telegram Update ({type(exc).__name__}: {str(exc)[:80]})")
    return Delivery(200, "ok", update)


class WebhookServer:
    """Serves ``POST /<url_path>`` for ``application`` until :meth:`stop`."""

    def __init__(self, application: Any, *, url_path: str, secret: str) -> None:
        self.application = application
        self.url_path = "/" + url_path.strip("/")
        self.secret = secret
        self._server: HTTPServer | None = None

    async def start(self, listen: str, port: int) -> None:
        import tornado.web
        from tornado.httpserver import HTTPServer

        server = self

        class Deliveries(tornado.web.RequestHandler):
            SUPPORTED_METHODS = ("POST",)

            async def post(self) -> None:
                await server._answer(self)

        app = tornado.web.Application([(rf"{self.url_path}/?", Deliveries)], log_function=lambda _handler: None)
        self._server = HTTPServer(app, max_body_size=MAX_BODY)
        self._server.listen(port, address=listen)

    async def _answer(self, handler: Any) -> None:
        request = handler.request
        delivery = read_delivery(request.body, request.headers, self.secret, self.application.bot)
        if delivery.update is not None:
            await self.application.update_queue.put(delivery.update)
        else:
            log.info("refused a Telegram webhook delivery from %s: %s", request.remote_ip, delivery.reason)
        handler.set_status(delivery.status)
        handler.set_header("Content-Type", "text/plain; charset=utf-8")
        handler.finish(delivery.reason)

    async def stop(self) -> None:
        """No new deliveries; open connections closed (deliveries already queued are the application's)."""
        server, self._server = self._server, None
        if server is not None:
            server.stop()
            await server.close_all_connections()


async def until_signalled(start: Awaitable[object], stop: Callable[[], Awaitable[object]]) -> None:
    """Await ``start``, serve until SIGINT or SIGTERM, then await ``stop()`` (also when starting failed)."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.set)
    try:
        await start
        await stopping.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await stop()
