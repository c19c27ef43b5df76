"""A ``def`` tool runs on a worker thread: what the caller's code sees there, what its failure looks like, that
several run at once, that a cancelled caller leaves a started tool to finish, and that the threads serve one
event loop after another, a forked child and an ending interpreter."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import traceback
from pathlib import Path

import pytest

from milpa_chat import ToolRegistry, tool
from milpa_chat.errors import ToolError
from milpa_chat.runtime.result import ErrorCode
from milpa_chat.store import MemoryStore
from milpa_chat.store._hop import Workers, to_worker

REQUEST_TAG: contextvars.ContextVar[str] = contextvars.ContextVar("request_tag", default="unset")
GUARD = 30  # seconds a test waits for what must happen before it calls the run broken (never reached when it works)


class Blocking:
    """``def`` tools, each run on a worker thread."""

    def __init__(self) -> None:
        self.barrier = threading.Barrier(2, timeout=GUARD)
        self.started = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()
        self.threads: list[str] = []

    @tool("whose_request", "The request tag the caller set", mutating=False)
    def whose_request(self) -> str:
        self.threads.append(threading.current_thread().name)
        return REQUEST_TAG.get()

    @tool("refuse", "Refuses with a tool error", mutating=False)
    def refuse(self) -> str:
        raise ToolError("no such note: 7", code=ErrorCode.NOT_FOUND, data={"note_id": 7})

    @tool("crash", "Fails with an unexpected error", mutating=False)
    def crash(self) -> str:
        raise KeyError("shelf 9")

    @tool("runs_dry", "Raises StopIteration (an exhausted iterator's next())", mutating=False)
    def runs_dry(self) -> str:
        return str(next(iter(())))

    @tool("meet", "Waits at a barrier for a second tool to arrive", mutating=False)
    def meet(self, who: str) -> str:
        self.barrier.wait()  # both pass only when both run at the same time
        return who

    @tool("slow_write", "A write that takes a while", mutating=True)
    def slow_write(self) -> str:
        self.started.set()
        assert self.release.wait(GUARD)
        self.finished.set()
        return "written"


def _registry(tools: Blocking) -> ToolRegistry:
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(tools)
    return registry


async def test_a_def_tool_sees_the_callers_context_variables() -> None:
    tools = Blocking()
    registry = _registry(tools)
    REQUEST_TAG.set("req-42")
    result = await registry.call("whose_request", {})
    assert result.success and result.data == "req-42"
    assert tools.threads and tools.threads[0] != threading.current_thread().name


async def test_a_tool_error_raised_on_the_thread_reaches_the_result() -> None:
    result = await _registry(Blocking()).call("refuse", {})
    assert not result.success
    assert result.code == ErrorCode.NOT_FOUND and result.error == "no such note: 7"
    assert result.data == {"note_id": 7}


async def test_an_unexpected_error_is_logged_with_its_type_message_and_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="milpa_chat.registry")
    result = await _registry(Blocking()).call("crash", {})
    assert not result.success and result.code == ErrorCode.INTERNAL_ERROR
    [record] = [r for r in caplog.records if r.name == "milpa_chat.registry"]
    assert record.exc_info is not None
    kind, exc, tb = record.exc_info
    assert kind is KeyError and str(exc) == "'shelf 9'"
    assert "crash" in [frame.name for frame in traceback.extract_tb(tb)]  # the tool's own line is in it


async def test_a_tool_raising_stop_iteration_fails_instead_of_leaving_the_caller_waiting(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="milpa_chat.registry")
    result = await asyncio.wait_for(_registry(Blocking()).call("runs_dry", {}), GUARD)
    assert not result.success and result.code == ErrorCode.INTERNAL_ERROR
    [record] = [r for r in caplog.records if r.name == "milpa_chat.registry"]
    assert record.exc_info is not None
    assert record.exc_info[0] is RuntimeError and isinstance(record.exc_info[1].__cause__, StopIteration)


async def test_the_hop_raises_the_functions_own_exception_with_its_traceback() -> None:
    def parse(text: str) -> int:
        return int(text)

    with pytest.raises(ValueError, match="invalid literal for int") as raised:
        await to_worker(parse, "seven")
    assert "parse" in [frame.name for frame in traceback.extract_tb(raised.value.__traceback__)]


async def test_two_slow_def_tools_run_at_the_same_time() -> None:
    """Each tool waits at a two-party barrier: they can only both finish if both run at once."""
    tools = Blocking()
    registry = _registry(tools)
    first, second = await asyncio.gather(registry.call("meet", {"who": "a"}), registry.call("meet", {"who": "b"}))
    assert (first.success, first.data) == (True, "a")
    assert (second.success, second.data) == (True, "b")


async def test_more_calls_than_threads_all_run() -> None:
    """Calls beyond a pool's bound wait for a free thread instead of being lost."""
    pool = Workers(2, "test-bounded")
    try:
        squares = await asyncio.gather(*[pool.run(pow, n, 2) for n in range(50)])
        assert squares == [n * n for n in range(50)]
        assert len(pool._threads) <= 2
    finally:
        pool.close()


