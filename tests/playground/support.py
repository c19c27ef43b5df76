"""The playground served in the test's event loop (uvicorn on 127.0.0.1, a free port) with a client for its
endpoints, so a test can act through the page's HTTP API and then read the local servers' records directly."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import uvicorn

from milpa_chat.playground.app import Playground, create_app
from milpa_chat.playground.world import World
from milpa_chat.testing import eventually

WAIT = 15.0


@dataclass
class Served:
    url: str
    session: aiohttp.ClientSession
    play: Playground

    async def post(self, path: str, body: Any) -> tuple[int, dict[str, Any]]:
        data = body if isinstance(body, str | bytes) else None
        kwargs: dict[str, Any] = {"data": data} if data is not None else {"json": body}
        async with self.session.post(self.url + path, **kwargs) as resp:
            return resp.status, await resp.json()

    async def ok(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        status, data = await self.post(path, body)
        assert status == 200 and data["ok"], (path, body, status, data)
        return data

    async def get(self, path: str, **params: Any) -> Any:
        async with self.session.get(self.url + path, params=params) as resp:
            assert resp.status == 200, (path, resp.status, await resp.text())
            return await resp.json()

    async def until(self, check: Callable[[], Any], what: str) -> Any:
        """``check()``'s first truthy result, re-checked after each call the playground's servers record."""
        world = self.play.world
        return await eventually(check, WAIT, what=what, on=[world.telegram, world.slack_api])


@asynccontextmanager
async def served(**world: Any) -> AsyncIterator[Served]:
    """The whole playground (``World(**world)``), serving until the block ends."""
    world.setdefault("env", {})  # no agent unless the test configures one
    app = create_app(lambda: World(**world))
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    )
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            assert not task.done(), "the playground did not start"
            await asyncio.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
            yield Served(f"http://127.0.0.1:{port}", session, app.state.playground)
    finally:
        server.should_exit = True
        await task
