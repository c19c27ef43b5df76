"""Button taps through python-telegram-bot and the local Bot API server: the full assistant (``TelegramBot`` +
``Assistant`` + the example tools) against bare PTB callback handlers — one that only answers, one that makes
the same Bot API calls the assistant makes for that kind of tap, and a fair peer that also does the same work
(described below) — with per-round ratios of each assistant row to its fair peer, by CPU per tap.

    PYTHONPATH=. python bench/telegram.py [--taps 400] [--runs 300] [--rounds 4] [--sets 12] [--run-sets 2]
                                          [--window 3] [--groups refused,decided,confirm]

Every app (the assistant, each bare handler) runs in an OS process of its own and polls its own local
``BotApiServer``; the servers and the taps live in the bench's process, pinned to one CPU, and every app is
pinned to the other once started (``bench/_apps.py``), so a row's *CPU per tap* is the app process's own
(``time.process_time()`` read over a pipe): neither the server's work nor the harness's counts, on either side.
Users tap with at most ``--window`` taps unanswered at a time; every app processes updates concurrently.

First the assistant is tapped once of each kind, and the Bot API calls it makes for the tap are recorded
(method and parameters as sent). The "same calls" bare handlers replay those calls for every tap: the same
methods with the same parameters (text, parse mode, keyboard, link preview options; built once), sent through
PTB's typed methods to the tapped message's chat. Rows, in three groups (every set of processes, the apps of a
group are started anew, set up and frozen with ``gc.freeze()`` together, then tapped in turn):

* a refused tap: someone other than the requester taps Confirm (delivery de-duplication, approval read,
  identity mapping, one alert answer) — bare answering only, bare making the same call, the assistant and its
  fair peer in memory, and with SQLite;
* a tap on a decided card ("Already done.": the same rows);
* confirm and run: each tap confirms its own pending ``delete_note`` card; the tool runs, the card is edited
  and the result sent — bare making the same calls, the assistant and its fair peer in memory, and with SQLite
  (``synchronous=FULL``: the decision and every step of the run are durable before the tap's next step).

Every assistant row has a **fair peer**: a bare PTB app doing the work a bot written without the kit does for that
tap, and making the same calls, built by itself for every tap (``bench/_telegram_peer.py``). Its pending calls (who
asked, by id and name, and the arguments) live in a ``PendingBook``: a dict beside the in-memory rows, a table in a
SQLite file beside the SQLite rows (WAL, ``synchronous=FULL``, the same sync level as the assistant's store, and
the tool's store in the same file). A refused tap (Bob's, as the assistant's) or a tap on a decided card: the peer
looks up the call the card asks for (who asked, its state), decides from it, and answers with the alert text
formatted for the tap (the requester's name from its book: "Only Alice can confirm this."; "Already done.").
Confirm and run: the peer claims the call for the requester tapping (a compare-and-set of its state, committed
before the run), runs the same tool function (``ExampleTools.delete_note`` on a store of the same kind), writes the
result (committed), then answers, edits the card to its decided text and sends the result. Every text is formatted
for the tap from the book's row, the tapper, the clock and the tool's result (the requester, the arguments' SHA-256
digest and JSON, who confirmed and when, the outcome, the result's fields; ``html.escape`` in HTML), and the link
preview options (and any keyboard) are PTB objects made for the tap. The peer takes the wording between those parts
from the assistant's recorded calls, and checks at start-up that its calls for the recorded tap are the
assistant's as PTB serializes them (texts byte for byte, JSON objects of the same value and size; a clear error if
the assistant's wording changed); the cards of both are for notes 100 on, so the texts of a tap are the same size
on both sides.

A set taps every app of a group (its share of ``--taps``, or of ``--runs`` for confirm and run) a slice at a time: one
window of taps (``--window``, 3), all tapped at once and done before the next app's turn, the apps taking turns
slice by slice in an order rotated by one every slice (A B C, B C A, ...: no app runs twice in a row, every app
goes at every place), so each app's slices and its fair peer's meet the same moments of the machine, a few
milliseconds apart. Measured on two copies of the same app in one group: with 4 slices of ~40 taps a round
their ratio moved 12-18 points from round to round (the machine's speed drifts by 20-40 % over seconds, alike for
every app running then), with slices of 3 taps and 300 taps a round 1-1.3 points. The harness collects its young
garbage before every slice and all of it once a round (a full collection before every slice cost more time than
the slices).

Every set starts its apps anew, each a process of its own: a process keeps what it settled into at start-up
for as long as it runs, and the same app differs by up to 6-11 points from one process to the next. Measured
with two copies of one app, four quarters of one round agree within a point or two while rounds of fresh
processes differ by 10; fixing the hash seed and turning address randomization off (``setarch -R``) changed
nothing. What moves with it is how often a process waits (its voluntary context switches, each a sleep and a
wake-up): a process settles at start-up into waiting ~1.5 or ~5 times a tap and keeps it (the table prints the
waits a tap, median and the fewest and most of a round). So each of the ``--rounds`` rounds (4) starts the apps
of a group anew several times in a row, each set of processes tapped for its share of the round's taps: a
one-call round ``--sets`` times (12), a confirm-and-run round, whose ~4 ms taps feel it less than ~2.5 ms ones,
``--run-sets`` times (2). A round's ratio is over that many pairs of processes, and the spread shows how far such
rounds differ. Each app is warmed up with ``WARM_SLICES`` slices after it starts, not counted.

Each round gives the ratio peer CPU per tap / assistant CPU per tap, and the second table prints every
round's ratio, the median and the spread (decided under 5 points; the target is ≥ 90 %). A tap is *done* once
every Bot API call it caused has been answered by the server; a slice's CPU runs until then too. The first
table prints medians of the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import logging
import statistics
import sys
import tempfile
import time
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Run as a script, this file would shadow the ``telegram`` package: look in the project root instead.
sys.path.pop(0)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from telegram import __version__ as ptb_version

from bench._apps import AppProcess, app_process, in_turn, pin_harness
from bench._ratios import header, line
from milpa_chat.testing import (
    BotApiServer,
    TelegramCallbackQuery,
    TelegramMessage,
    TelegramMessageVersion,
    TelegramUpdate,
    TelegramUser,
)

ROOT = Path(__file__).resolve().parent.parent
ALICE = TelegramUser(1001, "Alice", "alice")
BOB = TelegramUser(1002, "Bob", "bob")
WINDOW = [3]  # taps in flight at most, and the taps of one app's turn (a slice); --window
WARM_SLICES = 10  # slices every app is tapped after it starts, before the round's counted ones
SETS = 12  # sets of processes a round of a one-call row; --sets
RUN_SETS = 2  # sets of processes a round of confirm and run; --run-sets
KINDS = ("refused", "decided", "confirm")  # the groups; --groups
POLL_TIMEOUT = 10  # an app waiting for its turn asks for updates once in this many seconds
POLLING = frozenset({"getUpdates", "getMe", "deleteWebhook", "setMyCommands", "getMyCommands"})
Call = tuple[str, dict[str, str]]  # a Bot API method and its parameters as sent
Tap = Callable[[], Awaitable[TelegramUpdate]]
NUMBERS = itertools.count()  # of the apps: their tokens and config files
SAMPLE_NOTE = 100  # the note of the pending card whose taps are recorded


@dataclass
class Row:
    name: str
    taps: int
    answered_seconds: float  # until the last callback query was answered
    seconds: float  # until every call the taps caused was answered by the server
    cpu_seconds: float  # of the app's process
    sleeps: int  # times the app's process waited (voluntary context switches)
    latencies: list[float]
    calls_per_tap: float


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

    def __init__(self, server: BotApiServer, mark: int, methods: frozenset[str] | None = None) -> None:
        self.server, self.index, self.received, self.methods = server, mark, 0, methods

    def __call__(self) -> int:
        calls = self.server.calls
        while self.index < len(calls):
            method = calls[self.index].method
            self.received += method in self.methods if self.methods is not None else method not in POLLING
            self.index += 1
        return self.received


async def push_and_wait(
    server: BotApiServer, taps: list[Tap], per_tap: int = 1, results: int = 0, app: AppProcess | None = None
) -> Row:
    """Tap with at most ``WINDOW[0]`` taps unanswered at a time (that many users tapping as fast as the bot
    answers them), until the last one is answered and the server has answered ``per_tap`` calls a tap
    (and, with ``results``, that many ``sendMessage`` calls: a tap whose card is edited twice makes more
    calls, so counting calls alone could stop before the last results were sent). With ``app``, the row's CPU
    is that process's."""
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

    gc.collect(1)  # the harness collects its young garbage before, not during, a slice (the rest: once a round)
    cpu, sleeps = await app.usage() if app is not None else (0.0, 0)
    start = time.perf_counter()
    while waiting or outstanding:
        while waiting and len(outstanding) < window:
            query = server.callback_query(await waiting.popleft()())
            outstanding[query.id] = query
        await server.wait_until(progressed, timeout=60, what="an answer")
    answered_seconds = time.perf_counter() - start
    received = DoneCounter(server, mark)
    await server.wait_until(lambda: received() >= per_tap * len(answered), timeout=120, what="the taps' calls")
    if results:
        sent = DoneCounter(server, mark, frozenset({"sendMessage"}))
        await server.wait_until(lambda: sent() >= results, timeout=120, what="the taps' results")
    work = [c for c in server.calls[mark:] if c.method not in POLLING]
    await server.wait_until(lambda: all(c.status for c in work), timeout=60, what="the server's answers")
    seconds = time.perf_counter() - start
    if app is not None:
        cpu_then, sleeps_then = await app.usage()
        cpu, sleeps = cpu_then - cpu, sleeps_then - sleeps
    # an edit to what the card already shows is refused by the server and ignored by the assistant (it still
    # counts in calls a tap): not a failure of the tap
    failed = [c for c in work if not c.ok and "message is not modified" not in (c.error or "")]
    if failed:
        raise RuntimeError(f"{len(failed)} of the taps' calls failed, e.g. {failed[0].method}: {failed[0].error}")
    latencies = [q.answer_latency or 0.0 for q in answered]
    return Row("", len(answered), answered_seconds, seconds, cpu, sleeps, latencies, len(work) / len(answered))