async def test_a_call_cancelled_before_a_thread_took_it_is_not_run() -> None:
    """As with ``asyncio.to_thread``: only a started function runs on after its caller is cancelled."""
    pool = Workers(1, "test-one")
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def busy() -> bool:
        started.set()
        return release.wait(GUARD)

    try:
        first = pool.run(busy)
        assert await asyncio.to_thread(started.wait, GUARD)
        waiting = pool.run(ran.append, "cancelled call")  # queued behind the busy one on the only thread
        waiting.cancel()
        release.set()
        assert await first
        await pool.run(ran.append, "next call")  # the thread went past the cancelled one
        assert ran == ["next call"]
    finally:
        pool.close()


async def test_a_cancelled_caller_does_not_stop_a_started_tool() -> None:
    tools = Blocking()
    registry = _registry(tools)
    call = asyncio.ensure_future(registry.call("slow_write", {}))
    assert await asyncio.to_thread(tools.started.wait, GUARD)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    tools.release.set()
    assert await asyncio.to_thread(tools.finished.wait, GUARD)  # the write ran to its end; its answer is dropped


def test_the_threads_serve_one_event_loop_after_another() -> None:
    tools = Blocking()
    registry = _registry(tools)

    async def ask(tag: str) -> object:
        REQUEST_TAG.set(tag)
        return (await registry.call("whose_request", {})).data

    assert asyncio.run(ask("first loop")) == "first loop"
    assert asyncio.run(ask("second loop")) == "second loop"


def test_an_answer_for_a_closed_loop_is_dropped_and_the_thread_serves_the_next() -> None:
    """A caller whose loop ended while its function ran: the function finishes, the next loop is served."""
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        assert release.wait(GUARD)
        finished.set()
        return "late"

    async def leave_early() -> None:
        future = to_worker(slow)
        assert await asyncio.to_thread(started.wait, GUARD)
        future.cancel()

    asyncio.run(leave_early())
    release.set()
    assert finished.wait(GUARD)
    assert asyncio.run(_add_on_worker(2, 3)) == 5


async def _add_on_worker(a: int, b: int) -> int:
    return await to_worker(int.__add__, a, b)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_runs_def_tools_on_threads_of_its_own() -> None:
    assert asyncio.run(_add_on_worker(1, 1)) == 2  # the parent has worker threads now
    pid = os.fork()
    if pid == 0:  # the child: a def tool through the registry, then leave at once with what it saw
        code = 1
        try:
            signal.alarm(GUARD)  # a child that hangs is killed (and so fails the test)
            REQUEST_TAG.set("child")
            answer = asyncio.run(_registry(Blocking()).call("whose_request", {}))
            code = 0 if answer.data == "child" else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_the_interpreter_exits_after_finishing_a_tool_its_caller_left(tmp_path: Path) -> None:
    """Idle worker threads never hold up the exit; a tool still running when the loop ends finishes first."""
    script = tmp_path / "leave.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio, threading, time
            from milpa_chat.store._hop import to_worker

            started, release = threading.Event(), threading.Event()

            def write():
                started.set()
                release.wait()
                time.sleep(0.3)  # still writing when the main thread reaches its end
                print("written", flush=True)

            async def main():
                print(await to_worker(int, "7"), flush=True)  # a thread that stays idle
                call = to_worker(write)
                await asyncio.to_thread(started.wait)
                call.cancel()

            asyncio.run(main())
            release.set()
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=GUARD, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["7", "written"]


def test_a_pool_serves_code_outside_a_loop_and_refuses_calls_once_closed() -> None:
    pool = Workers(2, "test-submit")
    assert pool.submit(pow, 3, 2).result(GUARD) == 9
    with pytest.raises(ZeroDivisionError):
        pool.submit(divmod, 1, 0).result(GUARD)
    pool.close()
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(pow, 3, 2)
    with pytest.raises(RuntimeError, match="shut down"):
        asyncio.run(_on(pool))


async def _on(pool: Workers) -> int:
    return await pool.run(pow, 2, 5)
