"""A real bot process (``python -m bots.telegram_assistant``) killed with SIGKILL between a payment request and
its approval; a new process over the same SQLite file carries the decision out, once."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from asyncio.subprocess import Process
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from milpa_chat.store.sqlite import SqliteStore
from milpa_chat.testing import BotApiServer

from .telegram_support import ALICE, APPROVERS, IDENTITIES_TOML, MARIA, label

ROOT = Path(__file__).resolve().parents[2]


@asynccontextmanager
async def bot_process(server: BotApiServer, env: dict[str, str], log: Path) -> AsyncIterator[Process]:
    """The example assistant in its own process, polling ``server``; yields once it polls."""
    mark = server.mark()
    with log.open("ab") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bots.telegram_assistant", cwd=ROOT, env=env, stdout=out, stderr=out
        )
    try:
        await server.wait_for(lambda c: c.method == "getUpdates", since=mark, timeout=30)
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def wait_for_cards(db: Path, count: int) -> None:
    """Until the bot has recorded ``count`` messages showing the approval in the SQLite file."""
    store = SqliteStore(db)
    try:
        for _ in range(200):
            approvals = await store.scan("approvals")
            sent = [m for m in approvals[0].value["cards"] if m.get("message_id")] if approvals else []
            if len(sent) >= count:
                return
            await asyncio.sleep(0.05)
        raise TimeoutError(f"the bot did not record {count} approval messages in {db}")
    finally:
        await store.close()


async def test_a_decision_survives_a_killed_bot_process(tmp_path: Path) -> None:
    db, ids, log = tmp_path / "bot.db", tmp_path / "identities.toml", tmp_path / "bot.log"
    ids.write_text(IDENTITIES_TOML)
    async with BotApiServer() as server:
        server.group(APPROVERS, "Approvers", members=[ALICE, MARIA])
        env = {
            **os.environ,
            "TELEGRAM_TOKEN": server.token,
            "TELEGRAM_BASE_URL": server.base_url,
            "MILPA_STORE": str(db),
            "MILPA_IDENTITIES": str(ids),
            "MILPA_SWEEP_INTERVAL": "0.5",
        }
        async with bot_process(server, env, log) as first:
            request = await server.send_message(ALICE.id, ALICE, "/send_payment ACME 42")
            card = await server.wait_for_message(APPROVERS, since=request, timeout=10)
            mine = await server.wait_for_message(ALICE.id, since=request, timeout=10)
            await wait_for_cards(db, 2)
            first.send_signal(signal.SIGKILL)
            assert await first.wait() == -signal.SIGKILL

        tap = await server.tap_button(card, label(card, "Approve"), MARIA)  # while no bot runs
        async with bot_process(server, env, log) as second:
            await server.wait_until(lambda: server.callback_query(tap).answered, timeout=15)
            result = await server.wait_for_message(ALICE.id, since=tap, timeout=10)
            await server.wait_until(lambda: "Paid 42.00" in (server.message(APPROVERS, card.message_id).text or ""))
            again = await server.redeliver(tap)
            await server.wait_until(lambda: again.handed_out)
            second.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(second.wait(), 15) == 0, log.read_text()

    assert server.callback_query(tap).answer_text == "Approved — running it now."
    assert "Paid 42.00 EUR to ACME." in (result.text or "")
    for shown in (server.message(APPROVERS, card.message_id), server.message(ALICE.id, mine.message_id)):
        assert shown.button_labels == [] and "Approved by Maria via Telegram" in (shown.text or "")
    store = SqliteStore(db)
    try:
        payments = [entry.value for entry in await store.read("payments")]
    finally:
        await store.close()
    assert payments == [{"to": "ACME", "amount": 42.0, "requested_by": "telegram:1001"}]
