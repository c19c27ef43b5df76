"""A real bot process (``python -m bots.telegram_assistant``) SIGKILLed at each named point of an approval, then
started again on the same store (a SQLite file, a PostgreSQL database): the new process takes over at once what
the dead one left, without waiting for its lease or hand-off to run out or for a later sweep.

Both processes run with a lease, a hand-off and a sweep interval of an hour (``MILPA_APPROVAL_LEASE``,
``MILPA_APPROVAL_HANDOFF``, ``MILPA_SWEEP_INTERVAL``): what the person sees within the test's wait can only come
from the restarted process taking over as it starts, whatever the speed of the machine. After the restart the
person sees: the card the dead process never (fully) sent; a run it interrupted shown as "May not have run" with
Run again / Mark as done; the result it never delivered. No record is left ``executing`` or ``approved``. The
test prints the time from the restart (the process spawned) and from the process's first Bot API call (it is up)
to what the person sees, and a table of every kill point (figures, not asserted).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from asyncio.subprocess import Process
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from milpa_chat.store import open_store
from milpa_chat.testing import BotApiServer, TelegramMessage

from .stores import postgres_dsn, store_url
from .telegram_support import ALICE, APPROVERS, IDENTITIES_TOML, MARIA, label
from .test_telegram_restart import ROOT

#: Seconds a step may take before the test calls it a hang (a take-over is seconds on an idle machine).
WAIT = 60.0
#: The lease, the hand-off and the sweep interval of both processes: far longer than the test waits, so nothing
#: runs out and no second sweep comes while it waits.
AN_HOUR = "3600"
POINTS = [
    "approval.opened",
    "card.sent",
    "decision.claimed",
    "tool.started",
    "tool.returned",
    "run.finished",
    "report.sent",
]
ROWS: list[tuple[str, str, str, float, float, str]] = []
__all__ = ["postgres_dsn", "store_url"]  # fixtures


@pytest.fixture(scope="module", autouse=True)
def _table() -> Iterator[None]:
    yield
    if ROWS:
        print("\nkill point        backend   seen after the restart                      from spawn  from up  record")
        for point, backend, seen, spawn, up, state in ROWS:
            print(f"{point:<17} {backend:<9} {seen:<43} {spawn:8.2f} s {up:6.2f} s  {state}")


async def stored(url: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    store = open_store(url)
    try:
        approvals = [{"id": r.key, **r.value} for r in await store.scan("approvals")]
        payments = [e.value for e in await store.read("payments")]
    finally:
        await store.close()
    return approvals, payments


async def cards_recorded(url: str, count: int) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        approvals, _ = await stored(url)
        if approvals and sum(1 for c in approvals[0]["cards"] if c.get("message_id")) >= count:
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"the bot did not record {count} approval messages in {WAIT} s")


def newest(server: BotApiServer, chat: int, *, words: tuple[str, ...], after: int = 0) -> TelegramMessage | None:
    """The newest message in ``chat`` (sent after message ``after``) with a button for each of ``words``."""
    for message in reversed(server.messages(chat)):
        if message.message_id > after and all(any(w in b for b in message.button_labels) for w in words):
            return message
    return None


@asynccontextmanager
async def restarted(env: dict[str, str], log: Path) -> AsyncIterator[Process]:
    """The bot started again, yielded at once (the time to take over counts from here)."""
    with log.open("ab") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bots.telegram_assistant", cwd=ROOT, env=env, stdout=out, stderr=out
        )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def until(what: Any) -> None:
    deadline = time.monotonic() + WAIT
    while not await what():
        assert time.monotonic() < deadline, f"the restarted process did not take over ({WAIT} s: a hang)"
        await asyncio.sleep(0.05)


@pytest.fixture
async def server() -> AsyncIterator[BotApiServer]:
    async with BotApiServer() as api:
        api.group(APPROVERS, "Approvers", members=[ALICE, MARIA])
        yield api


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS)
async def test_a_restart_takes_over_at_once_what_a_killed_process_left(
    server: BotApiServer, store_url: str, tmp_path: Path, point: str
) -> None:
    ids, log = tmp_path / "identities.toml", tmp_path / "bot.log"
    ids.write_text(IDENTITIES_TOML)
    env = {
        **os.environ,
        "TELEGRAM_TOKEN": server.token,
        "TELEGRAM_BASE_URL": server.base_url,
        "MILPA_STORE": store_url,
        "MILPA_IDENTITIES": str(ids),
    }
    env.pop("MILPA_FAILPOINTS", None)
    for key in ("MILPA_SWEEP_INTERVAL", "MILPA_APPROVAL_LEASE", "MILPA_APPROVAL_HANDOFF"):
        env[key] = AN_HOUR
    during_request = point in ("approval.opened", "card.sent")
    async with restarted({**env, "MILPA_FAILPOINTS": point}, log) as first:
        await server.send_message(ALICE.id, ALICE, "/send_payment ACME 42")  # kept for the bot until it polls
        if not during_request:
            card = await server.wait_for_message(APPROVERS, timeout=WAIT)
            await cards_recorded(store_url, 2)
            await server.tap_button(card, label(card, "Approve"), MARIA)
        assert await asyncio.wait_for(first.wait(), WAIT) == -signal.SIGKILL
    (left,), paid = await stored(store_url)
    assert len(paid) <= 1
    last_seen = max((m.message_id for m in server.messages(APPROVERS)), default=0)

    started = time.monotonic()
    async with restarted(env, log):
        seen = await _taken_over(server, store_url, point, last_seen)
        elapsed = time.monotonic() - started
        (approval,), paid = await stored(store_url)
        up = min(c.at for c in server.calls if c.at >= started and c.method == "getMe") - started

    backend = "sqlite" if "://" not in store_url else "postgres"
    ROWS.append((point, backend, seen, elapsed, elapsed - up, approval["state"]))
    print(
        f"killed at {point} (left {left['state']}): {seen} {elapsed:.2f} s after the restart (the process "
        f"called the Bot API {up:.2f} s after it); record {approval['state']}, {len(paid)} payment(s)"
    )
    assert approval["state"] not in ("executing", "approved"), approval["state"]
    assert len(paid) <= 1


async def _taken_over(server: BotApiServer, url: str, point: str, last_seen: int) -> str:
    """Wait for what the person must see after the restart; returns what it was."""
    if point in ("approval.opened", "card.sent"):  # the card the dead process never (fully) sent
        await until(lambda: _async(newest(server, APPROVERS, words=("Approve",), after=last_seen) is not None))
        return "the approvers' card, sent anew"
    if point in ("decision.claimed", "tool.started", "tool.returned"):  # the run it interrupted

        async def uncertain() -> bool:
            card = newest(server, APPROVERS, words=("Run again", "Mark as done"))
            return card is not None and "May not have run" in (card.text or "")

        await until(uncertain)
        (approval,), _ = await stored(url)
        assert approval["state"] == "effect_uncertain"
        return "May not have run, Run again / Mark as done"

    async def delivered() -> bool:  # the result it recorded and never delivered
        (approval,), _ = await stored(url)
        return (
            approval["state"] == "executed"
            and approval.get("reported") is not None
            and all(c.get("shown", "").startswith("executed") for c in approval["cards"])
        )

    await until(delivered)
    assert any("Paid 42.00" in (m.text or "") for m in server.messages(ALICE.id))
    return "the result, on every card and to Alice"


async def _async(value: bool) -> bool:
    return value
