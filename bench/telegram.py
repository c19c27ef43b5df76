"""Button taps per second through python-telegram-bot and the local Bot API server: the full assistant
(``TelegramBot`` + ``Assistant`` + the example tools) against bare PTB callback handlers — one that only
answers, one that makes the same Bot API calls the assistant makes for that kind of tap, and a fair peer that
also does the same work (described below) — with per-round ratios of each assistant row to its fair peer.

    python bench/telegram.py [--taps 1000] [--runs 400] [--rounds 4] [--window 8]

One ``BotApiServer`` on 127.0.0.1, one process, one event loop shared by the server and the bots (both
sides cost CPU, the same way for every row). Users tap with at most ``--window`` taps unanswered at a
time. Every bot polls with PTB's ``Updater`` and processes updates concurrently.

First the assistant is tapped once of each kind, and the Bot API calls it makes for the tap are recorded
(method and parameters as sent). The "same calls" bare handlers replay those calls for every tap: the same
methods with the same parameters (text, parse mode, keyboard, link preview options; the keyboard and options
built once), sent through PTB's typed methods to the tapped message's chat. So "assistant vs bare making the
same calls" leaves the Bot API work out and shows the kit's own overhead, while "vs bare answering only" shows
what a tap with effects costs in all. Rows, each run ``--rounds`` times, interleaved:

* bare PTB, answer only: ``CallbackQueryHandler`` -> ``query.answer()``, tapped on a copy of a pending
  approval card and on a copy of a decided one (same HTML and keyboard as the assistant's, so updates are
  the same size);
* bare PTB, same call as a refused tap / as a tap on a decided card: the answer with the assistant's alert
  text (one ``answerCallbackQuery``), on the same card copies;
* assistant, refused tap: someone other than the requester taps Confirm (delivery de-duplication in the
  store, approval read, identity mapping, one alert answer) — in memory and with SQLite;
* assistant, tap on a decided card ("Already done.": the same work and call) — in memory and with SQLite;
* bare PTB, same calls as confirm and run: the calls the assistant makes for it, each tap on a copy of
  its own pending card;
* assistant, confirm and run: each tap confirms its own pending ``delete_note`` card; the tool runs, the card
  is edited and the result sent — in memory and with SQLite (``synchronous=FULL``: the decision and every
  step of the run are durable before the tap's next step).

Every assistant row has a **fair peer**: a bare PTB handler doing the work a bot written without the kit does
for that tap, and making the same calls. Its pending calls live in a ``PendingBook``: a dict beside the
in-memory rows, a table in a SQLite file beside the SQLite rows (WAL, ``synchronous=FULL``, the same sync
level as the assistant's store, and the tool's store in the same file). A refused tap or a tap on a decided
card: the peer looks up the call the card asks for (who asked, its state), then answers with the same alert.
Confirm and run: the peer claims the call (a compare-and-set of its state, committed before the run), runs
the same tool function (``ExampleTools.delete_note`` on a store of the same kind), writes the result
(committed), and makes the same calls. A kit row and its peer run next to each other, the peer first in even
rounds and second in odd ones (ABAB); each round gives the ratio peer CPU per tap / kit CPU per tap over the
same wall-clock seconds as the row's rates (the Bot API server shares the process; the pair makes the same
calls, so it costs both sides the same), and the second table prints every round's ratio, the median and the
spread (decided under 5 points; the target is ≥ 90 %).

Each row's taps are counted *done* once every Bot API call they cause has been answered by the server (for
one-call rows, the callback answer); the CPU time of a row runs until then too. Prints one Markdown table
(medians of the rounds): taps per second answered and done, done/s and CPU per tap compared with both bare
handlers, CPU µs per tap (server, bot and harness in one process) and the kit's own CPU µs per tap (the
assistant's minus the bare handler's that makes the same calls). The target is ≥ 80 % of bare.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Run as a script, this file would shadow the ``telegram`` package: look in the project root instead.
sys.path.pop(0)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from telegram import Bot, CallbackQuery, InlineKeyboardMarkup, LinkPreviewOptions, Update
from telegram import __version__ as ptb_version
from telegram.ext import Application, CallbackQueryHandler, ContextTypes

from bench._ratios import header, line
from bots.tools import ExampleTools
from milpa_chat import ToolRegistry
from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.store import MemoryStore, Store
from milpa_chat.store.sqlite import SqliteStore
from milpa_chat.testing import (
    BotApiServer,
    TelegramCallbackQuery,
    TelegramMessage,
    TelegramMessageVersion,
    TelegramUpdate,
    TelegramUser,
)

ALICE = TelegramUser(1001, "Alice", "alice")
BOB = TelegramUser(1002, "Bob", "bob")
IDENTITIES = {"users": {"telegram:1001": ["notes:read", "notes:write"], "telegram:1002": ["notes:read"]}}
WARMUP = 100
WINDOW = [8]  # taps in flight at most; --window
POLLING = frozenset({"getUpdates", "getMe", "deleteWebhook"})
Call = tuple[str, dict[str, str]]  # a Bot API method and its parameters as sent


@dataclass
class Row:
    name: str
    taps: int
    answered_seconds: float  # until the last callback query was answered
    seconds: float  # until every call the taps caused was answered by the server
    cpu_seconds: float
    latencies: list[float]
    calls_per_tap: float
    answer_only: str = ""  # the bare row that only answers ("" for such a row itself)
    same_calls: str = ""  # the bare row making the same calls ("" for bare rows)

    @property
    def bare(self) -> bool:
        return not self.same_calls


@dataclass
class Sample:
    """Cards and calls of the assistant, recorded from one tap of each kind."""

    pending: TelegramMessageVersion
    decided: TelegramMessageVersion
    data: str
    calls: dict[str, list[Call]] = field(default_factory=dict)  # refused, confirm, decided


class DoneCounter:
    """Counts the calls (other than polling; or only those of ``methods``) the server received since ``mark``,
    without rescanning them."""

    def __init__(self, server: BotApiServer, mark: int, methods: frozenset[str] | set[str] | None = None) -> None:
        self.server, self.index, self.received, self.methods = server, mark, 0, methods

    def __call__(self) -> int:
        calls = self.server.calls
        while self.index < len(calls):
            method = calls[self.index].method
            self.received += method in self.methods if self.methods is not None else method not in POLLING
            self.index += 1
        return self.received


async def push_and_wait(
    server: BotApiServer,
    taps: list[Callable[[], Awaitable[TelegramUpdate]]],
    per_tap: int = 1,
    results: int = 0,
) -> Row:
    """Tap with at most ``WINDOW[0]`` taps unanswered at a time (that many users tapping as fast as the bot
    answers them), until the last one is answered and the server has answered ``per_tap`` calls a tap
    (and, with ``results``, that many ``sendMessage`` calls: a tap whose card is edited twice makes more
    calls, so counting calls alone could stop before the last results were sent)."""
    window = WINDOW[0]
    mark = server.mark()
    waiting = deque(taps)
    outstanding: dict[str, TelegramCallbackQuery] = {}
    answered: list[TelegramCallbackQuery] = []

    def progressed() -> bool:
        done = [q for q in outstanding.values() if q.answered]
        for query in done:
            del outstanding[query.id]
        answered.extend(done)
        return bool(done) or not outstanding

    gc.collect()  # no row pays for the garbage of the rows before it
    start, cpu = time.perf_counter(), time.process_time()
    while waiting or outstanding:
        while waiting and len(outstanding) < window:
            query = server.callback_query(await waiting.popleft()())
            outstanding[query.id] = query
        await server.wait_until(progressed, timeout=60, what="an answer")
    answered_seconds = time.perf_counter() - start
    received = DoneCounter(server, mark)
    await server.wait_until(lambda: received() >= per_tap * len(answered), timeout=120, what="the taps' calls")
    if results:
        sent = DoneCounter(server, mark, {"sendMessage"})
        await server.wait_until(lambda: sent() >= results, timeout=120, what="the taps' results")
    work = [c for c in server.calls[mark:] if c.method not in POLLING]
    await server.wait_until(lambda: all(c.status for c in work), timeout=60, what="the server's answers")
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    # an edit to what the card already shows is refused by the server and ignored by the assistant (it still
    # counts in calls a tap): not a failure of the tap
    failed = [c for c in work if not c.ok and "message is not modified" not in (c.error or "")]
    if failed:
        raise RuntimeError(f"{len(failed)} of the taps' calls failed, e.g. {failed[0].method}: {failed[0].error}")
    latencies = [q.answer_latency or 0.0 for q in answered]
    return Row("", len(answered), answered_seconds, seconds, cpu_seconds, latencies, len(work) / len(answered))


def taps_on(server: BotApiServer, card: TelegramMessage, data: str, user: TelegramUser, n: int) -> list[Any]:
    return [lambda: server.tap(card.chat.id, card.message_id, user, data) for _ in range(n)]


def work_calls(server: BotApiServer, mark: int) -> list[Call]:
    return [(c.method, dict(c.params)) for c in server.calls[mark:] if c.method not in POLLING]


# ------------------------------------------------------------------ bare PTB
ANSWER_ONLY: list[Call] = [("answerCallbackQuery", {})]
BARE_PENDING = "bare PTB, answer only: pending card"
BARE_REFUSED = "bare PTB, same call as a refused tap (alert answer)"
BARE_DECIDED = "bare PTB, answer only: decided card"
BARE_DECIDED_SAME = "bare PTB, same call as a tap on a decided card (alert answer)"
BARE_CONFIRM = "bare PTB, same calls as confirm and run"


class Replay:
    """What a bare handler does for a tap: ``calls`` (recorded from the assistant) with the same methods and
    parameters, through PTB's typed methods, to the tapped message; keyboards and options are built once."""

    def __init__(self, bot: Bot, calls: list[Call]) -> None:
        self.steps = [self._step(bot, method, params) for method, params in calls]

    async def __call__(self, query: CallbackQuery) -> None:
        for step in self.steps:
            await step(query)

    @staticmethod
    def _step(bot: Bot, method: str, params: dict[str, str]) -> Callable[[CallbackQuery], Awaitable[Any]]:
        text, parse_mode = params.get("text"), params.get("parse_mode")
        markup = (
            InlineKeyboardMarkup.de_json(json.loads(params["reply_markup"]), bot) if "reply_markup" in params else None
        )
        preview = (
            LinkPreviewOptions.de_json(json.loads(params["link_preview_options"]), bot)
            if "link_preview_options" in params
            else None
        )

        def chat(query: CallbackQuery) -> int:
            assert query.message is not None
            return query.message.chat.id

        if method == "answerCallbackQuery":
            alert = params.get("show_alert") == "true"
            return lambda q: q.answer(text, show_alert=alert)
        if method == "editMessageText":
            assert text is not None
            return lambda q: bot.edit_message_text(
                text,
                chat_id=chat(q),
                message_id=q.message.message_id if q.message else None,
                parse_mode=parse_mode,
                reply_markup=markup,
                link_preview_options=preview,
            )
        if method == "sendChatAction":
            action = params["action"]
            return lambda q: bot.send_chat_action(chat(q), action)
        if method == "sendMessage":
            assert text is not None
            return lambda q: bot.send_message(
                chat(q), text, parse_mode=parse_mode, reply_markup=markup, link_preview_options=preview
            )
        raise ValueError(f"the assistant now calls {method} for a tap; teach Replay to make that call too")


