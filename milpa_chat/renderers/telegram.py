"""Telegram: HTML parse-mode messages with inline keyboards, valid by construction.

Each message dict holds the keyword arguments of ``sendMessage`` / ``editMessageText``
(without ``chat_id``): ``text``, ``parse_mode="HTML"``, ``link_preview_options`` and, on
the last message, ``reply_markup`` with the ``inline_keyboard``. Guarantees:

* every ``& < >`` of data is escaped; only ``b i code pre`` tags are used, always balanced;
* no message text exceeds 4,096 UTF-16 code units, counted on the HTML *source* (the
  parsed text Telegram limits is never longer); long output is split between lines, a
  ``<pre>`` block cut by a split is closed and reopened, never an open tag or an entity;
* at most ``max_messages`` messages: beyond that, and whenever a value was shortened, the
  payload carries a :class:`~milpa_chat.renderers.model.Document` with everything;
* ``callback_data`` ≤ 64 bytes (checked by :class:`Button`), ≤ 8 buttons a row, ≤ 100 in all.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from milpa_chat.renderers._build import Limits
from milpa_chat.renderers._lines import Seg as _Seg
from milpa_chat.renderers._lines import escape as _esc
from milpa_chat.renderers._lines import table_row, wrap_line
from milpa_chat.renderers._text import clean, utf16_len
from milpa_chat.renderers.base import MessageRenderer
from milpa_chat.renderers.model import (
    Actions,
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
    Table,
    chunked,
)

__all__ = ["MAX_MESSAGE_LENGTH", "TelegramPayload", "TelegramRenderer"]

MAX_MESSAGE_LENGTH: Final = 4096
MAX_ROW_BUTTONS: Final = 8
MAX_BUTTONS: Final = 100
_TAG: Final = re.compile(r"<[^>]*>")
#: A character shown outside the tags (at the start or after a ``>``, before any ``<``): found at once in a page
#: that shows anything, where taking every tag out of it to look walks the whole page.
_VISIBLE: Final = re.compile(r"(?:^|>)\s*[^<\s]")
_STYLE_TAGS: Final = {
    "plain": ("", ""),
    "bold": ("<b>", "</b>"),
    "italic": ("<i>", "</i>"),
    "code": ("<code>", "</code>"),
}


@dataclass(frozen=True, slots=True)
class TelegramPayload:
    """Messages to send in order (``Bot.send_message(chat_id, **m)``) and, when something was
    shortened, an attachment holding everything (``send_document``; built on first access)."""

    messages: tuple[dict[str, Any], ...]
    attachment: LazyDocument | None = field(default=None, compare=False)

    @property
    def document(self) -> Document | None:
        """The attached file (built now if it was not yet), or ``None``."""
        return self.attachment.get() if self.attachment is not None else None

    @property
    def text(self) -> str:
        """All message texts, joined by blank lines (for logs and tests)."""
        return "\n\n".join(m["text"] for m in self.messages)


@dataclass(slots=True)
class _Piece:
    html: str
    group: int  # pieces of one <pre> share a group; -1 for ordinary lines
    wrap: tuple[str, str] = ("", "")


class TelegramRenderer(MessageRenderer[TelegramPayload]):
    """Renders for the ``telegram`` channel. ``max_messages`` caps how many messages one result becomes."""

    channels: ClassVar[tuple[str, ...]] = ("telegram",)
    default_limits: ClassVar[Limits] = Limits(value_chars=1000, text_chars=3000, cell_chars=80, items=200)

    def __init__(self, *, max_messages: int = 5, **options: Any) -> None:
        super().__init__(**options)
        if max_messages < 1:
            raise ValueError("TelegramRenderer(max_messages=...) must be at least 1")
        self.max_messages = max_messages

    def render_message(self, message: Message) -> TelegramPayload:
        return self._remembered(message) or self._remember(message, self._render(message))

    def _render(self, message: Message) -> TelegramPayload:
        pieces = _pieces(message.blocks)
        attachment = message.full if message.truncated else None
        if message.truncated:
            pieces += _note_pieces(attachment)
        pages = _pack(pieces) if _may_split(pieces) else _one_page(pieces)
        if len(pages) > self.max_messages:
            attachment = message.full
            pages = pages[: self.max_messages]
            _fit_note(pages[-1], _note_pieces(attachment))
        texts = [t for t in (_page_html(p) for p in pages) if _shows(t)]
        texts = texts or [_esc(clean(message.summary)[:200]).strip() or "…"]
        messages = [_message(t) for t in texts]
        keyboard = _keyboard(message.buttons)
        if keyboard:
            messages[-1]["reply_markup"] = {"inline_keyboard": keyboard}
        return TelegramPayload(tuple(messages), attachment)


def _shows(html: str) -> bool:
    """Whether ``html`` shows anything once its tags are taken out (``_TAG.sub("", html).strip()``): a character
    :data:`_VISIBLE` finds is outside every tag; without one, only a ``<`` no tag closes could still show."""
    return _VISIBLE.search(html) is not None or bool(_TAG.sub("", html).strip())


def _message(text: str) -> dict[str, Any]:
    return {"text": text, "parse_mode": "HTML", "link_preview_options": {"is_disabled": True}}


#: ``InlineKeyboardButton.style`` for a button's style: the action the card is for green (Slack shows its
#: ``primary`` green too), a destructive or refusing one red, the others Telegram's own.
BUTTON_STYLES = {"primary": "success", "danger": "danger"}


def _keyboard(buttons: tuple[Button, ...]) -> list[list[dict[str, str]]]:
    rows = chunked(buttons[:MAX_BUTTONS], MAX_ROW_BUTTONS)
    return [[_button(b) for b in row] for row in rows]


def _button(button: Button) -> dict[str, str]:
    rendered = {"text": clean(button.label), "callback_data": button.callback_data}
    style = BUTTON_STYLES.get(button.style)
    if style is not None:
        rendered["style"] = style
    return rendered


# ------------------------------------------------------------------ blocks -> pieces
def _pieces(blocks: tuple[Block, ...]) -> list[_Piece]:
    pieces: list[_Piece] = []
    for index, block in enumerate(blocks):
        drawn = type(block) in _LINES  # (a text block of the model's own types: neither Actions nor Code)
        if not drawn and isinstance(block, Actions):
            continue
        if pieces:
            pieces.append(_BLANK)
        if not drawn and isinstance(block, Code):
            pieces += _code(block, index)
        else:
            pieces += [_Piece(h, -1) for line in _lines(block) for h in wrap_line(line)]
    return pieces


#: The blank line between two blocks (pieces are never changed once made: one serves every message).
_BLANK: Final = _Piece("", -1)


def _lines(block: Block) -> list[list[_Seg]]:
    make = _LINES.get(type(block))  # (a block of the model's own types: one look-up, no isinstance chain)
    if make is not None:
        return make(block)
    for kind, make in _LINES.items():  # a subclass of one of them
        if isinstance(block, kind):
            return make(block)
    return []


def _heading(block: Heading) -> list[list[_Seg]]:
    if "\n" not in block.text:
        return [[("<b>", "</b>", f"{block.icon} {block.text}".strip())]]
    return [[("<b>", "</b>", f"{block.icon} {t}".strip())] for t in block.text.split("\n")]


def _fields(block: Fields) -> list[list[_Seg]]:
    out: list[list[_Seg]] = []
    for name, value in block.items:
        if "\n" not in value:  # (most values: one line, no split)
            out.append([("<b>", "</b>", f"{name}:"), ("", "", f" {value}")])
            continue
        first, *rest = value.split("\n")
        out.append([("<b>", "</b>", f"{name}:"), ("", "", f" {first}")])
        out += [[("", "", f"  {line}")] for line in rest]
    return out


def _table(block: Table) -> list[list[_Seg]]:
    return [table_row(block, row, _bold) for row in block.rows]


def _note(block: Note) -> list[list[_Seg]]:
    return [[("<i>", "</i>", line)] for line in block.text.split("\n")]


def _divider(block: Divider) -> list[list[_Seg]]:
    return [[("", "", "────────")]]


def _paragraph(block: Paragraph) -> list[list[_Seg]]:
    lines: list[list[_Seg]] = [[]]
    for span in block.spans:
        tags = _STYLE_TAGS[span.style]
        for i, part in enumerate(span.text.split("\n")):
            if i:
                lines.append([])
            lines[-1].append((*tags, part))
    return lines


def _items(block: ItemList) -> list[list[_Seg]]:
    out: list[list[_Seg]] = []
    for n, item in enumerate(block.items, 1):
        first, *rest = item.split("\n")
        out.append([("", "", f"{n}. " if block.ordered else "• "), ("", "", first)])
        out += [[("", "", f"   {line}")] for line in rest]
    return out


#: Each text block type's lines, in the order a subclass is matched.
_LINES: Final[dict[type[Any], Callable[[Any], list[list[_Seg]]]]] = {
    Heading: _heading,
    Paragraph: _paragraph,
    Fields: _fields,
    ItemList: _items,
    Table: _table,
    Note: _note,
    Divider: _divider,
}


def _row(table: Table, row: tuple[str, ...]) -> list[_Seg]:
    """``• <b>#id</b> title — Column: value · Column: value`` (empty cells left out)."""
    return table_row(table, row, _bold)


