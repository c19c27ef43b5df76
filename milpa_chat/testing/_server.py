"""The one lifecycle of every local server in :mod:`milpa_chat.testing`.

A :class:`LocalServer` is an aiohttp application on ``host:port`` (a free port by default):
``async with Server() as server:`` on the current event loop, or ``with Server() as server:`` on a
loop of its own in a background thread (for sync clients). Each server notifies its
:attr:`~LocalServer.activity` on every call it records, which is what its waiting helpers wake on.
"""

from __future__ import annotations

import asyncio
import threading
from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self

from aiohttp import web
from aiohttp.typedefs import Handler

from milpa_chat.testing.waiting import Activity

__all__ = ["LocalServer"]


@web.middleware
async def _client_gone(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A client that hung up before its request arrived whole made no call: its handler stops reading, nothing
    is recorded, and no error is logged (aiohttp would log a traceback; the answer reaches nobody)."""
    try:
        return await handler(request)
    except ConnectionResetError:
        if request.transport is not None and not request.transport.is_closing():
            raise  # the connection is still there: not a client that hung up, a real failure
        return web.Response(status=400, text="the client hung up before its request arrived whole")


class LocalServer(ABC):
    """Start/stop, ``async with`` / ``with``, the bound ``host``/``port``/``url`` and a clean shutdown."""

    client_max_size = 64 * 1024 * 1024
    shutdown_timeout = 0.5

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self._requested_port = port
        self._bound_port: int | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None
        self.activity = Activity()

    @abstractmethod
    def _routes(self, app: web.Application) -> None:
        """Add the server's routes to ``app``."""

    async def _on_start(self) -> None:  # noqa: B027 - an optional hook
        """Prepare per-run state (called on the serving loop, before binding)."""

    async def _on_stop(self) -> None:  # noqa: B027 - an optional hook
        """Release per-run state (called before the listener closes)."""

    # --- lifecycle ---------------------------------------------------------------------------------------------

    async def start(self) -> Self:
        """Bind and serve on the current event loop; :attr:`port` becomes the bound port."""
        if self._runner is not None:
            raise RuntimeError(f"{type(self).__name__} is already running on {self.url}")
        await self._on_start()
        app = web.Application(client_max_size=self.client_max_size, middlewares=[_client_gone])
        self._routes(app)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=self.shutdown_timeout)
        await runner.setup()
        try:
            await web.TCPSite(runner, self.host, self._requested_port).start()
        except OSError as exc:
            await runner.cleanup()
            raise OSError(
                exc.errno,
                f"{type(self).__name__} cannot listen on {self.host}:{self._requested_port}: "
                f"{exc.strerror}; pass port=0 for a free port",
            ) from exc
        self._runner = runner
        self._bound_port = int(runner.addresses[0][1])
        return self

    async def stop(self) -> None:
        """Stop serving and close open connections (idempotent)."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        try:
            await self._on_stop()
        finally:
            await runner.cleanup()
            self._bound_port = None
            self.activity.notify()  # waiters re-check and see the server is gone

    async def close(self) -> None:
        """The same as :meth:`stop`."""
        await self.stop()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    def start_in_thread(self) -> Self:
        """Serve from a background thread with its own event loop (for sync clients in a sync test)."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name=f"{type(self).__name__}-loop", daemon=True)
        thread.start()
        self._thread_loop, self._thread = loop, thread
        try:
            asyncio.run_coroutine_threadsafe(self.start(), loop).result(timeout=10)
        except BaseException:
            self._end_thread()
            raise
        return self

    def stop_thread(self) -> None:
        """Stop a server started with :meth:`start_in_thread` and end its thread."""
        if self._thread_loop is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self.stop(), self._thread_loop).result(timeout=10)
        finally:
            self._end_thread()

    def _end_thread(self) -> None:
        loop, thread = self._thread_loop, self._thread
        self._thread_loop = self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()

    def __enter__(self) -> Self:
        return self.start_in_thread()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop_thread()

    # --- where it listens --------------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._runner is not None

    @property
    def port(self) -> int:
        """The bound port (the requested one before start, when one was given)."""
        if self._bound_port is not None:
            return self._bound_port
        if self._requested_port:
            return self._requested_port
        raise RuntimeError(f"{type(self).__name__} is not started; use 'async with' or 'with' first")

    @property
    def url(self) -> str:
        """``http://<host>:<port>`` (no trailing slash)."""
        return f"http://{self.host}:{self.port}"
