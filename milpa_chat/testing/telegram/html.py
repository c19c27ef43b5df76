"""Telegram's HTML ``parse_mode``, parsed the way the Bot API server parses it.

This is a port of TDLib's ``parse_html`` (``td/telegram/MessageEntity.cpp``), the code behind
``api.telegram.org``: the same allowed tags, the same entity decoding, the same error texts with
the same byte offsets. :func:`parse_html` returns the plain text and the message entities with
offsets and lengths in UTF-16 code units, as Telegram reports them.

What Telegram accepts, in short:

* tags ``b``/``strong``, ``i``/``em``, ``u``/``ins``, ``s``/``strike``/``del``,
  ``tg-spoiler``/``span class="tg-spoiler"``, ``a href``, ``code`` (``class="language-x"`` inside
  ``pre``), ``pre``, ``blockquote`` (``expandable``), ``tg-emoji emoji-id``, ``tg-time``;
* every tag closed, innermost first (``</>`` closes whatever is open);
* the named entities ``&lt; &gt; &amp; &quot;`` and numeric ones; any other ``&...`` stays literal text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from milpa_chat.errors import MilpaError

__all__ = ["EntityParseError", "checked_link", "parse_html", "utf16_len"]

_ALLOWED_TAGS = frozenset(
    {
        "a", "b", "strong", "i", "em", "s", "strike", "del", "u", "ins", "tg-spoiler", "tg-emoji",
        "tg-time", "span", "pre", "code", "blockquote",
    }
)  # fmt: skip
_SIMPLE_TYPES = {
    "i": "italic", "em": "italic", "b": "bold", "strong": "bold", "s": "strikethrough",
    "strike": "strikethrough", "del": "strikethrough", "u": "underline", "ins": "underline",
    "tg-spoiler": "spoiler",
}  # fmt: skip
_SPACES = b" \t\r\n\x00\x0b"
_NAMED_ENTITIES = {b"lt": "<", b"gt": ">", b"amp": "&", b"quot": '"'}
_LINK_SCHEMES = ("http://", "https://", "tg://", "ton://", "tonsite://")


class EntityParseError(MilpaError, ValueError):
    """The text cannot be parsed; ``str(error)`` is Telegram's detail, e.g.
    ``Can't find end tag corresponding to start tag "b"``."""


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units, the unit of Telegram's entity offsets."""
    return len(text.encode("utf-16-le")) // 2


@dataclass
class _Open:
    tag: str
    argument: str
    offset: int  # UTF-16 offset of the entity's start
    begin: int  # position in the output buffer
    date: int = 0