def _bold(text: str) -> list[_Seg]:
    return [("<b>", "</b>", text)]


def _code(block: Code, group: int) -> list[_Piece]:
    wrap = _WRAPS.get(block.language)
    if wrap is None:
        wrap = _wrapper(block.language)
        if len(_WRAPS) < 64:  # (languages a program names: a handful)
            _WRAPS[block.language] = wrap
    return [_Piece(h, group, wrap) for line in block.text.split("\n") for h in wrap_line([("", "", line)])]


#: A code block's language -> its ``<pre>`` wrapper.
_WRAPS: dict[str, tuple[str, str]] = {}


def _wrapper(language: str) -> tuple[str, str]:
    language = "".join(ch for ch in language if ch.isalnum() or ch in "+-_")[:20]
    return ('<pre><code class="language-' + language + '">', "</code></pre>") if language else ("<pre>", "</pre>")


# ------------------------------------------------------------------ packing into messages
def _pack(pieces: list[_Piece]) -> list[list[_Piece]]:
    """Pieces in pages of at most 4,096 UTF-16 units (an upper bound: wrappers and newlines
    are counted as they are added, trailing blank lines are dropped later)."""
    pages: list[list[_Piece]] = []
    page: list[_Piece] = []
    size = 0
    for piece in pieces:
        blank = not piece.html and piece.group == -1
        cost = _cost(page, piece)
        if page and size + cost > MAX_MESSAGE_LENGTH:
            pages.append(page)
            page, size = [], 0
            cost = _cost(page, piece)
        if blank and not page:
            continue  # no blank line at the top of a message
        page.append(piece)
        size += cost
    if page:
        pages.append(page)
    return pages