def merged(name: str, parts: list[Row]) -> Row:
    """A round's row from its slices."""
    taps = sum(r.taps for r in parts)
    return Row(
        name,
        taps,
        sum(r.answered_seconds for r in parts),
        sum(r.seconds for r in parts),
        sum(r.cpu_seconds for r in parts),
        sum(r.sleeps for r in parts),
        [x for r in parts for x in r.latencies],
        sum(r.calls_per_tap * r.taps for r in parts) / taps,
    )


def taps_on(server: BotApiServer, card: TelegramMessage, data: str, user: TelegramUser, n: int) -> list[Tap]:
    return [lambda: server.tap(card.chat.id, card.message_id, user, data) for _ in range(n)]


def work_calls(server: BotApiServer, mark: int) -> list[Call]:
    return [(c.method, dict(c.params)) for c in server.calls[mark:] if c.method not in POLLING]


# ------------------------------------------------------------------ the apps of a group
ANSWER_ONLY: list[Call] = [("answerCallbackQuery", {})]
BARE_PENDING = "bare PTB, answer only: pending card"
BARE_REFUSED = "bare PTB, same call as a refused tap (alert answer)"
BARE_DECIDED = "bare PTB, answer only: decided card"
BARE_DECIDED_SAME = "bare PTB, same call as a tap on a decided card (alert answer)"
BARE_CONFIRM = "bare PTB, same calls as confirm and run"
PEER_REFUSED = "bare PTB, fair peer of a refused tap: looks the call up, builds the same alert answer"
PEER_DECIDED = "bare PTB, fair peer of a tap on a decided card: looks the call up, builds the same alert answer"
PEER_CONFIRM = "bare PTB, fair peer of confirm and run: claims, runs the tool, stores the result, builds the same calls"


