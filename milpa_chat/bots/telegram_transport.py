"""``TelegramTransport``: the chat core's :class:`~milpa_chat.chat.inbound.Transport` over python-telegram-bot.

* ``send`` renders a :class:`~milpa_chat.renderers.model.Message` with the Telegram renderer (HTML parse
  mode). Long content becomes several messages (the buttons go on the last one, whose reference is
  returned); when something had to be shortened, a document with everything follows.
* ``edit`` replaces one message in place. Content that no longer fits one message is shortened, with the
  full content sent as a document. "Message is not modified" counts as success.
* ``answer`` answers the tapped button's callback query — each query once: a second answer for the same
  query is dropped, and the adapter answers every query the core leaves unanswered.
* ``typing`` sends the "typing" chat action.
* ``open_stream`` shows the agent's answer while it is produced: a draft (``sendMessageDraft``) in a
  private chat, then the final message; in a group, a message edited in place (see
  :mod:`milpa_chat.bots.telegram_stream` for the rates).

Flood control (``RetryAfter``) is waited out and the call retried, up to ``max_retries`` times.
"""

# ruff: noqa: E402  (the SDK is imported after the missing-extra check)
from __future__ import annotations

import asyncio
import json
import logging
import warnings
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any, TypeVar

from milpa_chat._extras import require

require("telegram", extra="telegram", feature="TelegramBot")

from telegram import (
    Bot,
    CallbackQuery,
    ForceReply,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    LinkPreviewOptions,
)
from telegram.constants import ChatAction
from telegram.error import BadRequest, RetryAfter
from telegram.warnings import PTBDeprecationWarning

from milpa_chat.chat.inbound import Inbound, MessageRef
from milpa_chat.chat.streaming import Stream
from milpa_chat.chat.surface import Surface, Traits
from milpa_chat.renderers.model import Document, Message
from milpa_chat.renderers.telegram import TelegramRenderer

__all__ = ["TelegramTransport"]

log = logging.getLogger("milpa_chat.bots.telegram")

#: Telegram shows at most 200 characters in a callback answer.
MAX_ANSWER_CHARS = 200
_NOT_MODIFIED = "message is not modified"
_TOO_OLD = "query is too old"
T = TypeVar("T")