def _may_split(pieces: list[_Piece]) -> bool:
    """Whether the pieces may need more than one message: an upper bound of their UTF-16 size (a character
    is at most two units; every piece a newline and a wrapper) over the limit. Else :func:`_pack` would give
    one page of them all (:func:`_one_page`) and is not asked."""
    size = len(pieces) + len("".join([piece.html for piece in pieces]))  # (a newline each)
    for piece in pieces:
        if piece.group != -1:  # (only a code block's pieces have a wrapper)
            size += len(piece.wrap[0]) + len(piece.wrap[1])
    return 2 * size > MAX_MESSAGE_LENGTH


def _one_page(pieces: list[_Piece]) -> list[list[_Piece]]:
    """:func:`_pack` of pieces that fit one message: them all, less the blank lines at its top (none at all
    when nothing else is left)."""
    start = 0
    while start < len(pieces) and not pieces[start].html and pieces[start].group == -1:
        start += 1
    return [pieces[start:]] if start < len(pieces) else []


def _cost(page: list[_Piece], piece: _Piece) -> int:
    opens = piece.group != -1 and (not page or page[-1].group != piece.group)
    wrapper = len(piece.wrap[0]) + len(piece.wrap[1]) if opens else 0
    return utf16_len(piece.html) + (1 if page else 0) + wrapper  # a newline joins it to the page


def _size(page: list[_Piece]) -> int:
    return utf16_len(_page_html(page))


def _page_html(page: list[_Piece]) -> str:
    while page and not page[-1].html and page[-1].group == -1:
        page = page[:-1]
    lines = [piece.html for piece in page]
    last = len(page) - 1
    for i, piece in enumerate(page):
        if piece.group != -1:  # a code block's line: opened by its first, closed by its last
            opens = i == 0 or page[i - 1].group != piece.group
            closes = i == last or page[i + 1].group != piece.group
            lines[i] = (piece.wrap[0] if opens else "") + piece.html + (piece.wrap[1] if closes else "")
    return "\n".join(lines)


def _note_pieces(attachment: LazyDocument | None) -> list[_Piece]:
    text = "Shortened for chat."
    if attachment is not None:
        text = f"Shortened for chat; the full content is in the attached file {attachment.filename}."
    return [_Piece("", -1), _Piece(f"<i>{_esc(text)}</i>", -1)]


def _fit_note(page: list[_Piece], note: list[_Piece]) -> None:
    while page and _size(page + note) > MAX_MESSAGE_LENGTH:
        page.pop()
    page += note
