"""A :class:`Message` as an HTML fragment (the web playground and Jupyter share it).

All text is escaped with ``html.escape`` (quotes too); values sit in ``<bdi>`` so right-to-left
data cannot reorder the labels around it. No script, no inline event handler, no URL from data.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Final

from milpa_chat.renderers._text import clean
from milpa_chat.renderers.model import (
    Actions,
    Block,
    Button,
    Code,
    Divider,
    Fields,
    Heading,
    ItemList,
    Message,
    Note,
    Paragraph,
    Table,
)

__all__ = ["message_html"]

_SPAN_TAGS: Final = {
    "plain": ("", ""),
    "bold": ("<strong>", "</strong>"),
    "italic": ("<em>", "</em>"),
    "code": ("<code>", "</code>"),
}


def _text(text: str) -> str:
    return escape(clean(text)).replace("\n", "<br>")


def message_html(message: Message, *, buttons: bool, note: str | None = None) -> str:
    """``<div class="milpa milpa-<tone>">…</div>``; ``buttons`` includes the button rows (as
    ``<button data-action data-ref>``), ``note`` adds a closing note (e.g. "shortened")."""
    parts = [f'<div class="milpa milpa-{message.tone}">']
    for block in message.blocks:
        if isinstance(block, Actions) and not buttons:
            continue
        parts.append(_EMIT[type(block)](block))
    if note:
        parts.append(f'<p class="milpa-note"><small>{_text(note)}</small></p>')
    parts.append("</div>")
    return "\n".join(parts)


def _heading(block: Block) -> str:
    assert isinstance(block, Heading)
    icon = f'<span class="milpa-icon">{escape(block.icon)}</span> ' if block.icon else ""
    return f'<div class="milpa-heading" role="heading" aria-level="3"><strong>{icon}{_text(block.text)}</strong></div>'


def _paragraph(block: Block) -> str:
    assert isinstance(block, Paragraph)
    inner = "".join(o + _text(s.text) + c for s in block.spans for o, c in [_SPAN_TAGS[s.style]])
    return f"<p>{inner}</p>"


def _fields(block: Block) -> str:
    assert isinstance(block, Fields)
    rows = "".join(f"<dt>{_text(k)}</dt><dd><bdi>{_text(v)}</bdi></dd>" for k, v in block.items)
    return f'<dl class="milpa-fields">{rows}</dl>'


def _items(block: Block) -> str:
    assert isinstance(block, ItemList)
    tag = "ol" if block.ordered else "ul"
    return f"<{tag}>" + "".join(f"<li><bdi>{_text(i)}</bdi></li>" for i in block.items) + f"</{tag}>"


def _table(block: Block) -> str:
    assert isinstance(block, Table)
    head = "".join(f"<th>{_text(c)}</th>" for c in block.columns)
    body = "".join(
        "<tr>" + "".join(f"<td><bdi>{_text(cell)}</bdi></td>" for cell in row) + "</tr>" for row in block.rows
    )
    return f'<table class="milpa-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _code(block: Block) -> str:
    assert isinstance(block, Code)
    language = "".join(ch for ch in block.language if ch.isalnum() or ch in "+-_")[:20]
    cls = f' class="language-{language}"' if language else ""
    return f'<pre class="milpa-code"><code{cls}>{escape(clean(block.text))}</code></pre>'


def _note(block: Block) -> str:
    assert isinstance(block, Note)
    return f'<p class="milpa-note"><small>{_text(block.text)}</small></p>'


def _divider(block: Block) -> str:
    return "<hr>"


def _button(b: Button) -> str:
    return (
        f'<button type="button" class="milpa-button milpa-{b.style}" data-action="{escape(b.action)}" '
        f'data-ref="{escape(b.ref)}">{_text(b.label)}</button>'
    )


def _actions(block: Block) -> str:
    assert isinstance(block, Actions)
    rows = "".join(f'<div class="milpa-row">{"".join(_button(b) for b in row)}</div>' for row in block.rows)
    return f'<div class="milpa-actions">{rows}</div>'


_EMIT: Final[dict[type, Callable[[Block], str]]] = {
    Heading: _heading,
    Paragraph: _paragraph,
    Fields: _fields,
    ItemList: _items,
    Table: _table,
    Code: _code,
    Note: _note,
    Divider: _divider,
    Actions: _actions,
}