class TelegramTransport(Surface):
    """Sends, edits and answers for the ``telegram`` surface through a PTB :class:`~telegram.Bot`; asks for typed
    replies (``ForceReply``)."""

    surface = "telegram"
    _traits = Traits(prompts=True, streams=True)

    def __init__(
        self,
        bot: Bot,
        *,
        renderer: TelegramRenderer | None = None,
        max_retries: int = 2,
        max_retry_wait: float = 30.0,
        remember_answers: int = 10_000,
    ) -> None:
        self.bot = bot
        self.renderer = renderer or TelegramRenderer()
        self._edit_renderer = TelegramRenderer(max_messages=1)
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self._remember = remember_answers
        self._answered: OrderedDict[str, None] = OrderedDict()
        self._post: Callable[[str, dict[str, Any]], Awaitable[Any]] | None = _raw_post(bot)

    @property
    def bot_username(self) -> str | None:
        """The bot's @username once the application is initialized (``/cmd@username`` routing)."""
        try:
            return self.bot.username
        except RuntimeError:  # not initialized yet
            return None

    @property
    def traits(self) -> Traits:
        """Prompts, and the bot's username once known (it never changes after that)."""
        if self._traits.bot_username is None:
            username = self.bot_username
            if username:
                self._traits = replace(self._traits, bot_username=username)
        return self._traits

    async def open_stream(self, inbound: Inbound) -> Stream | None:
        """A draft in a private chat (``sendMessageDraft``), an edited message in a group."""
        from milpa_chat.bots.telegram_stream import open_telegram_stream

        return open_telegram_stream(self.bot, self, inbound.chat_id)

    # --------------------------------------------------------------- Transport
    async def send(self, chat_id: str, message: Message) -> MessageRef:
        payload = self.renderer.render_message(message)
        sent: int | None = None
        for part in payload.messages:
            sent = await self._send_part(chat_id, part)
        assert sent is not None  # the renderer always produces at least one message
        if payload.document is not None:
            await self._send_document(chat_id, payload.document)
        return MessageRef(self.surface, chat_id, str(sent))

    async def edit(self, ref: MessageRef, message: Message) -> None:
        payload = self._edit_renderer.render_message(message)
        part = payload.messages[0]
        try:
            target = {"chat_id": ref.chat_id, "message_id": int(ref.message_id)}
            await self._message_call("editMessageText", target, part)
        except BadRequest as exc:
            if _NOT_MODIFIED not in exc.message.lower():
                raise
            return
        if payload.document is not None:
            await self._send_document(ref.chat_id, payload.document)

    async def answer(self, inbound: Inbound, text: str, *, alert: bool = False) -> None:
        query = inbound.raw
        if isinstance(query, CallbackQuery):
            await self.answer_query(query.id, text, alert=alert)
        elif text:  # not a button tap: the actor reads it in the chat
            await self.send(inbound.chat_id, _plain(text))

    async def typing(self, chat_id: str) -> None:
        await self.bot.send_chat_action(chat_id, ChatAction.TYPING)

    async def prompt(self, inbound: Inbound, text: str) -> MessageRef:
        """Ask ``inbound``'s person for a value: a message with ForceReply (their app opens a reply to it;
        in a group, addressed to them by name, ``selective``), answered by their next message."""
        who = inbound.user.display if inbound.chat_type != "private" else ""
        body = f"{who}: {text}" if who else text
        sent = await self._retrying(
            lambda: self.bot.send_message(
                inbound.chat_id,
                body[:4096],
                reply_markup=ForceReply(selective=True, input_field_placeholder="New value"),
            )
        )
        return MessageRef(self.surface, inbound.chat_id, str(sent.message_id))

    # --------------------------------------------------------------- queries
    def answered(self, query_id: str) -> bool:
        """Whether this callback query was answered (or is being answered) by this process."""
        return query_id in self._answered

    async def answer_query(self, query_id: str, text: str = "", *, alert: bool = False) -> bool:
        """Answer a callback query unless it was answered already; ``True`` if this call answered it.

        An answer Telegram refuses as too late is logged, not raised: the tap was handled anyway.
        """
        if query_id in self._answered:
            log.debug("callback query %s already answered; dropping %r", query_id, text)
            return False
        self._answered[query_id] = None  # before awaiting: concurrent answers see it at once
        while len(self._answered) > self._remember:
            self._answered.popitem(last=False)
        if len(text) > MAX_ANSWER_CHARS:
            text = text[: MAX_ANSWER_CHARS - 1] + "…"
        try:
            await self.bot.answer_callback_query(query_id, text or None, show_alert=alert and bool(text))
        except BadRequest as exc:
            if _TOO_OLD not in exc.message.lower():
                raise
            log.warning("callback query %s was answered too late (%s)", query_id, exc.message)
        return True

    # --------------------------------------------------------------- helpers
    async def _send_part(self, chat_id: str, part: dict[str, Any]) -> int:
        """Send one rendered message; its message id."""
        sent = await self._message_call("sendMessage", {"chat_id": chat_id}, part)
        return int(sent["message_id"] if isinstance(sent, dict) else sent.message_id)

    async def _message_call(self, method: str, target: dict[str, Any], part: dict[str, Any]) -> Any:
        """``sendMessage`` / ``editMessageText`` of a rendered message to ``target`` (with flood control).

        The kit reads at most the message id of what Telegram returns, so on PTB's own bot classes (no
        ``Defaults``, no arbitrary callback data, no subclass that may override the typed methods) the call goes
        through the bot's ``_post`` with the parameters the typed method sends, in its order: the same request,
        without building a ``Message`` from the answer (the JSON dict is returned). Any other bot: its typed
        method (a ``Message``)."""
        post = self._post
        if post is None:
            typed = self.bot.send_message if method == "sendMessage" else self.bot.edit_message_text
            kwargs = _kwargs(part)
            return await self._retrying(lambda: typed(**target, **kwargs))
        data = _wire(method, target, part)
        try:  # the first attempt awaited here, not through _retrying: one coroutine less to resume per step
            return await post(method, dict(data))  # _post changes the dict it is given
        except RetryAfter as exc:
            return await self._retrying(lambda: post(method, dict(data)), exc)

    async def _send_document(self, chat_id: str, document: Document) -> None:
        await self._retrying(
            lambda: self.bot.send_document(
                chat_id,
                document.content,
                filename=document.filename,
                caption="The full content, shortened in the message above.",
            )
        )

    async def _retrying(self, call: Callable[[], Awaitable[T]], failed: RetryAfter | None = None) -> T:
        """Run ``call``; on flood control wait the time Telegram asks (at most ``max_retry_wait``) and retry.
        ``failed``: the flood control a first attempt already met (the caller made it without this wrapper)."""
        attempt = 0
        while True:
            if failed is not None:
                attempt += 1
                wait = _retry_seconds(failed)
                if attempt > self.max_retries or wait > self.max_retry_wait:
                    raise failed
                log.warning("Telegram flood control: retrying in %.1f s", wait)
                await asyncio.sleep(wait)
            try:
                return await call()
            except RetryAfter as exc:
                failed = exc