class PendingBook:
    """Where a bot written without the kit keeps its pending calls: a dict (beside the in-memory rows), or a
    table in the same SQLite file as the assistant's store, in WAL mode with the same ``synchronous=FULL``
    (beside the SQLite rows): a card's call is written when the card is sent, claimed (compare-and-set on its
    state, committed: on disk) when Confirm is tapped, and its result written (committed) after the run."""

    def __init__(self, path: Path | None = None) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.conn: sqlite3.Connection | None = None
        if path is not None:
            self.conn = sqlite3.connect(path, isolation_level=None)
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = FULL")
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS bare_pending "
                "(id TEXT PRIMARY KEY, requester INTEGER, args TEXT, state TEXT, result TEXT)"
            )

    def add(self, key: str, requester: int, args: dict[str, Any]) -> None:
        if self.conn is None:
            self.rows[key] = {"requester": requester, "args": args, "state": "pending"}
            return
        self.conn.execute(
            "INSERT OR REPLACE INTO bare_pending VALUES (?, ?, ?, 'pending', NULL)", (key, requester, json.dumps(args))
        )

    def read(self, key: str) -> tuple[int, str] | None:
        """(requester, state) of the call a card asks for."""
        if self.conn is None:
            row = self.rows.get(key)
            return (row["requester"], row["state"]) if row else None
        found = self.conn.execute("SELECT requester, state FROM bare_pending WHERE id = ?", (key,)).fetchone()
        return (int(found[0]), str(found[1])) if found else None

    def claim(self, key: str) -> dict[str, Any] | None:
        """The call's arguments, to exactly one tap (its state moves from pending to running)."""
        if self.conn is None:
            row = self.rows.get(key)
            if row is None or row["state"] != "pending":
                return None
            row["state"] = "running"
            return dict(row["args"])
        found = self.conn.execute(
            "UPDATE bare_pending SET state = 'running' WHERE id = ? AND state = 'pending' RETURNING args", (key,)
        ).fetchone()
        return json.loads(found[0]) if found else None

    def finish(self, key: str, result: dict[str, Any]) -> None:
        if self.conn is None:
            self.rows[key].update(state="done", result=result)
            return
        self.conn.execute("UPDATE bare_pending SET state = 'done', result = ? WHERE id = ?", (json.dumps(result), key))

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


