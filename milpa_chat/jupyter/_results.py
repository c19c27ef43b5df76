"""Show a result or an approval card as the jupyter renderer draws it, its buttons as widgets."""

from __future__ import annotations

import base64
import html
from collections.abc import Callable

import ipywidgets as widgets

from milpa_chat.jupyter._async import SafeButton
from milpa_chat.renderers import CliRenderer, JupyterPayload, JupyterRenderer
from milpa_chat.renderers.model import Button, Message
from milpa_chat.runtime.result import ToolResult

__all__ = ["ResultView"]

_STYLES = {"primary": "primary", "danger": "danger", "default": ""}
#: Results larger than this are not offered as an inline download (the notebook file would grow).
MAX_DOWNLOAD_BYTES = 5 * 1024 * 1024

OnButton = Callable[[Button], None]


class ResultView:
    """An HTML area, a row of buttons and, when something was shortened, a download link."""

    def __init__(self, renderer: JupyterRenderer | None = None) -> None:
        self.renderer = renderer or JupyterRenderer()
        self.html = widgets.HTML(value="")
        self.actions = widgets.HBox([])
        self.download = widgets.HTML(value="")
        self.widget = widgets.VBox([self.html, self.actions, self.download])
        self.payload: JupyterPayload | None = None
        self.buttons: dict[str, SafeButton] = {}

    @property
    def text(self) -> str:
        """What is shown, as plain text (empty before anything was shown)."""
        return "" if self.payload is None else CliRenderer().render_message(self.payload.message)

    def show_result(
        self, result: ToolResult, on_button: OnButton | None = None, keep: Callable[[Button], bool] | None = None
    ) -> None:
        self.show(self.renderer.render(result), on_button, keep)

    def show_message(self, message: Message, on_button: OnButton | None = None) -> None:
        self.show(self.renderer.render_message(message), on_button)

    def show(
        self, payload: JupyterPayload, on_button: OnButton | None = None, keep: Callable[[Button], bool] | None = None
    ) -> None:
        """Draw ``payload``; each of its buttons that ``keep`` accepts calls ``on_button`` when clicked."""
        self.payload = payload
        self.html.value = payload.html
        for old in self.buttons.values():
            old.close()
        self.buttons = {}
        if on_button is not None:
            for spec in payload.buttons:
                if keep is None or keep(spec):
                    self.buttons[spec.label] = _widget_button(spec, on_button)
        self.actions.children = tuple(self.buttons.values())
        self.download.value = _download_link(payload)

    def disable_buttons(self) -> None:
        for button in self.buttons.values():
            button.disabled = True

    def clear(self) -> None:
        self.payload = None
        self.html.value = ""
        for old in self.buttons.values():
            old.close()
        self.buttons = {}
        self.actions.children = ()
        self.download.value = ""


def _widget_button(spec: Button, on_button: OnButton) -> SafeButton:
    button = SafeButton(description=spec.label, button_style=_STYLES.get(spec.style, ""), tooltip=spec.label)
    button.on_click(lambda _b: on_button(spec))
    return button


def _download_link(payload: JupyterPayload) -> str:
    doc = payload.document
    if doc is None:
        return ""
    name = html.escape(doc.filename)
    size = f"{len(doc.content) / 1024:.1f} KB"
    if len(doc.content) > MAX_DOWNLOAD_BYTES:
        return f"<small>The full content ({name}, {size}) is too large to offer here.</small>"
    data = base64.b64encode(doc.content).decode("ascii")
    return f"<a download='{name}' href='data:{html.escape(doc.mime_type)};base64,{data}'>⬇ Download {name} ({size})</a>"
