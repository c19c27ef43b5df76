"""How a :class:`~milpa_chat.bots.slack.SlackBot` receives Slack's requests: HTTP (aiohttp or any ASGI
server) or Socket Mode. Every HTTP mode checks Slack's request signature, freshness and novelty before
anything parses the body (:class:`~milpa_chat.bots.slack_guard.SlackGuard`; bolt verifies again)."""

from __future__ import annotations

import asyncio
import logging
import signal
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiohttp import web
    from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
    from slack_bolt.async_app import AsyncApp
    from slack_bolt.response import BoltResponse
    from slack_sdk.web.async_client import AsyncWebClient

    from milpa_chat.bots.slack_guard import SlackGuard

__all__ = ["DEFAULT_HOST", "SlackServing"]

#: Where HTTP mode listens unless told (as ``TelegramBot``'s webhook modes).
DEFAULT_HOST = "0.0.0.0"

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
    #: Where the bot serves once started: ``http://0.0.0.0:3000/slack/events``, or ``Socket Mode``.
    listening: str = ""
    _runner: web.AppRunner | None = None
    _socket_handler: AsyncSocketModeHandler | None = None
    _guard: SlackGuard | None = None

    @abstractmethod
    def start_sweeper(self) -> None: ...

    @abstractmethod
    async def close(self) -> None: ...

    # ------------------------------------------------------------------ HTTP
    def _need_signing_secret(self) -> None:
        if not self.signing_secret:
            raise ValueError(
                "HTTP mode needs signing_secret to verify that requests come from Slack "
                "(your app's 'Basic Information' -> Signing Secret); without one, use Socket Mode."
            )

    @property
    def guard(self) -> SlackGuard:
        """What every HTTP request passes before its body is parsed (one per bot: it remembers signatures)."""
        if self._guard is None:
            from milpa_chat.bots.slack_guard import SlackGuard

            self._need_signing_secret()
            assert self.signing_secret is not None
            self._guard = SlackGuard(self.signing_secret)
        return self._guard

    async def _guarded(self, body: bytes, query: str, headers: MutableMapping[str, str], peer: object) -> Any:
        """bolt's response to a request the guard lets through, or the guard's :class:`Refusal`."""
        from milpa_chat.bots.slack_guard import Refusal

        refused = self.guard.check(body, headers, peer=peer)
        if refused is not None:
            return refused
        parsed = self.guard.parse(body, query, headers)
        if isinstance(parsed, Refusal):
            log.info("refused a signed Slack request from %s: %s", peer or "?", parsed.reason)
            return parsed
        response: BoltResponse = await self.app.async_dispatch(parsed)
        return response

    def web_app(self) -> web.Application:
        """An aiohttp application answering ``POST <path>``; it runs the approval sweeper while it serves."""
        self._need_signing_secret()
        from aiohttp import web
        from slack_bolt.adapter.aiohttp import to_aiohttp_response

        from milpa_chat.bots.slack_guard import Refusal, lower_headers

        async def endpoint(request: web.Request) -> web.Response:
            body = await request.read()
            answer = await self._guarded(body, request.query_string, lower_headers(request.headers), request.remote)
            if isinstance(answer, Refusal):
                return web.Response(status=answer.status, text=answer.reason)
            return await to_aiohttp_response(answer)

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
            if scope["type"] == "http" and scope.get("method") == "POST" and scope.get("path") == self.path:
                await self._asgi_post(scope, receive, send)
                return
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

    async def _asgi_post(self, scope: Scope, receive: Receive, send: Send) -> None:
        from milpa_chat.bots.slack_guard import Refusal

        chunks: list[bytes] = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        query = scope.get("query_string", b"").decode("latin-1")
        answer = await self._guarded(b"".join(chunks), query, headers, (scope.get("client") or ("?",))[0])
        if isinstance(answer, Refusal):
            status, head, content = answer.status, [(b"content-type", b"text/plain; charset=utf-8")], answer.reason
        else:
            status, content = answer.status, answer.body
            head = [(k.encode(), v.encode()) for k, values in answer.headers.items() for v in values]
        await send({"type": "http.response.start", "status": status, "headers": head})
        await send({"type": "http.response.body", "body": content.encode()})

    async def check_auth(self) -> dict[str, Any]:
        """``auth.test`` with the bot token: who the bot is. A rejected token or an unreachable Web API
        raises :class:`~milpa_chat.bots.errors.BotStartupError` (one line saying which)."""
        from milpa_chat.bots.errors import slack_startup_error

        try:
            response = await self.client.auth_test()
        except Exception as exc:
            error = slack_startup_error(exc, self.client.base_url)
            if error is None:
                raise
            raise error from None
        return dict(response.data) if isinstance(response.data, dict) else {}

    async def serve(self, port: int = 3000, host: str = DEFAULT_HOST, *, shutdown_timeout: float = 60.0) -> int:
        """Check the token (:meth:`check_auth`), then listen for HTTP on ``host:port`` (``port=0``: any
        free port) and return the bound port; serving goes on until :meth:`stop`, which stops accepting
        requests, finishes those in flight (at most ``shutdown_timeout`` seconds) and the work they started."""
        from aiohttp import web

        from milpa_chat._ports import check_port

        if self._runner is not None:
            raise RuntimeError("this SlackBot is serving already; call stop() first")
        check_port(host, port, option="serve(port=...)")  # one line, before the token is even checked
        application = self.web_app()
        await self.check_auth()
        runner = web.AppRunner(application, access_log=None, shutdown_timeout=shutdown_timeout)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        bound_host, bound_port = runner.addresses[0][:2]
        self.listening = f"http://{bound_host}:{bound_port}{self.path}"
        log.info("Slack app listening on %s", self.listening)
        return int(bound_port)

    async def stop(self) -> None:
        """Stop serving (HTTP: no new requests, those in flight finished; Socket Mode: disconnect), wait for
        the work acknowledged so far, stop the sweeper and close the Web API session."""
        runner, self._runner = self._runner, None
        handler, self._socket_handler = self._socket_handler, None
        if handler is not None:
            await handler.close_async()  # type: ignore[no-untyped-call]
        if runner is not None:
            await runner.cleanup()  # on_cleanup closes the bot
        await self.close()

    def start(self, port: int = 3000, host: str = DEFAULT_HOST) -> None:
        """Serve HTTP on ``host:port`` until Ctrl-C or SIGTERM (blocks), printing where it listens; on the
        signal it drains (see :meth:`stop`) and returns."""
        asyncio.run(self._until_signalled(lambda: self.serve(port, host)))

    async def _until_signalled(self, begin: Callable[[], Awaitable[object]]) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            await begin()
            http = self.listening.startswith("http")
            where = f"listening on {self.listening}" if http else "connected over Socket Mode"
            print(f"Slack app {where} (Ctrl-C to stop)", flush=True)
            await stop.wait()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            await self.stop()

    # ----------------------------------------------------------- Socket Mode
    def socket_mode_handler(self, web_client: AsyncWebClient | None = None) -> AsyncSocketModeHandler:
        """bolt's Socket Mode handler for this app; ``web_client`` opens the connection
        (``apps.connections.open`` with the app token; default: the bot's client)."""
        if not self.app_token:
            raise ValueError("Socket Mode needs app_token: an app-level token (xapp-…) with connections:write")
        from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

        return AsyncSocketModeHandler(self.app, self.app_token, web_client=web_client or self.client)

    async def connect_socket_mode(self, web_client: AsyncWebClient | None = None) -> None:
        """Check the token, connect over Socket Mode and start the sweeper; serving goes on until :meth:`stop`."""
        await self.check_auth()
        handler = self.socket_mode_handler(web_client)
        await handler.connect_async()  # type: ignore[no-untyped-call]
        self._socket_handler = handler
        self.listening = "Socket Mode"
        log.info("Slack app connected over Socket Mode")
        self.start_sweeper()

    async def serve_socket_mode(self, web_client: AsyncWebClient | None = None) -> None:
        """Connect over Socket Mode and serve until cancelled (no public URL needed), then :meth:`stop`."""
        await self.connect_socket_mode(web_client)
        try:
            await asyncio.Event().wait()
        finally:
            await self.stop()

    def start_socket_mode(self, web_client: AsyncWebClient | None = None) -> None:
        """Serve over Socket Mode until Ctrl-C or SIGTERM (blocks), then disconnect cleanly; ``web_client``
        opens the connection (as for :meth:`socket_mode_handler`)."""
        asyncio.run(self._until_signalled(lambda: self.connect_socket_mode(web_client)))