def card_key(query: CallbackQuery) -> str:
    assert query.message is not None
    return f"{query.message.chat.id}:{query.message.message_id}"


async def bare(
    server: BotApiServer,
    n: int,
    like: TelegramMessageVersion,
    data: str,
    calls: list[Call],
    *,
    own_cards: bool = False,
    book: PendingBook | None = None,
    store: Store | None = None,
) -> Row:
    """A handler that replays ``calls`` for every tap on a copy of ``like`` (same HTML and keyboard, so PTB and
    the server parse and serialize updates of the same size as in the assistant's rows). ``own_cards``: every
    tap on a copy of its own, without warm-up (like the assistant's confirm-and-run row).

    With ``book`` (a fair peer), it first does what a bot without the kit does for that tap: looks up the call
    the card asks for (who asked, whether it is still pending); on its own cards (confirm and run) it claims
    the call in ``book``, runs the same tool function on ``store`` (``ExampleTools.delete_note``) and writes
    the result to ``book`` before making the calls."""
    replay: list[Replay] = []
    tools = ExampleTools(store) if store is not None else None

    async def on_button(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        query = update.callback_query
        assert query is not None
        if book is not None and tools is not None:
            key = card_key(query)
            args = book.claim(key)
            if args is None:
                await query.answer("Already done.", show_alert=True)
                return
            result = await tools.delete_note(**args)
            book.finish(key, {"success": result.success, "data": result.data, "message": result.message})
        elif book is not None:
            book.read(card_key(query))
        await replay[0](query)

    app = (
        Application.builder()
        .token(server.token)
        .base_url(server.base_url)
        .base_file_url(server.base_file_url)
        .concurrent_updates(True)
        .build()
    )
    app.add_handler(CallbackQueryHandler(on_button))
    replay.append(Replay(app.bot, calls))
    keyboard = InlineKeyboardMarkup.de_json(like.reply_markup, app.bot) if like.reply_markup else None

    async def copy() -> TelegramMessage:
        message = await app.bot.send_message(
            ALICE.id, like.source or "", parse_mode=like.parse_mode, reply_markup=keyboard
        )
        return server.message(ALICE.id, message.message_id)

    async with app:
        cards = [await copy() for _ in range(n if own_cards else 1)]
        if book is not None:
            for number, card in enumerate(cards, start=100):
                book.add(f"{card.chat.id}:{card.message_id}", ALICE.id, {"note_id": number})
                if own_cards and store is not None:
                    await store.insert("notes", f"{number:08d}", {"id": number, "text": f"note {number}"})
        await app.start()
        assert app.updater is not None
        await app.updater.start_polling(timeout=1)
        if own_cards:
            taps = [(lambda c=c: server.tap(c.chat.id, c.message_id, ALICE, data)) for c in cards]
        else:
            await push_and_wait(server, taps_on(server, cards[0], data, ALICE, WARMUP), len(calls))
            taps = taps_on(server, cards[0], data, ALICE, n)
        row = await push_and_wait(server, taps, len(calls))
        await app.updater.stop()
        await app.stop()
    if book is not None:
        book.close()
    if store is not None:
        await store.close()
    return row


# ------------------------------------------------------------------ the assistant
def assistant_over(store: Store) -> Assistant:
    registry = ToolRegistry(store=store, approval_max_pending=None)  # a row opens --runs cards for one user
    registry.scan(ExampleTools(store))
    return Assistant(registry, Identities.from_dict(IDENTITIES))


async def card_for(server: BotApiServer, note: int) -> tuple[TelegramMessage, str]:
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


async def refused(server: BotApiServer, store: Store, n: int) -> Row:
    async def scenario() -> Row:
        card, data = await card_for(server, 1)
        await push_and_wait(server, taps_on(server, card, data, BOB, WARMUP))
        row = await push_and_wait(server, taps_on(server, card, data, BOB, n))
        assert server.callback_queries[-1].answer_text == "Only Alice can confirm this."
        return row

    return await with_bot(server, store, scenario)


async def decided(server: BotApiServer, store: Store, n: int) -> Row:
    async def scenario() -> Row:
        card, data = await card_for(server, 2)
        await push_and_wait(server, taps_on(server, card, data, ALICE, 1))
        await decided_and_reported(server, card, "Deleted note 2")
        await push_and_wait(server, taps_on(server, card, data, ALICE, WARMUP))
        row = await push_and_wait(server, taps_on(server, card, data, ALICE, n))
        assert server.callback_queries[-1].answer_text == "Already done."
        return row

    return await with_bot(server, store, scenario)


async def decided_and_reported(server: BotApiServer, card: TelegramMessage, outcome: str) -> None:
    """Until the confirmed tool has run, the card shows the outcome and the result was sent (so that its
    requests do not overlap the measurement)."""

    def done() -> bool:
        results = [m for m in server.messages(ALICE.id) if m.message_id > card.message_id and outcome in (m.text or "")]
        return bool(results) and outcome in (server.message(ALICE.id, card.message_id).text or "")

    await server.wait_until(done, what=outcome)


async def sample(server: BotApiServer) -> Sample:
    """A pending and a decided approval card as the assistant draws them, a tap's data, and the calls the
    assistant makes for a refused tap, a confirm (the tool runs) and a tap on the decided card."""
    found: list[Sample] = []

    async def scenario() -> Row:
        card, data = await card_for(server, 3)
        got = Sample(card.versions[0], card.versions[0], data)
        mark = server.mark()
        await push_and_wait(server, taps_on(server, card, data, BOB, 1))
        got.calls["refused"] = work_calls(server, mark)
        mark = server.mark()
        await push_and_wait(server, taps_on(server, card, data, ALICE, 1))
        await decided_and_reported(server, card, "Deleted note 3")
        await server.wait_until(lambda: all(c.status for c in server.calls[mark:]), what="the confirm's calls")
        got.calls["confirm"] = work_calls(server, mark)
        got.decided = server.message(ALICE.id, card.message_id).current
        mark = server.mark()
        await push_and_wait(server, taps_on(server, card, data, ALICE, 1))
        got.calls["decided"] = work_calls(server, mark)
        found.append(got)
        return Row("", 0, 1, 1, 1, [], 0)

    await with_bot(server, MemoryStore(), scenario)
    return found[0]


async def confirm_and_run(server: BotApiServer, store: Store, n: int, per_tap: int) -> Row:
    for number in range(100, 100 + n):
        await store.insert("notes", f"{number:08d}", {"id": number, "text": f"note {number}"})

    async def scenario() -> Row:
        cards = [await card_for(server, number) for number in range(100, 100 + n)]
        taps: list[Callable[[], Awaitable[TelegramUpdate]]] = [
            (lambda c=c, d=d: server.tap(ALICE.id, c.message_id, ALICE, d)) for c, d in cards
        ]  # type: ignore[misc]
        row = await push_and_wait(server, taps, per_tap, results=n)
        assert len(server.messages(ALICE.id)) >= 2 * n  # a card and a result for every note
        return row

    return await with_bot(server, store, scenario)


# ------------------------------------------------------------------ report
def table(results: list[list[Row]]) -> str:
    """One line per scenario: medians of the rounds; done/s and CPU per tap compared with the bare handler
    that only answers and with the bare handler that makes the same calls (tapped on the same kind of card)."""

    def median(rounds: list[Row], value: Callable[[Row], float]) -> float:
        return statistics.median(value(r) for r in rounds)

    done = {rs[0].name: median(rs, lambda r: r.taps / r.seconds) for rs in results}
    answered = {rs[0].name: median(rs, lambda r: r.taps / r.answered_seconds) for rs in results}
    cpu_us = {rs[0].name: median(rs, lambda r: r.cpu_seconds / r.taps * 1e6) for rs in results}

    def versus(name: str, base: str) -> str:
        return f"{done[name] / done[base]:.0%} / {cpu_us[base] / cpu_us[name]:.0%}"

    lines = [
        "| scenario | calls a tap | taps a round | answered/s | done/s | vs bare answering only "
        "(wall / CPU) | vs bare making the same calls (wall / CPU) | CPU µs a tap | kit CPU µs a tap | "
        "answer p50 / p95 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for rounds in results:
        row, name = rounds[0], rounds[0].name
        lat = sorted(x for r in rounds for x in r.latencies)
        p50, p95 = statistics.median(lat) * 1e3, lat[int(0.95 * (len(lat) - 1))] * 1e3
        only = versus(name, row.answer_only) if row.answer_only else "baseline"
        same = "baseline" if row.bare and row.answer_only else "—" if row.bare else versus(name, row.same_calls)
        kit = "—" if row.bare else f"{cpu_us[name] - cpu_us[row.same_calls]:,.0f}"
        lines.append(
            f"| {name} | {median(rounds, lambda r: r.calls_per_tap):g} | {row.taps} | "
            f"{answered[name]:,.0f} | {done[name]:,.0f} | {only} | {same} | {cpu_us[name]:,.0f} | {kit} | "
            f"{p50:.1f} / {p95:.1f} |"
        )
    return "\n".join(lines)


def named(row: Row, name: str, answer_only: str = "", same_calls: str = "") -> Row:
    row.name, row.answer_only, row.same_calls = name, answer_only, same_calls
    return row


PEER_REFUSED = "bare PTB, fair peer of a refused tap: looks the call up, same alert answer"
PEER_DECIDED = "bare PTB, fair peer of a tap on a decided card: looks the call up, same alert answer"
PEER_CONFIRM = "bare PTB, fair peer of confirm and run: claims, runs the tool, stores the result, same calls"
#: (kit row, its fair peer row) — the pairs whose rounds alternate and whose ratios are printed
PAIRS: list[tuple[str, str]] = []


async def one_round(server: BotApiServer, tmp: Path, taps: int, runs: int, number: int, got: Sample) -> list[Row]:
    """Every row once. Each kit row runs next to its fair peer, the peer first in even rounds and second in odd
    ones, so the rounds of a pair alternate (ABAB)."""
    pending, decided_card, data, calls = got.pending, got.decided, got.data, got.calls
    confirm = len(calls["confirm"])

    def sqlite(kind: str) -> SqliteStore:
        return SqliteStore(tmp / f"{kind}{number}.db")

    def peer_sqlite(kind: str) -> tuple[PendingBook, SqliteStore]:
        store = SqliteStore(tmp / f"peer-{kind}{number}.db")  # the tool's store, and the book in the same file
        return PendingBook(tmp / f"peer-{kind}{number}.db"), store

    async def pair(
        kit: Callable[[], Awaitable[Row]], peer: Callable[[], Awaitable[Row]], kit_name: str, peer_name: str, only: str
    ) -> list[Row]:
        if (kit_name, peer_name) not in PAIRS:
            PAIRS.append((kit_name, peer_name))
        first, second = (peer, kit) if number % 2 == 0 else (kit, peer)
        rows = [await first(), await second()]
        if number % 2:
            rows.reverse()
        return [named(rows[0], peer_name, only), named(rows[1], kit_name, only, peer_name)]

    async def confirm_peer(store_kind: str) -> Row:
        book, store = (PendingBook(), MemoryStore()) if store_kind == "memory" else peer_sqlite("confirm")
        return await bare(server, runs, pending, data, calls["confirm"], own_cards=True, book=book, store=store)

    def lookup_peer(like: TelegramMessageVersion, made: list[Call], store_kind: str) -> Callable[[], Awaitable[Row]]:
        async def run() -> Row:
            book = PendingBook() if store_kind == "memory" else PendingBook(tmp / f"peer-lookup{number}.db")
            return await bare(server, taps, like, data, made, book=book)

        return run

    rows = [
        named(await bare(server, taps, pending, data, ANSWER_ONLY), BARE_PENDING),
        named(await bare(server, taps, pending, data, calls["refused"]), BARE_REFUSED, BARE_PENDING),
        named(await bare(server, taps, decided_card, data, ANSWER_ONLY), BARE_DECIDED),
        named(await bare(server, taps, decided_card, data, calls["decided"]), BARE_DECIDED_SAME, BARE_DECIDED),
        named(await bare(server, runs, pending, data, calls["confirm"], own_cards=True), BARE_CONFIRM, BARE_PENDING),
    ]
    for store_kind, label in (("memory", ""), ("sqlite", " (SQLite store)")):
        store: Callable[[str], Store] = (lambda kind: MemoryStore()) if store_kind == "memory" else sqlite
        rows += await pair(
            lambda store=store: refused(server, store("refused"), taps),
            lookup_peer(pending, calls["refused"], store_kind),
            f"assistant{label}: tap refused (not the requester)",
            f"{PEER_REFUSED}{label}",
            BARE_PENDING,
        )
        rows += await pair(
            lambda store=store: decided(server, store("decided"), taps),
            lookup_peer(decided_card, calls["decided"], store_kind),
            f"assistant{label}: tap on a decided card",
            f"{PEER_DECIDED}{label}",
            BARE_DECIDED,
        )
        rows += await pair(
            lambda store=store: confirm_and_run(server, store("confirm"), runs, confirm),
            lambda store_kind=store_kind: confirm_peer(store_kind),
            f"assistant{label}: confirm and run the tool",
            f"{PEER_CONFIRM}{label}",
            BARE_PENDING,
        )
    return rows


def ratios(results: list[list[Row]]) -> str:
    """Every kit row against its fair peer, round by round (CPU per tap)."""
    by_name = {rounds[0].name: rounds for rounds in results}
    lines = header()
    for kit, peer in PAIRS:
        each = [
            p.cpu_seconds / p.taps / (k.cpu_seconds / k.taps) for k, p in zip(by_name[kit], by_name[peer], strict=True)
        ]
        lines.append(line(kit, peer, each))
    return "\n".join(lines)


def describe(calls: dict[str, list[Call]]) -> str:
    def one(call: Call) -> str:
        method, params = call
        size = sum(len(k) + len(v.encode()) for k, v in params.items())
        return f"{method} ({size} B)"

    titles = {"refused": "a refused tap", "decided": "a tap on a decided card", "confirm": "confirm and run"}
    return "\n".join(f"* {titles[kind]}: {', '.join(one(c) for c in made)}" for kind, made in calls.items())


async def main(taps: int, runs: int, rounds: int) -> None:
    logging.basicConfig(level=logging.ERROR)
    results: list[list[Row]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        async with BotApiServer(callback_query_timeout=300) as server:
            got = await sample(server)
            for number in range(rounds):
                rows = await one_round(server, Path(tmp), taps, runs, number, got)
                results = [[*r, row] for r, row in zip(results, rows, strict=True)] if results else [[r] for r in rows]
    print(
        f"{rounds} rounds, {WINDOW[0]} taps in flight at most; Python {sys.version.split()[0]}, "
        f"python-telegram-bot {ptb_version}; server, bots and harness share one process (CPU time is all "
        f"of them); {time.perf_counter() - started:.0f} s\n"
    )
    print(table(results))
    print(
        "\nInterleaved rounds, every assistant row against its fair peer (CPU per tap; the rows of a pair ran "
        "next to each other, alternating which went first):\n"
    )
    print(ratios(results))
    print(
        "\nBot API calls the assistant made for one tap (recorded, and replayed by the same-calls bare "
        "handlers; parameter bytes as sent):"
    )
    print(describe(got.calls))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--taps", type=int, default=1000, help="taps per one-call row (default 1000)")
    parser.add_argument("--runs", type=int, default=400, help="taps in the confirm-and-run rows (default 400)")
    parser.add_argument("--rounds", type=int, default=4, help="rounds of every row, interleaved (default 4)")
    parser.add_argument("--window", type=int, default=WINDOW[0], help=f"taps in flight at most (default {WINDOW[0]})")
    args = parser.parse_args()
    WINDOW[0] = args.window
    asyncio.run(main(args.taps, args.runs, args.rounds))
