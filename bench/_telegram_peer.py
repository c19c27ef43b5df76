"""A fair peer's book and messages (``bench/_telegram_app.py``'s "peer" app): what a bot written without the kit
keeps for its pending calls (``PendingBook``) and how it builds its Bot API calls for every tap (``PeerMessages``:
the wording learned from the assistant's recorded calls, every variable part formatted for the tap)."""

from __future__ import annotations

import hashlib
import html
import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from telegram import Bot, CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, LinkPreviewOptions
from telegram.request._requestparameter import RequestParameter

Call = tuple[str, dict[str, str]]  # a Bot API method and its parameters as sent


class PendingBook:
    """Where a bot written without the kit keeps its pending calls: a dict (beside the in-memory rows), or a
    table in the same SQLite file as the tool's store, in WAL mode with the same ``synchronous=FULL`` as the
    assistant's store (beside the SQLite rows): a card's call (who asked, by id and name, and the arguments) is
    written when the card is sent, claimed (compare-and-set on its state and requester, committed: on disk) when
    its requester taps Confirm, and its result written (committed) after the run."""

    def __init__(self, path: Path | None = None) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.conn: sqlite3.Connection | None = None
        if path is not None:
            self.conn = sqlite3.connect(path, isolation_level=None)
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = FULL")
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS bare_pending "
                "(id TEXT PRIMARY KEY, requester INTEGER, name TEXT, args TEXT, state TEXT, result TEXT)"
            )

    def add(self, key: str, requester: int, name: str, args: dict[str, Any], state: str = "pending") -> None:
        if self.conn is None:
            self.rows[key] = {"requester": requester, "name": name, "args": args, "state": state}
            return
        self.conn.execute(
            "INSERT OR REPLACE INTO bare_pending VALUES (?, ?, ?, ?, ?, NULL)",
            (key, requester, name, json.dumps(args), state),
        )

    def read(self, key: str) -> tuple[int, str, str] | None:
        """(requester, their name, state) of the call a card asks for."""
        if self.conn is None:
            row = self.rows.get(key)
            return (row["requester"], row["name"], row["state"]) if row else None
        found = self.conn.execute("SELECT requester, name, state FROM bare_pending WHERE id = ?", (key,)).fetchone()
        return (int(found[0]), str(found[1]), str(found[2])) if found else None

    def claim(self, key: str, user: int) -> tuple[str, dict[str, Any]] | None:
        """(the requester's name, the call's arguments), to exactly one tap of the requester (its state moves from
        pending to running); None to anyone else, or once claimed."""
        if self.conn is None:
            row = self.rows.get(key)
            if row is None or row["state"] != "pending" or row["requester"] != user:
                return None
            row["state"] = "running"
            return row["name"], dict(row["args"])
        found = self.conn.execute(
            "UPDATE bare_pending SET state = 'running' WHERE id = ? AND state = 'pending' AND requester = ? "
            "RETURNING name, args",
            (key, user),
        ).fetchone()
        return (str(found[0]), json.loads(found[1])) if found else None

    def finish(self, key: str, result: dict[str, Any]) -> None:
        if self.conn is None:
            self.rows[key].update(state="done", result=result)
            return
        self.conn.execute("UPDATE bare_pending SET state = 'done', result = ? WHERE id = ?", (json.dumps(result), key))


@dataclass(slots=True)
class Tapped:
    """What a fair peer knows when it answers a tap: the call from its book, who tapped, when, and (after the
    run) the tool's result (``message`` and ``data``)."""

    requester: int
    name: str
    args: dict[str, Any]
    by: str
    at: str
    result: dict[str, Any] | None = None


