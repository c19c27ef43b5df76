"""Group commit for SQLite: one writer thread commits the writes waiting for it together.

A durable commit costs one sync of the WAL, whatever it holds. The writer thread takes every write
queued while the previous commit was syncing, runs each inside a savepoint of one ``BEGIN IMMEDIATE``
transaction (a write that fails is rolled back alone), commits once, and only then answers each
caller. So every write is still durable (or not) when its caller gets the answer, and concurrent
writers share a sync instead of queueing for one each.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["GroupCommit"]

log = logging.getLogger(__name__)
T = TypeVar("T")
MAX_BATCH = 64


@dataclass(slots=True)
class _Job:
    work: Callable[[], Any]
    durable: bool
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]


class GroupCommit:
    """The writer thread. ``begin(durable)`` opens the transaction on the thread's connection (with the
    sync level the batch needs) and returns it; each job's ``work()`` runs its statements inside it."""

    def __init__(
        self, name: str, begin: Callable[[bool], sqlite3.Connection], translate: Callable[[Exception], Exception | None]
    ) -> None:
        self._begin = begin
        self._translate = translate
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._stopped = False
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, work: Callable[[], T], *, durable: bool) -> asyncio.Future[T]:
        """Queue ``work``; the future gets its result once the batch holding it is committed.
        Raises ``RuntimeError`` once :meth:`stop` was called."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            if self._stopped:
                raise RuntimeError("the writer thread has stopped")
            self._jobs.put(_Job(work, durable, loop, future))
        return future

    def stop(self) -> None:
        """Finish the queued writes, then end the thread (blocking)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            self._jobs.put(None)
        self._thread.join()

    # ------------------------------------------------------------ the thread
    def _serve(self) -> None:
        while True:
            first = self._jobs.get()
            if first is None:
                return
            batch = [first]
            stop = False
            while len(batch) < MAX_BATCH:
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if job is None:
                    stop = True
                    break
                batch.append(job)
            self._commit(batch)
            if stop:
                return

    def _commit(self, batch: list[_Job]) -> None:
        outcomes: list[tuple[Any, BaseException | None]] = []
        conn: sqlite3.Connection | None = None
        try:
            conn = self._begin(any(job.durable for job in batch))
            for job in batch:
                try:
                    outcomes.append((job.work(), None))
                except Exception as exc:  # this write alone was rolled back (its savepoint)
                    outcomes.append((None, self._mapped(exc)))
            conn.execute("COMMIT")
        except Exception as exc:  # nothing of the batch was written
            if conn is not None and conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    log.debug("rollback after a failed batch failed", exc_info=True)
            failure = self._mapped(exc)
            outcomes = [(None, failure)] * len(batch)
        for job, (result, error) in zip(batch, outcomes, strict=True):
            try:
                job.loop.call_soon_threadsafe(_settle, job.future, result, error)
            except RuntimeError:  # the caller's loop is gone: nobody waits for this answer
                log.debug("a store write finished after its event loop closed")

    def _mapped(self, exc: Exception) -> BaseException:
        mapped = self._translate(exc)
        if mapped is not None:
            mapped.__cause__ = exc
            return mapped
        return exc


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # the caller was cancelled; the write happened anyway
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
