"""The hop of a blocking call to a worker thread and back, for ``def`` tools (and the stores' blocking work).

:func:`to_worker` runs ``fn(*args)`` on a worker thread and returns an :class:`asyncio.Future` of the running
loop for its result, like :func:`asyncio.to_thread` does for a coroutine, for less CPU: the job goes to a
persistent worker through a :class:`queue.SimpleQueue`, and the worker hands the answer back with one
``loop.call_soon_threadsafe``. No :class:`concurrent.futures.Future`, no callbacks chained both ways, no
semaphore.

What stays as with :func:`asyncio.to_thread`:

* the function runs in a copy of the caller's :mod:`contextvars` context;
* what it raises is raised to the awaiting caller, with its traceback (a ``StopIteration``, which no future
  can carry, arrives as a ``RuntimeError`` caused by it, where ``to_thread`` left the caller waiting forever);
* cancelling the awaiting task does not stop a function that has started (its answer is dropped); one that
  has not started yet is not run;
* calls run in parallel, up to a bound (the default executor's, ``min(32, CPUs + 4)``, for tools); a thread is
  started only when none is idle, and a started thread stays for the next call;
* at interpreter exit, the calls already handed over are finished first; idle threads never hold up the exit
  (they are daemons) and a forked child starts its own threads.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import os
import queue
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar, TypeVarTuple, Unpack

__all__ = ["Workers", "to_worker"]

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

#: A job: the loop's ``call_soon_threadsafe``, the loop's future, the context's ``run``, the function, its args.
_Job = tuple[Callable[..., Any], "asyncio.Future[Any]", Callable[..., Any], Callable[..., Any], tuple[Any, ...]]

_pools: weakref.WeakSet[Workers] = weakref.WeakSet()


class Workers:
    """Up to ``limit`` daemon threads named ``name-N`` running the jobs :meth:`run` hands them, in order."""

    def __init__(self, limit: int, name: str) -> None:
        if limit < 1:
            raise ValueError(f"Workers needs a limit of at least 1 thread, not {limit}")
        self.limit = limit
        self.name = name
        self._reset()
        _pools.add(self)

    def _reset(self) -> None:
        """Fresh state: at creation, and in a forked child (whose copies of the parent's threads do not run)."""
        finalizer: weakref.finalize[Any, Any] | None = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer.detach()
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        #: One token for each finished job: popped by a caller whose job an idle thread then takes. A thread
        #: started for a job puts none before it: so there are as many tokens as idle threads (more only when
        #: every thread of the bound is busy and jobs wait, when no thread could be started anyway).
        self._idle: deque[None] = deque()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False
        #: Threads of a pool dropped without close() end once their jobs are done, as an executor's do.
        self._finalizer = weakref.finalize(self, _release, self._jobs, self._threads)
        self._finalizer.atexit = False

    def run(self, fn: Callable[[Unpack[Ts]], T], /, *args: *Ts) -> asyncio.Future[T]:
        """Run ``fn(*args)`` on a worker thread in a copy of the current context; a future of the running loop
        for its result. Raises ``RuntimeError`` when called without a running loop, or after :meth:`close`."""
        if self._closed:
            raise RuntimeError(f"the {self.name} worker threads are shut down; no more calls can be made")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put((loop.call_soon_threadsafe, future, contextvars.copy_context().run, fn, args))
        try:
            self._idle.pop()
        except IndexError:
            self._grow()
        return future

    def submit(self, fn: Callable[[Unpack[Ts]], T], /, *args: *Ts) -> concurrent.futures.Future[T]:
        """:meth:`run` for code outside the event loop: the result comes in a :class:`concurrent.futures.Future`
        (``asyncio.wrap_future`` awaits it). Raises ``RuntimeError`` after :meth:`close`."""
        if self._closed:
            raise RuntimeError(f"the {self.name} worker threads are shut down; no more calls can be made")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._jobs.put((_at_once, future, contextvars.copy_context().run, fn, args))  # type: ignore[arg-type]
        try:
            self._idle.pop()
        except IndexError:
            self._grow()
        return future

    def close(self, wait: bool = True) -> None:
        """No more calls; the threads finish the jobs handed over, then end (``wait``: this returns after them,
        and a call that raced with the close and came after them fails with ``RuntimeError``)."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        for _ in threads:
            self._jobs.put(None)
        if not wait:
            return
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join()
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                return
            if job is not None:
                error = RuntimeError(f"the {self.name} worker threads were shut down before this call ran")
                with contextlib.suppress(RuntimeError):  # (its loop is closed)
                    job[0](_fail, job[1], error)

    def _grow(self) -> None:
        with self._lock:
            if self._closed or len(self._threads) >= self.limit:
                return  # every thread is busy: the job waits for the first one done
            thread = threading.Thread(
                target=_work, args=(self._jobs, self._idle), name=f"{self.name}-{len(self._threads)}", daemon=True
            )
            thread.start()
            self._threads.append(thread)


def _work(jobs: queue.SimpleQueue[_Job | None], idle: deque[None]) -> None:
    take, ready = jobs.get, idle.append
    while (job := take()) is not None:
        call_soon_threadsafe, future, run, fn, args = job
        del job
        if not future.cancelled():  # (a caller cancelled before the job started: it is not run, as to_thread)
            settle: Callable[[asyncio.Future[Any], Any], None]
            try:
                outcome = run(fn, *args)
                settle = _succeed
            except BaseException as exc:
                outcome, settle = exc, _fail
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting for this answer
                call_soon_threadsafe(settle, future, outcome)
            del outcome  # (an exception's traceback holds this frame: no cycle, no result kept while idle)
        del call_soon_threadsafe, future, run, fn, args
        ready(None)


def _release(jobs: queue.SimpleQueue[_Job | None], threads: list[threading.Thread]) -> None:
    for _ in threads:
        jobs.put(None)


def _at_once(settle: Callable[[Any, Any], None], future: concurrent.futures.Future[Any], outcome: Any) -> None:
    """Settle a :meth:`Workers.submit` future on the worker itself (unless it was cancelled meanwhile)."""
    with contextlib.suppress(concurrent.futures.InvalidStateError):
        settle(future, outcome)


def _succeed(future: asyncio.Future[Any], value: Any) -> None:
    if not future.cancelled():
        future.set_result(value)


def _fail(future: asyncio.Future[Any], exc: BaseException) -> None:
    if future.cancelled():
        return
    if isinstance(exc, StopIteration):  # a future cannot carry it (it would end the awaiting coroutine)
        error = RuntimeError(f"the function raised StopIteration: {exc!r}")
        error.__cause__ = exc
        exc = error
    future.set_exception(exc)


_tools = Workers(min(32, (os.cpu_count() or 1) + 4), "milpa-worker")

#: ``await to_worker(fn, *args)``: ``fn(*args)`` on one of the worker threads shared by the ``def`` tools.
to_worker = _tools.run


def _at_exit() -> None:
    """Finish the jobs handed over before the interpreter goes (as the executors of ``to_thread`` do)."""
    for pool in list(_pools):
        pool.close(wait=True)


def _after_fork() -> None:
    for pool in list(_pools):
        pool._reset()


threading._register_atexit(_at_exit)  # type: ignore[attr-defined]
if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_after_fork)