@dataclass
class Member:
    """One app of a group: how it is started, how it is tapped, and its rows (one a round)."""

    name: str
    config: dict[str, Any]  # for bench/_telegram_app.py, less the server's address
    answer_only: str = ""  # the bare row that only answers ("" for such a row itself)
    same_calls: str = ""  # the bare row making the same calls ("" for bare rows)
    peer: str = ""  # an assistant row's fair peer
    server: BotApiServer | None = None
    app: AppProcess | None = None
    taps: list[Tap] = field(default_factory=list)  # the taps of the set under way
    per_tap: int = 1
    results: bool = False  # confirm and run: wait for a result of every tap
    rows: list[Row] = field(default_factory=list)


def kit(name: str, store: str, notes: int = 0, *, peer: str, answer_only: str, same_calls: str) -> Member:
    config = {"app": "kit", "store": store, "notes": notes}
    return Member(name, config, answer_only, same_calls, peer)


def bare(
    name: str, like: TelegramMessageVersion, calls: list[Call], *, cards: int = 1, answer_only: str = ""
) -> Member:
    config = {
        "app": "bare",
        "calls": calls,
        "like": {"source": like.source or "", "parse_mode": like.parse_mode, "reply_markup": like.reply_markup},
        "cards": cards,
    }
    return Member(name, config, answer_only)


