"""The state behind the local Slack Web API server and the Web API methods that change it.

Every method takes the request's arguments (query, form and JSON merged) and returns Slack's answer or raises
:class:`SlackMethodError` with Slack's error code. The HTTP layer lives in ``slack_server``.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.views import View

from milpa_chat.testing.slack.blocks import (
    MAX_MESSAGE_BLOCKS,
    MAX_VIEW_BLOCKS,
    BlocksFormatError,
    block_errors,
    fill_ids,
    load_blocks,
)
from milpa_chat.testing.slack.models import (
    JsonDict,
    ResponseUrl,
    SlackChannel,
    SlackMessage,
    SlackMethodError,
    SlackView,
)

MAX_TEXT_LENGTH = 40_000
#: ``markdown_text`` of one streaming call (chat.startStream / appendStream / stopStream).
MAX_STREAM_TEXT = 12_000
TASK_STATUSES = frozenset({"pending", "in_progress", "complete", "error"})
TASK_DISPLAY_MODES = frozenset({"timeline", "plan"})
_TS = re.compile(r"\d{1,12}\.\d{1,6}")


def _invalid(*errors: str) -> SlackMethodError:
    """``invalid_arguments`` with Slack's ``response_metadata.messages`` naming each problem."""
    return SlackMethodError(
        "invalid_arguments", details={"response_metadata": {"messages": [f"[ERROR] {e}" for e in errors]}}
    )


def check_chunks(raw: object) -> list[JsonDict]:
    """A streaming call's ``chunks``: a JSON array of ``markdown_text`` / ``task_update`` / ``plan_update`` /
    ``blocks`` objects with their required fields; raises ``invalid_chunks`` naming the first problem."""
    value = _json_arg(raw, "chunks")
    if not isinstance(value, list):
        raise SlackMethodError("invalid_chunks", details={"errors": ["chunks must be an array"]})
    checked: list[JsonDict] = []
    for index, chunk in enumerate(value):
        where = f"[json-pointer:/chunks/{index}]"

        def bad(what: str, pointer: str = where) -> SlackMethodError:
            return SlackMethodError("invalid_chunks", details={"errors": [f"{what} {pointer}"]})

        if not isinstance(chunk, dict):
            raise bad("chunk must be an object")
        kind = chunk.get("type")
        if kind == "markdown_text":
            if not isinstance(chunk.get("text"), str) or not chunk["text"]:
                raise bad("must provide a non-empty string [text]")
            if len(chunk["text"]) > MAX_STREAM_TEXT:
                raise bad(f"text must be at most {MAX_STREAM_TEXT} characters")
        elif kind == "task_update":
            for key in ("id", "title", "status"):
                if not isinstance(chunk.get(key), str) or not chunk[key].strip():
                    raise bad(f"must provide a non-empty string [{key}]")
            if chunk["status"] not in TASK_STATUSES:
                raise bad(f"status must be one of {', '.join(sorted(TASK_STATUSES))}")
        elif kind == "plan_update":
            if not isinstance(chunk.get("title"), str) or not chunk["title"].strip():
                raise bad("must provide a non-empty string [title]")
        elif kind == "blocks":
            chunk = {**chunk, "blocks": _check_blocks(chunk.get("blocks"))}
        else:
            raise bad(f"unsupported chunk type {kind!r}")
        checked.append(dict(chunk))
    return checked


def _check_blocks(raw: object, *, max_blocks: int = MAX_MESSAGE_BLOCKS, status: int = 200) -> list[JsonDict]:
    if raw is None:
        return []
    try:
        blocks = load_blocks(raw)
    except BlocksFormatError as exc:
        raise SlackMethodError("invalid_blocks_format", status=status, details={"errors": [str(exc)]}) from exc
    errors = block_errors(blocks, max_blocks=max_blocks)
    if errors:
        details = {"errors": errors, "response_metadata": {"messages": [f"[ERROR] {e}" for e in errors]}}
        raise SlackMethodError("invalid_blocks", status=status, details=details)
    return fill_ids(blocks)


def _json_arg(raw: object, name: str) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise SlackMethodError("invalid_arguments", details={"errors": [f"{name} is not JSON"]}) from exc
    return raw


