"""One upstream MCP server, reached through the official SDK's ``ClientSession``.

:class:`UpstreamClient` keeps one session open (a stdio subprocess, or a streamable HTTP connection
with the file's headers) in a task of its own, because the SDK's transports are context managers that
must be entered and left in one task. A connection that fails — the process died, the server went
away — is dropped, and the next call connects again. Every failure reaches the caller as an
:class:`UpstreamError` whose text says which upstream, what happened and what to do; an upstream's
own ``isError`` result is not a failure here (it is the tool's answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from milpa_chat.mcp.proxy_config import UpstreamConfig

__all__ = ["UpstreamClient", "UpstreamError"]

log = logging.getLogger("milpa_chat.mcp.proxy")

Changed = Callable[[], Coroutine[Any, Any, None]]


class UpstreamError(Exception):
    """The upstream could not be reached or did not answer; ``sent`` says whether the request may have
    reached it (then its effect is unknown)."""

    def __init__(self, message: str, *, sent: bool = False) -> None:
        super().__init__(message)
        self.sent = sent


class UpstreamClient:
    """A lazily connected, self-healing client of the upstream ``config`` describes.

    ``on_tools_changed``: awaited (in the background) when the upstream says ``tools/list_changed``.
    ``errlog``: where a stdio upstream's stderr goes (this process's stderr by default).
    """

    def __init__(
        self, config: UpstreamConfig, *, on_tools_changed: Changed | None = None, errlog: TextIO | None = None
    ) -> None:
        self.config = config
        self.name = config.name
        self.on_tools_changed = on_tools_changed
        self.errlog = errlog
        self._session: Any = None
        self._closing: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._background: set[asyncio.Task[None]] = set()

    @property
    def where(self) -> str:
        c = self.config
        return "`" + " ".join([c.command, *c.args]) + "`" if c.command is not None else str(c.url)

    # ------------------------------------------------------------------ the connection
    async def session(self) -> Any:
        """The open ``ClientSession``, connecting first when there is none (or the last one failed)."""
        if self._open():
            return self._session
        async with self._lock:
            if self._open():
                return self._session
            await self._drop()
            ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._closing = asyncio.Event()
            self._task = asyncio.create_task(self._hold(ready, self._closing), name=f"mcp-upstream-{self.name}")
            try:
                self._session = await asyncio.wait_for(asyncio.shield(ready), self.config.connect_timeout)
            except TimeoutError:
                await self._drop()
                raise UpstreamError(
                    f"upstream {self.name!r} ({self.where}) did not finish connecting within "
                    f"{self.config.connect_timeout:g} s; check that it starts on its own, or "
                    f"raise connect_timeout in the proxy file"
                ) from None
            except UpstreamError:
                await self._drop()
                raise
            return self._session

    def _open(self) -> bool:
        """Whether the session is up: its task runs and the SDK has not seen its transport end (a stdio
        upstream that died while idle), so a request sent now can leave. The SDK keeps that flag on its
        dispatcher only (no public one), so it is read defensively: unknown counts as open."""
        if self._session is None or self._task is None or self._task.done():
            return False
        return not bool(getattr(getattr(self._session, "_dispatcher", None), "_closed", False))

    async def _hold(self, ready: asyncio.Future[Any], closing: asyncio.Event) -> None:
        from mcp import ClientSession

        try:
            async with (
                self._transport() as (read, write),
                ClientSession(read, write, message_handler=self._on_message) as session,
            ):
                await session.initialize()
                ready.set_result(session)
                await closing.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(
                    UpstreamError(
                        f"upstream {self.name!r} ({self.where}) could not be reached: {_reason(exc)}; check the "
                        f"[[upstream]] entry named {self.name!r} (command or url, env, headers) and that it runs"
                    )
                )
            else:
                log.warning("upstream %r: the connection ended: %s", self.name, _reason(exc))
        finally:
            if not ready.done():
                ready.set_exception(
                    UpstreamError(f"upstream {self.name!r} ({self.where}) closed before it answered the MCP handshake")
                )

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        c = self.config
        if c.command is not None:
            from mcp import StdioServerParameters, stdio_client

            params = StdioServerParameters(command=c.command, args=list(c.args), env=dict(c.env) or None, cwd=c.cwd)
            async with stdio_client(params, errlog=self.errlog or sys.stderr) as streams:
                yield streams
            return
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        async with (
            httpx2.AsyncClient(headers=dict(c.headers), timeout=c.timeout + 5) as http,
            streamable_http_client(str(c.url), http_client=http) as streams,
        ):
            yield streams

    async def _on_message(self, message: Any) -> None:
        import mcp.types as types

        if isinstance(message, types.ToolListChangedNotification) and self.on_tools_changed is not None:
            # never block the session's receive loop
            task: asyncio.Task[None] = asyncio.create_task(self.on_tools_changed())
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _drop(self) -> None:
        task, self._task, self._session = self._task, None, None
        if self._closing is not None:
            self._closing.set()
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(task, 5)
            except (TimeoutError, Exception):  # a transport that will not close cleanly is left to die
                task.cancel()

    async def close(self) -> None:
        """Close the connection (a stdio upstream's process ends with it)."""
        async with self._lock:
            await self._drop()

    # ------------------------------------------------------------------ requests
    async def request(self, what: str, send: Callable[[Any], Awaitable[Any]]) -> Any:
        """``send(session)`` on the open session; connection failures and timeouts become :class:`UpstreamError`."""
        from mcp.shared.exceptions import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        session = await self.session()
        limit = self.config.timeout
        try:
            return await asyncio.wait_for(send(session), limit + 1)
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise self._timed_out(what, limit) from None
            if exc.code == CONNECTION_CLOSED:
                await self._forget(session)
                raise UpstreamError(
                    f"upstream {self.name!r} closed the connection during {what}; it may or may not "
                    f"have taken effect. The proxy connects again on the next call; check the "
                    f"upstream's own log before repeating anything",
                    sent=True,
                ) from None
            raise UpstreamError(f"upstream {self.name!r} refused {what}: {exc.message}", sent=True) from None
        except TimeoutError:
            raise self._timed_out(what, limit) from None
        except (OSError, EOFError, asyncio.IncompleteReadError, RuntimeError) as exc:
            await self._forget(session)
            raise UpstreamError(
                f"upstream {self.name!r} failed during {what} ({_reason(exc)}); it may or may not "
                f"have taken effect. The proxy connects again on the next call",
                sent=True,
            ) from None

    def _timed_out(self, what: str, limit: float) -> UpstreamError:
        return UpstreamError(
            f"upstream {self.name!r} did not answer {what} within {limit:g} s; it may still be "
            f"running it. Check the upstream before repeating it, or raise timeout for "
            f"{self.name!r} in the proxy file",
            sent=True,
        )

    async def _forget(self, session: Any) -> None:
        async with self._lock:
            if self._session is session:
                await self._drop()

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """``tools/call`` on the upstream: its ``CallToolResult`` (``isError`` included)."""
        limit = self.config.timeout
        return await self.request(
            f"tools/call {name}", lambda s: s.call_tool(name, arguments, read_timeout_seconds=limit)
        )

    async def list_tools(self) -> list[Any]:
        """Every tool the upstream lists (all pages)."""
        import mcp.types as types

        async def listing(session: Any) -> list[Any]:
            tools, cursor = [], None
            while True:
                page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
                tools += page.tools
                cursor = page.next_cursor
                if not cursor:
                    return tools

        found: list[Any] = await self.request("tools/list", listing)
        return found


def _reason(exc: BaseException) -> str:
    inner = exc
    while isinstance(inner, BaseExceptionGroup) and inner.exceptions:
        inner = inner.exceptions[0]
    text = str(inner) or type(inner).__name__
    return text if len(text) < 300 else text[:300] + "..."