def fair_peer(
    name: str, kind: str, like: TelegramMessageVersion, got: Sample, cards: int, book: str, only: str
) -> Member:
    """A bare PTB app doing a bot's work for the tap, its pending calls in ``book`` (and, to confirm and run, the
    tool's store in the same place); it learns its wording from every recorded call (bench/_telegram_peer.py)."""
    member = bare(name, like, got.calls[kind], cards=cards, answer_only=only)
    store = book if kind == "confirm" else None
    sample = {"note_id": SAMPLE_NOTE}
    notes = cards if store is not None else 0
    member.config.update(app="peer", kind=kind, learn=got.calls, sample=sample, book=book, store=store, notes=notes)
    return member


async def start(member: Member, stack: AsyncExitStack, tmp: Path, number: int) -> None:
    token = f"{700000 + number}:bench-{number}"
    member.server = await stack.enter_async_context(BotApiServer(token=token, callback_query_timeout=300))
    server = member.server
    server.private_chat(ALICE)  # where the bare handlers send their cards
    config = {
        **member.config,
        "token": token,
        "base_url": server.base_url,
        "base_file_url": server.base_file_url,
        "poll_timeout": POLL_TIMEOUT,
    }
    path = tmp / f"app{number}.json"
    path.write_text(json.dumps(config))
    args = ["-m", "bench._telegram_app", str(path)]
    member.app = await stack.enter_async_context(app_process(args, member.name, env={"PYTHONPATH": str(ROOT)}))


async def card_for(server: BotApiServer, note: int) -> tuple[TelegramMessage, str]:
    update = await server.send_message(ALICE.id, ALICE, f"/delete_note {note}")
    card = await server.wait_for_message(ALICE.id, since=update)
    return card, confirm_data(card)


def confirm_data(card: TelegramMessage) -> str:
    return next(b["callback_data"] for row in card.buttons for b in row if b["callback_data"].startswith("confirm:"))


async def decided_and_reported(server: BotApiServer, card: TelegramMessage, outcome: str) -> None:
    """Until the confirmed tool has run, the card shows the outcome and the result was sent (so that its
    requests do not overlap the measurement)."""

    def done() -> bool:
        results = [m for m in server.messages(ALICE.id) if m.message_id > card.message_id and outcome in (m.text or "")]
        return bool(results) and outcome in (server.message(ALICE.id, card.message_id).text or "")

    await server.wait_until(done, what=outcome)


