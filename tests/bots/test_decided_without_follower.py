"""Approvals decided where nothing can run them (the CLI, an MCP server, a notebook: a desk with no follower) are
run at once by the workers that can, each exactly once; not after the 30 s hand-off a worker keeps for itself.

Four Telegram workers (unmodified python-telegram-bot against the local Bot API server, each with its own
connection to one store: a SQLite file, a PostgreSQL database) sweep every 0.25 s; a desk of its own with no
follower decides 200 payment requests, as ``milpa-chat approvals approve`` does. Every store reads one
``ManualClock`` that never moves: no hand-off and no lease can run out, so every run the test sees was started
at once, whatever the speed of the machine. The test counts the payments (each exactly once) and prints how
long the decisions and the runs took.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest

from milpa_chat import ToolContext, ToolRegistry
from milpa_chat.bots import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.chat.inbound import ChatUser
from milpa_chat.examples import ExampleTools
from milpa_chat.runtime.approvals import ApprovalDesk
from milpa_chat.store import SqliteStore, Store
from milpa_chat.store.postgres import PostgresStore
from milpa_chat.testing import BotApiServer, ManualClock

from .stores import postgres_dsn, store_url
from .telegram_support import ALICE, APPROVERS, IDENTITIES, MARIA

__all__ = ["postgres_dsn", "store_url"]  # fixtures

REQUESTS = 200
WORKERS = 4
HANG = 120.0  # seconds after the last decision: the runs take a few on an idle machine


def open_store_at(url: str, clock: ManualClock) -> Store:
    """The store at ``url`` (as ``open_store`` opens it) reading ``clock``."""
    if "://" in url:
        return PostgresStore(url, clock=clock)
    return SqliteStore(url, clock=clock)


@pytest.mark.slow
async def test_decisions_where_nothing_runs_them_are_run_by_the_workers_at_once(store_url: str) -> None:
    async with BotApiServer() as server:
        server.group(APPROVERS, "Approvers", members=[ALICE, MARIA])
        server.private_chat(ALICE)
        workers, bots, sweepers = [], [], []
        clock = ManualClock()  # stands still: the 30 s hand-off never runs out
        for _ in range(WORKERS):
            store = open_store_at(store_url, clock)
            registry = ToolRegistry(store=store, approval_max_pending=None)
            registry.scan(ExampleTools(store))
            assistant = Assistant(registry, Identities.from_dict(IDENTITIES), name="Worker")
            bot = TelegramBot(assistant, server.token, server.base_url, sweep_interval=None, command_menu=False)
            await bot.application.initialize()
            workers.append(assistant)
            bots.append(bot)
        alice = workers[0].identities.context_for(  # as the Telegram adapter makes it for Alice's message
            "telegram", ChatUser(str(ALICE.id), ALICE.first_name, ALICE.username), str(ALICE.id)
        )
        ids = []
        for i in range(REQUESTS):  # asked in Alice's chat, on the first worker
            result = await workers[0].registry.call("send_payment", {"to": f"P{i:03d}", "amount": 1.0}, alice)
            assert result.success and result.data["requires_verification"], result
            ids.append(result.data["request_id"])

        cli_store = open_store_at(store_url, clock)
        cli = ApprovalDesk(cli_store)  # no follower: it cannot run the tool
        maria = ToolContext(
            principal=f"telegram:{MARIA.id}",
            channel="cli",
            scopes=("payments:approve",),
            extra={"user_name": MARIA.first_name},
        )
        try:
            sweepers = [asyncio.create_task(w.run_sweeper(0.25)) for w in workers]
            started = time.monotonic()
            for aid in ids:
                change = await cli.decide(aid, "approve", maria, via="cli")
                assert change.approval.state == "approved" and not change.claimed
            decided = time.monotonic()
            paid: Counter[str] = Counter()
            while len(paid) < REQUESTS and time.monotonic() - decided < HANG:
                await asyncio.sleep(0.1)
                paid = Counter(e.value["to"] for e in await cli_store.read("payments"))
            ran = time.monotonic()
            await asyncio.sleep(0.5)  # a second run would show by now
            paid = Counter(e.value["to"] for e in await cli_store.read("payments"))
            listing = await cli.listing()
            states = Counter(a.state for a in listing)
            failures = Counter(str((a.data.get("result") or {}).get("error")) for a in listing if a.state == "failed")
        finally:
            for task in sweepers:
                task.cancel()
            await asyncio.gather(*sweepers, return_exceptions=True)
            for bot in bots:
                await bot.application.shutdown()
            for w in workers:
                await w.registry.store.close()
            await cli_store.close()

    backend = "sqlite" if "://" not in store_url else "postgres"
    print(
        f"\n{backend}: {REQUESTS} decisions without a follower took {decided - started:.2f} s; {len(paid)} runs by "
        f"{WORKERS} workers, all done {ran - started:.2f} s after the first decision ({ran - decided:.2f} s after "
        f"the last); states {dict(states)}"
    )
    # every one ran although the stores' clock never moved: none waited for the hand-off to run out
    assert sorted(paid) == sorted(f"P{i:03d}" for i in range(REQUESTS)), (f"{len(paid)} of {REQUESTS} ran", failures)
    assert set(paid.values()) == {1}, [to for to, n in paid.items() if n > 1]  # each exactly once
    assert states.get("executed") == REQUESTS, (states, failures)
