"""Request parameters and the checks Telegram makes on them, with Telegram's error texts.

The texts come from the Bot API server's and TDLib's sources (``telegram-bot-api/Client.cpp``,
``td/telegram/MessageEntity.cpp``, ``ReplyMarkup.cpp``, ``BotCommand.cpp``); the few that the
Telegram cloud itself produces (``BUTTON_DATA_INVALID``, ``message is not modified: ...``,
``query is too old ...``, ``reply markup is too long``) are mapped the way the Bot API server
maps them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from milpa_chat.errors import MilpaError
from milpa_chat.testing.telegram.html import EntityParseError, parse_html
from milpa_chat.testing.telegram.markdown import parse_markdown, parse_markdown_v2

__all__ = [
    "BUTTON_STYLES",
    "MAX_BUTTONS",
    "MAX_BUTTONS_PER_ROW",
    "MAX_CALLBACK_DATA_BYTES",
    "MAX_CAPTION_LENGTH",
    "MAX_TEXT_LENGTH",
    "ApiError",
    "FormattedText",
    "Params",
    "parse_commands",
    "parse_formatted_text",
    "parse_reply_markup",
]

MAX_TEXT_LENGTH = 4096
MAX_CAPTION_LENGTH = 1024
MAX_CALLBACK_DATA_BYTES = 64
MAX_BUTTONS = 100
MAX_BUTTONS_PER_ROW = 8
#: ``InlineKeyboardButton.style`` (Bot API 9.4): blue, green, red.
BUTTON_STYLES = frozenset({"primary", "success", "danger"})
_MAX_RAW_TEXT_BYTES = 1 << 15
_BLANK = " \t\r\n\x00\x0b\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u200b\u3000"
_COMMAND = re.compile(r"[a-z0-9_]{1,32}")
_PARSERS: dict[str, Callable[[str], tuple[str, list[dict[str, Any]]]]] = {
    "html": parse_html,
    "markdown": parse_markdown,
    "markdownv2": parse_markdown_v2,
}


class ApiError(MilpaError):
    """A Bot API error answer: HTTP status, ``description`` and optional ``parameters``."""

    def __init__(self, status: int, description: str, parameters: dict[str, Any] | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.parameters = parameters

    @classmethod
    def bad_request(cls, detail: str) -> ApiError:
        """400 with Telegram's convention: ``Bad Request: `` + detail, first letter lower-cased
        unless the detail is an upper-case error code like ``BUTTON_DATA_INVALID``."""
        if len(detail) >= 2 and not (detail[1] == "_" or detail[1].isupper()):
            detail = detail[0].lower() + detail[1:]
        return cls(400, f"Bad Request: {detail}")

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"ok": False, "error_code": self.status, "description": self.description}
        if self.parameters:
            body["parameters"] = self.parameters
        return body


@dataclass(frozen=True)
class Params:
    """The parameters of one request, as the strings the client sent."""

    values: dict[str, str]
    files: dict[str, tuple[str | None, str | None, bytes]]  # name -> (filename, content type, bytes)

    def text(self, name: str, default: str = "") -> str:
        return self.values.get(name, default)

    def integer(self, name: str, default: int = 0) -> int:
        """Telegram reads integers leniently: a missing or malformed value is the default."""
        raw = self.values.get(name, "").strip()
        try:
            return int(raw)
        except ValueError:
            return default

    def flag(self, name: str) -> bool:
        return self.values.get(name, "").strip().lower() in ("true", "1")

    def json_value(self, name: str, what: str) -> Any:
        """A JSON-encoded parameter; ``None`` when absent. ``what`` names it in the error."""
        raw = self.values.get(name, "")
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise ApiError.bad_request(f"Can't parse {what} JSON object") from None

    def chat_id(self) -> int:
        raw = self.values.get("chat_id", "").strip()
        if not raw:
            raise ApiError.bad_request("chat_id is empty")
        try:
            return int(raw)
        except ValueError:
            raise ApiError.bad_request("chat not found") from None  # @channelusername is not supported


@dataclass(frozen=True)
class FormattedText:
    text: str
    entities: tuple[dict[str, Any], ...]


def parse_draft_text(params: Params) -> FormattedText:
    """``sendMessageDraft``'s ``text``: 0-4096 characters after entities parsing (empty: the "Thinking…"
    placeholder), with ``parse_mode`` or ``entities`` as in ``sendMessage``."""
    if not params.text("text").strip(_BLANK):
        return FormattedText("", ())
    parsed = parse_formatted_text(params)
    assert parsed is not None
    return parsed


def parse_formatted_text(params: Params, *, caption: bool = False, edit: bool = False) -> FormattedText | None:
    """``text`` (or ``caption``) with ``parse_mode`` or ``entities``, checked as Telegram checks it.

    Returns None only for an absent caption. Edits report an over-long text as the Telegram cloud
    does (``MESSAGE_TOO_LONG``), new messages as the Bot API server does (``message is too long``).
    """
    text_key = "caption" if caption else "text"
    raw = params.text(text_key)
    if not raw:
        if caption:
            return None
        raise ApiError.bad_request("Message text is empty")
    if len(raw.encode("utf-8")) > _MAX_RAW_TEXT_BYTES:
        raise ApiError.bad_request("Text is too long")
    parse_mode = params.text("parse_mode").lower()
    entities_key = "caption_entities" if caption else "entities"
    if parse_mode and parse_mode != "none":
        parser = _PARSERS.get(parse_mode)
        if parser is None:
            raise ApiError.bad_request("Unsupported parse_mode")
        try:
            text, entities = parser(raw)
        except EntityParseError as exc:
            raise ApiError.bad_request(f"Can't parse entities: {exc}") from None
    else:
        text, entities = raw, _explicit_entities(params.json_value(entities_key, "entities"))
    text, entities = _trim(text, entities)
    if not text:
        raise ApiError.bad_request("Text must be non-empty")
    if len(text) > (MAX_CAPTION_LENGTH if caption else MAX_TEXT_LENGTH):
        if caption:
            raise ApiError.bad_request("MEDIA_CAPTION_TOO_LONG" if edit else "Message caption is too long")
        raise ApiError.bad_request("MESSAGE_TOO_LONG" if edit else "Message is too long")
    return FormattedText(text, tuple(entities))


def _explicit_entities(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ApiError.bad_request("Expected an Array of MessageEntity")
    entities: list[dict[str, Any]] = []
    for item in value:
        if not isinstance(item, dict):
            raise ApiError.bad_request("Can't parse MessageEntity: expected an Object")
        for key in ("offset", "length"):
            if key not in item:
                raise ApiError.bad_request(f"Can't parse MessageEntity: Can't find field \"{key}\"")
            if not isinstance(item[key], int):
                raise ApiError.bad_request(f'Can\'t parse MessageEntity: Field "{key}" must be a Number')
        if not isinstance(item.get("type"), str):
            raise ApiError.bad_request("Can't parse MessageEntity: Can't find field \"type\"")
        if item["length"] > 0:
            entities.append(dict(item))
    return entities


def _trim(text: str, entities: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """Telegram strips leading and trailing blanks and moves or cuts the entities to match."""
    stripped = text.lstrip(_BLANK)
    shift = _u16(text[: len(text) - len(stripped)])
    stripped = stripped.rstrip(_BLANK)
    end = _u16(stripped)
    kept: list[dict[str, Any]] = []
    for entity in entities:
        start = max(entity["offset"] - shift, 0)
        stop = min(entity["offset"] + entity["length"] - shift, end)
        if stop > start:
            kept.append({**entity, "offset": start, "length": stop - start})
    return stripped, kept


def _u16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def parse_reply_markup(params: Params) -> dict[str, Any] | None:
    """The inline keyboard to attach, or None. Reply keyboards are accepted but not shown in the
    message (as in Telegram, only inline keyboards are part of a message)."""
    value = params.json_value("reply_markup", "reply keyboard markup")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ApiError.bad_request("Object expected as reply markup")
    rows = value.get("inline_keyboard")
    if rows is None:
        return None
    if not isinstance(rows, list):
        raise ApiError.bad_request('Field "inline_keyboard" must be of type Array')
    clean_rows: list[list[dict[str, Any]]] = []
    for row in rows:
        if not isinstance(row, list):
            raise ApiError.bad_request('Field "inline_keyboard" of the InlineKeyboardMarkup must be an Array of Arrays')
        clean_rows.append([_inline_button(button) for button in row])
    clean_rows = [row for row in clean_rows if row]
    if not clean_rows:
        return None
    if sum(len(row) for row in clean_rows) > MAX_BUTTONS or any(len(r) > MAX_BUTTONS_PER_ROW for r in clean_rows):
        raise ApiError.bad_request("reply markup is too long")
    return {"inline_keyboard": clean_rows}


_OTHER_BUTTON_KINDS = (
    "callback_game", "pay", "switch_inline_query", "switch_inline_query_chosen_chat",
    "switch_inline_query_current_chat", "login_url", "web_app", "copy_text",
)  # fmt: skip


def _inline_button(button: Any) -> dict[str, Any]:
    def fail(detail: str) -> ApiError:
        return ApiError.bad_request(f"Can't parse inline keyboard button: {detail}")

    if not isinstance(button, dict):
        raise fail("InlineKeyboardButton must be an Object")
    if "text" not in button:
        raise fail('Can\'t find field "text"')
    if not isinstance(button["text"], str):
        raise fail('Field "text" must be of type String')
    if button.get("url"):
        kept = {"text": button["text"], "url": str(button["url"])}
    elif button.get("callback_data"):
        data = button["callback_data"]
        if not isinstance(data, str):
            raise fail('Field "callback_data" must be of type String')
        if len(data.encode("utf-8")) > MAX_CALLBACK_DATA_BYTES:
            raise ApiError.bad_request("BUTTON_DATA_INVALID")
        kept = {"text": button["text"], "callback_data": data}
    elif any(kind in button for kind in _OTHER_BUTTON_KINDS):
        kept = {key: value for key, value in button.items() if key in ("text", *_OTHER_BUTTON_KINDS)}
    else:
        raise fail("Text buttons are unallowed in the inline keyboard")
    if not button["text"].strip():
        raise ApiError.bad_request("Inline keyboard button text must be non-empty")
    style = button.get("style")
    if style is not None:
        if not isinstance(style, str):
            raise fail('Field "style" must be of type String')
        if style not in BUTTON_STYLES:
            raise ApiError.bad_request(f'Can\'t parse inline keyboard button: unsupported button style "{style}"')
        kept["style"] = style
    return kept


def parse_commands(params: Params) -> list[dict[str, str]]:
    """``setMyCommands``' ``commands``, normalised and checked."""
    value = params.json_value("commands", "commands")
    if value is None:
        return []
    if not isinstance(value, list):
        raise ApiError.bad_request("Expected an Array of BotCommand")
    commands: list[dict[str, str]] = []
    for item in value:
        if not isinstance(item, dict):
            raise ApiError.bad_request("Can't parse BotCommand: expected an Object")
        for key in ("command", "description"):
            if not isinstance(item.get(key), str):
                raise ApiError.bad_request(f"Can't parse BotCommand: Can't find field \"{key}\"")
        command = item["command"].strip().removeprefix("/")
        description = item["description"].strip()
        if not command:
            raise ApiError.bad_request("Command must be non-empty")
        if len(command) > 32:
            raise ApiError.bad_request("Command length must not exceed 32")
        if not description:
            raise ApiError.bad_request("Command description must be non-empty")
        if len(description) > 256:
            raise ApiError.bad_request("Command description length must not exceed 256")
        if not _COMMAND.fullmatch(command):
            raise ApiError.bad_request("BOT_COMMAND_INVALID")
        commands.append({"command": command, "description": description})
    return commands
