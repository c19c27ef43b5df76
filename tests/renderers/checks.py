"""Validity checks for every channel's payload, independent of the renderers' own code.

* Telegram: a small HTML parse-mode checker (allowed tags and attributes, balanced and
  properly nested, ``& < >`` escaped, only Telegram's entities), then the TDLib port in
  ``milpa_chat.testing.telegram.html`` as a second opinion; message length in UTF-16 units,
  keyboard limits and callback data.
* Slack: every block through ``slack_sdk.models.blocks.Block.parse`` + ``validate_json()``
  and back to the same dict, plus the limits slack_sdk does not check, and mrkdwn escaping.
* HTML fragments (web, Jupyter): ``html.parser`` with an allow-list of tags and attributes.
* CLI: no control or reordering character reaches the terminal.
"""

from __future__ import annotations

import json
import re
import unicodedata
from html.parser import HTMLParser
from typing import Any

from slack_sdk.models.blocks import Block

from milpa_chat.renderers import JupyterPayload, SlackPayload, TelegramPayload, parse_callback_data
from milpa_chat.testing.telegram.html import parse_html

# ------------------------------------------------------------------ Telegram
TG_TAGS: dict[str, set[str]] = {
    "b": set(), "strong": set(), "i": set(), "em": set(), "u": set(), "ins": set(), "s": set(),
    "strike": set(), "del": set(), "span": {"class"}, "tg-spoiler": set(), "a": {"href"},
    "code": {"class"}, "pre": set(), "blockquote": {"expandable"},
}  # fmt: skip
_TG_TAG = re.compile(r'<(/?)([a-z-]+)((?:\s+[a-z-]+(?:="[^"<>]*")?)*)\s*>')
_TG_ATTR = re.compile(r'([a-z-]+)(?:="([^"]*)")?')
_TG_ENTITY = re.compile(r"&(lt|gt|amp|quot|#[0-9]+|#x[0-9a-fA-F]+);")
_ENTITY_TEXT = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
# what must never reach a human surface unnoticed (see milpa_chat.renderers._text.clean)
HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\u202a-\u202e\u2060\u2066-\u2069\ufeff\ud800-\udfff]")


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def telegram_visible(text: str) -> str:
    """The text Telegram would show for HTML ``text``; raises AssertionError when it would
    refuse it (or when we promised more than it requires: ``>`` must be escaped too)."""
    stack: list[str] = []
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "<":
            m = _TG_TAG.match(text, i)
            assert m, f"stray '<' at {i}: {text[i : i + 30]!r}"
            _tg_tag(m, stack)
            i = m.end()
        elif ch == "&":
            m = _TG_ENTITY.match(text, i)
            assert m, f"unescaped '&' at {i}: {text[i : i + 12]!r}"
            name = m.group(1)
            out.append(_ENTITY_TEXT.get(name) or chr(int(name[2:], 16) if name[1] == "x" else int(name[1:])))
            i = m.end()
        else:
            assert ch != ">", f"unescaped '>' at {i}"
            out.append(ch)
            i += 1
    assert not stack, f"unclosed tags {stack}"
    return "".join(out)


def _tg_tag(m: re.Match[str], stack: list[str]) -> None:
    closing, name, attrs = m.group(1), m.group(2), m.group(3)
    assert name in TG_TAGS, f"tag <{name}> is not allowed in Telegram HTML"
    if closing:
        assert stack and stack[-1] == name, f"</{name}> closes {stack[-1] if stack else 'nothing'}"
        stack.pop()
        return
    parsed = dict(_TG_ATTR.findall(attrs))
    assert set(parsed) <= TG_TAGS[name], f"attributes {parsed} not allowed on <{name}>"
    if name == "span":
        assert parsed.get("class") == "tg-spoiler"
    if name == "code" and "class" in parsed:
        assert stack and stack[-1] == "pre" and parsed["class"].startswith("language-")
    if stack and stack[-1] in ("pre", "code"):
        assert name == "code" and stack[-1] == "pre", f"<{name}> inside <{stack[-1]}>"
    stack.append(name)


def check_telegram(payload: TelegramPayload) -> None:
    assert payload.messages, "no message"
    for n, message in enumerate(payload.messages):
        assert set(message) <= {"text", "parse_mode", "reply_markup", "link_preview_options"}
        assert message["parse_mode"] == "HTML"
        text = message["text"]
        assert utf16(text) <= 4096, f"message {n} source is {utf16(text)} UTF-16 units"
        visible = telegram_visible(text)
        assert visible.strip(), f"message {n} is empty"
        parsed, _ = parse_html(text)  # the TDLib port of milpa_chat.testing, a second opinion
        assert parsed == visible and utf16(parsed) <= 4096
        assert not HIDDEN.search(visible), f"hidden character in {visible!r}"
        if "reply_markup" in message:
            assert n == len(payload.messages) - 1, "keyboard on a message other than the last"
            _check_keyboard(message["reply_markup"])
        json.dumps(message, ensure_ascii=False).encode("utf-8")  # strict: no lone surrogate