async def pending_cards(server: BotApiServer, count: int) -> list[TelegramMessage]:
    """``count`` pending delete_note cards of the assistant, asked for with at most ``WINDOW[0]`` messages waiting
    for their card (as many as taps in flight: a burst of asks would open more pooled connections to the server
    than the taps ever use, and every later call of the app would pay for looking over the idle ones)."""
    first = max((m.message_id for m in server.messages(ALICE.id)), default=0)

    def made() -> list[TelegramMessage]:
        return [m for m in server.messages(ALICE.id) if m.buttons and m.message_id > first]

    asked = 0
    while asked < count:
        have = len(made())
        while asked < count and asked - have < WINDOW[0]:
            await server.send_message(ALICE.id, ALICE, f"/delete_note {100 + asked}")
            asked += 1
        await server.wait_until(lambda have=have: len(made()) > have, timeout=120, what="a pending card")

    def enough() -> list[TelegramMessage] | None:
        cards = made()
        return cards if len(cards) >= count else None

    found = await server.wait_until(enough, timeout=120, what="the pending cards")
    return sorted(found, key=lambda m: m.message_id)[:count]


async def set_up(member: Member, kind: str, taps: int, got: Sample) -> None:
    """The cards a member's ``taps`` taps of this set go to (its apps are started anew every set)."""
    server, app = member.server, member.app
    assert server is not None and app is not None
    if member.config["app"] == "kit":
        if kind == "confirm":
            cards = await pending_cards(server, taps)
            member.taps = [(lambda c=c: server.tap(ALICE.id, c.message_id, ALICE, confirm_data(c))) for c in cards]
        else:
            card, data = await card_for(server, 1)
            user = BOB if kind == "refused" else ALICE
            if kind == "decided":
                await push_and_wait(server, taps_on(server, card, data, ALICE, 1))
                await decided_and_reported(server, card, "Deleted note 1")
            member.taps = taps_on(server, card, data, user, taps)
    else:
        ids = json.loads(app.ready)["cards"]
        cards = [server.message(ALICE.id, i) for i in ids]
        if kind == "confirm":
            member.taps = [(lambda c=c: server.tap(c.chat.id, c.message_id, ALICE, got.data)) for c in cards]
        else:  # a fair peer's refused tap is someone else's, as the assistant's
            user = BOB if kind == "refused" and member.config["app"] == "peer" else ALICE
            member.taps = taps_on(server, cards[0], got.data, user, taps)
    member.per_tap = len(got.calls[kind])
    member.results = kind == "confirm"
    await app.freeze()


