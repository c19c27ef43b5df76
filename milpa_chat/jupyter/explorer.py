"""``ToolExplorer``: pick a tool, fill a form generated from its schema, Run or Dry run it.

The list is read through :class:`~milpa_chat.command.ExplorerProjector` — the one reading of the
catalogue every surface shares (the tools this context may call, minus operations that did not opt
into the ``jupyter`` surface). Every call goes through the registry's pipeline with the explorer's
context, exactly as a chat call would: validation errors are shown beside the fields, a confirm
tool shows Confirm/Cancel, a paginated result gets page buttons, and a dry run (plan mode) reports
what would happen.
"""

from __future__ import annotations

import asyncio
import html
import time
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from milpa_chat.command.projectors import ExplorerItem, ExplorerProjector
from milpa_chat.jupyter._async import Background, SafeButton
from milpa_chat.jupyter._forms import SchemaForm
from milpa_chat.jupyter._results import ResultView
from milpa_chat.renderers.model import Button, Heading, Message, Paragraph
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.redaction import mask_text
from milpa_chat.runtime.result import ErrorCode, ToolResult

if TYPE_CHECKING:
    from milpa_chat.renderers import JupyterRenderer
    from milpa_chat.runtime.definition import ToolDefinition
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["ToolExplorer"]

SPINNER = "<i class='fa fa-spinner fa-spin'></i>"


