"""Slack: Block Kit blocks plus a plain fallback ``text``, valid by construction.

``SlackPayload.message`` is ``{"text": fallback, "blocks": [...]}``, ready for
``chat_postMessage(channel=..., **payload.message)`` or ``chat_update``. Guarantees (the
limits are those slack_sdk's block models check; a test keeps the numbers in step):

* at most 50 blocks and about 12,000 characters of block text in all (Slack refuses
  messages well below 50 full blocks); what does not fit is cut at a block boundary, a
  context line says so and :attr:`SlackPayload.document` holds everything;
* section text ≤ 3,000, ≤ 10 fields of ≤ 2,000, header ≤ 150, button text ≤ 75, button value
  ≤ 2,000 (it is the button's ``"<action>:<ref>"``, ≤ 64 bytes), ``action_id`` ≤ 255;
* ``& < >`` of all data escaped in mrkdwn (``verbatim`` on, so nothing is auto-linked), so
  ``<!channel>``, ``<@U…>`` and ``<url|label>`` from data are shown, never acted on; a field or
  paragraph whose data holds mrkdwn markers (``* _ ~ `````, which mrkdwn cannot escape) is sent
  as ``plain_text``; code and arguments are rich-text preformatted blocks, shown exactly.

Button ``action_id`` is ``"milpa:<action>:<n>"`` (unique in the message) and ``value`` the
button's callback data; who tapped comes from the interaction's ``user.id``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from milpa_chat.renderers._build import Limits
from milpa_chat.renderers._lines import Seg, escape, table_row, take, wrap_line
from milpa_chat.renderers._text import clean, clip, utf16_len
from milpa_chat.renderers.base import MessageRenderer
from milpa_chat.renderers.model import (
    Block,
    Button,
    Code,
    Divider,
    Document,
    Fields,
    Heading,
    ItemList,
    LazyDocument,
    Message,
    Note,
    Paragraph,
    Span,
    Table,
    chunked,
)

__all__ = ["SlackPayload", "SlackRenderer"]

MAX_BLOCKS: Final = 50  # per message
MAX_TEXT: Final = 12_000  # all block text together (Slack refuses ~13k with msg_blocks_too_long)
SECTION_TEXT: Final = 3000  # SectionBlock.text_max_length
SECTION_FIELDS: Final = 10  # SectionBlock.fields_max_length
FIELD_TEXT: Final = 2000  # per field (documented; slack_sdk does not check it)
HEADER_TEXT: Final = 150  # HeaderBlock.text_max_length
BUTTON_TEXT: Final = 75  # ButtonElement.text_max_length
ACTION_ELEMENTS: Final = 25  # ActionsBlock.elements_max_length
CODE_TEXT: Final = 3000  # our own budget per preformatted block
MAX_BUTTON_ROWS: Final = 4
FALLBACK_TEXT: Final = 300

# A backtick anywhere, or * _ ~ where mrkdwn could open formatting (start of a word).
_MARKERS: Final = re.compile(r"`|(?:^|(?<=[\s\W]))[*_~](?=\S)", re.M)
_MARKS: Final = {"plain": ("", ""), "bold": ("*", "*"), "italic": ("_", "_"), "code": ("`", "`")}


@dataclass(frozen=True, slots=True)
class SlackPayload:
    """``message`` (``{"text", "blocks"}``) and, when something was shortened, an attachment
    holding everything (upload it with ``files_upload_v2``; built on first access)."""

    message: dict[str, Any]
    attachment: LazyDocument | None = field(default=None, compare=False)

    @property
    def document(self) -> Document | None:
        """The attached file (built now if it was not yet), or ``None``."""
        return self.attachment.get() if self.attachment is not None else None

    @property
    def text(self) -> str:
        return str(self.message["text"])

    @property
    def blocks(self) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = self.message["blocks"]
        return blocks


class SlackRenderer(MessageRenderer[SlackPayload]):
    """Renders for the ``slack`` channel."""

    channels: ClassVar[tuple[str, ...]] = ("slack",)
    default_limits: ClassVar[Limits] = Limits(value_chars=1000, text_chars=2500, cell_chars=80, items=100)

    def render_message(self, message: Message) -> SlackPayload:
        return self._remembered(message) or self._remember(message, self._render(message))

    def _render(self, message: Message) -> SlackPayload:
        actions = _actions(message.buttons)
        room = MAX_BLOCKS - len(actions) - 1  # one block stays free for the "shortened" note
        budget = MAX_TEXT - sum(_block_size(a) for a in actions) - 200
        kept: list[dict[str, Any]] = []
        used, cut = 0, False
        for block in _content(message.blocks):
            size = _block_size(block)
            if len(kept) >= room or used + size > budget:
                cut = True
                break
            kept.append(block)
            used += size
        attachment = message.full if cut or message.truncated else None
        if cut or message.truncated:
            note = "Shortened for Slack."
            if attachment is not None:
                note = f"Shortened for Slack; the full content is in the attached file {attachment.filename}."
            kept.append(_context(escape(note)))
        if not kept:
            kept.append(_section(escape(_fallback(message.summary))))
        return SlackPayload({"text": escape(_fallback(message.summary)), "blocks": kept + actions}, attachment)


def _fallback(summary: str) -> str:
    """The notification text: the summary on one line, at most 300 characters (before escaping)."""
    text, omitted = clip(" ".join(clean(summary).split()), FALLBACK_TEXT)
    return (text + "…" if omitted else text) or "Message"


# ------------------------------------------------------------------ blocks
def _content(blocks: tuple[Block, ...]) -> Iterator[dict[str, Any]]:
    for block in blocks:
        if isinstance(block, Heading):
            if f"{block.icon}{block.text}".strip():
                yield _header(f"{block.icon} {block.text}".strip())
        elif isinstance(block, Paragraph):
            plain = True
            for span in block.spans:
                if span.style != "plain":
                    plain = False
                    break
            if plain and _MARKERS.search(block.text):
                yield from _plain_sections(clean(block.text))
            else:
                yield from _sections([_spans(line) for line in _split_spans(block.spans)])
        elif isinstance(block, Fields):
            yield from _fields(block)
        elif isinstance(block, ItemList):
            yield from _sections(_items(block))
        elif isinstance(block, Table):
            yield from _sections([table_row(block, row, _bold) for row in block.rows])  # (as _row, a call less)
        elif isinstance(block, Code):
            yield from _code(block.text)
        elif isinstance(block, Note):
            yield from (_context(t) for t in _join(wrap_line([("_", "_", block.text.replace("\n", " "))], 2000)))
        elif isinstance(block, Divider):
            yield {"type": "divider"}


def _header(text: str) -> dict[str, Any]:
    kept, omitted = clip(clean(text).replace("\n", " "), HEADER_TEXT - 1)
    return {"type": "header", "text": {"type": "plain_text", "text": kept + ("…" if omitted else "")}}


def _mrkdwn(text: str) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": text, "verbatim": True}


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": _mrkdwn(text)}


def _plain_sections(text: str) -> Iterator[dict[str, Any]]:
    """Plain-text sections (nothing parsed, nothing escaped) of at most 3,000 units each."""
    pieces = [p for line in text.split("\n") for p in _plain_pieces(line)]
    for chunk in _join(pieces, SECTION_TEXT):
        yield {"type": "section", "text": {"type": "plain_text", "text": chunk, "emoji": False}}


def _plain_pieces(line: str) -> list[str]:
    pieces = []
    while utf16_len(line) > SECTION_TEXT:
        head, _ = clip(line, SECTION_TEXT // 2)
        pieces.append(head)
        line = line[len(head) :]
    return [*pieces, line]


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [_mrkdwn(text)]}


def _sections(lines: list[list[Seg]]) -> Iterator[dict[str, Any]]:
    pieces = [piece for line in lines for piece in wrap_line(line, SECTION_TEXT)]
    yield from (_section(text) for text in _join(pieces, SECTION_TEXT))


def _join(pieces: list[str], limit: int = SECTION_TEXT) -> list[str]:
    """Lines joined by newlines into texts of at most ``limit`` characters (each line fits)."""
    texts: list[str] = []
    current: list[str] = []
    size = 0
    for piece in pieces:
        length = utf16_len(piece)
        if current and size + 1 + length > limit:
            texts.append("\n".join(current))
            current, size = [], 0
        size += length + (1 if current else 0)
        current.append(piece)
    if current:
        texts.append("\n".join(current))
    return [t for t in texts if t.strip()]


def _styled(text: str, style: str) -> list[Seg]:
    """Markup for one span; mrkdwn markers must touch the text, so spaces go outside them (empty
    segments, which would show nothing, are left out)."""
    open_, close = _MARKS[style]
    core = text.strip()
    if not open_ or not core or (style == "code" and "`" in core):
        return [("", "", text)]
    if core == text:
        return [(open_, close, core)]
    lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
    return [seg for seg in (("", "", lead), (open_, close, core), ("", "", trail)) if seg[2]]


def _split_spans(spans: tuple[Span, ...]) -> list[list[Span]]:
    lines: list[list[Span]] = [[]]
    for span in spans:
        if "\n" not in span.text:  # (most spans: kept as they are)
            lines[-1].append(span)
            continue
        for i, part in enumerate(span.text.split("\n")):
            if i:
                lines.append([])
            lines[-1].append(Span(part, span.style))
    return lines


def _spans(spans: list[Span]) -> list[Seg]:
    return [seg for span in spans for seg in _styled(span.text, span.style)]


def _items(block: ItemList) -> list[list[Seg]]:
    lines: list[list[Seg]] = []
    for n, item in enumerate(block.items, 1):
        first, *rest = item.split("\n")
        lines.append([("", "", (f"{n}. " if block.ordered else "• ") + first)])
        lines += [[("", "", f"    {line}")] for line in rest]
    return lines


def _row(table: Table, row: tuple[str, ...]) -> list[Seg]:
    """``• *#id* title — Column: value · Column: value`` (empty cells left out)."""
    return table_row(table, row, _bold)


