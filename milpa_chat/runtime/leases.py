"""Who holds a lease or a hand-off: a process named so that a process on the same host can tell at once
whether it is still alive.

A holder is ``host:pid:start``: the host name, the process id and the process's start time. On Linux the
start time is the boot's id (first 8 characters of ``/proc/sys/kernel/random/boot_id``) and field 22 of
``/proc/<pid>/stat`` (clock ticks since boot), so a pid reused by another process, or by the same program
after a restart, never passes for the holder. Elsewhere it is the time this module was imported
(``t<milliseconds>``): a holder on this host is then dead only when its pid is gone.

A holder on another host is never judged here: its lease simply ends (leases are short and renewed while
the run lives).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from milpa_chat.runtime._alarms import alarms

if TYPE_CHECKING:
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.store.base import Store

__all__ = ["HOST", "holder_dead", "holding", "left_by_dead", "process_start", "this_holder"]

log = logging.getLogger("milpa_chat.approvals")

HOST = socket.gethostname()
_IMPORTED = time.time()


def _boot() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
    except OSError:
        return ""


_BOOT = _boot()


def process_start(pid: int) -> str | None:
    """``<boot>.<ticks>``: when process ``pid`` started (``None`` when it does not exist or ``/proc`` is not
    there). Field 22 of ``/proc/<pid>/stat``, counted after the command name (which may hold spaces)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    fields = stat.rpartition(")")[2].split()
    if len(fields) < 20 or not _BOOT:
        return None
    return f"{_BOOT}.{fields[19]}"  # fields[0] is field 3 (state)


def _own_start() -> str:
    return process_start(os.getpid()) or f"t{int(_IMPORTED * 1000)}"


_STARTS: dict[int, str] = {}


def this_holder() -> str:
    """This process as a lease holder: ``host:pid:start`` (computed once per process, forks included)."""
    pid = os.getpid()
    if pid not in _STARTS:
        _STARTS[pid] = _own_start()
    return f"{HOST}:{pid}:{_STARTS[pid]}"


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    except OSError:
        return True
    return True


def holder_dead(holder: object) -> bool:
    """Whether ``holder`` (a :func:`this_holder` name) is a process on this host that is no longer alive:
    its pid is gone, or belongs to a process that started at another time. ``False`` when unsure (another
    host, a name of another form)."""
    if not isinstance(holder, str):
        return False
    host, _, rest = holder.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != HOST or not pid_text.isdigit() or not start:
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return start != this_holder().rpartition(":")[2]  # an earlier process that had this pid
    if start.startswith("t") or "." not in start:  # a start time nobody can read back: only a gone pid is dead
        return not _pid_exists(pid)
    now = process_start(pid)
    if now is None:
        return not _pid_exists(pid)
    return now != start


async def left_by_dead(store: Store, collection: str, before: float, limit: int) -> list[Approval]:
    """The approvals due before ``before`` (the due index) whose lease or hand-off a dead process on this
    host holds."""
    from milpa_chat.runtime.approval import Approval

    found = []
    for rec in await store.due(collection, before=before, limit=limit):
        lease = rec.value.get("lease") or {}
        if holder_dead(lease.get("holder")) or holder_dead(rec.value.get("writer")):
            found.append(Approval(rec.key, rec.value, rec.version, rec.due))
    return found


class Renews(Protocol):
    """What a keeper needs of the desk: how long a lease lasts and a way to renew one."""

    lease: float

    async def renew(self, claimed: Approval) -> bool: ...


def holding(desk: Renews, claimed: Approval) -> contextlib.AbstractAsyncContextManager[None]:
    """:meth:`ApprovalDesk.holding`: a keeper renews ``claimed``'s lease every third of the lease, started
    only once the run outlives a third of the lease (most runs end long before: no write for them)."""
    return _Holding(desk, claimed)


class _Holding:
    """What :func:`holding` returns (a class, not a generator-based context manager: a run of every approval
    enters one). The keeper's start is an alarm of the loop's shared timer (no timer handle made and cancelled
    per run); the keeper runs in the context the run entered it in, as a timer of its own would have."""

    __slots__ = ("alarm", "claimed", "desk", "keeper")

    def __init__(self, desk: Renews, claimed: Approval) -> None:
        self.desk = desk
        self.claimed = claimed
        self.keeper: list[asyncio.Task[None]] = []
        self.alarm: int | None = None

    async def __aenter__(self) -> None:
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        self.alarm = alarms().set(
            self.desk.lease / 3, lambda: self.keeper.append(loop.create_task(self._keep(), context=context))
        )

    async def __aexit__(self, *exc_info: object) -> None:
        if self.alarm is not None:
            alarms().clear(self.alarm)
        for task in self.keeper:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _keep(self) -> None:
        desk, claimed = self.desk, self.claimed
        while True:
            try:
                if not await desk.renew(claimed):
                    log.warning(
                        "approval %s: the lease of this run was ended elsewhere (it ran out while it could "
                        "not be renewed); its result still settles the record",
                        claimed.id,
                    )
                    return
                wait = desk.lease / 3
            except Exception as exc:  # the database away a moment: the run goes on, so does its lease
                log.warning("approval %s: lease not renewed yet, trying again (%s)", claimed.id, exc)
                wait = min(1.0, desk.lease / 10)
            await asyncio.sleep(wait)
