"""Run a coroutine to completion from synchronous code, with or without a running event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

_local = threading.local()
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _runner() -> asyncio.Runner:
    runner: asyncio.Runner | None = getattr(_local, "runner", None)
    if runner is None:
        runner = _local.runner = asyncio.Runner()
    return runner


def _worker_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="milpa-sync")
        return _pool


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` and return its result.

    Without a running loop in this thread, the coroutine runs on a loop kept for this thread.
    Inside a running loop (a Jupyter cell), it runs on a worker thread's loop and this thread
    waits for it: use ``await`` in notebooks when the call itself needs the notebook's loop
    (widgets waiting for a click).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _runner().run(coro)
    return _worker_pool().submit(lambda: _runner().run(coro)).result()