def _bold(text: str) -> list[Seg]:
    if text and not text[0].isspace() and not text[-1].isspace():  # what _styled does with text stripped already
        return [("*", "*", text)]
    return _styled(text, "bold")


#: A field's label -> its bold mrkdwn line (a card's labels are the same few: "Tool", "Requested by", ...).
_HEADS: dict[str, str] = {}


def _fields(block: Fields) -> Iterator[dict[str, Any]]:
    """``*Label*\nvalue`` in mrkdwn; a field whose text holds mrkdwn markers (``* _ ~ `````) is
    plain text instead, so data is shown as it is rather than formatted."""
    texts: list[dict[str, Any]] = []
    for name, value in block.items:
        label, value = clean(name).strip() or "—", clean(value) if value.strip() else "—"
        if _MARKERS.search(label + value):
            kept, omitted = clip(f"{label}\n{value}", FIELD_TEXT // 2 - 1)
            texts.append({"type": "plain_text", "text": kept + ("…" if omitted else ""), "emoji": False})
            continue
        head = _HEADS.get(label)
        if head is None:
            head = "".join(o + escape(t) + c for o, c, t in _styled(label, "bold")) + "\n"
            if len(_HEADS) >= 256:
                _HEADS.clear()
            _HEADS[label] = head
        kept, rest = take(value, FIELD_TEXT - utf16_len(head) - 1)
        texts.append(_mrkdwn(head + escape(kept) + ("…" if rest else "")))
    for i in range(0, len(texts), SECTION_FIELDS):
        yield {"type": "section", "fields": texts[i : i + SECTION_FIELDS]}


def _code(text: str) -> Iterator[dict[str, Any]]:
    chunks: list[str] = []
    for line in clean(text).split("\n"):
        while len(line) > CODE_TEXT:
            chunks.append(line[:CODE_TEXT])
            line = line[CODE_TEXT:]
        if chunks and len(chunks[-1]) + 1 + len(line) <= CODE_TEXT:
            chunks[-1] += "\n" + line
        else:
            chunks.append(line)
    for chunk in chunks:
        if chunk.strip():
            element = {"type": "rich_text_preformatted", "elements": [{"type": "text", "text": chunk}]}
            yield {"type": "rich_text", "elements": [element]}


def _actions(buttons: tuple[Button, ...]) -> list[dict[str, Any]]:
    rows = chunked(buttons, ACTION_ELEMENTS)[:MAX_BUTTON_ROWS]
    return [
        {"type": "actions", "elements": [_button(b, r * ACTION_ELEMENTS + i) for i, b in enumerate(row)]}
        for r, row in enumerate(rows)
    ]


def _button(button: Button, n: int) -> dict[str, Any]:
    label, omitted = clip(clean(button.label).replace("\n", " "), BUTTON_TEXT - 1)
    element: dict[str, Any] = {
        "type": "button",
        "text": {"type": "plain_text", "text": label + ("…" if omitted else ""), "emoji": True},
        "action_id": f"milpa:{button.action}:{n}",
        "value": button.callback_data,
    }
    if button.style != "default":
        element["style"] = button.style
    return element


def _block_size(block: dict[str, Any]) -> int:
    """:func:`_text_size` of a block this module builds, read where its shape keeps the text."""
    kind = block["type"]
    if kind == "section":
        text = block.get("text")
        return len(text["text"]) if text is not None else sum(len(f["text"]) for f in block["fields"])
    if kind == "context":
        return sum(len(e["text"]) for e in block["elements"])
    if kind == "header":
        return len(block["text"]["text"])
    if kind == "rich_text":  # preformatted elements of text runs
        return sum(len(run["text"]) for element in block["elements"] for run in element["elements"])
    if kind == "actions":  # buttons' labels
        return sum(len(button["text"]["text"]) for button in block["elements"])
    if kind == "divider":
        return 0
    return _text_size(block)  # anything else: walk it


def _text_size(value: Any) -> int:
    """Characters of all ``"text"`` strings in a block (or a list of them)."""
    kind = type(value)
    if kind is dict:
        size = 0
        for k, v in value.items():
            if type(v) is str:
                size += len(v) if k == "text" else 0
            elif type(v) is dict or type(v) is list:
                size += _text_size(v)
        return size
    if kind is list:
        return sum(_text_size(v) for v in value)
    return 0