def _retry_seconds(exc: RetryAfter) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value: int | timedelta = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def _raw_post(bot: Bot) -> Callable[[str, dict[str, Any]], Awaitable[Any]] | None:
    """``bot._post`` when ``bot`` is PTB's own ``Bot`` or ``ExtBot`` without ``Defaults`` or arbitrary callback
    data (whose typed message methods then only add parsing the answer into a ``Message``); else ``None``."""
    from telegram.ext import ExtBot

    if type(bot) not in (Bot, ExtBot):
        return None
    if getattr(bot, "defaults", None) is not None or getattr(bot, "callback_data_cache", None) is not None:
        return None
    post = getattr(bot, "_post", None)
    return post if callable(post) else None


def _kwargs(part: dict[str, Any]) -> dict[str, Any]:
    """A rendered message dict as ``send_message``/``edit_message_text`` keyword arguments."""
    kwargs: dict[str, Any] = {"text": part["text"], "parse_mode": part.get("parse_mode")}
    preview = part.get("link_preview_options")
    if preview is not None:
        kwargs["link_preview_options"] = _preview(preview)[0]
    markup = part.get("reply_markup")
    if markup and markup.get("inline_keyboard"):
        kwargs["reply_markup"] = _markup(markup["inline_keyboard"])[0]
    return kwargs


def _wire(method: str, target: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    """The parameters PTB's ``send_message`` / ``edit_message_text`` send for a rendered message, in their order;
    options and keyboards as the JSON text PTB makes of them (a string parameter is sent as it is)."""
    text = part["text"]
    data = {"text": text, **target} if method == "editMessageText" else {**target, "text": text}
    preview = part.get("link_preview_options")
    if preview is not None:
        data["link_preview_options"] = _preview(preview)[1]
    if part.get("parse_mode") is not None:
        data["parse_mode"] = part["parse_mode"]
    markup = part.get("reply_markup")
    if markup and markup.get("inline_keyboard"):
        data["reply_markup"] = _markup(markup["inline_keyboard"])[1]
    return data


#: PTB's objects are immutable (the bot copies one before filling in defaults), so one object (and the JSON text
#: PTB makes of it) serves every message that shows the same options or keyboard; at most this many of each kept.
_KEYBOARDS_KEPT = 256
_PREVIEWS: dict[tuple[tuple[str, Any], ...], tuple[LinkPreviewOptions, str]] = {}
_KEYBOARDS: OrderedDict[tuple[tuple[tuple[str, str, str | None], ...], ...], tuple[InlineKeyboardMarkup, str]] = (
    OrderedDict()
)


def _as_sent(obj: LinkPreviewOptions | InlineKeyboardMarkup) -> str:
    """The JSON text PTB sends for ``obj`` (``RequestParameter``: ``json.dumps`` of ``to_dict()``)."""
    return json.dumps(obj.to_dict())


def _preview(options: dict[str, Any]) -> tuple[LinkPreviewOptions, str]:
    key = tuple(options.items())
    try:
        found = _PREVIEWS.get(key)
    except TypeError:  # an unhashable option value: built every time
        built = LinkPreviewOptions(**options)
        return built, _as_sent(built)
    if found is None:
        built = LinkPreviewOptions(**options)
        found = (built, _as_sent(built))
        if len(_PREVIEWS) < _KEYBOARDS_KEPT:
            _PREVIEWS[key] = found
    return found


def _markup(keyboard: list[list[dict[str, str]]]) -> tuple[InlineKeyboardMarkup, str]:
    key = tuple(tuple((b["text"], b["callback_data"], b.get("style")) for b in row) for row in keyboard)
    found = _KEYBOARDS.get(key)
    if found is not None:
        _KEYBOARDS.move_to_end(key)
        return found
    built = InlineKeyboardMarkup(
        [[InlineKeyboardButton(text, callback_data=data, style=style) for text, data, style in row] for row in key]
    )
    found = _KEYBOARDS[key] = (built, _as_sent(built))
    while len(_KEYBOARDS) > _KEYBOARDS_KEPT:
        _KEYBOARDS.popitem(last=False)
    return found


def _plain(text: str) -> Message:
    from milpa_chat.chat.cards import text as text_card

    return text_card(text)
