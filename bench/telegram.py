"""Button taps per second through python-telegram-bot and the local Bot API server: the full assistant
(``TelegramBot`` + ``Assistant`` + the example tools) against a bare PTB callback handler that only answers.

    python bench/telegram.py [--taps 2000] [--runs 300] [--rounds 3] [--window 8]

One ``BotApiServer`` on 127.0.0.1, one process, one event loop shared by the server and the bots (both
sides cost CPU, the same way for every row). Users tap with at most ``--window`` taps unanswered at a
time; a row's clock stops when its last callback query is answered. Every bot polls with PTB's
``Updater`` and processes updates concurrently. Rows, each run ``--rounds`` times, interleaved:

* bare PTB: ``CallbackQueryHandler`` -> ``query.answer()``, tapped on a copy of a pending approval card
  and on a copy of a decided one (same HTML and keyboard as the assistant's, so updates are the same size);
* assistant, refused tap: someone other than the requester taps Confirm (delivery de-duplication in the
  store, approval read, identity mapping, one answer: one API call per tap, like bare) — in memory and
  with SQLite;
* assistant, tap on a decided card ("Already done.": the same work and calls);
* assistant, confirm and run: each tap confirms its own pending ``delete_note`` card; the tool runs, the
  card is edited twice and a result sent (four API calls per tap) — shown for scale.

Prints a Markdown table (medians of the rounds, wall clock and CPU time); the target is ≥ 80 % of bare.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Run as a script, this file would shadow the ``telegram`` package: look in the project root instead.
sys.path.pop(0)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from telegram import InlineKeyboardMarkup, Update
from telegram import __version__ as ptb_version
from telegram.ext import Application, CallbackQueryHandler, ContextTypes

from bots.tools import ExampleTools
from milpa_chat import ToolRegistry
from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.store import MemoryStore, Store
from milpa_chat.store.sqlite import SqliteStore
from milpa_chat.testing import BotApiServer, CallbackQueryRecord, ChatMessage, MessageVersion, UpdateRecord, User

ALICE = User(1001, "Alice", "alice")
BOB = User(1002, "Bob", "bob")
IDENTITIES = {"users": {"telegram:1001": ["notes:read", "notes:write"], "telegram:1002": ["notes:read"]}}
WARMUP = 100
WINDOW = [8]  # taps in flight at most; --window


@dataclass
class Row:
    name: str
    baseline: str  # the bare row this one is compared with
    taps: int
    seconds: float
    cpu_seconds: float
    latencies: list[float]
    calls_per_tap: float

    @property
    def rate(self) -> float:
        return self.taps / self.seconds

    @property
    def cpu_rate(self) -> float:
        return self.taps / self.cpu_seconds


async def push_and_wait(server: BotApiServer, taps: list[Callable[[], Awaitable[UpdateRecord]]]) -> Row:
    """Tap with at most ``WINDOW[0]`` taps unanswered at a time (that many users tapping as fast as the bot
    answers them), until the last one is answered."""
    window = WINDOW[0]
    mark = server.mark()
    waiting = deque(taps)
    outstanding: dict[str, CallbackQueryRecord] = {}
    answered: list[CallbackQueryRecord] = []

    def progressed() -> bool:
        done = [q for q in outstanding.values() if q.answered]
        for query in done:
            del outstanding[query.id]
        answered.extend(done)
        return bool(done) or not outstanding

    start, cpu = time.perf_counter(), time.process_time()
    while waiting or outstanding:
        while waiting and len(outstanding) < window:
            query = server.callback_query(await waiting.popleft()())
            outstanding[query.id] = query
        await server.wait_until(progressed, timeout=60, what="an answer")
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    calls = [c for c in server.calls[mark:] if c.method not in ("getUpdates", "getMe", "deleteWebhook")]
    latencies = [q.answer_latency or 0.0 for q in answered]
    return Row("", "", len(answered), seconds, cpu_seconds, latencies, len(calls) / len(answered))


def taps_on(server: BotApiServer, card: ChatMessage, data: str, user: User, n: int) -> list[Any]:
    return [lambda: server.tap(card.chat.id, card.message_id, user, data) for _ in range(n)]


# ------------------------------------------------------------------ bare PTB
BARE_PENDING = "bare PTB handler, answer only: tap on a pending card"
BARE_DECIDED = "bare PTB handler, answer only: tap on a decided card"


async def bare(server: BotApiServer, n: int, like: MessageVersion, data: str, name: str) -> Row:
    """A handler that only answers, tapped on a copy of ``like`` (same HTML and keyboard, so PTB and the
    server parse and serialize updates of the same size as in the assistant's rows)."""

    async def on_button(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.callback_query is not None
        await update.callback_query.answer()

    app = (Application.builder().token(server.token).base_url(server.base_url)
           .base_file_url(server.base_file_url).concurrent_updates(True).build())
    app.add_handler(CallbackQueryHandler(on_button))
    keyboard = InlineKeyboardMarkup.de_json(like.reply_markup, app.bot) if like.reply_markup else None
    message = await app.bot.send_message(ALICE.id, like.source or "", parse_mode=like.parse_mode,
                                         reply_markup=keyboard)
    card = server.message(ALICE.id, message.message_id)
    async with app:
        await app.start()
        assert app.updater is not None
        await app.updater.start_polling(timeout=1)
        await push_and_wait(server, taps_on(server, card, data, ALICE, WARMUP))
        row = await push_and_wait(server, taps_on(server, card, data, ALICE, n))
        await app.updater.stop()
        await app.stop()
    row.name = row.baseline = name
    return row


# ------------------------------------------------------------------ the assistant
def assistant_over(store: Store) -> Assistant:
    registry = ToolRegistry(store=store)
    registry.scan(ExampleTools(store))
    return Assistant(registry, Identities.from_dict(IDENTITIES))


async def card_for(server: BotApiServer, note: int) -> tuple[ChatMessage, str]:
    update = await server.send_message(ALICE.id, ALICE, f"/delete_note {note}")
    card = await server.wait_for_message(ALICE.id, since=update)
    data = next(b["callback_data"] for row in card.buttons for b in row if b["callback_data"].startswith("confirm:"))
    return card, data


async def with_bot(server: BotApiServer, store: Store, scenario: Callable[[], Awaitable[Row]]) -> Row:
    bot = TelegramBot(assistant_over(store), server.token, server.base_url, sweep_interval=None)
    await bot.start(poll_timeout=1)
    try:
        return await scenario()
    finally:
        await bot.stop()
        await store.close()


async def refused(server: BotApiServer, store: Store, n: int, name: str) -> Row:
    async def scenario() -> Row:
        card, data = await card_for(server, 1)
        await push_and_wait(server, taps_on(server, card, data, BOB, WARMUP))
        row = await push_and_wait(server, taps_on(server, card, data, BOB, n))
        assert server.callback_queries[-1].answer_text == "Only Alice can confirm this."
        row.name, row.baseline = name, BARE_PENDING
        return row

    return await with_bot(server, store, scenario)


async def decided(server: BotApiServer, n: int) -> Row:
    async def scenario() -> Row:
        card, data = await card_for(server, 2)
        await push_and_wait(server, taps_on(server, card, data, ALICE, 1))
        await decided_and_reported(server, card, "Deleted note 2")
        await push_and_wait(server, taps_on(server, card, data, ALICE, WARMUP))
        row = await push_and_wait(server, taps_on(server, card, data, ALICE, n))
        assert server.callback_queries[-1].answer_text == "Already done."
        row.name, row.baseline = "assistant: tap on a decided card", BARE_DECIDED
        return row

    return await with_bot(server, MemoryStore(), scenario)


async def decided_and_reported(server: BotApiServer, card: ChatMessage, outcome: str) -> None:
    """Until the confirmed tool has run, the card shows the outcome and the result was sent (so that its
    requests do not overlap the measurement)."""
    def done() -> bool:
        results = [m for m in server.messages(ALICE.id) if m.message_id > card.message_id and outcome in (m.text or "")]
        return bool(results) and outcome in (server.message(ALICE.id, card.message_id).text or "")

    await server.wait_until(done, what=outcome)


async def sample_cards(server: BotApiServer) -> tuple[MessageVersion, MessageVersion, str]:
    """A pending and a decided approval card as the assistant draws them, and a tap's data."""
    async def scenario() -> Row:
        card, data = await card_for(server, 3)
        found.append(card.versions[0])
        await push_and_wait(server, taps_on(server, card, data, ALICE, 1))
        await decided_and_reported(server, card, "Deleted note 3")
        found.append(server.message(ALICE.id, card.message_id).current)
        found_data.append(data)
        return Row("", "", 0, 1, 1, [], 0)

    found: list[MessageVersion] = []
    found_data: list[str] = []
    await with_bot(server, MemoryStore(), scenario)
    return found[0], found[1], found_data[0]


async def confirm_and_run(server: BotApiServer, n: int) -> Row:
    store = MemoryStore()
    for number in range(100, 100 + n):
        await store.insert("notes", f"{number:08d}", {"id": number, "text": f"note {number}"})

    async def scenario() -> Row:
        cards = [await card_for(server, number) for number in range(100, 100 + n)]
        taps: list[Callable[[], Awaitable[UpdateRecord]]] = [
            (lambda c=c, d=d: server.tap(ALICE.id, c.message_id, ALICE, d)) for c, d in cards]  # type: ignore[misc]
        row = await push_and_wait(server, taps)
        await server.wait_until(lambda: len(server.messages(ALICE.id)) >= 2 * n, timeout=120)
        row.name, row.baseline = "assistant: confirm and run the tool (4 calls a tap)", BARE_PENDING
        return row

    return await with_bot(server, store, scenario)


# ------------------------------------------------------------------ report
def table(rows: list[list[Row]]) -> str:
    """One line per scenario: the median round, by wall-clock taps/s and by taps per CPU-second, each
    compared with the bare handler tapped on the same kind of card."""
    wall = {rounds[0].name: statistics.median(r.rate for r in rounds) for rounds in rows}
    cpu = {rounds[0].name: statistics.median(r.cpu_rate for r in rounds) for rounds in rows}
    lines = ["| scenario | taps per round | taps/s (wall) | vs bare | taps per CPU-s | vs bare | "
             "answer p50 / p95 ms |", "|---|---:|---:|---:|---:|---:|---:|"]
    for rounds in rows:
        name, base = rounds[0].name, rounds[0].baseline
        lat = sorted(x for r in rounds for x in r.latencies)
        p50, p95 = statistics.median(lat) * 1e3, lat[int(0.95 * (len(lat) - 1))] * 1e3
        lines.append(f"| {name} | {rounds[0].taps} | {wall[name]:,.0f} | {wall[name] / wall[base]:.0%} | "
                     f"{cpu[name]:,.0f} | {cpu[name] / cpu[base]:.0%} | {p50:.1f} / {p95:.1f} |")
    return "\n".join(lines)


async def one_round(server: BotApiServer, tmp: Path, taps: int, runs: int, number: int) -> list[Row]:
    pending, decided_card, data = await sample_cards(server)
    return [
        await bare(server, taps, pending, data, BARE_PENDING),
        await refused(server, MemoryStore(), taps, "assistant: tap refused (not the requester)"),
        await refused(server, SqliteStore(tmp / f"bench{number}.db"), taps, "assistant (SQLite store): tap refused"),
        await bare(server, taps, decided_card, data, BARE_DECIDED),
        await decided(server, taps),
        await confirm_and_run(server, runs),
    ]


async def main(taps: int, runs: int, rounds: int) -> None:
    logging.basicConfig(level=logging.ERROR)
    results: list[list[Row]] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with BotApiServer(callback_query_timeout=300) as server:
            for number in range(rounds):
                rows = await one_round(server, Path(tmp), taps, runs, number)
                results = [[*r, row] for r, row in zip(results, rows, strict=True)] if results else [[r] for r in rows]
    print(f"{rounds} rounds, {WINDOW[0]} taps in flight at most; Python {sys.version.split()[0]}, "
          f"python-telegram-bot {ptb_version}; server and bot share one process (CPU time is both)\n")
    print(table(results))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--taps", type=int, default=2000, help="taps per one-call row (default 2000)")
    parser.add_argument("--runs", type=int, default=300, help="taps in the confirm-and-run row (default 300)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every row, interleaved (default 3)")
    parser.add_argument("--window", type=int, default=WINDOW[0], help=f"taps in flight at most (default {WINDOW[0]})")
    args = parser.parse_args()
    WINDOW[0] = args.window
    asyncio.run(main(args.taps, args.runs, args.rounds))
