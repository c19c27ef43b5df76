"""Jupyter: HTML for ``IPython.display`` plus the structured message the widgets need.

``JupyterPayload`` displays itself (``_repr_html_``), so ``display(payload)`` works; the
approval widgets read ``payload.buttons`` (label, action, ref, style) to build their own
buttons, so the HTML carries none. ``payload.document`` holds everything when a value was
shortened (offer it as a download).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Final

from milpa_chat.renderers._build import Limits
from milpa_chat.renderers._html import message_html
from milpa_chat.renderers.base import MessageRenderer
from milpa_chat.renderers.model import Button, Document, LazyDocument, Message

__all__ = ["JupyterPayload", "JupyterRenderer"]

STYLE: Final = """<style>
.milpa{font-family:var(--jp-ui-font-family,sans-serif);border-left:4px solid #8a8a8a;padding:4px 12px;margin:4px 0}
.milpa-success{border-color:#2e7d32}.milpa-warning{border-color:#ed6c02}.milpa-danger{border-color:#d32f2f}
.milpa-heading{font-size:1.1em;margin:4px 0}.milpa-note{color:#666}
.milpa-fields{display:grid;grid-template-columns:max-content auto;gap:2px 12px;margin:4px 0}
.milpa-fields dt{font-weight:bold}.milpa-fields dd{margin:0}
.milpa-table{border-collapse:collapse}
.milpa-table th,.milpa-table td{border:1px solid #ccc;padding:2px 6px;text-align:left}
.milpa-code{background:#f5f5f5;padding:6px;white-space:pre-wrap;word-break:break-word}
</style>"""


@dataclass(frozen=True, slots=True)
class JupyterPayload:
    """``html`` to display, the composed ``message`` (blocks and buttons) and an optional document."""

    html: str
    message: Message
    attachment: LazyDocument | None = field(default=None, compare=False)

    @property
    def document(self) -> Document | None:
        """The full content when something was shortened (built now if it was not yet), or ``None``."""
        return self.attachment.get() if self.attachment is not None else None

    @property
    def buttons(self) -> tuple[Button, ...]:
        return self.message.buttons

    def _repr_html_(self) -> str:
        return self.html


class JupyterRenderer(MessageRenderer[JupyterPayload]):
    """Renders for the ``jupyter`` channel."""

    channels: ClassVar[tuple[str, ...]] = ("jupyter",)
    default_limits: ClassVar[Limits] = Limits(value_chars=2000, text_chars=5000, cell_chars=120, items=500)

    def render_message(self, message: Message) -> JupyterPayload:
        attachment = message.full if message.truncated else None
        note = None
        if message.truncated:
            note = "Shortened for display."
            if attachment is not None:
                note = f"Shortened for display; the full content is available as {attachment.filename}."
        return JupyterPayload(STYLE + "\n" + message_html(message, buttons=False, note=note), message, attachment)