@dataclass
class _Parser:
    data: bytes
    out: bytearray = field(default_factory=bytearray)
    utf16: int = 0
    stack: list[_Open] = field(default_factory=list)
    entities: list[dict[str, Any]] = field(default_factory=list)
    i: int = 0

    def at(self, pos: int) -> int:
        return self.data[pos] if pos < len(self.data) else 0

    def run(self) -> tuple[str, list[dict[str, Any]]]:
        while self.i < len(self.data):
            c = self.data[self.i]
            if c == ord("&") and self._entity_char():
                continue
            if c != ord("<"):
                if c & 0xC0 != 0x80:  # first byte of a UTF-8 character
                    self.utf16 += 2 if c >= 0xF0 else 1
                self.out.append(c)
                self.i += 1
                continue
            if self.at(self.i + 1) == ord("/"):
                self._end_tag()
            else:
                self._start_tag()
        if self.stack:
            raise EntityParseError(f'Can\'t find end tag corresponding to start tag "{self.stack[-1].tag}"')
        text = self.out.decode("utf-8", errors="surrogatepass")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise EntityParseError(
                "Text contains invalid Unicode characters after decoding HTML entities, check for unmatched "
                "surrogate code units"
            ) from None
        self.entities.sort(key=lambda e: (e["offset"], -e["length"]))
        return text, self.entities

    def _entity_char(self) -> bool:
        code, end = decode_entity(self.data, self.i)
        if code == 0:
            return False
        self.utf16 += 2 if code > 0xFFFF else 1
        self.out += chr(code).encode("utf-8", errors="surrogatepass")
        self.i = end
        return True

    def _start_tag(self) -> None:
        begin = self.i
        self.i += 1
        while self.at(self.i) not in _SPACES and self.at(self.i) != ord(">"):
            self.i += 1
        if self.i >= len(self.data):
            raise EntityParseError(f"Unclosed start tag at byte offset {begin}")
        tag = self.data[begin + 1 : self.i].decode("utf-8", errors="replace").lower()
        if tag not in _ALLOWED_TAGS:
            raise EntityParseError(f'Unsupported start tag "{tag}" at byte offset {begin}')
        opened = _Open(tag, "", self.utf16, len(self.out))
        while self.at(self.i) != ord(">"):
            if not self._attribute(opened, begin):
                break
        self.i += 1
        if tag == "span" and opened.argument != "spoiler":
            raise EntityParseError(f'Tag "span" must have class "tg-spoiler" at byte offset {begin}')
        self.stack.append(opened)

    def _attribute(self, opened: _Open, begin: int) -> bool:
        """Read one attribute of the open tag; False when the tag ends instead."""
        tag = opened.tag
        while self.at(self.i) != 0 and self.at(self.i) in _SPACES:
            self.i += 1
        if self.at(self.i) == ord(">"):
            return False
        name_begin = self.i
        while self.at(self.i) not in _SPACES and self.at(self.i) not in b"=>/\"'":
            self.i += 1
        name = self.data[name_begin : self.i]
        if not name:
            raise EntityParseError(f'Empty attribute name in the tag "{tag}" at byte offset {begin}')
        self._skip_spaces()
        if self.at(self.i) != ord("="):
            if self.i >= len(self.data):
                raise EntityParseError(f'Unclosed start tag "{tag}" at byte offset {begin}')
            if tag == "blockquote" and name == b"expandable":
                opened.argument = "1"
            return True
        self.i += 1
        self._skip_spaces()
        if self.i >= len(self.data):
            raise EntityParseError(f'Unclosed start tag "{tag}" at byte offset {begin}')
        value = self._attribute_value()
        if self.i >= len(self.data):
            raise EntityParseError(f"Unclosed start tag at byte offset {begin}")
        _apply_attribute(opened, name, value)
        return True

    def _skip_spaces(self) -> None:
        while self.at(self.i) != 0 and self.at(self.i) in _SPACES:
            self.i += 1

    def _attribute_value(self) -> str:
        quote = self.at(self.i)
        if quote not in (ord('"'), ord("'")):
            start = self.i
            while chr(self.at(self.i)).isascii() and (chr(self.at(self.i)).isalnum() or self.at(self.i) in b".-"):
                self.i += 1
            if self.at(self.i) not in _SPACES and self.at(self.i) != ord(">"):
                raise EntityParseError(f"Unexpected end of name token at byte offset {start}")
            return self.data[start : self.i].decode("utf-8").lower()
        self.i += 1
        value = bytearray()
        while self.i < len(self.data) and self.data[self.i] != quote:
            if self.data[self.i] == ord("&"):
                code, end = decode_entity(self.data, self.i)
                if code != 0:
                    value += chr(code).encode("utf-8", errors="surrogatepass")
                    self.i = end
                    continue
            value.append(self.data[self.i])
            self.i += 1
        if self.at(self.i) == quote:
            self.i += 1
        return value.decode("utf-8", errors="replace")

    def _end_tag(self) -> None:
        begin = self.i
        if not self.stack:
            raise EntityParseError(f"Unexpected end tag at byte offset {begin}")
        self.i += 2
        while self.at(self.i) not in _SPACES and self.at(self.i) != ord(">"):
            self.i += 1
        name = self.data[begin + 2 : self.i].decode("utf-8", errors="replace").lower()
        while self.at(self.i) in _SPACES and self.i < len(self.data):
            self.i += 1
        if self.at(self.i) != ord(">"):
            raise EntityParseError(f"Unclosed end tag at byte offset {begin}")
        self.i += 1
        opened = self.stack[-1]
        if name and name != opened.tag:
            raise EntityParseError(
                f'Unmatched end tag at byte offset {begin}, expected "</{opened.tag}>", found "</{name}>"'
            )
        self.stack.pop()
        if self.utf16 > opened.offset:
            self._close(opened)

    def _close(self, opened: _Open) -> None:
        offset, length, tag = opened.offset, self.utf16 - opened.offset, opened.tag
        base: dict[str, Any] = {"offset": offset, "length": length}
        last = self.entities[-1] if self.entities else None
        same_span = last is not None and last["offset"] == offset and last["length"] == length
        if tag in _SIMPLE_TYPES or tag == "span":
            self.entities.append({"type": _SIMPLE_TYPES.get(tag, "spoiler"), **base})
        elif tag == "tg-emoji":
            if not opened.argument.isdigit() or int(opened.argument) == 0:
                raise EntityParseError("Invalid custom emoji identifier specified")
            self.entities.append({"type": "custom_emoji", **base, "custom_emoji_id": opened.argument})
        elif tag == "tg-time":
            if opened.date > 0:
                entity = {"type": "date_time", **base, "unix_time": opened.date}
                if opened.argument:
                    entity["date_time_format"] = opened.argument
                self.entities.append(entity)
        elif tag == "a":
            url = checked_link(opened.argument or self.out[opened.begin :].decode("utf-8", errors="replace"))
            if url:
                self.entities.append({"type": "text_link", **base, "url": url})
        elif tag == "pre":
            if same_span and last is not None and last["type"] == "code" and last.get("language"):
                last["type"] = "pre"
            else:
                self.entities.append({"type": "pre", **base})
        elif tag == "code":
            if same_span and last is not None and last["type"] == "pre" and opened.argument:
                last["language"] = opened.argument
            else:
                entity = {"type": "code", **base}
                if opened.argument:
                    entity["language"] = opened.argument  # dropped below unless a <pre> wraps it
                self.entities.append(entity)
        else:  # blockquote
            self.entities.append({"type": "expandable_blockquote" if opened.argument else "blockquote", **base})


