"""How a :class:`~milpa_chat.bots.slack.SlackBot` receives Slack's requests: HTTP (aiohttp or any ASGI
server) or Socket Mode. Every HTTP mode checks Slack's request signature (bolt's verification)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiohttp import web
    from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
    from slack_bolt.async_app import AsyncApp
    from slack_sdk.web.async_client import AsyncWebClient

__all__ = ["SlackServing"]

log = logging.getLogger("milpa_chat.bots.slack")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class SlackServing(ABC):
    """Serving methods of ``SlackBot`` (HTTP via aiohttp or ASGI, Socket Mode)."""

    app: AsyncApp
    client: AsyncWebClient
    path: str
    signing_secret: str | None
    app_token: str | None

    @abstractmethod
    def start_sweeper(self) -> None:
        ...

    @abstractmethod
    async def close(self) -> None:
        ...

    # ------------------------------------------------------------------ HTTP
    def _need_signing_secret(self) -> None:
        if not self.signing_secret:
            raise ValueError(
                "HTTP mode needs signing_secret to verify that requests come from Slack "
                "(your app's 'Basic Information' -> Signing Secret); without one, use Socket Mode."
            )

    def web_app(self) -> web.Application:
        """An aiohttp application answering ``POST <path>``; it runs the approval sweeper while it serves."""
        self._need_signing_secret()
        from aiohttp import web
        from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request

        async def endpoint(request: web.Request) -> web.Response:
            return await to_aiohttp_response(await self.app.async_dispatch(await to_bolt_request(request)))

        async def on_startup(_: web.Application) -> None:
            self.start_sweeper()

        async def on_cleanup(_: web.Application) -> None:
            await self.close()

        application = web.Application()
        application.router.add_post(self.path, endpoint)
        application.on_startup.append(on_startup)
        application.on_cleanup.append(on_cleanup)
        return application

    @property
    def asgi(self) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
        """An ASGI application (``uvicorn module:bot.asgi``) answering ``POST <path>``; the sweeper runs
        between the server's lifespan startup and shutdown."""
        self._need_signing_secret()
        from slack_bolt.adapter.asgi.async_handler import AsyncSlackRequestHandler

        handler = AsyncSlackRequestHandler(self.app, path=self.path)

        async def application(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "lifespan":
                await handler(scope, receive, send)  # type: ignore[arg-type]
                return
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    self.start_sweeper()
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await self.close()
                    await send({"type": "lifespan.shutdown.complete"})
                    return

        return application

    async def serve(self, port: int = 3000, host: str = "0.0.0.0") -> None:
        """Serve HTTP on ``host:port`` (``port=0``: any free port, logged) until cancelled."""
        from aiohttp import web

        runner = web.AppRunner(self.web_app(), access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
            bound_host, bound_port = runner.addresses[0][:2]
            log.info("Slack app listening on http://%s:%s%s", bound_host, bound_port, self.path)
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    def start(self, port: int = 3000, host: str = "0.0.0.0") -> None:
        """Serve HTTP on ``host:port`` until interrupted (blocks)."""
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(self.serve(port, host))

    # ----------------------------------------------------------- Socket Mode
    def socket_mode_handler(self, web_client: AsyncWebClient | None = None) -> AsyncSocketModeHandler:
        """bolt's Socket Mode handler for this app; ``web_client`` opens the connection
        (``apps.connections.open`` with the app token; default: the bot's client)."""
        if not self.app_token:
            raise ValueError("Socket Mode needs app_token: an app-level token (xapp-…) with connections:write")
        from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

        return AsyncSocketModeHandler(self.app, self.app_token, web_client=web_client or self.client)

    async def serve_socket_mode(self, web_client: AsyncWebClient | None = None) -> None:
        """Connect over Socket Mode and serve until cancelled (no public URL needed)."""
        handler = self.socket_mode_handler(web_client)
        await handler.connect_async()  # type: ignore[no-untyped-call]
        self.start_sweeper()
        try:
            await asyncio.Event().wait()
        finally:
            await handler.close_async()  # type: ignore[no-untyped-call]
            await self.close()

    def start_socket_mode(self) -> None:
        """Serve over Socket Mode until interrupted (blocks)."""
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(self.serve_socket_mode())
