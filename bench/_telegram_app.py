"""The app process of ``bench/telegram.py``: the assistant (``TelegramBot``) or a bare PTB handler, polling a
local Bot API server that lives in the harness's process. Run by the harness as
``python -m bench._telegram_app CONFIG_JSON``; it answers on stdin/stdout (``bench/_apps.py``).

Config keys: ``app`` ("kit" or "bare"), ``token``, ``base_url``, ``base_file_url``, ``store`` ("memory", a SQLite
path, or null), ``notes`` (notes 100.. inserted into the store before start), ``poll_timeout``; for "bare":
``calls`` (the Bot API calls replayed for every tap), ``like`` (the card copied), ``cards`` (copies sent),
``book`` (null, "memory" or a SQLite path: a fair peer's pending calls), ``confirm`` (the peer claims the call,
runs the tool and stores the result before the calls).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from telegram import Bot, CallbackQuery, InlineKeyboardMarkup, LinkPreviewOptions, Update
from telegram.ext import Application, CallbackQueryHandler, ContextTypes

from bench._apps import serve_control
from milpa_chat import ToolRegistry
from milpa_chat.chat import Assistant, Identities
from milpa_chat.examples import ExampleTools
from milpa_chat.store import MemoryStore, Store
from milpa_chat.store.sqlite import SqliteStore

ALICE_ID = 1001
IDENTITIES = {"users": {"telegram:1001": ["notes:read", "notes:write"], "telegram:1002": ["notes:read"]}}
Call = tuple[str, dict[str, str]]  # a Bot API method and its parameters as sent


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
    table in the same SQLite file as the tool's store, in WAL mode with the same ``synchronous=FULL`` as the
    assistant's store (beside the SQLite rows): a card's call is written when the card is sent, claimed
    (compare-and-set on its state, committed: on disk) when Confirm is tapped, and its result written
    (committed) after the run."""

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


def card_key(query: CallbackQuery) -> str:
    assert query.message is not None
    return f"{query.message.chat.id}:{query.message.message_id}"


def open_store(where: str | None) -> Store | None:
    if where is None:
        return None
    return MemoryStore() if where == "memory" else SqliteStore(Path(where))  # SQLite: synchronous=FULL


async def add_notes(store: Store | None, count: int) -> None:
    for number in range(100, 100 + count):
        assert store is not None
        await store.insert("notes", f"{number:08d}", {"id": number, "text": f"note {number}"})


async def bare(config: dict[str, Any], stopped: asyncio.Event) -> None:
    """A bare handler: it replays the calls for every tap on a copy of the card (same HTML and keyboard, so
    PTB and the server parse and serialize updates of the same size as in the assistant's rows). With a book
    (a fair peer) it first does what a bot without the kit does for that tap: looks up the call the card asks
    for (who asked, whether it is still pending); with ``confirm`` it claims the call in the book, runs the same
    tool function on the store (``ExampleTools.delete_note``) and writes the result to the book."""
    store = open_store(config["store"])
    await add_notes(store, config["notes"])
    book = None if config["book"] is None else PendingBook(None if config["book"] == "memory" else Path(config["book"]))
    tools = ExampleTools(store) if config["confirm"] and store is not None else None
    replay: list[Replay] = []

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
        .token(config["token"])
        .base_url(config["base_url"])
        .base_file_url(config["base_file_url"])
        .concurrent_updates(True)
        .build()
    )
    app.add_handler(CallbackQueryHandler(on_button))
    replay.append(Replay(app.bot, [(m, p) for m, p in config["calls"]]))
    like = config["like"]
    keyboard = InlineKeyboardMarkup.de_json(like["reply_markup"], app.bot) if like["reply_markup"] else None
    async with app:
        cards = []
        for number in range(100, 100 + config["cards"]):
            message = await app.bot.send_message(
                ALICE_ID, like["source"], parse_mode=like["parse_mode"], reply_markup=keyboard
            )
            cards.append(message.message_id)
            if book is not None:
                book.add(f"{message.chat.id}:{message.message_id}", ALICE_ID, {"note_id": number})
        await app.start()
        assert app.updater is not None
        await app.updater.start_polling(timeout=config["poll_timeout"])
        serve_control(json.dumps({"cards": cards}))
        await stopped.wait()


async def kit(config: dict[str, Any], stopped: asyncio.Event) -> None:
    """The assistant over the example tools, on the store."""
    from milpa_chat.bots.telegram import TelegramBot

    store = open_store(config["store"])
    assert store is not None
    await add_notes(store, config["notes"])
    registry = ToolRegistry(store=store, approval_max_pending=None)  # a row opens many cards for one user
    registry.scan(ExampleTools(store))
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES))
    bot = TelegramBot(assistant, config["token"], config["base_url"], sweep_interval=None)
    await bot.start(poll_timeout=config["poll_timeout"])
    serve_control(json.dumps({"cards": []}))
    await stopped.wait()


async def main(config: dict[str, Any]) -> None:
    logging.basicConfig(level=logging.ERROR)
    await (kit if config["app"] == "kit" else bare)(config, asyncio.Event())  # runs until the harness is done


if __name__ == "__main__":
    asyncio.run(main(json.loads(Path(sys.argv[1]).read_text())))
