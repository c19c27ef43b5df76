"""Telegram's ``Markdown`` and ``MarkdownV2`` parse modes, parsed the way the Bot API server parses them.

Ports of TDLib's ``parse_markdown`` and ``parse_markdown_v2`` (``td/telegram/MessageEntity.cpp``): the
same reserved characters, nesting rules and error texts with the same byte offsets, e.g.
``Character '-' is reserved and must be escaped with the preceding '\\'`` or
``Can't find end of Bold entity at byte offset 0``. Both return ``(text, entities)`` with offsets
in UTF-16 code units and raise :class:`EntityParseError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from milpa_chat.testing.telegram.html import EntityParseError, checked_link

__all__ = ["parse_markdown", "parse_markdown_v2"]

_SPACES = b" \t\r\n\x00\x0b"
_RESERVED = b"_*[]()~`>#+-=|{}.!\n"
_CODE_TYPES = ("code", "pre", "pre_code")
_TYPE_NAMES = {
    "bold": "Bold", "italic": "Italic", "underline": "Underline", "strikethrough": "Strikethrough",
    "blockquote": "BlockQuote", "expandable_blockquote": "ExpandableBlockQuote", "code": "Code", "pre": "Pre",
    "pre_code": "PreCode", "text_link": "TextUrl", "spoiler": "Spoiler", "custom_emoji": "CustomEmoji",
}  # fmt: skip


def _reserved(char: int) -> EntityParseError:
    return EntityParseError(f"Character '{chr(char)}' is reserved and must be escaped with the preceding '\\'")


@dataclass
class _Nested:
    type: str
    argument: str
    offset: int  # UTF-16 offset in the output
    byte_offset: int  # where the entity's marker starts in the source
    begin: int  # position in the output buffer


@dataclass
class _MarkdownV2:
    data: bytes
    out: bytearray = field(default_factory=bytearray)
    utf16: int = 0
    i: int = 0
    stack: list[_Nested] = field(default_factory=list)
    entities: list[dict[str, Any]] = field(default_factory=list)
    have_blockquote: bool = False
    can_start_blockquote: bool = True

    def at(self, pos: int) -> int:
        return self.data[pos] if pos < len(self.data) else 0

    def run(self) -> tuple[str, list[dict[str, Any]]]:
        while self.i < len(self.data):
            self._step(self.data[self.i])
            self.i += 1
        self._finish_blockquote()
        if self.stack:
            top = self.stack[-1]
            raise EntityParseError(f"Can't find end of {_TYPE_NAMES[top.type]} entity at byte offset {top.byte_offset}")
        self.entities.sort(key=lambda e: (e["offset"], -e["length"]))
        return self.out.decode("utf-8"), self.entities

    def _step(self, c: int) -> None:
        if c == ord("\\") and 0 < self.at(self.i + 1) <= 126:
            self.i += 1
            self.utf16 += 1
            self.out.append(self.data[self.i])
            if self.data[self.i] != ord("\r"):
                self.can_start_blockquote = self.data[self.i] == ord("\n")
            return
        in_code = bool(self.stack) and self.stack[-1].type in _CODE_TYPES
        if c not in (b"`" if in_code else _RESERVED):
            if c & 0xC0 != 0x80:
                self.utf16 += 2 if c >= 0xF0 else 1
                if c != ord("\r"):
                    self.can_start_blockquote = False
            self.out.append(c)
            return
        if self._is_end(c):
            self._end(c)
        else:
            self._begin(c)

    def _is_end(self, c: int) -> bool:
        if not self.stack:
            return False
        nxt = self.at(self.i + 1)
        if self.have_blockquote and c == ord("\n") and (self.i + 1 == len(self.data) or nxt != ord(">")):
            return True
        kind = self.stack[-1].type
        ends = {
            "bold": c == ord("*"),
            "italic": c == ord("_") and nxt != ord("_"),
            "code": c == ord("`"),
            "pre": c == ord("`") and nxt == ord("`") and self.at(self.i + 2) == ord("`"),
            "text_link": c == ord("]"),
            "underline": c == ord("_") and nxt == ord("_"),
            "strikethrough": c == ord("~"),
            "spoiler": c == ord("|") and nxt == ord("|"),
            "custom_emoji": c == ord("]"),
        }
        return ends.get("pre" if kind == "pre_code" else kind, False)

    def _begin(self, c: int) -> None:
        byte_offset, argument, kind = self.i, "", ""
        nxt = self.at(self.i + 1)
        if c == ord("_"):
            kind = "underline" if nxt == ord("_") else "italic"
            self.i += kind == "underline"
        elif c in (ord("*"), ord("~"), ord("[")):
            kind = {ord("*"): "bold", ord("~"): "strikethrough", ord("["): "text_link"}[c]
        elif c == ord("|") and nxt == ord("|"):
            self.i += 1
            kind = "spoiler"
        elif c == ord("`"):
            kind, argument = self._begin_code()
        elif c == ord("!") and nxt == ord("["):
            self.i += 1
            kind = "custom_emoji"
        elif c == ord("\n"):
            self.utf16 += 1
            self.out.append(c)
            self.can_start_blockquote = True
            return
        elif c == ord(">") and self.can_start_blockquote:
            if self.have_blockquote:
                return
            kind, self.have_blockquote = "blockquote", True
        else:
            raise _reserved(c)
        self.stack.append(_Nested(kind, argument, self.utf16, byte_offset, len(self.out)))

    def _begin_code(self) -> tuple[str, str]:
        if not (self.at(self.i + 1) == ord("`") and self.at(self.i + 2) == ord("`")):
            return "code", ""
        self.i += 3
        kind, argument = "pre", ""
        end = self.i
        while self.at(end) not in _SPACES and self.at(end) != ord("`"):
            end += 1
        if self.i != end and end < len(self.data) and self.at(end) != ord("`"):
            kind, argument = "pre_code", self.data[self.i : end].decode("utf-8", errors="replace")
            self.i = end
        if self.at(self.i) in (ord("\n"), ord("\r")):  # skip one new line at the beginning
            pair = self.at(self.i + 1) in (ord("\n"), ord("\r")) and self.at(self.i) != self.at(self.i + 1)
            self.i += 2 if pair else 1
        self.i -= 1
        return kind, argument

    def _end(self, c: int) -> None:
        top = self.stack[-1]
        kind = top.type
        if c == ord("\n") and kind != "blockquote":
            kind = self._end_expandable(top)
        top = self.stack[-1]
        entity: dict[str, Any] | None = {"type": kind}
        skip = self.utf16 == top.offset
        if kind in ("underline", "spoiler"):
            self.i += 1
        elif kind in ("pre", "pre_code"):
            self.i += 2
            entity = {"type": "pre", "language": top.argument} if kind == "pre_code" else entity
        elif kind == "text_link":
            entity = self._link(top)
        elif kind == "custom_emoji":
            entity = self._custom_emoji()
        elif kind in ("blockquote", "expandable_blockquote"):
            self.have_blockquote = False
            self.out.append(self.data[self.i])
            self.can_start_blockquote = True
            self.utf16 += 1
            skip = False
        if entity is not None and not skip:
            self.entities.append({**entity, "offset": top.offset, "length": self.utf16 - top.offset})
        self.stack.pop()

    def _end_expandable(self, top: _Nested) -> str:
        """A new line inside an entity: only ``||`` right before it (ending an expandable quote) is fine."""
        just_before = top.byte_offset == self.i - 2 or (top.byte_offset == self.i - 3 and self.out[-1:] == b"\r")
        if top.type != "spoiler" or not just_before:
            raise EntityParseError(f"Can't find end of {_TYPE_NAMES[top.type]} entity at byte offset {top.byte_offset}")
        self.stack.pop()
        outer = self.stack[-1]
        if outer.type != "blockquote":
            raise EntityParseError(
                f"Can't find end of {_TYPE_NAMES[outer.type]} entity at byte offset {outer.byte_offset}"
            )
        return "expandable_blockquote"

    def _url(self) -> str:
        self.i += 2
        begin = self.i
        url = bytearray()
        while self.i < len(self.data) and self.data[self.i] != ord(")"):
            if self.data[self.i] == ord("\\") and 0 < self.at(self.i + 1) <= 126:
                url.append(self.data[self.i + 1])
                self.i += 2
                continue
            url.append(self.data[self.i])
            self.i += 1
        if self.at(self.i) != ord(")"):
            raise EntityParseError(f"Can't find end of a URL at byte offset {begin}")
        return url.decode("utf-8", errors="replace")

    def _link(self, top: _Nested) -> dict[str, Any] | None:
        has_url = self.at(self.i + 1) == ord("(")
        url = self._url() if has_url else self.out[top.begin :].decode("utf-8", errors="replace")
        checked = checked_link(url)
        return {"type": "text_link", "url": checked} if checked else None

    def _custom_emoji(self) -> dict[str, Any]:
        if self.at(self.i + 1) != ord("("):
            raise EntityParseError("The entity must contain a tg://emoji or tg://time URL")
        parts = urlsplit(self._url())
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        if parts.scheme == "tg" and parts.netloc == "emoji" and query.get("id", "").isdigit():
            return {"type": "custom_emoji", "custom_emoji_id": query["id"]}
        if parts.scheme == "tg" and parts.netloc == "time" and query.get("unix", "").isdigit():
            entity: dict[str, Any] = {"type": "date_time", "unix_time": int(query["unix"])}
            if query.get("format"):
                entity["date_time_format"] = query["format"]
            return entity
        raise EntityParseError("Invalid tg://emoji or tg://time URL specified")

    def _finish_blockquote(self) -> None:
        if not self.have_blockquote:
            return
        kind = "blockquote"
        if self.stack[-1].type == "spoiler" and self.stack[-1].byte_offset == len(self.data) - 2:
            self.stack.pop()
            kind = "expandable_blockquote"
        top = self.stack[-1]
        if top.type == "blockquote":
            self.have_blockquote = False
            if self.utf16 != top.offset:
                self.entities.append({"type": kind, "offset": top.offset, "length": self.utf16 - top.offset})
            self.stack.pop()


def parse_markdown_v2(source: str) -> tuple[str, list[dict[str, Any]]]:
    """Parse MarkdownV2 into ``(text, entities)``; raises :class:`EntityParseError`."""
    return _MarkdownV2(source.encode("utf-8")).run()


def parse_markdown(source: str) -> tuple[str, list[dict[str, Any]]]:
    """Parse legacy Markdown (``*bold*``, ``_italic_``, ```code```, ``[text](url)``, fenced pre)."""
    data = source.encode("utf-8")
    at = _reader(data)
    out = bytearray()
    entities: list[dict[str, Any]] = []
    utf16 = i = 0
    while i < len(data):
        c = data[i]
        if c == ord("\\") and at(i + 1) in b"_*`[":
            out.append(data[i + 1])
            utf16, i = utf16 + 1, i + 2
            continue
        if c not in b"_*`[":
            utf16 += (2 if c >= 0xF0 else 1) if c & 0xC0 != 0x80 else 0
            out.append(c)
            i += 1
            continue
        begin, i = i, i + 1
        language, is_pre = "", c == ord("`") and at(i) == ord("`") and at(i + 1) == ord("`")
        if is_pre:
            i, language = _legacy_pre_start(data, i + 2)
        end_char = ord("]") if c == ord("[") else c
        offset = utf16
        while i < len(data) and (data[i] != end_char or (is_pre and not (at(i + 1) == at(i + 2) == ord("`")))):
            utf16 += (2 if data[i] >= 0xF0 else 1) if data[i] & 0xC0 != 0x80 else 0
            out.append(data[i])
            i += 1
        if i == len(data):
            raise EntityParseError(f"Can't find end of the entity starting at byte offset {begin}")
        if offset != utf16:
            entity, i = _legacy_entity(c, data, begin, i, is_pre, language)
            if entity is not None:
                entities.append({**entity, "offset": offset, "length": utf16 - offset})
        i += 3 if is_pre else 1
    return out.decode("utf-8"), entities


def _reader(data: bytes) -> Any:
    return lambda pos: data[pos] if pos < len(data) else 0


def _legacy_pre_start(data: bytes, i: int) -> tuple[int, str]:
    at = _reader(data)
    end, language = i, ""
    while at(end) not in _SPACES and at(end) != ord("`"):
        end += 1
    if i != end and end < len(data) and at(end) != ord("`"):
        language, i = data[i:end].decode("utf-8", errors="replace"), end
    if at(i) in (ord("\n"), ord("\r")):
        i += 2 if at(i + 1) in (ord("\n"), ord("\r")) and at(i) != at(i + 1) else 1
    return i, language


def _legacy_entity(
    c: int, data: bytes, begin: int, i: int, is_pre: bool, language: str
) -> tuple[dict[str, Any] | None, int]:
    if c == ord("_"):
        return {"type": "italic"}, i
    if c == ord("*"):
        return {"type": "bold"}, i
    if c == ord("`"):
        if not is_pre:
            return {"type": "code"}, i
        return ({"type": "pre", "language": language} if language else {"type": "pre"}), i
    if i + 1 < len(data) and data[i + 1] == ord("("):
        end = data.find(b")", i + 2)
        end = len(data) if end < 0 else end
        url, i = data[i + 2 : end].decode("utf-8", errors="replace"), end
    else:
        url = data[begin + 1 : i].decode("utf-8", errors="replace")
    checked = checked_link(url)
    return ({"type": "text_link", "url": checked} if checked else None), i