class SlackWorkspace:
    """One team with one bot user: channels, messages, ephemeral messages, modals, response URLs."""

    def __init__(
        self,
        *,
        team_id: str,
        team_name: str,
        bot_user_id: str,
        bot_id: str,
        channels: Mapping[str, str],
        create_channels: bool,
        max_text_length: int = MAX_TEXT_LENGTH,
        response_url_max_uses: int = 5,
        response_url_ttl: float = 30 * 60,
        trigger_ttl: float = 3.0,
    ) -> None:
        self.team_id, self.team_name = team_id, team_name
        self.bot_user_id, self.bot_id = bot_user_id, bot_id
        self.create_channels = create_channels
        self.max_text_length = max_text_length
        self.response_url_max_uses = response_url_max_uses
        self.response_url_ttl = response_url_ttl
        self.trigger_ttl = trigger_ttl
        self.lock = threading.RLock()
        self.channels: dict[str, SlackChannel] = {}
        self.messages: dict[str, list[SlackMessage]] = {}
        self.ephemeral: list[SlackMessage] = []
        self.views: list[SlackView] = []
        self.response_urls: dict[str, ResponseUrl] = {}
        self._triggers: dict[str, float] = {}
        self._used_triggers: set[str] = set()
        self._last_us = 0
        for channel_id, name in channels.items():
            self.add_channel(channel_id, name=name)
        self.methods: dict[str, Callable[[JsonDict], JsonDict]] = self._method_table()

    def _method_table(self) -> dict[str, Callable[[JsonDict], JsonDict]]:
        return {
            "api.test": lambda args: {"ok": True, "args": args},
            "auth.test": self.auth_test,
            "chat.postMessage": self.chat_post_message,
            "chat.update": self.chat_update,
            "chat.postEphemeral": self.chat_post_ephemeral,
            "chat.delete": self.chat_delete,
            "chat.startStream": self.chat_start_stream,
            "chat.appendStream": self.chat_append_stream,
            "chat.stopStream": self.chat_stop_stream,
            "views.open": self.views_open,
            "conversations.info": self.conversations_info,
            "conversations.open": self.conversations_open,
        }

    # --- identifiers -------------------------------------------------------------------------------------------

    def next_ts(self) -> str:
        """A new message timestamp, strictly increasing (``"1700000000.000100"``)."""
        with self.lock:
            self._last_us = max(int(time.time() * 1_000_000), self._last_us + 1)
            return f"{self._last_us // 1_000_000}.{self._last_us % 1_000_000:06d}"

    def new_trigger_id(self) -> str:
        trigger_id = f"{secrets.randbelow(10**10)}.{secrets.randbelow(10**10)}.{secrets.token_hex(16)}"
        with self.lock:
            self._triggers[trigger_id] = time.monotonic()
        return trigger_id

    def new_response_url(self, channel: str, *, user: str | None, message_ts: str | None, ephemeral: bool) -> str:
        url_id = secrets.token_urlsafe(18)
        with self.lock:
            self.response_urls[url_id] = ResponseUrl(
                id=url_id,
                channel=channel,
                user=user,
                message_ts=message_ts,
                ephemeral=ephemeral,
                created_at=time.monotonic(),
            )
        return url_id

    # --- channels and messages -----------------------------------------------------------------------------------

    def add_channel(self, channel_id: str, *, name: str | None = None, is_private: bool = False) -> SlackChannel:
        with self.lock:
            if channel_id not in self.channels:
                is_im = channel_id.startswith("D")
                self.channels[channel_id] = SlackChannel(
                    id=channel_id, name=name or channel_id.lower(), is_im=is_im, is_private=is_private
                )
                self.messages[channel_id] = []
            return self.channels[channel_id]

    def open_im(self, user: str) -> SlackChannel:
        channel_id = "D" + user[1:] if user[:1] in ("U", "W") else "D" + user
        channel = self.add_channel(channel_id)
        channel.is_im, channel.user = True, user
        return channel

    def resolve_channel(self, raw: object) -> SlackChannel:
        if not isinstance(raw, str) or not raw:
            raise SlackMethodError("channel_not_found")
        with self.lock:
            if raw in self.channels:
                return self.channels[raw]
            if raw[:1] in ("U", "W"):
                return self.open_im(raw)
            by_name = [c for c in self.channels.values() if "#" + c.name == raw]
            if by_name:
                return by_name[0]
            if self.create_channels and raw[:1] in ("C", "G", "D"):
                return self.add_channel(raw, is_private=raw.startswith("G"))
        raise SlackMethodError("channel_not_found")

    def add_message(self, message: SlackMessage) -> SlackMessage:
        with self.lock:
            if message.ephemeral_to is not None:
                self.ephemeral.append(message)
            else:
                self.messages.setdefault(message.channel, []).append(message)
        return message

    def find_message(self, channel: str, ts: object, *, ephemeral: bool = False) -> SlackMessage:
        with self.lock:
            pool = self.ephemeral if ephemeral else self.messages.get(channel, [])
            for message in pool:
                if message.channel == channel and message.ts == ts and not message.deleted:
                    return message
        raise SlackMethodError("message_not_found")

    def _content(self, args: JsonDict, *, required: bool = True) -> tuple[str | None, list[JsonDict] | None]:
        text = args.get("text")
        if text is not None and not isinstance(text, str):
            text = str(text)
        blocks = _check_blocks(args["blocks"]) if args.get("blocks") is not None else None
        attachments = args.get("attachments")
        if required and not text and not blocks and not attachments:
            raise SlackMethodError("no_text")
        if text is not None and len(text) > self.max_text_length:
            raise SlackMethodError("msg_too_long")
        return text, blocks

    def _bot_message(self, channel: SlackChannel, args: JsonDict, *, ephemeral_to: str | None = None) -> SlackMessage:
        text, blocks = self._content(args)
        attachments = _json_arg(args.get("attachments"), "attachments") or []
        thread_ts = args.get("thread_ts") or None
        return self.add_message(
            SlackMessage(
                channel=channel.id,
                ts=self.next_ts(),
                text=text or "",
                user=self.bot_user_id,
                blocks=blocks or [],
                attachments=list(attachments),
                bot_id=self.bot_id,
                thread_ts=str(thread_ts) if thread_ts else None,
                ephemeral_to=ephemeral_to,
                team=self.team_id,
                via="chat.postEphemeral" if ephemeral_to else "chat.postMessage",
            )
        )

    # --- Web API methods ---------------------------------------------------------------------------------------

    def auth_test(self, args: JsonDict) -> JsonDict:
        domain = self.team_name.lower().replace(" ", "-")
        return {
            "ok": True,
            "url": f"https://{domain}.slack.com/",
            "team": self.team_name,
            "user": "bot",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def chat_post_message(self, args: JsonDict) -> JsonDict:
        channel = self.resolve_channel(args.get("channel"))
        message = self._bot_message(channel, args)
        return {"ok": True, "channel": channel.id, "ts": message.ts, "message": message.to_api()}

    def chat_post_ephemeral(self, args: JsonDict) -> JsonDict:
        channel = self.resolve_channel(args.get("channel"))
        user = args.get("user")
        if not isinstance(user, str) or not user:
            raise SlackMethodError("user_not_found")
        message = self._bot_message(channel, args, ephemeral_to=user)
        return {"ok": True, "message_ts": message.ts}

    def chat_update(self, args: JsonDict) -> JsonDict:
        channel = self.resolve_channel(args.get("channel"))
        message = self.find_message(channel.id, args.get("ts"))
        if message.user != self.bot_user_id:
            raise SlackMethodError("cant_update_message")
        text, blocks = self._content(args)
        with self.lock:
            message.replace(
                text=message.text if text is None else text,
                blocks=message.blocks if blocks is None else blocks,
                at=self.next_ts(),
            )
        return {"ok": True, "channel": channel.id, "ts": message.ts, "text": message.text, "message": message.to_api()}

    # --- streaming (chat.startStream / appendStream / stopStream) ----------------------------------------------

    def _stream_content(self, args: JsonDict) -> list[JsonDict]:
        chunks: list[JsonDict] = []
        text = args.get("markdown_text")
        if text is not None:
            if not isinstance(text, str):
                raise _invalid("markdown_text must be a string")
            if len(text) > MAX_STREAM_TEXT:
                raise SlackMethodError("msg_too_long")
            if text:
                chunks.append({"type": "markdown_text", "text": text})
        if args.get("chunks") is not None:
            chunks += check_chunks(args["chunks"])
        return chunks

    def _streaming(self, args: JsonDict) -> tuple[SlackChannel, SlackMessage]:
        missing = [k for k in ("channel", "ts") if not args.get(k)]
        if missing:
            raise _invalid(*(f"missing required field: {k}" for k in missing))
        channel = self.resolve_channel(args.get("channel"))
        message = self.find_message(channel.id, args.get("ts"))
        if message.user != self.bot_user_id or message.stream_state is None:
            raise SlackMethodError("message_not_owned_by_app" if message.user != self.bot_user_id else "invalid_ts")
        if message.stream_state != "streaming":
            raise SlackMethodError("message_not_in_streaming_state")
        return channel, message

    def _add_chunks(self, message: SlackMessage, chunks: list[JsonDict]) -> None:
        with self.lock:
            message.chunks += chunks
            message.text += "".join(c["text"] for c in chunks if c["type"] == "markdown_text")
            if len(message.text) > self.max_text_length:
                raise SlackMethodError("msg_too_long")

    def chat_start_stream(self, args: JsonDict) -> JsonDict:
        missing = [k for k in ("channel", "thread_ts") if not args.get(k)]
        if missing:
            raise _invalid(*(f"missing required field: {k}" for k in missing))
        channel = self.resolve_channel(args.get("channel"))
        if not _TS.fullmatch(str(args["thread_ts"])):
            raise _invalid("thread_ts must be a message timestamp such as 1700000000.000100")
        if not channel.is_im:
            absent = [k for k in ("recipient_team_id", "recipient_user_id") if not args.get(k)]
            if absent:
                raise _invalid(*(f"{k} is required when streaming to a channel" for k in absent))
        mode = args.get("task_display_mode")
        if mode is not None and mode not in TASK_DISPLAY_MODES:
            raise _invalid("task_display_mode must be timeline or plan")
        chunks = self._stream_content(args)
        message = self.add_message(
            SlackMessage(
                channel=channel.id,
                ts=self.next_ts(),
                text="",
                user=self.bot_user_id,
                bot_id=self.bot_id,
                thread_ts=str(args["thread_ts"]),
                team=self.team_id,
                via="chat.startStream",
                stream_state="streaming",
            )
        )
        self._add_chunks(message, chunks)
        return {"ok": True, "channel": channel.id, "ts": message.ts}

    def chat_append_stream(self, args: JsonDict) -> JsonDict:
        channel, message = self._streaming(args)
        chunks = self._stream_content(args)
        if not chunks:
            raise _invalid("must provide markdown_text or chunks")
        self._add_chunks(message, chunks)
        return {"ok": True, "channel": channel.id, "ts": message.ts}

    def chat_stop_stream(self, args: JsonDict) -> JsonDict:
        channel, message = self._streaming(args)
        chunks = self._stream_content(args)
        blocks = _check_blocks(args["blocks"]) if args.get("blocks") is not None else []
        self._add_chunks(message, chunks)
        with self.lock:
            message.blocks = blocks
            message.stream_state = "stopped"
        return {"ok": True, "channel": channel.id, "ts": message.ts, "message": message.to_api()}

    def chat_delete(self, args: JsonDict) -> JsonDict:
        channel = self.resolve_channel(args.get("channel"))
        message = self.find_message(channel.id, args.get("ts"))
        if message.user != self.bot_user_id:
            raise SlackMethodError("cant_delete_message")
        message.deleted = True
        return {"ok": True, "channel": channel.id, "ts": message.ts}

    def conversations_info(self, args: JsonDict) -> JsonDict:
        return {"ok": True, "channel": self.resolve_channel(args.get("channel")).to_api()}

    def conversations_open(self, args: JsonDict) -> JsonDict:
        users = args.get("users")
        if isinstance(users, list):
            users = ",".join(str(u) for u in users)
        if not isinstance(users, str) or not users or "," in users:
            raise SlackMethodError("users_list_not_supplied" if not users else "not_implemented")
        return {"ok": True, "channel": {"id": self.open_im(users).id}}

    def views_open(self, args: JsonDict) -> JsonDict:
        self._use_trigger(args.get("trigger_id") or args.get("interactivity_pointer"))
        view = _json_arg(args.get("view"), "view")
        if not isinstance(view, dict):
            raise SlackMethodError("invalid_arguments", details={"errors": ["view is required"]})
        blocks = _check_blocks(view.get("blocks", []), max_blocks=MAX_VIEW_BLOCKS)
        try:
            View(**{**view, "blocks": blocks}).to_dict()
        except (SlackObjectFormationError, TypeError, ValueError) as exc:
            raise SlackMethodError("invalid_arguments", details={"errors": [str(exc)]}) from exc
        view_id = "V" + secrets.token_hex(5).upper()
        stored = SlackView(
            id=view_id,
            view={**view, "blocks": blocks},
            trigger_id=str(args.get("trigger_id")),
            hash=f"{int(time.time())}.{secrets.token_hex(4)}",
        )
        with self.lock:
            self.views.append(stored)
        return {
            "ok": True,
            "view": {
                **stored.view,
                "id": view_id,
                "team_id": self.team_id,
                "bot_id": self.bot_id,
                "hash": stored.hash,
                "state": {"values": {}},
            },
        }

    def _use_trigger(self, trigger_id: object) -> None:
        if not isinstance(trigger_id, str) or not trigger_id:
            raise SlackMethodError("invalid_arguments", details={"errors": ["trigger_id is required"]})
        with self.lock:
            issued = self._triggers.pop(trigger_id, None)
        if issued is None:
            used = trigger_id in self._used_triggers
            raise SlackMethodError("exchanged_trigger_id" if used else "invalid_trigger_id")
        self._used_triggers.add(trigger_id)
        if time.monotonic() - issued > self.trigger_ttl:
            raise SlackMethodError("expired_trigger_id")

    # --- response_url ------------------------------------------------------------------------------------------

    def respond(self, url_id: str, body: JsonDict) -> None:
        """Apply a post to a ``response_url``; raises SlackMethodError carrying an HTTP status on failure."""
        target = self._response_target(url_id)
        self._apply_response(target, body)
        target.uses += 1

    def _apply_response(self, target: ResponseUrl, body: JsonDict) -> None:
        if body.get("delete_original") in (True, "true"):
            self._original(target).deleted = True
            return
        text = body.get("text")
        blocks = _check_blocks(body["blocks"], status=400) if body.get("blocks") is not None else None
        if not text and not blocks and not body.get("attachments"):
            raise SlackMethodError("no_text", status=400)
        if body.get("replace_original") in (True, "true"):
            original = self._original(target)
            with self.lock:
                original.replace(text=str(text or ""), blocks=blocks or [], at=self.next_ts())
            return
        self._respond_new(target, body, str(text or ""), blocks or [])

    def _respond_new(self, target: ResponseUrl, body: JsonDict, text: str, blocks: list[JsonDict]) -> None:
        in_channel = body.get("response_type") == "in_channel" or target.user is None
        thread_ts = body.get("thread_ts")
        message = self.add_message(
            SlackMessage(
                channel=target.channel,
                ts=self.next_ts(),
                text=text,
                user=self.bot_user_id,
                blocks=blocks,
                bot_id=self.bot_id,
                thread_ts=str(thread_ts) if thread_ts else None,
                team=self.team_id,
                ephemeral_to=None if in_channel else target.user,
                via="response_url",
            )
        )
        if target.message_ts is None:  # a slash command's later responses replace this one
            target.message_ts, target.ephemeral = message.ts, not in_channel

    def _response_target(self, url_id: str) -> ResponseUrl:
        with self.lock:
            target = self.response_urls.get(url_id)
            if target is None or time.monotonic() - target.created_at > self.response_url_ttl:
                raise SlackMethodError("expired_url", status=404)
            if target.uses >= self.response_url_max_uses:
                raise SlackMethodError("used_url", status=404)
            return target

    def _original(self, target: ResponseUrl) -> SlackMessage:
        if target.message_ts is None:
            raise SlackMethodError("message_not_found", status=404)
        try:
            return self.find_message(target.channel, target.message_ts, ephemeral=target.ephemeral)
        except SlackMethodError as exc:
            raise SlackMethodError("message_not_found", status=404) from exc


def channel_map(channels: Iterable[str] | Mapping[str, str]) -> dict[str, str]:
    """``["C1", "C2"]`` or ``{"C1": "general"}`` -> ``{id: name}``."""
    if isinstance(channels, Mapping):
        return {str(k): str(v) for k, v in channels.items()}
    return {str(c): str(c).lower() for c in channels}