def _apply_attribute(opened: _Open, name: bytes, value: str) -> None:
    tag = opened.tag
    if tag == "a" and name == b"href":
        opened.argument = value
    elif tag == "code" and name == b"class" and value.startswith("language-"):
        opened.argument = value[len("language-") :]
    elif tag == "span" and name == b"class" and value.startswith("tg-"):
        opened.argument = value[len("tg-") :]
    elif (tag == "tg-emoji" and name == b"emoji-id") or (tag == "tg-time" and name == b"format"):
        opened.argument = value
    elif tag == "blockquote" and name == b"expandable":
        opened.argument = "1"
    elif tag == "tg-time" and name == b"unix":
        opened.date = int(value) if value.lstrip("-").isdigit() else 0


def decode_entity(data: bytes, pos: int) -> tuple[int, int]:
    """Decode the HTML entity at ``data[pos] == '&'``: ``(code point, end)``, or ``(0, pos)``."""
    end = pos + 1
    code = 0
    if data[end : end + 1] == b"#":
        end += 1
        hexa = data[end : end + 1] == b"x"
        end += hexa
        digits = b"0123456789abcdefABCDEF" if hexa else b"0123456789"
        start = end
        while end < len(data) and data[end] in digits:
            end += 1
        if start < end:
            code = int(data[start:end], 16 if hexa else 10)
        if code == 0 or code >= 0x10FFFF or end - pos >= 10:
            return 0, pos
    else:
        while end < len(data) and chr(data[end]).isascii() and chr(data[end]).isalpha():
            end += 1
        named = _NAMED_ENTITIES.get(data[pos + 1 : end])
        if named is None:
            return 0, pos
        code = ord(named)
    if data[end : end + 1] == b";":
        end += 1
    return code, end


def checked_link(url: str) -> str:
    """The URL Telegram keeps for a text link, or "" when it drops the link."""
    url = url.strip()
    if not url or any(ch.isspace() for ch in url):
        return ""
    if url.lower().startswith(_LINK_SCHEMES):
        return url
    if "://" in url or "." not in url.split("/")[0]:
        return ""
    return "http://" + url


def parse_html(source: str) -> tuple[str, list[dict[str, Any]]]:
    """Parse Telegram HTML into ``(text, entities)``; raises :class:`EntityParseError`.

    Offsets in error messages are byte offsets in the UTF-8 source, as Telegram reports them.
    """
    text, entities = _Parser(source.encode("utf-8")).run()
    for entity in entities:
        if entity["type"] == "code":
            entity.pop("language", None)
    return text, entities