class ToolExplorer:
    """A notebook UI over a :class:`~milpa_chat.runtime.registry.ToolRegistry`.

    ``context`` is who the calls run as (``ToolContext.jupyter()`` by default: every scope, the
    ``jupyter`` channel policy). Only the tools this context may call are listed.
    ``page_argument`` names the argument page buttons change.

    Clicking Run starts the call on the notebook's event loop and returns at once; the result
    appears when it is done. From code, ``await explorer.run()`` does the same and returns the
    :class:`~milpa_chat.runtime.result.ToolResult`.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        context: ToolContext | None = None,
        *,
        renderer: JupyterRenderer | None = None,
        page_argument: str = "page",
        projector: ExplorerProjector | None = None,
    ) -> None:
        self.registry = registry
        self.context = context or ToolContext.jupyter()
        self.projector = projector or ExplorerProjector()
        self.page_argument = page_argument
        self.search = widgets.Text(placeholder="Search tools by name, description or tag", value="")
        self.picker = widgets.Select(options=[], rows=8, layout=widgets.Layout(width="260px"))
        self.info = widgets.HTML(value="")
        self.form = SchemaForm({})
        self.form_box = widgets.VBox([])
        self.run_button = SafeButton(description="Run", button_style="primary", icon="play")
        self.dry_run_button = SafeButton(description="Dry run", icon="search", tooltip="Plan mode: nothing runs")
        self.status = widgets.HTML(value="")
        self.output = ResultView(renderer)
        self.last_result: ToolResult | None = None
        self._last_call: tuple[str, dict[str, Any]] | None = None
        self._pending_confirm: tuple[str, str] | None = None
        self._busy = False
        self._bg = Background(self._on_error)
        self.widget = self._layout()
        self.search.observe(lambda _c: self._filter(), names="value")
        self.picker.observe(lambda _c: self._picked(), names="value")
        self.run_button.on_click(lambda _b: self._bg.spawn(self._run_quietly(plan=False)))
        self.dry_run_button.on_click(lambda _b: self._bg.spawn(self._run_quietly(plan=True)))
        self._filter()

    # ------------------------------------------------------------------ display
    def _layout(self) -> widgets.VBox:
        who = html.escape(
            f"{self.context.principal} · channel {self.context.channel} · "
            f"scopes {', '.join(self.context.scopes) or '(none)'}"
        )
        header = widgets.HTML(value=f"<b>🧰 Tool explorer</b> <small style='color:#666'>as {who}</small>")
        buttons = widgets.HBox([self.run_button, self.dry_run_button])
        right = widgets.VBox([self.info, self.form_box, buttons, self.status])
        return widgets.VBox(
            [header, widgets.HBox([widgets.VBox([self.search, self.picker]), right]), self.output.widget]
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    # ----------------------------------------------------------------- choosing
    @property
    def items(self) -> list[ExplorerItem]:
        """What the list shows: the explorer projector's reading of the registry for this context."""
        return self.projector.catalogue(self.registry, self.context)

    @property
    def tools(self) -> list[ToolDefinition]:
        """The tools this explorer's context may call, in registration order."""
        found = (self.registry.get(item.name) for item in self.items)
        return [t for t in found if t is not None]

    @property
    def tool(self) -> ToolDefinition | None:
        """The selected tool."""
        return self.registry.get(self.picker.value) if self.picker.value else None

    def select(self, name: str) -> SchemaForm:
        """Choose a tool (as clicking it in the list would) and return its form."""
        names = [i.name for i in self.items]
        if name not in names:
            raise KeyError(f"no tool {name!r} for {self.context.principal}; the tools are: {', '.join(names)}")
        if name not in self.picker.options:
            self.search.value = ""
        self.picker.value = name
        return self.form

    def _filter(self) -> None:
        words = self.search.value.lower().split()
        shown = [i.name for i in self.items if all(w in i.search_text for w in words)]
        current = self.picker.value
        self.picker.options = shown
        self.picker.value = current if current in shown else (shown[0] if shown else None)

    def _picked(self) -> None:
        tool = self.tool
        self.form.close()
        self.form = SchemaForm(tool.input_schema if tool else {})
        self.form_box.children = (self.form.widget,) if tool else ()
        self.info.value = _describe(tool, self.registry, self.context) if tool else "<i>No tool matches.</i>"
        self.output.clear()
        self.status.value = ""
        self._pending_confirm = None

    # ------------------------------------------------------------------ calling
    @property
    def busy(self) -> bool:
        """True while a call started here is running."""
        return self._busy

    async def idle(self) -> None:
        """Wait until everything started by clicks has finished."""
        await self._bg.idle()

    async def run(self, *, plan: bool = False) -> ToolResult | None:
        """Run the selected tool with the form's values (``plan=True``: a dry run).

        Returns the result, or ``None`` when nothing was called (no tool, or a field could not be read).
        """
        tool = self.tool
        if tool is None:
            self._say("Pick a tool first.")
            return None
        args = self.form.values()
        if args is None:
            self._say("⚠ Fix the marked fields, then run again.")
            return None
        ctx = self.context.as_plan() if plan else self.context
        result = await self._call(tool.name, args, ctx)
        self._last_call = (tool.name, args)
        if result.code == ErrorCode.VALIDATION_ERROR and isinstance(result.data, dict):
            self.form.show_errors(result.data.get("errors") or [])
        self._show(tool.name, result)
        return result

    async def dry_run(self) -> ToolResult | None:
        """Validate and authorize with the form's values in plan mode; nothing runs."""
        return await self.run(plan=True)

    async def _run_quietly(self, *, plan: bool) -> None:
        await self.run(plan=plan)

    async def confirm(self) -> ToolResult | None:
        """Confirm the call waiting for confirmation (the Confirm button)."""
        if self._pending_confirm is None:
            self._say("Nothing is waiting for confirmation.")
            return None
        name, token = self._pending_confirm
        self._pending_confirm = None
        self.output.disable_buttons()
        result = await self._call(name, {"confirm_token": token}, self.context)
        self._show(name, result)
        return result

    async def cancel(self) -> None:
        """Cancel the call waiting for confirmation (the Cancel button); nothing runs."""
        if self._pending_confirm is None:
            self._say("Nothing is waiting for confirmation.")
            return
        name, token = self._pending_confirm
        self._pending_confirm = None
        self.output.disable_buttons()
        await self.registry.confirmations.cancel(token, self.context)
        self.output.show_message(
            Message(
                (Heading(f"Cancelled: {name}", "✖️"), Paragraph.of("Nothing was done.")), f"Cancelled: {name}", "warning"
            )
        )
        self._say(f"Cancelled {html.escape(name)}; nothing was done.")

    async def _call(self, name: str, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        verb = "Dry run of" if ctx.is_plan else "Running"
        self._set_busy(True)
        started = time.monotonic()
        ticker = asyncio.ensure_future(self._tick(f"{verb} <code>{html.escape(name)}</code>", started))
        try:
            result = await self.registry.call(name, args, ctx)
        finally:
            ticker.cancel()
            self._set_busy(False)
        took = (time.monotonic() - started) * 1000
        mark = "✓" if result.success else "✗"
        self._say(
            f"{mark} <code>{html.escape(name)}</code> answered in {took:,.0f} ms"
            + (" (dry run: nothing was executed)" if ctx.is_plan else "")
        )
        self.last_result = result
        return result

    async def _tick(self, what: str, started: float) -> None:
        while True:
            self._say(f"{SPINNER} {what}… {time.monotonic() - started:.1f} s")
            await asyncio.sleep(0.2)

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        self.run_button.disabled = self.dry_run_button.disabled = busy

    def _say(self, markup: str) -> None:
        self.status.value = markup

    def _on_error(self, exc: BaseException) -> None:
        self._set_busy(False)
        self._say(
            f"<span style='color:#d32f2f'>⚠ The explorer failed: {html.escape(type(exc).__name__)}: "
            f"{html.escape(mask_text(str(exc)))}</span>"
        )

    # ------------------------------------------------------------------ results
    def _show(self, name: str, result: ToolResult) -> None:
        token = result.confirm_token if result.requires_confirmation() else None
        self._pending_confirm = (name, token) if token else None
        self.output.show_result(result, self._press, keep=lambda b: self._keeps(b, result))
        if result.meta.get("requires_verification") and isinstance(result.data, dict):
            self._say(
                f"🛂 Request <code>{html.escape(str(result.data.get('request_id')))}</code> waits for an "
                "approver; nothing runs until it is approved."
            )

    def _keeps(self, button: Button, result: ToolResult) -> bool:
        if button.action in ("confirm", "cancel"):
            return self._pending_confirm is not None
        if button.action == "page":
            return result.pagination is not None and self._last_call is not None
        return button.action in self.registry

    def _press(self, button: Button) -> None:
        self._bg.spawn(self._pressed(button))

    async def _pressed(self, button: Button) -> None:
        if button.action == "confirm":
            await self.confirm()
        elif button.action == "cancel":
            await self.cancel()
        elif button.action == "page":
            await self._page(int(button.ref.rpartition(":")[2]))
        else:
            await self._follow(button)

    async def _page(self, page: int) -> None:
        assert self._last_call is not None
        name, args = self._last_call
        if self.tool is not None and self.tool.name == name and self.page_argument in self.form.fields:
            self.form[self.page_argument].value = page
        args = {**args, self.page_argument: page}
        result = await self._call(name, args, self.context)
        self._last_call = (name, args)
        self._show(name, result)

    async def _follow(self, button: Button) -> None:
        from milpa_chat.chat.commands import CommandError, parse_arguments

        definition = self.registry.get(button.action)
        if definition is None:
            return
        try:
            args = parse_arguments(button.ref, definition.input_schema)
        except CommandError as exc:
            self._say(f"⚠ {html.escape(button.label)}: {html.escape(mask_text(str(exc)))}")
            return
        result = await self._call(definition.name, args, self.context)
        self._last_call = (definition.name, args)
        self._show(definition.name, result)


def _describe(tool: ToolDefinition, registry: ToolRegistry, ctx: ToolContext) -> str:
    facts = [f"scopes: {', '.join(tool.scopes)}" if tool.scopes else "no scope needed"]
    if tool.mutating:
        facts.append("changes data")
    if tool.verify is not None:
        approvers = ", ".join(tool.verify.approver_scopes) or "any approver"
        facts.append(f"needs approval ({approvers})")
    elif registry.policy.requires_confirmation(ctx, tool):
        facts.append("asks to confirm")
    return (
        f"<b>{html.escape(tool.name)}</b> — {html.escape(tool.description)}<br>"
        f"<small style='color:#666'>{html.escape(' · '.join(facts))}</small>"
    )
