"""The app process of ``bench/telegram.py``: the assistant (``TelegramBot``), a bare PTB handler, or a fair peer
(a bot written without the kit), polling a local Bot API server that lives in the harness's process. Run by the
harness as ``python -m bench._telegram_app CONFIG_JSON``; it answers on stdin/stdout (``bench/_apps.py``).

Config keys: ``app`` ("kit", "bare" or "peer"), ``token``, ``base_url``, ``base_file_url``, ``store`` ("memory",
a SQLite path, or null), ``notes`` (notes 100.. inserted into the store before start), ``poll_timeout``; for
"bare" and "peer": ``calls`` (the assistant's recorded Bot API calls for the row's kind of tap: replayed for
every tap by "bare"), ``like`` (the card copied), ``cards`` (copies sent); for "peer": ``kind`` ("refused",
"decided" or "confirm"), ``learn`` (the assistant's recorded calls of every kind of tap: what the peer learns
its wording from, see ``PeerMessages``), ``sample`` (the arguments of the recorded confirm, Alice's own
``delete_note`` card), ``book`` ("memory" or a SQLite path: the peer's pending calls).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from telegram import Bot, CallbackQuery, InlineKeyboardMarkup, LinkPreviewOptions, Update
from telegram.ext import Application, CallbackQueryHandler, ContextTypes

from bench._apps import serve_control
from bench._telegram_peer import TIME_FORMAT, PeerMessages, PendingBook, Tapped
from milpa_chat import ToolRegistry
from milpa_chat.chat import Assistant, Identities
from milpa_chat.examples import ExampleTools
from milpa_chat.store import MemoryStore, Store
from milpa_chat.store.sqlite import SqliteStore

ALICE_ID, ALICE_NAME = 1001, "Alice"
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


def application(config: dict[str, Any], handler: Callable[[Update, ContextTypes.DEFAULT_TYPE], Awaitable[None]]) -> Any:
    app = (
        Application.builder()
        .token(config["token"])
        .base_url(config["base_url"])
        .base_file_url(config["base_file_url"])
        .concurrent_updates(True)
        .build()
    )
    app.add_handler(CallbackQueryHandler(handler))
    return app


async def serve(app: Any, config: dict[str, Any], stopped: asyncio.Event, sent: Callable[[int, int], None]) -> None:
    """Send ``cards`` copies of the card (``sent(note, message_id)`` for each), poll, and wait until the end."""
    like = config["like"]
    keyboard = InlineKeyboardMarkup.de_json(like["reply_markup"], app.bot) if like["reply_markup"] else None
    async with app:
        cards = []
        for number in range(100, 100 + config["cards"]):
            message = await app.bot.send_message(
                ALICE_ID, like["source"], parse_mode=like["parse_mode"], reply_markup=keyboard
            )
            cards.append(message.message_id)
            sent(number, message.message_id)
        await app.start()
        assert app.updater is not None
        await app.updater.start_polling(timeout=config["poll_timeout"])
        serve_control(json.dumps({"cards": cards}))
        await stopped.wait()


async def bare(config: dict[str, Any], stopped: asyncio.Event) -> None:
    """A bare handler: it replays the calls for every tap on a copy of the card (same HTML and keyboard, so
    PTB and the server parse and serialize updates of the same size as in the assistant's rows)."""
    replay: list[Replay] = []

    async def on_button(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.callback_query is not None
        await replay[0](update.callback_query)

    app = application(config, on_button)
    replay.append(Replay(app.bot, [(m, p) for m, p in config["calls"]]))
    await serve(app, config, stopped, lambda number, message_id: None)


async def peer(config: dict[str, Any], stopped: asyncio.Event) -> None:
    """A fair peer: what a bot written without the kit does for a tap on a copy of the card, with its own pending
    calls (``PendingBook``: Alice's ``delete_note`` of the card's note, pending, or done for the "decided" kind)
    and its own messages (``PeerMessages``). For every tap it looks the call up in its book and answers from it:
    "refused" and "decided" read the call (requester, name, state) and answer with an alert formatted for the tap
    (someone else tapped a pending card: who may confirm it; a decided card: that it is done). "confirm" claims
    the call for the tapping requester (a compare-and-set), runs the same tool function on the store
    (``ExampleTools.delete_note``), writes the result to the book, then answers, edits the card to the decided
    card (the requester, the arguments' digest and JSON, who confirmed it and when, the outcome) and sends the
    result (the outcome and the result's fields), all formatted for the tap."""
    kind = config["kind"]
    store = open_store(config["store"])
    await add_notes(store, config["notes"])
    book = PendingBook(None if config["book"] == "memory" else Path(config["book"]))
    tools = ExampleTools(store) if store is not None else None
    args = config["sample"]
    scratch = MemoryStore()  # the sample's result, from the same tool on a note like the sample's
    await scratch.insert("notes", f"{args['note_id']:08d}", {"id": args["note_id"], "text": f"note {args['note_id']}"})
    done = await ExampleTools(scratch).delete_note(**args)
    sample = Tapped(ALICE_ID, ALICE_NAME, args, ALICE_NAME, "", {"message": done.message, "data": done.data})
    messages = PeerMessages.learn({k: [(m, p) for m, p in calls] for k, calls in config["learn"].items()}, sample)
    refused, decided, confirm = (messages.calls[k] for k in ("refused", "decided", "confirm"))

    async def explain(query: CallbackQuery, key: str) -> None:
        found = book.read(key)
        assert found is not None, f"no call for the card {key}"
        requester, name, state = found
        tapped = Tapped(requester, name, {}, query.from_user.first_name, "")
        for call in refused if state == "pending" and query.from_user.id != requester else decided:
            await call.send(app.bot, query, tapped)

    async def on_button(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        query = update.callback_query
        assert query is not None
        key = card_key(query)
        if kind != "confirm":
            await explain(query, key)
            return
        claimed = book.claim(key, query.from_user.id)
        if claimed is None:
            await explain(query, key)
            return
        assert tools is not None
        name, call_args = claimed
        result = await tools.delete_note(**call_args)
        done = {"success": result.success, "data": result.data, "message": result.message}
        book.finish(key, done)
        at = datetime.now(UTC).strftime(TIME_FORMAT)
        tapped = Tapped(query.from_user.id, name, call_args, query.from_user.first_name, at, done)
        for call in confirm:
            await call.send(app.bot, query, tapped)

    state = "done" if kind == "decided" else "pending"

    def sent(note: int, message_id: int) -> None:  # Alice's delete_note of the card's note
        book.add(f"{ALICE_ID}:{message_id}", ALICE_ID, ALICE_NAME, {"note_id": note}, state)

    app = application(config, on_button)
    await serve(app, config, stopped, sent)


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
    await {"kit": kit, "bare": bare, "peer": peer}[config["app"]](
        config, asyncio.Event()
    )  # runs until the harness is done


if __name__ == "__main__":
    asyncio.run(main(json.loads(Path(sys.argv[1]).read_text())))