def _check_keyboard(markup: dict[str, Any]) -> None:
    rows = markup["inline_keyboard"]
    assert 1 <= sum(len(r) for r in rows) <= 100
    for row in rows:
        assert 1 <= len(row) <= 8
        for button in row:
            assert set(button) - {"style"} == {"text", "callback_data"} and button["text"].strip()
            assert button.get("style", "success") in ("success", "danger")  # Telegram's green and red
            assert 1 <= len(button["callback_data"].encode("utf-8")) <= 64
            parse_callback_data(button["callback_data"])


# ------------------------------------------------------------------ Slack
_MRKDWN_SAFE = re.compile(r"(?:[^<>&]|&(?:amp|lt|gt);)*", re.S)


def _walk(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value, *(d for v in value.values() for d in _walk(v))]
    if isinstance(value, list):
        return [d for v in value for d in _walk(v)]
    return []


def check_slack(payload: SlackPayload) -> None:
    message = payload.message
    assert set(message) == {"text", "blocks"}
    assert message["text"].strip() and len(message["text"]) <= 4000
    assert _MRKDWN_SAFE.fullmatch(message["text"]), message["text"]
    blocks = message["blocks"]
    assert 1 <= len(blocks) <= 50, f"{len(blocks)} blocks"
    for block in blocks:
        parsed = Block.parse(block)
        assert parsed is not None, f"unknown block {block['type']}"
        parsed.validate_json()
        assert parsed.to_dict() == block, f"slack_sdk does not read back {block}"
        for field in block.get("fields", []):
            assert len(field["text"]) <= 2000
    objects = _walk(blocks)
    assert sum(len(o["text"]) for o in objects if isinstance(o.get("text"), str)) <= 12_000
    for obj in objects:
        if obj.get("type") == "mrkdwn":
            assert _MRKDWN_SAFE.fullmatch(obj["text"]), f"unescaped mrkdwn {obj['text']!r}"
            assert obj["text"].strip()
        if isinstance(obj.get("text"), str):
            assert not HIDDEN.search(obj["text"]), f"hidden character in {obj['text']!r}"
    buttons = [o for o in objects if o.get("type") == "button"]
    assert len({b["action_id"] for b in buttons}) == len(buttons), "duplicate action_id"
    for button in buttons:
        assert len(button["action_id"]) <= 255 and len(button["value"]) <= 2000
        parse_callback_data(button["value"])
    json.dumps(message, ensure_ascii=False).encode("utf-8")


# ------------------------------------------------------------------ HTML fragments
HTML_TAGS = {
    "div", "span", "strong", "em", "code", "p", "br", "dl", "dt", "dd", "bdi", "ul", "ol", "li", "table",
    "thead", "tbody", "tr", "th", "td", "pre", "small", "hr", "button", "style",
}  # fmt: skip
HTML_ATTRS = {"class", "role", "aria-level", "type", "data-action", "data-ref"}
_VOID = {"br", "hr"}


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.stack: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        assert tag in HTML_TAGS, f"tag <{tag}>"
        assert {a for a, _ in attrs} <= HTML_ATTRS, f"attributes {attrs}"
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        raise AssertionError(f"self-closing <{tag}/>")

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self.stack[-1:] != ["style"]:
            assert "<" not in data and ">" not in data, f"raw markup in text {data[:60]!r}"
            self.text.append(data)

    def handle_entityref(self, name: str) -> None:
        assert name in ("lt", "gt", "amp", "quot"), name
        self.text.append({"lt": "<", "gt": ">", "amp": "&", "quot": '"'}[name])

    def handle_charref(self, name: str) -> None:
        assert name == "x27", name
        self.text.append("'")

    def handle_comment(self, data: str) -> None:
        raise AssertionError("comment in output")

    def unknown_decl(self, data: str) -> None:
        raise AssertionError("declaration in output")


def check_html(fragment: str) -> str:
    """Checks an HTML fragment; returns its text."""
    checker = _Checker()
    checker.feed(fragment)
    checker.close()
    assert not checker.stack, f"unclosed {checker.stack}"
    assert "<script" not in fragment.lower()
    text = "".join(checker.text)
    assert not HIDDEN.search(text), "hidden character in HTML text"
    fragment.encode("utf-8")
    return text


def check_jupyter(payload: JupyterPayload) -> None:
    check_html(payload.html)
    assert payload._repr_html_() == payload.html


# ------------------------------------------------------------------ CLI and JSON
def check_cli(text: str) -> None:
    assert text.endswith("\n") and text.strip()
    for ch in text:
        assert ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cs"), f"control character {ch!r}"
    assert not HIDDEN.search(text), "hidden character"
    text.encode("utf-8")


def check_json(envelope: dict[str, Any]) -> None:
    assert list(envelope) == ["success", "data", "message", "error", "meta"]
    assert json.loads(json.dumps(envelope, allow_nan=False)) == envelope
