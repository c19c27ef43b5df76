"""A local Telegram Bot API server for tests: python-telegram-bot (or any client) runs against it unmodified.

::

    async with BotApiServer() as server:
        app = (Application.builder().token(server.token).base_url(server.base_url)
               .base_file_url(server.base_file_url).build())
        ...
        alice = TelegramUser(42, "Alice", "alice")
        await server.send_message(alice.id, alice, "/start")
        reply = await server.wait_for_message(alice.id)
        await server.tap_button(reply, "Approve", alice)

The server speaks the real HTTP protocol on 127.0.0.1, validates requests the way Telegram does
(HTML entities, text length, inline keyboards, callback data) and answers with Telegram's error
texts and status codes. See ``docs/testing.md`` for the full guide.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterable
from typing import Any

from aiohttp import web

from milpa_chat.testing._server import LocalServer
from milpa_chat.testing.telegram.methods import BotState
from milpa_chat.testing.telegram.models import (
    TelegramApiCall,
    TelegramCallbackQuery,
    TelegramChat,
    TelegramChatAction,
    TelegramDraft,
    TelegramMessage,
    TelegramMessageVersion,
    TelegramUpdate,
    TelegramUser,
    TelegramWebhookDelivery,
)
from milpa_chat.testing.telegram.updates import Answer, UpdateFeed, WebhookConfig
from milpa_chat.testing.telegram.validate import ApiError, Params
from milpa_chat.testing.telegram.waiting import WaitingMixin

__all__ = ["BotApiServer"]

_TOKEN = re.compile(r"\d+:[A-Za-z0-9_-]+")
_COMMAND = re.compile(r"(?<!\S)/[A-Za-z0-9_]{1,32}(?:@[A-Za-z0-9_]{3,32})?(?![A-Za-z0-9_@])")
_FEED_METHODS = frozenset({"getupdates", "setwebhook", "deletewebhook", "getwebhookinfo"})
#: What counts against a group's message limit (``group_rate``).
_GROUP_LIMITED = frozenset({"sendmessage", "senddocument", "editmessagetext", "editmessagereplymarkup"})


class BotApiServer(WaitingMixin, LocalServer):
    """An aiohttp Bot API server on ``host:port`` (a free port by default) for one bot token.

    Use it as ``async with BotApiServer(token=...) as server:`` and build the bot with
    ``base_url=server.base_url`` and ``base_file_url=server.base_file_url``.

    ``group_rate``: Telegram's flood control in groups, strictly — at most this many messages sent or
    edited in one group per minute (Telegram's FAQ says 20); one more is answered 429 ``Too Many
    Requests: retry after N`` until the oldest leaves the minute. ``None`` (the default): no limit.
    """

    def __init__(
        self,
        token: str = "123456:TEST-token",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        bot_first_name: str = "Test Bot",
        bot_username: str = "milpa_test_bot",
        callback_query_timeout: float = 15.0,
        webhook_timeout: float = 10.0,
        group_rate: int | None = None,
    ) -> None:
        if not _TOKEN.fullmatch(token):
            raise ValueError(f"{token!r} is not shaped like a bot token ('<bot id>:<secret>')")
        super().__init__(host=host, port=port)
        self.token = token
        self.bot = TelegramUser(int(token.split(":")[0]), bot_first_name, bot_username, is_bot=True)
        self.state = BotState(self.bot, callback_query_timeout=callback_query_timeout)
        self.calls: list[TelegramApiCall] = []
        self._handlers = self.state.handlers()
        self._webhook_timeout = webhook_timeout
        self._feed: UpdateFeed | None = None
        self._armed: list[tuple[str | None, ApiError, list[int]]] = []
        self._slowed: list[tuple[str, float, list[int]]] = []
        self._callback_ids = 0
        self.group_rate = group_rate
        self._group_sent: dict[int, list[float]] = {}
        #: Every answer 429 the group limit gave, as ``(method, chat id)``.
        self.flood_refusals: list[tuple[str, int]] = []

    # -- lifecycle (start/stop, ``async with``/``with``, host/port/url: LocalServer) --------------

    def _routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/bot{token}/{method}", self._handle_api)
        app.router.add_get("/file/bot{token}/{path:.+}", self._handle_file)

    async def _on_start(self) -> None:
        self._feed = UpdateFeed(webhook_timeout=self._webhook_timeout)

    async def _on_stop(self) -> None:
        if self._feed is not None:
            await self._feed.close()

    @property
    def base_url(self) -> str:
        """For ``Application.builder().base_url(...)``: requests go to ``base_url + token + "/" + method``."""
        return f"{self.url}/bot"

    @property
    def base_file_url(self) -> str:
        """For ``Application.builder().base_file_url(...)`` (downloads of files the bot uploaded)."""
        return f"{self.url}/file/bot"

    @property
    def feed(self) -> UpdateFeed:
        if self._feed is None:
            raise RuntimeError("the server is not started: use 'async with BotApiServer() as server:'")
        return self._feed

    # -- HTTP -----------------------------------------------------------------------------------

    async def _handle_api(self, request: web.Request) -> web.Response:
        params = await _read_params(request)
        method = request.match_info["method"]
        call = TelegramApiCall(method, dict(params.values), {k: (v[0], v[2]) for k, v in params.files.items()},
                       time.monotonic())  # fmt: skip
        self.calls.append(call)
        self._touch()
        try:
            answer = await self._dispatch(request.match_info["token"], method.lower(), params)
        except ApiError as exc:
            call.status, call.error = exc.status, exc.description
            self._touch()
            return web.json_response(exc.to_dict(), status=exc.status)
        body: dict[str, Any] = {"ok": True, "result": answer}
        if isinstance(answer, Answer):
            body = {"ok": True, "result": answer.result, "description": answer.description}
        call.status, call.result = 200, body["result"]
        self._touch()
        return web.json_response(body)

    async def _dispatch(self, token: str, method: str, params: Params) -> Any:
        if not _TOKEN.fullmatch(token):
            raise ApiError(404, "Not Found")
        if token != self.token:
            raise ApiError(401, "Unauthorized")
        self._raise_armed(method)
        if method in _FEED_METHODS:
            if method == "getupdates":
                return await self.feed.get_updates(params)
            if method == "getwebhookinfo":
                return self.feed.webhook_info()
            return await self.feed.set_webhook(params, method=method)
        handler = self._handlers.get(method)
        if handler is None:
            raise ApiError(404, "Not Found")
        self._group_limit(method, params)
        answer = handler(params)
        await self._slow_down(method)
        return answer

    def _group_limit(self, method: str, params: Params) -> None:
        if self.group_rate is None or method not in _GROUP_LIMITED:
            return
        chat_id = params.integer("chat_id")
        if chat_id >= 0:
            return
        now = time.monotonic()
        sent = [t for t in self._group_sent.get(chat_id, []) if now - t < 60.0]
        if len(sent) >= self.group_rate:
            wait = max(1, int(60.0 - (now - sent[0])) + 1)
            self.flood_refusals.append((method, chat_id))
            raise ApiError(429, f"Too Many Requests: retry after {wait}", {"retry_after": wait})
        self._group_sent[chat_id] = [*sent, now]

    async def _handle_file(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != self.token:
            return web.json_response(ApiError(401, "Unauthorized").to_dict(), status=401)
        for file in self.state.files.values():
            if file.file_path == request.match_info["path"]:
                return web.Response(body=file.content, content_type=file.mime_type or "application/octet-stream")
        return web.json_response(ApiError(404, "Not Found").to_dict(), status=404)

    # -- injected failures ------------------------------------------------------------------------

    def arm_error(
        self,
        method: str | None,
        status: int,
        description: str,
        *,
        parameters: dict[str, Any] | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` calls of ``method`` (any method when None) with this error,
        e.g. ``arm_error("sendMessage", 403, "Forbidden: bot was blocked by the user")``."""
        self._armed.append((method.lower() if method else None, ApiError(status, description, parameters), [times]))

    def arm_flood_control(self, retry_after: int = 3, *, method: str | None = "sendMessage", times: int = 1) -> None:
        """Telegram's flood control: 429 ``Too Many Requests: retry after N`` with
        ``parameters.retry_after`` (python-telegram-bot raises ``RetryAfter``)."""
        self.arm_error(method, 429, f"Too Many Requests: retry after {retry_after}",
                       parameters={"retry_after": retry_after}, times=times)  # fmt: skip

    def arm_latency(self, method: str, seconds: float, *, times: int = 1) -> None:
        """Answer the next ``times`` calls of ``method`` only after ``seconds`` (a slow platform: the call
        is handled, then answered late), e.g. ``arm_latency("editMessageText", 1.0)``."""
        if seconds < 0 or times < 1:
            raise ValueError(f"arm_latency needs seconds >= 0 and times >= 1, got {seconds} and {times}")
        self._slowed.append((method.lower(), seconds, [times]))

    async def _slow_down(self, method: str) -> None:
        for index, (slowed, seconds, left) in enumerate(self._slowed):
            if slowed == method:
                left[0] -= 1
                if left[0] <= 0:
                    del self._slowed[index]
                await asyncio.sleep(seconds)
                return

    def _raise_armed(self, method: str) -> None:
        for index, (armed_method, error, left) in enumerate(self._armed):
            if armed_method == method or (armed_method is None and method not in ("getupdates", "getme")):
                left[0] -= 1
                if left[0] <= 0:
                    del self._armed[index]
                raise error

    # -- chats and users --------------------------------------------------------------------------

    def add_chat(
        self, chat: TelegramChat, *, members: Iterable[TelegramUser] = (), admins: Iterable[TelegramUser] = ()
    ) -> TelegramChat:
        """Make a chat known to the server (the bot can only write to known chats)."""
        return self.state.add_chat(chat, members, admins)

    def private_chat(self, user: TelegramUser) -> TelegramChat:
        """The private chat of ``user`` with the bot, registered."""
        return self.state.add_chat(TelegramChat.private(user), [user])

    def group(
        self,
        chat_id: int,
        title: str,
        *,
        members: Iterable[TelegramUser] = (),
        admins: Iterable[TelegramUser] = (),
        supergroup: bool = False,
    ) -> TelegramChat:
        """A group (negative ``chat_id``) the bot is in, with these members, registered."""
        return self.state.add_chat(TelegramChat.group(chat_id, title, supergroup=supergroup), members, admins)

    def _resolve_chat(self, chat: int | TelegramChat, user: TelegramUser) -> TelegramChat:
        if isinstance(chat, TelegramChat):
            resolved = self.state.add_chat(chat, [user])
        elif chat in self.state.chats:
            resolved = self.state.chats[chat]
        elif chat == user.id:
            resolved = self.private_chat(user)
        else:
            raise ValueError(f"unknown chat {chat}: register it first with server.group(...) or server.add_chat(...)")
        self.state.users[user.id] = user
        self.state.members.setdefault(resolved.id, {}).setdefault(user.id, "member")
        return resolved

    # -- what the bot did ------------------------------------------------------------------------

    @property
    def updates(self) -> list[TelegramUpdate]:
        """Every update created so far, in order."""
        return list(self.feed.history)

    @property
    def webhook(self) -> WebhookConfig | None:
        return self.feed.webhook

    @property
    def callback_queries(self) -> list[TelegramCallbackQuery]:
        return list(self.state.callback_queries.values())

    def callback_query(self, update: TelegramUpdate) -> TelegramCallbackQuery:
        """The button tap created by ``update`` (from :meth:`tap`)."""
        return self.state.callback_queries[update.payload["callback_query"]["id"]]

    def chat_actions(self, chat_id: int | None = None) -> list[TelegramChatAction]:
        return [a for a in self.state.chat_actions if chat_id is None or a.chat_id == chat_id]

    def drafts(self, chat_id: int | None = None) -> list[TelegramDraft]:
        """Every ``sendMessageDraft`` update (of ``chat_id``), in the order the bot sent them."""
        return [d for d in self.state.drafts if chat_id is None or d.chat_id == chat_id]

    def messages(self, chat_id: int, *, include_user_messages: bool = False) -> list[TelegramMessage]:
        """The chat's messages that were not deleted, oldest first: the bot's, and the users'
        ones too with ``include_user_messages=True``."""
        return [m for m in self.state.chat_messages(chat_id) if include_user_messages or m.from_bot]

    def last_message(self, chat_id: int) -> TelegramMessage:
        """The bot's latest message in the chat; ``LookupError`` if it sent none."""
        messages = self.messages(chat_id)
        if not messages:
            raise LookupError(f"the bot has sent no message to chat {chat_id}")
        return messages[-1]

    def message(self, chat_id: int, message_id: int) -> TelegramMessage:
        """Any message by id, deleted ones included (``.deleted`` tells)."""
        return self.state.messages[(chat_id, message_id)]

    def commands(self, *, scope: dict[str, Any] | None = None, language_code: str = "") -> list[dict[str, str]]:
        """The bot's commands set with ``setMyCommands`` for that scope and language."""
        key = (json.dumps(scope or {"type": "default"}, sort_keys=True), language_code)
        return list(self.state.commands.get(key, []))

    # -- simulating users ------------------------------------------------------------------------

    async def send_message(
        self,
        chat: int | TelegramChat,
        user: TelegramUser,
        text: str,
        *,
        entities: list[dict[str, Any]] | None = None,
        reply_to: TelegramMessage | None = None,
    ) -> TelegramUpdate:
        """``user`` writes ``text`` in ``chat``; the bot receives a ``message`` update. Commands
        (``/start``, ``/help@bot``) get ``bot_command`` entities, offsets in UTF-16 units."""
        resolved = self._resolve_chat(chat, user)
        found = _command_entities(text) if entities is None else entities
        version = TelegramMessageVersion(text, tuple(found), None, text, None, time.monotonic())
        reply_id = reply_to.message_id if reply_to is not None else None
        message = self.state.add_message(resolved, user, version, reply_to=reply_id)
        payload = message.to_dict()
        if reply_to is not None:
            payload["reply_to_message"] = reply_to.to_dict()
        return await self._push({"message": payload})

    async def tap(
        self,
        chat_id: int,
        message_id: int,
        user: TelegramUser,
        callback_data: str,
        *,
        inaccessible: bool = False,
        game_short_name: str | None = None,
    ) -> TelegramUpdate:
        """``user`` taps a button on the message; the bot receives a ``callback_query`` whose
        ``from`` is ``user`` and whose ``data`` is ``callback_data`` exactly as given (a modified
        client can send any data; use :meth:`tap_button` for what the button carries). The query's
        ``message`` is the message as it is now, or, with ``inaccessible=True``, what Telegram sends for a
        message too old to report (an ``InaccessibleMessage``: its chat, its id and ``date`` 0). With
        ``game_short_name`` the query is a game button's: it carries that name and no ``data``."""
        message = self.state.messages.get((chat_id, message_id))
        if message is None or message.deleted:
            raise LookupError(f"no message {message_id} in chat {chat_id} to tap on")
        self.state.users[user.id] = user
        self._callback_ids += 1
        query_id = str(4_300_000_000_000_000_000 + self._callback_ids)
        update_id = self.feed.new_update_id()
        payload = {
            "id": query_id,
            "from": user.to_dict(),
            "message": (
                {"chat": message.chat.to_dict(), "message_id": message_id, "date": 0}
                if inaccessible
                else message.to_dict()
            ),
            "chat_instance": str(-(abs(chat_id) * 7919 + 1) % 10**19),
            **({"game_short_name": game_short_name} if game_short_name is not None else {"data": callback_data}),
        }
        record = TelegramCallbackQuery(query_id, update_id, user, chat_id, message_id, callback_data,
                                     time.monotonic())  # fmt: skip
        self.state.callback_queries[query_id] = record
        return await self._push({"callback_query": payload}, update_id=update_id)

    async def tap_button(self, message: TelegramMessage, label: str, user: TelegramUser) -> TelegramUpdate:
        """``user`` taps the button labelled ``label`` on ``message`` (its current keyboard)."""
        current = self.message(message.chat.id, message.message_id)
        button = current.button(label)
        if "callback_data" not in button:
            raise LookupError(f"button {label!r} is not a callback button: {button}")
        return await self.tap(current.chat.id, current.message_id, user, str(button["callback_data"]))

    async def redeliver(self, update: TelegramUpdate) -> TelegramUpdate:
        """Hand the same update (same ``update_id``) to the bot once more, as Telegram does after a
        failed webhook answer or when polling restarts before confirming: for deduplication tests."""
        again = TelegramUpdate(update.update_id, update.payload, time.monotonic(), len(self.calls), redelivery=True)
        return await self.feed.push(again)

    async def post_to_webhook(
        self, update: TelegramUpdate, *, secret_token: str | bool | None = True
    ) -> TelegramWebhookDelivery:
        """POST ``update`` to the webhook once, with the configured secret token, another token
        (a string) or none (``None``): to check that the bot refuses forged deliveries."""
        return await self.feed.post(update, secret_token=secret_token)

    async def deliver_pending(self) -> None:
        """Retry pending updates on the webhook (the server does not retry on its own)."""
        await self.feed.deliver_pending()

    async def _push(self, payload: dict[str, Any], *, update_id: int | None = None) -> TelegramUpdate:
        update_id = self.feed.new_update_id() if update_id is None else update_id
        record = TelegramUpdate(update_id, {"update_id": update_id, **payload}, time.monotonic(), len(self.calls))
        return await self.feed.push(record)


def _command_entities(text: str) -> list[dict[str, Any]]:
    entities = []
    for match in _COMMAND.finditer(text):
        offset = len(text[: match.start()].encode("utf-16-le")) // 2
        length = len(match.group().encode("utf-16-le")) // 2
        entities.append({"type": "bot_command", "offset": offset, "length": length})
    return entities


async def _read_params(request: web.Request) -> Params:
    values: dict[str, str] = dict(request.query)
    files: dict[str, tuple[str | None, str | None, bytes]] = {}
    if request.content_type == "application/json":
        body = await request.json() if request.can_read_body else {}
        for key, value in (body or {}).items():
            values[key] = value if isinstance(value, str) else json.dumps(value)
    elif request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        for key, value in (await request.post()).items():
            if isinstance(value, web.FileField):
                files[key] = (value.filename, value.content_type, value.file.read())
            else:
                values[key] = str(value)
    return Params(values, files)