def _digest(args: dict[str, Any]) -> str:
    """The arguments' digest the card shows, so that what runs can be checked against what was shown."""
    return hashlib.sha256(json.dumps(args, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


def _result_of(t: Tapped) -> dict[str, Any]:
    assert t.result is not None, "the result is formatted after the run"
    return t.result


Escape = Callable[[str], str]
#: How a fair peer formats each variable part of its messages from a tap (``esc`` escapes for the call's parse mode)
FORMATS: dict[str, Callable[[Tapped, Escape], str]] = {
    "requester_name": lambda t, esc: esc(t.name),
    "requester": lambda t, esc: f"{esc(t.name)} (telegram:{t.requester})",
    "digest": lambda t, esc: _digest(t.args)[:16],
    "arguments": lambda t, esc: esc(json.dumps(t.args, indent=2, ensure_ascii=False)),
    "by": lambda t, esc: esc(t.by),
    "at": lambda t, esc: t.at,
    "outcome": lambda t, esc: esc(_result_of(t)["message"]),
    "fields": lambda t, esc: "\n".join(
        f"<b>{esc(key.capitalize())}:</b> {esc(str(value))}" for key, value in _result_of(t)["data"].items()
    ),
}
#: The variable parts of each of the peer's texts, by kind of tap and method (the rest is its fixed wording)
FIELDS: dict[str, dict[str, tuple[str, ...]]] = {
    "refused": {"answerCallbackQuery": ("requester_name",)},
    "decided": {"answerCallbackQuery": ()},
    "confirm": {
        "answerCallbackQuery": (),
        "editMessageText": ("requester", "digest", "arguments", "by", "at", "outcome"),
        "sendMessage": ("outcome", "fields"),
    },
}
TIME_FORMAT = "%Y-%m-%d %H:%M UTC"  # the decision's time on the decided card
TIME_SEEN = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC")
PER_TAP = frozenset({"callback_query_id", "chat_id", "message_id"})  # the tap's, not the message's


def _plain(text: str) -> str:
    return text


def _html(text: str) -> str:
    return html.escape(text, quote=False)  # what Telegram's HTML parse mode needs: & < >


@dataclass(frozen=True)
class PeerCall:
    """One Bot API call a fair peer makes for a tap, and how it builds it: the text joined from its fixed wording
    and the fields formatted for the tap, and the other parameters as PTB objects made for the tap."""

    method: str
    parts: tuple[tuple[str, bool], ...]  # (wording, False) or (field, True), in order
    esc: Escape
    parse_mode: str | None
    show_alert: bool | None
    preview: dict[str, Any] | None  # LinkPreviewOptions' arguments
    keyboard: tuple[tuple[dict[str, Any], ...], ...] | None  # InlineKeyboardButton's arguments, row by row
    action: str | None  # sendChatAction's

    @classmethod
    def learn(cls, kind: str, call: Call, sample: Tapped) -> PeerCall:
        """The call the assistant made for the sample tap, its variable parts (``FIELDS``) found where the peer's
        own formatting of the sample puts them; a clear error if the assistant's wording no longer shows one."""
        method, params = call
        fields = FIELDS[kind].get(method)
        if fields is None:
            raise ValueError(f"the assistant now calls {method} for a {kind} tap; teach PeerMessages that call too")
        esc = _html if params.get("parse_mode") == "HTML" else _plain
        parts: list[tuple[str, bool]] = [(params.get("text", ""), False)]
        for name in sorted(fields, key=lambda f: -len(FORMATS[f](sample, esc))):  # the longest first
            value = FORMATS[name](sample, esc)
            if not value or not any(value in text for text, is_field in parts if not is_field):
                raise ValueError(
                    f"the assistant's {method} for a {kind} tap no longer shows its {name} as the fair peer formats "
                    f"it ({value!r}) in {params.get('text')!r}: its wording changed; update FORMATS and FIELDS in "
                    "bench/_telegram_peer.py"
                )
            parts = [
                piece
                for text, is_field in parts
                for piece in (
                    [(text, True)]
                    if is_field
                    else [
                        p for i, t in enumerate(text.split(value)) for p in ([(name, True)] if i else []) + [(t, False)]
                    ]
                )
            ]
        markup = json.loads(params["reply_markup"]) if "reply_markup" in params else None
        return cls(
            method,
            tuple(p for p in parts if p[1] or p[0]),
            esc,
            params.get("parse_mode"),
            params["show_alert"] == "true" if "show_alert" in params else None,
            json.loads(params["link_preview_options"]) if "link_preview_options" in params else None,
            tuple(tuple(row) for row in markup["inline_keyboard"]) if markup is not None else None,
            params.get("action"),
        )

    def build(self, t: Tapped) -> dict[str, Any]:
        """The call's parameters for this tap (less the chat, message and query: the tap's)."""
        esc = self.esc
        params: dict[str, Any] = {}
        if self.parts:
            params["text"] = "".join(FORMATS[p](t, esc) if is_field else p for p, is_field in self.parts)
        if self.method == "answerCallbackQuery":
            params["show_alert"] = self.show_alert
        elif self.method == "sendChatAction":
            params["action"] = self.action
        else:
            params["parse_mode"] = self.parse_mode
            if self.preview is not None:
                params["link_preview_options"] = LinkPreviewOptions(**self.preview)
            if self.keyboard is not None:
                params["reply_markup"] = InlineKeyboardMarkup(
                    [[InlineKeyboardButton(**button) for button in row] for row in self.keyboard]
                )
        return params

    async def send(self, bot: Bot, query: CallbackQuery, t: Tapped) -> None:
        params = self.build(t)
        message = query.message
        assert message is not None
        if self.method == "answerCallbackQuery":
            await query.answer(**params)
        elif self.method == "editMessageText":
            await bot.edit_message_text(chat_id=message.chat.id, message_id=message.message_id, **params)
        elif self.method == "sendMessage":
            await bot.send_message(message.chat.id, **params)
        else:
            await bot.send_chat_action(message.chat.id, **params)

    def check(self, call: Call, sample: Tapped) -> None:
        """That this call, built for the sample tap, is what the assistant sent: the same method and parameters,
        byte for byte as PTB serializes them (a JSON object: the same value and size)."""
        method, recorded = call
        want = {k: v for k, v in recorded.items() if k not in PER_TAP}
        built = {
            k: RequestParameter.from_input(k, v).json_value for k, v in self.build(sample).items() if v is not None
        }
        for key in sorted(want.keys() | built.keys()):
            mine, theirs = built.get(key), want.get(key)
            if mine == theirs or (
                mine is not None
                and theirs is not None
                and len(mine) == len(theirs)
                and theirs.startswith(("{", "["))
                and json.loads(mine) == json.loads(theirs)
            ):
                continue
            raise RuntimeError(
                f"the fair peer's {method} for the sample tap differs from the assistant's in {key}: "
                f"{mine!r} != {theirs!r}; update FORMATS and FIELDS in bench/_telegram_peer.py"
            )


@dataclass
class PeerMessages:
    """A fair peer's messages for every kind of tap, learned from the assistant's recorded calls (which calls,
    which parameters, the fixed wording) and checked at start-up: each built for the sample tap equals the
    recorded one. Per tap the peer formats every variable part itself (``FORMATS``: the requester's name, the
    arguments' digest and JSON, who tapped, the time, the tool's outcome and the result's fields, escaped with
    ``html.escape`` in HTML texts), joins it with the wording, and makes the PTB objects (link preview options,
    keyboards) the call has."""

    calls: dict[str, list[PeerCall]] = field(default_factory=dict)

    @classmethod
    def learn(cls, recorded: dict[str, list[Call]], sample: Tapped) -> PeerMessages:
        sample.at = next(
            (m.group() for _, params in recorded["confirm"] for m in [TIME_SEEN.search(params.get("text", ""))] if m),
            "",
        )
        messages = cls(
            {kind: [PeerCall.learn(kind, call, sample) for call in calls] for kind, calls in recorded.items()}
        )
        for kind, calls in recorded.items():
            if calls[0][0] != "answerCallbackQuery":
                raise ValueError(f"the assistant no longer answers a {kind} tap first; teach the fair peer that")
            for peer_call, call in zip(messages.calls[kind], calls, strict=True):
                peer_call.check(call, sample)
        return messages
