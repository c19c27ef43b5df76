"""``@tool(..., blocking=False)``: a cheap ``def`` tool runs on the event loop; by default a ``def`` tool runs
on a worker thread (so a slow one never stalls the loop), and the declaration refuses what cannot hold."""

from __future__ import annotations

import asyncio
import threading

import pytest

from milpa_chat import ToolRegistry, tool
from milpa_chat.errors import DeclarationError
from milpa_chat.runtime.context import ToolContext
from milpa_chat.store import MemoryStore


class Threads:
    """Each tool reports the thread it ran on."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    @tool("on_loop", "Where a cheap def tool runs", mutating=False, blocking=False)
    def on_loop(self) -> str:
        self.seen["on_loop"] = threading.current_thread().name
        return "ok"

    @tool("default", "Where a def tool runs by default", mutating=False)
    def default(self) -> str:
        self.seen["default"] = threading.current_thread().name
        return "ok"

    @tool("on_loop_writes", "A cheap mutating def tool on the loop", mutating=True, confirm=True, blocking=False)
    def on_loop_writes(self, n: int) -> dict[str, int]:
        self.seen["on_loop_writes"] = threading.current_thread().name
        return {"n": n}


def test_blocking_false_runs_on_the_loop_thread_and_the_default_does_not() -> None:
    tools = Threads()
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(tools)

    async def main() -> str:
        assert (await registry.call("on_loop", {})).success
        assert (await registry.call("default", {})).success
        return threading.current_thread().name

    loop_thread = asyncio.run(main())
    assert tools.seen["on_loop"] == loop_thread
    assert tools.seen["default"] != loop_thread
    on_loop, default = registry.get("on_loop"), registry.get("default")
    assert on_loop is not None and default is not None
    assert on_loop.blocking is False and default.blocking is True


def test_a_confirmed_call_on_the_loop_still_runs_once() -> None:
    """The confirm gate holds for a tool on the loop: the first call only asks, the token runs it once,
    and the same token again is refused."""
    tools = Threads()
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(tools)
    ctx = ToolContext.cli()

    async def main() -> str:
        asked = await registry.call("on_loop_writes", {"n": 3}, ctx)
        assert asked.requires_confirmation() and "on_loop_writes" not in tools.seen
        token = asked.confirm_token
        ran = await registry.call("on_loop_writes", {"n": 3, "confirm_token": token}, ctx)
        assert ran.success and ran.data == {"n": 3}
        again = await registry.call("on_loop_writes", {"n": 3, "confirm_token": token}, ctx)
        assert not again.success
        return threading.current_thread().name

    assert tools.seen.get("on_loop_writes") is None
    loop_thread = asyncio.run(main())
    assert tools.seen["on_loop_writes"] == loop_thread


def test_blocking_false_on_an_async_tool_is_refused_with_the_fix() -> None:
    with pytest.raises(DeclarationError) as err:

        @tool("fetch", "An async tool", blocking=False)
        async def fetch() -> str:
            return "x"

    message = str(err.value)
    assert "'fetch'" in message and "async def" in message and "drop blocking=False" in message


@pytest.mark.parametrize("value", ["no", 0, None])
def test_blocking_takes_a_bool(value: object) -> None:
    with pytest.raises(DeclarationError, match=r"blocking= must be True or False"):

        @tool("cheap", "A def tool", blocking=value)  # type: ignore[call-overload]
        def cheap() -> str:
            return "x"