async def run_group(
    kind: str, members: list[Member], taps: int, rounds: int, tmp: Path, got: Sample, sets: int = 1
) -> None:
    """Every round: ``sets`` times in a row, start every app of the group anew (a process of its own, so a round's
    ratio carries those processes' layouts and the next round's others), set them up, warm each up with
    ``WARM_SLICES`` slices that are not counted, then tap each in turn, a slice at a time, for its share of the
    round's ``taps``; a round's row sums its sets'."""
    window = WINDOW[0]
    configs = {m.name: dict(m.config) for m in members}
    share = -(-taps // sets)
    for number in range(rounds):
        parts: dict[str, list[Row]] = {m.name: [] for m in members}
        for one in range(sets):
            async with AsyncExitStack() as stack:
                for member in members:  # a SQLite file of the set's own
                    member.config = {k: _round_file(v, number * sets + one) for k, v in configs[member.name].items()}
                await asyncio.gather(*(start(m, stack, tmp, next(NUMBERS)) for m in members))
                for member in members:
                    await set_up(member, kind, WARM_SLICES * window + share, got)
                gc.collect()
                await tap_in_turn(members, WARM_SLICES + -(-share // window), parts)
                if kind != "confirm":  # the assistant's answer, and its fair peers' (formatted by them for the tap)
                    said = "Only Alice can confirm this." if kind == "refused" else "Already done."
                    for member in members[2:]:
                        assert member.server is not None
                        assert member.server.callback_queries[-1].answer_text == said, (member.name, said)
        for member in members:
            member.rows.append(merged(member.name, parts[member.name]))


async def tap_in_turn(members: list[Member], slices: int, parts: dict[str, list[Row]]) -> None:
    """Tap the apps a window at a time, in turn slice by slice; the slices after the warm-up go in ``parts``."""
    window = WINDOW[0]
    for part in range(slices):
        for member in in_turn(members, part):
            assert member.server is not None
            taps_now = member.taps[part * window : (part + 1) * window]
            row = await push_and_wait(
                member.server, taps_now, member.per_tap, len(taps_now) if member.results else 0, member.app
            )
            if part >= WARM_SLICES:
                parts[member.name].append(row)


def _round_file(value: Any, number: int) -> Any:
    """A SQLite file's path (``...db``) with the set's number in it; any other value as it is."""
    return f"{value[:-3]}.{number}.db" if isinstance(value, str) and value.endswith(".db") else value


async def sample(tmp: Path) -> Sample:
    """A pending and a decided approval card as the assistant draws them, a tap's data, and the calls the
    assistant makes for a refused tap, a confirm (the tool runs) and a tap on the decided card."""
    member = kit("sample", "memory", 3, peer="", answer_only="", same_calls="")
    async with AsyncExitStack() as stack:
        await start(member, stack, tmp, next(NUMBERS))
        server = member.server
        assert server is not None
        card, data = await card_for(server, SAMPLE_NOTE)
        got = Sample(card.versions[0], card.versions[0], data)
        mark = server.mark()
        await push_and_wait(server, taps_on(server, card, data, BOB, 1))
        got.calls["refused"] = work_calls(server, mark)
        mark = server.mark()
        await push_and_wait(server, taps_on(server, card, data, ALICE, 1))
        await decided_and_reported(server, card, f"Deleted note {SAMPLE_NOTE}")
        await server.wait_until(
            lambda: all(c.status for c in server.calls[mark:] if c.method not in POLLING), what="the confirm's calls"
        )
        got.calls["confirm"] = work_calls(server, mark)
        got.decided = server.message(ALICE.id, card.message_id).current
        mark = server.mark()
        await push_and_wait(server, taps_on(server, card, data, ALICE, 1))
        got.calls["decided"] = work_calls(server, mark)
    return got


#: (assistant row, its fair peer row) — the pairs whose ratios are printed
PAIRS: list[tuple[str, str]] = []


def groups(got: Sample, taps: int, runs: int, run_sets: int, tmp: Path) -> list[tuple[str, int, list[Member]]]:
    """(kind, taps a round, apps) of every group; an assistant row is listed next to its fair peer."""
    found = []
    for kind, like, same_name, only_name, peer_name in (
        ("refused", got.pending, BARE_REFUSED, BARE_PENDING, PEER_REFUSED),
        ("decided", got.decided, BARE_DECIDED_SAME, BARE_DECIDED, PEER_DECIDED),
        ("confirm", got.pending, BARE_CONFIRM, BARE_PENDING, PEER_CONFIRM),
    ):
        confirm = kind == "confirm"
        title = {
            "refused": "tap refused (not the requester)",
            "decided": "tap on a decided card",
            "confirm": "confirm and run the tool",
        }[kind]
        n = runs if confirm else taps
        cards = WARM_SLICES * WINDOW[0] + -(-n // run_sets) if confirm else 1  # a set's: its apps start anew
        members = [] if confirm else [bare(only_name, like, ANSWER_ONLY)]
        members.append(bare(same_name, like, got.calls[kind], cards=cards, answer_only=only_name))
        for label, store, book in (("", "memory", "memory"), (" (SQLite store)", "sqlite", "sqlite")):
            path = str(tmp / f"{kind}-{store}")
            kit_name, peer = f"assistant{label}: {title}", f"{peer_name}{label}"
            kit_store = "memory" if store == "memory" else f"{path}-kit.db"
            peer_book = "memory" if book == "memory" else f"{path}-peer.db"
            pair = [
                kit(
                    kit_name, kit_store, cards if confirm else 0, peer=peer, answer_only=only_name, same_calls=same_name
                ),
                fair_peer(peer, kind, like, got, cards, peer_book, only_name),
            ]
            members += pair if store == "memory" else pair[::-1]
            PAIRS.append((kit_name, peer))
        found.append((kind, n, members))
    return found


# ------------------------------------------------------------------ report
def table(members: list[Member]) -> str:
    """One line per app: medians of the counted rounds; done/s and CPU per tap compared with the bare handler
    that only answers and with the bare handler that makes the same calls (tapped on the same kind of card)."""

    def median(rows: list[Row], value: Callable[[Row], float]) -> float:
        return statistics.median(value(r) for r in rows)

    counted = {m.name: m.rows for m in members}
    done = {name: median(rs, lambda r: r.taps / r.seconds) for name, rs in counted.items()}
    cpu_us = {name: median(rs, lambda r: r.cpu_seconds / r.taps * 1e6) for name, rs in counted.items()}

    def versus(name: str, base: str) -> str:
        return f"{done[name] / done[base]:.0%} / {cpu_us[base] / cpu_us[name]:.0%}"

    lines = [
        "| scenario | calls a tap | taps a round | answered/s | done/s | vs bare answering only (wall / CPU) "
        "| vs bare making the same calls (wall / CPU) | vs fair peer (wall / CPU) | app CPU µs a tap "
        "| kit CPU µs a tap (vs fair peer) | waits a tap (fewest / most of a round) | answer p50 / p95 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for member in members:
        name, rows = member.name, counted[member.name]
        lat = sorted(x for r in rows for x in r.latencies)
        p50, p95 = statistics.median(lat) * 1e3, lat[int(0.95 * (len(lat) - 1))] * 1e3
        only = versus(name, member.answer_only) if member.answer_only else "baseline"
        same = versus(name, member.same_calls) if member.same_calls else "—"
        peer = versus(name, member.peer) if member.peer else "—"
        kit_us = f"{cpu_us[name] - cpu_us[member.peer]:,.0f}" if member.peer else "—"
        lines.append(
            f"| {name} | {median(rows, lambda r: r.calls_per_tap):g} | {rows[0].taps} | "
            f"{median(rows, lambda r: r.taps / r.answered_seconds):,.0f} | {done[name]:,.0f} | {only} | {same} | "
            f"{peer} | {cpu_us[name]:,.0f} | {kit_us} | {waits(rows)} | {p50:.1f} / {p95:.1f} |"
        )
    return "\n".join(lines)


def waits(rows: list[Row]) -> str:
    """The app's voluntary context switches a tap (each a sleep and a wake-up), median (fewest / most) of the
    rounds: a process settles at start-up into waiting ~1.5 or ~5 times a tap and keeps it for its life."""
    each = [r.sleeps / r.taps for r in rows]
    return f"{statistics.median(each):.1f} ({min(each):.1f} / {max(each):.1f})"


def ratios(members: list[Member]) -> str:
    """Every assistant row against its fair peer, round by round (CPU per tap)."""
    by_name = {m.name: m.rows for m in members}
    lines = header()
    for kit_name, peer in PAIRS:
        if kit_name not in by_name:  # a group not run (--groups)
            continue
        each = [
            p.cpu_seconds / p.taps / (k.cpu_seconds / k.taps)
            for k, p in zip(by_name[kit_name], by_name[peer], strict=True)
        ]
        lines.append(line(kit_name, peer, each))
    return "\n".join(lines)


def describe(calls: dict[str, list[Call]]) -> str:
    def one(call: Call) -> str:
        method, params = call
        size = sum(len(k) + len(v.encode()) for k, v in params.items())
        return f"{method} ({size} B)"

    titles = {"refused": "a refused tap", "decided": "a tap on a decided card", "confirm": "confirm and run"}
    return "\n".join(f"* {titles[kind]}: {', '.join(one(c) for c in made)}" for kind, made in calls.items())


async def main(taps: int, runs: int, rounds: int, sets: int, run_sets: int, kinds: list[str]) -> None:
    logging.basicConfig(level=logging.ERROR)
    cpus = pin_harness()
    started = time.perf_counter()
    members: list[Member] = []
    with tempfile.TemporaryDirectory() as tmp:
        got = await sample(Path(tmp))
        for kind, n, group in groups(got, taps, runs, run_sets, Path(tmp)):
            if kind in kinds:  # --groups
                await run_group(kind, group, n, rounds, Path(tmp), got, run_sets if kind == "confirm" else sets)
                members += group
    print(
        f"{rounds} rounds, each starting the apps of a group anew {sets} times in a row for a one-call row and "
        f"{run_sets} times for confirm and run (the round's taps shared among those sets of processes); every app "
        f"warmed up with {WARM_SLICES} slices not counted; "
        f"{WINDOW[0]} taps in flight at most and an app's turn; Python "
        f"{sys.version.split()[0]}, python-telegram-bot {ptb_version}; every app in a process of its own, {cpus}; "
        f"CPU is the app process's; {time.perf_counter() - started:.0f} s\n"
    )
    print(table(members))
    print(
        "\nEvery assistant row against its fair peer, round by round (CPU per tap of each app's own process; the "
        "apps took turns a slice at a time, in an order rotated every slice):\n"
    )
    print(ratios(members))
    print(
        "\nBot API calls the assistant made for one tap (recorded; replayed by the bare handlers, built for every tap "
        "by the fair peers; parameter bytes as sent):"
    )
    print(describe(got.calls))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--taps", type=int, default=400, help="taps a round of a one-call row (default 400)")
    parser.add_argument("--runs", type=int, default=300, help="taps a round of a confirm-and-run row (default 300)")
    parser.add_argument("--rounds", type=int, default=4, help="rounds of every group (default 4)")
    parser.add_argument(
        "--sets",
        type=int,
        default=SETS,
        help=f"sets of processes a round of a one-call row, each tapped for its share of --taps (default {SETS})",
    )
    parser.add_argument(
        "--run-sets",
        type=int,
        default=RUN_SETS,
        help=f"sets of processes a round of confirm and run, each tapped for its share of --runs (default {RUN_SETS})",
    )
    parser.add_argument(
        "--groups",
        default=",".join(KINDS),
        help=f"the groups to run, of {','.join(KINDS)} (default all)",
    )
    parser.add_argument(
        "--window",
        type=int,
        default=WINDOW[0],
        help=f"taps in flight at most, and taps of an app's turn (default {WINDOW[0]})",
    )
    args = parser.parse_args()
    if not 1 <= args.window <= min(args.taps, args.runs):
        parser.error("--window must be at least 1 and at most --taps and --runs")
    if args.rounds < 2:
        parser.error("--rounds must be at least 2: a spread needs two rounds")
    if not 1 <= args.sets <= args.taps // args.window or not 1 <= args.run_sets <= args.runs // args.window:
        parser.error("--sets and --run-sets must be at least 1 and leave every set at least one window of taps")
    kinds = args.groups.split(",")
    if not kinds or set(kinds) - set(KINDS):
        parser.error(f"--groups takes names of {','.join(KINDS)}, comma-separated; got {args.groups!r}")
    WINDOW[0] = args.window
    asyncio.run(main(args.taps, args.runs, args.rounds, args.sets, args.run_sets, kinds))
