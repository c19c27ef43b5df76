"""``confirm()``: an inline Confirm/Cancel prompt for a call that asked for confirmation.

For scripts in a notebook::

    result = registry.call_sync("delete_note", {"note_id": 3})   # a confirm tool: nothing ran yet
    prompt = confirm(registry, result)                             # shows the card with Confirm / Cancel
    prompt                                                         # (display it, if not the last line)
    final = await prompt                                           # the tool's result, or None if cancelled

Waiting is always ``await`` (or ``prompt.add_done_callback(...)``): a cell that blocks never
receives the click.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import html
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Literal

import ipywidgets as widgets

from milpa_chat.jupyter._async import Background
from milpa_chat.jupyter._results import ResultView
from milpa_chat.renderers.model import Button, Heading, Message, Paragraph
from milpa_chat.runtime.context import ToolContext

if TYPE_CHECKING:
    from milpa_chat.renderers import JupyterRenderer
    from milpa_chat.runtime.registry import ToolRegistry
    from milpa_chat.runtime.result import ToolResult

__all__ = ["ConfirmPrompt", "PromptState", "confirm"]

PromptState = Literal["pending", "confirmed", "cancelled", "expired", "nothing_to_confirm"]


def confirm(
    registry: ToolRegistry,
    result: ToolResult,
    *,
    context: ToolContext | None = None,
    renderer: JupyterRenderer | None = None,
) -> ConfirmPrompt:
    """An inline prompt for ``result``, a call that is waiting for confirmation.

    ``context`` must be the caller of the first call (``ToolContext.cli()``, the default of
    ``call_sync``, when none is given): a confirm token only works for the principal that asked.
    When ``result`` asks for nothing, the prompt is already done and shows it.
    """
    return ConfirmPrompt(registry, result, context=context or ToolContext.cli(), renderer=renderer)


class ConfirmPrompt:
    """The Confirm/Cancel card of one call. ``await prompt`` gives the tool's result
    (``None`` when cancelled or expired); ``state`` says which: ``pending``, ``confirmed``,
    ``cancelled``, ``expired``, or ``nothing_to_confirm`` when the call did not ask."""

    def __init__(
        self,
        registry: ToolRegistry,
        result: ToolResult,
        *,
        context: ToolContext,
        renderer: JupyterRenderer | None = None,
    ) -> None:
        self.registry = registry
        self.context = context
        self.request = result
        self.tool = str(result.meta.get("tool") or "")
        self.token = result.confirm_token if result.requires_confirmation() else None
        self.state: PromptState = "pending"
        self.result: ToolResult | None = None
        self.view = ResultView(renderer)
        self.status = widgets.HTML(value="")
        self.widget = widgets.VBox([self.view.widget, self.status])
        self._decided = False
        self._waiters: list[asyncio.Future[ToolResult | None]] = []
        self._callbacks: list[Callable[[ConfirmPrompt], None]] = []
        self._bg = Background(self._on_error)
        if self.token is None:
            self.view.show_result(result)
            self._finish("nothing_to_confirm", result)
            return
        self.view.show_result(result, self._press, keep=lambda b: b.action in ("confirm", "cancel"))
        self._start_expiry_timer()

    # ---------------------------------------------------------------- display
    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    @property
    def confirm_button(self) -> widgets.Button:
        return self._button("confirm")

    @property
    def cancel_button(self) -> widgets.Button:
        return self._button("cancel")

    def _button(self, action: str) -> widgets.Button:
        for spec in self.view.payload.buttons if self.view.payload else ():
            if spec.action == action and spec.label in self.view.buttons:
                return self.view.buttons[spec.label]
        raise LookupError(f"this prompt has no {action} button (state: {self.state})")

    # ---------------------------------------------------------------- waiting
    @property
    def done(self) -> bool:
        return self.state != "pending"

    def __await__(self) -> Generator[Any, None, ToolResult | None]:
        return self.wait().__await__()

    async def wait(self) -> ToolResult | None:
        """The tool's result once decided (``None`` when cancelled or expired); ``await prompt`` is the same.

        To give up after a while: ``async with asyncio.timeout(60): await prompt`` (the prompt stays open).
        """
        if self.done:
            return self.result
        waiter: asyncio.Future[ToolResult | None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        return await asyncio.shield(waiter)

    def add_done_callback(self, callback: Callable[[ConfirmPrompt], None]) -> None:
        """Call ``callback(prompt)`` once decided (at once when it already is)."""
        if self.done:
            callback(self)
        else:
            self._callbacks.append(callback)

    async def idle(self) -> None:
        """Wait until the work started by a click has finished."""
        await self._bg.idle()

    # --------------------------------------------------------------- deciding
    def _press(self, button: Button) -> None:
        if self._decided:
            return
        self._decided = True
        self.view.disable_buttons()
        work = self._confirm() if button.action == "confirm" else self._cancel()
        self._bg.spawn(work)

    async def _confirm(self) -> None:
        assert self.token is not None
        self.status.value = f"<i class='fa fa-spinner fa-spin'></i> Running <code>{html.escape(self.tool)}</code>…"
        result = await self.registry.call(self.tool, {"confirm_token": self.token}, self.context)
        self.view.show_result(result)
        self.status.value = ""
        self._finish("confirmed", result)

    async def _cancel(self) -> None:
        assert self.token is not None
        await self.registry.confirmations.cancel(self.token, self.context)
        self._show_closed(f"Cancelled: {self.tool}", "✖️")
        self._finish("cancelled", None)

    def _start_expiry_timer(self) -> None:
        expires = _expiry(self.request)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if expires is not None:
            delay = max(0.0, (expires - dt.datetime.now(dt.UTC)).total_seconds())
            loop.call_later(delay, self._expire)

    def _expire(self) -> None:
        if self._decided:
            return
        self._decided = True
        self.view.disable_buttons()
        self._show_closed(f"Expired: {self.tool}", "⌛")
        self._finish("expired", None)

    def _show_closed(self, heading: str, icon: str) -> None:
        self.view.show_message(Message((Heading(heading, icon), Paragraph.of("Nothing was done.")), heading, "warning"))

    def _finish(self, state: PromptState, result: ToolResult | None) -> None:
        self._decided = True
        self.state, self.result = state, result
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(result)
        self._waiters.clear()
        for callback in self._callbacks:
            callback(self)
        self._callbacks.clear()

    def _on_error(self, exc: BaseException) -> None:
        self.status.value = (
            f"<span style='color:#d32f2f'>⚠ Confirming failed: {html.escape(type(exc).__name__)}: "
            f"{html.escape(str(exc))}</span>"
        )
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_exception(exc)


def _expiry(result: ToolResult) -> dt.datetime | None:
    data = result.data if isinstance(result.data, dict) else {}
    try:
        moment = dt.datetime.fromisoformat(str(data.get("expires_at")))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
