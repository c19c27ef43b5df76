"""The channel-neutral message model every renderer turns into a native payload.

A :class:`Message` is a tuple of blocks (heading, paragraphs, fields, tables, code, notes,
button rows) plus a one-line ``summary`` for notifications and fallbacks. The chat layer may
build messages itself and hand them to any renderer's ``render_message``; tool results and
approval cards are composed into messages by :mod:`milpa_chat.renderers.compose` and
:mod:`milpa_chat.renderers.approval`.

Text inside blocks is plain, unescaped text: each renderer escapes for its own channel.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from milpa_chat.renderers._text import clean

__all__ = [
    "MAX_BUTTON_LABEL",
    "MAX_CALLBACK_BYTES",
    "Actions",
    "Block",
    "Button",
    "ButtonStyle",
    "Code",
    "Divider",
    "Document",
    "Fields",
    "Heading",
    "ItemList",
    "LazyDocument",
    "Message",
    "Note",
    "Paragraph",
    "Span",
    "Table",
    "Tone",
    "parse_callback_data",
]

#: Telegram's limit for ``callback_data``, in UTF-8 bytes. A button's ``"<action>:<ref>"`` fits it.
MAX_CALLBACK_BYTES: Final = 64
#: Slack's limit for button text (Telegram has none documented); labels longer than this are refused.
MAX_BUTTON_LABEL: Final = 75

ButtonStyle: TypeAlias = Literal["default", "primary", "danger"]
Tone: TypeAlias = Literal["info", "success", "warning", "danger"]
SpanStyle: TypeAlias = Literal["plain", "bold", "italic", "code"]

_ACTION = re.compile(r"[A-Za-z0-9_.\-]+")


@dataclass(frozen=True, slots=True)
class Button:
    """A button: ``label`` shown, ``action`` (a verb such as ``approve``) and ``ref`` (an opaque
    id, such as an approval id) sent back when tapped. Who tapped is never taken from here.

    Raises :class:`ValueError` when the label is empty or over 75 characters, when the action
    is not a word of ``[A-Za-z0-9_.-]``, or when ``"<action>:<ref>"`` exceeds 64 UTF-8 bytes
    (Telegram's ``callback_data`` limit), so every button is valid on every channel.
    """

    label: str
    action: str
    ref: str
    style: ButtonStyle = "default"

    def __post_init__(self) -> None:
        if not self.label.strip():
            raise ValueError("Button label must not be empty")
        if len(self.label) > MAX_BUTTON_LABEL:
            raise ValueError(
                f"Button label is {len(self.label)} characters; Slack allows {MAX_BUTTON_LABEL}. "
                f"Shorten it: {self.label[:40]!r}..."
            )
        if not _ACTION.fullmatch(self.action):
            raise ValueError(
                f"Button action {self.action!r} must be a non-empty word of letters, digits, '_', '.', '-' "
                "(no ':'; it separates the action from the ref)"
            )
        if clean(self.ref) != self.ref or "\n" in self.ref:
            raise ValueError(f"Button ref must be printable text without control characters: {self.ref[:80]!r}")
        size = len(self.callback_data.encode("utf-8", "surrogatepass"))
        if size > MAX_CALLBACK_BYTES:
            raise ValueError(
                f"Button data {self.callback_data[:80]!r} is {size} bytes; Telegram's callback_data allows "
                f"{MAX_CALLBACK_BYTES}. Use a shorter ref: an opaque id of at most "
                f"{MAX_CALLBACK_BYTES - len(self.action) - 1} ASCII characters for action {self.action!r}."
            )
        if self.style not in ("default", "primary", "danger"):
            raise ValueError(f"Button style must be 'default', 'primary' or 'danger', got {self.style!r}")

    @property
    def callback_data(self) -> str:
        """``"<action>:<ref>"``: Telegram ``callback_data``, Slack button ``value``, HTML data attribute."""
        return f"{self.action}:{self.ref}"


def parse_callback_data(data: str) -> tuple[str, str]:
    """Split ``"<action>:<ref>"`` (as sent back by a tap) into ``(action, ref)``.

    Raises :class:`ValueError` for data no :class:`Button` could have produced.
    """
    action, sep, ref = data.partition(":")
    if not sep or not _ACTION.fullmatch(action) or len(data.encode("utf-8", "replace")) > MAX_CALLBACK_BYTES:
        raise ValueError(f"not button data of the form '<action>:<ref>': {data[:80]!r}")
    return action, ref


@dataclass(frozen=True, slots=True)
class Span:
    """A run of text inside a paragraph."""

    text: str
    style: SpanStyle = "plain"


@dataclass(frozen=True, slots=True)
class Heading:
    """The title line; ``icon`` (an emoji) is shown before it where the channel allows."""

    text: str
    icon: str = ""


@dataclass(frozen=True, slots=True)
class Paragraph:
    """Text made of spans; line breaks (``\\n``) inside spans are kept."""

    spans: tuple[Span, ...]

    @classmethod
    def of(cls, *parts: str | Span) -> Paragraph:
        """``Paragraph.of("Run ", Span("delete", "code"), "?")``."""
        return cls(tuple([p if isinstance(p, Span) else Span(p) for p in parts]))  # (a list: no call an item)

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.spans)


@dataclass(frozen=True, slots=True)
class Fields:
    """Label/value pairs (an entity, a dict, an approval's facts)."""

    items: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ItemList:
    """A bulleted (or numbered) list of short texts."""

    items: tuple[str, ...]
    ordered: bool = False


@dataclass(frozen=True, slots=True)
class Table:
    """Rows of records. The first ``title_columns`` cells of a row are its title (shown without
    labels in chat channels); the rest are shown as ``column: value``."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    title_columns: int = 0


@dataclass(frozen=True, slots=True)
class Code:
    """Preformatted text shown exactly (monospace), e.g. tool arguments as JSON."""

    text: str
    language: str = ""


@dataclass(frozen=True, slots=True)
class Note:
    """Secondary text (pagination, expiry, request id), shown small or in italics."""

    text: str


@dataclass(frozen=True, slots=True)
class Divider:
    """A separator line."""


@dataclass(frozen=True, slots=True)
class Actions:
    """Rows of buttons. Renderers re-flow rows that exceed a channel's width."""

    rows: tuple[tuple[Button, ...], ...]

    @classmethod
    def row(cls, *buttons: Button) -> Actions:
        return cls((tuple(buttons),))


Block: TypeAlias = Heading | Paragraph | Fields | ItemList | Table | Code | Note | Divider | Actions


@dataclass(frozen=True, slots=True)
class Document:
    """A file offered with a message whose content had to be shortened."""

    filename: str
    content: bytes
    mime_type: str = "application/json"


class LazyDocument:
    """A document built on first use, once. Its ``filename`` is known before: renderers name
    the file in their "shortened" note without paying for a megabyte they may never send."""

    __slots__ = ("_build", "_document", "filename")

    def __init__(self, filename: str, build: Callable[[], Document]) -> None:
        self.filename = filename
        self._build = build
        self._document: Document | None = None

    def get(self) -> Document:
        if self._document is None:
            self._document = self._build()
        return self._document

    def __repr__(self) -> str:
        return f"LazyDocument({self.filename!r}, built={self._document is not None})"


@dataclass(frozen=True, slots=True)
class Message:
    """What one result or card says, independent of the channel.

    ``summary`` is one plain line (notification text, Slack fallback). ``truncated`` is true
    when something was shortened while composing; ``full`` is the document holding
    everything, offered then (or whenever a renderer has to cut further).
    """

    blocks: tuple[Block, ...]
    summary: str
    tone: Tone = "info"
    truncated: bool = False
    full: LazyDocument | None = field(default=None, compare=False, repr=False)

    @property
    def buttons(self) -> tuple[Button, ...]:
        found: list[Button] = []  # (a loop: every renderer asks, and a generator is a call an item)
        for block in self.blocks:
            if isinstance(block, Actions):
                for row in block.rows:
                    found += row
        return tuple(found)

    def document(self) -> Document | None:
        """The full-content document (built now if it was not yet), or ``None``."""
        return self.full.get() if self.full is not None else None

    def to_dict(self) -> dict[str, Any]:
        """The message as plain data (``{"summary", "tone", "truncated", "blocks": [...]}``)."""
        return {
            "summary": self.summary,
            "tone": self.tone,
            "truncated": self.truncated,
            "blocks": [_block_dict(b) for b in self.blocks],
        }


def _block_dict(block: Block) -> dict[str, Any]:
    kind = type(block).__name__.lower()
    if isinstance(block, Paragraph):
        return {"type": kind, "spans": [{"text": s.text, "style": s.style} for s in block.spans]}
    if isinstance(block, Fields):
        return {"type": kind, "items": [list(i) for i in block.items]}
    if isinstance(block, Table):
        rows = [list(r) for r in block.rows]
        return {"type": kind, "columns": list(block.columns), "rows": rows, "title_columns": block.title_columns}
    if isinstance(block, Actions):
        return {"type": kind, "rows": [[_button_dict(b) for b in row] for row in block.rows]}
    if isinstance(block, ItemList):
        return {"type": kind, "items": list(block.items), "ordered": block.ordered}
    if isinstance(block, Divider):
        return {"type": kind}
    return {"type": kind, **{name: getattr(block, name) for name in block.__slots__}}


def _button_dict(b: Button) -> dict[str, str]:
    return {"label": b.label, "action": b.action, "ref": b.ref, "style": b.style, "data": b.callback_data}


def chunked(items: Iterable[Button], size: int) -> list[tuple[Button, ...]]:
    """``items`` in rows of at most ``size``."""
    row: list[Button] = []
    rows: list[tuple[Button, ...]] = []
    for item in items:
        row.append(item)
        if len(row) == size:
            rows.append(tuple(row))
            row = []
    if row:
        rows.append(tuple(row))
    return rows
