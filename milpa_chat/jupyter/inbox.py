"""``ApprovalInbox``: the approvals a notebook user may decide, from every surface, kept up to date.

With an :class:`~milpa_chat.chat.Assistant` the inbox decides: Approve/Reject (Confirm/Cancel for
the user's own confirm requests) go through ``assistant.handle`` as taps on the ``jupyter``
surface, so the same rules apply as in Telegram and Slack (scopes, four-eyes, quorum, expiry),
the tool runs once, and every copy of the card on every attached surface is edited. With a
:class:`~milpa_chat.store.Store` only, the inbox watches read-only (no one could run the tool).

The inbox re-reads the store every ``refresh_every`` seconds, so a decision made in Telegram or
Slack — also by another process sharing the store — shows up by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import html
import logging
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from milpa_chat.chat.approvals import Approval, requester_chat, requester_surface, view
from milpa_chat.chat.inbound import ChatUser, Inbound
from milpa_chat.jupyter._async import Background, SafeButton
from milpa_chat.jupyter._forms import EditPanel
from milpa_chat.jupyter._results import ResultView
from milpa_chat.jupyter._transport import NotebookTransport
from milpa_chat.renderers import JupyterRenderer
from milpa_chat.runtime.approvals import ApprovalDesk
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.sync import run_sync

if TYPE_CHECKING:
    from milpa_chat.chat.assistant import Assistant
    from milpa_chat.jupyter.inbox_actions import InboxActions
    from milpa_chat.renderers.approval import ApprovalRole
    from milpa_chat.renderers.model import Button
    from milpa_chat.store.base import Store

__all__ = ["ApprovalInbox", "InboxItem"]

log = logging.getLogger("milpa_chat.jupyter")

FINAL = frozenset({"rejected", "cancelled", "expired", "executed", "failed"})
#: Shown as waiting for this user: a decision, or a choice about a run that did not report back.
OPEN = frozenset({"pending", "effect_uncertain"})
_SURFACES = {"telegram": "Telegram", "slack": "Slack", "jupyter": "Jupyter", "cli": "the command line"}


class InboxItem:
    """One approval: its card, and while it waits for this user the reason box and the buttons."""

    def __init__(self, inbox: ApprovalInbox, approval: Approval) -> None:
        self.approval = approval
        self.view = ResultView(inbox.renderer)
        self.reason = widgets.Text(placeholder="Reason (optional)", layout=widgets.Layout(width="280px"))
        self.status = widgets.HTML(value="")
        self.widget = widgets.VBox(
            [self.view.html, widgets.HBox([*self.view.actions.children, self.reason]), self.status],
            layout=widgets.Layout(margin="0 0 8px 0"),
        )
        self.deciding = False
        self._inbox = inbox
        self._drawn: tuple[int, bool] | None = None
        #: "Always allow…": drafts a standing grant from this request (shown while this user may decide it
        #: and its operation offers one); the grant lends nothing until a person signs it.
        self.always_button = SafeButton(description="Always allow…", tooltip="draft a standing grant to sign")
        self.always_button.on_click(lambda _b: inbox._bg.spawn(inbox._always(self.id)))
        #: "Edit": the explorer's form, prefilled with what would run (while this user may decide it).
        self.edit_button = SafeButton(description="Edit", tooltip="change the arguments before deciding")
        self.edit_button.on_click(lambda _b: inbox.open_edit(self.id))
        self.editor: EditPanel | None = None

    @property
    def id(self) -> str:
        return self.approval.id

    @property
    def decided(self) -> bool:
        return self.approval.state not in OPEN

    @property
    def text(self) -> str:
        """The card and the status line as plain text."""
        status = html.unescape(self.status.value.replace("<br>", "\n"))
        return self.view.text + ("\n" + _strip_tags(status) if status else "")

    @property
    def approve_button(self) -> widgets.Button:
        """Approve (Confirm for a confirm request)."""
        return self._button("approve", "confirm")

    @property
    def reject_button(self) -> widgets.Button:
        """Reject (Cancel for a confirm request)."""
        return self._button("reject", "cancel")

    def _button(self, *actions: str) -> widgets.Button:
        for spec in self.view.payload.buttons if self.view.payload else ():
            if spec.action in actions and spec.label in self.view.buttons:
                return self.view.buttons[spec.label]
        raise LookupError(f"approval {self.id} has no {actions[0]} button (it is {self.approval.state})")

    def redraw(self) -> None:
        """Draw the card and buttons again at the next :meth:`show` (after a refused decision)."""
        self._drawn = None

    def show(self, approval: Approval, *, decidable: bool) -> None:
        """Draw the approval's current state; buttons only while it waits and this user may decide."""
        self.approval = approval
        live = decidable and not self.decided and not self.deciding
        if (approval.version, live) != self._drawn:
            self._drawn = (approval.version, live)
            role: ApprovalRole = "approver" if live else "viewer"
            payload = self._inbox.renderer.render_approval(view(approval, role))
            self.view.show(payload, self._inbox._press_for(self) if live else None)
            row = self.widget.children[1]
            always = (self.always_button,) if live and self._inbox.offers_grant(approval) else ()
            edit = (self.edit_button,) if live and self._inbox.offers_edit(approval) else ()
            row.children = (*self.view.actions.children, *always, *edit, self.reason) if live else ()
            if not live:
                self.close_edit()
            self.reason.disabled = not live
        if not self.deciding:
            self.status.value = self._facts()

    def open_edit(self, panel: EditPanel) -> None:
        self.close_edit()
        self.editor = panel
        self.widget.children = (*self.widget.children, panel.widget)

    def close_edit(self) -> None:
        if self.editor is not None:
            self.widget.children = tuple(w for w in self.widget.children if w is not self.editor.widget)
            self.editor.form.close()
            self.editor = None

    def _facts(self) -> str:
        a = self.approval
        surface = requester_surface(a)
        where = _SURFACES.get(surface, surface)
        chat = requester_chat(a)
        parts = [html.escape(f"from {where}" + (f" (chat {chat})" if chat else ""))]
        if not self.decided:
            left = a.expires_at - self._inbox.store.clock()
            parts.append(f"expires in {_duration(left)}" if left > 0 else "overdue")
        if a.revision:  # old -> new of the latest edits, as every chat copy of the card shows them
            from milpa_chat.chat.cards import edit_lines

            parts += [html.escape(line) for line in edit_lines(a)]
        tier = a.data.get("risk") or {}
        if a.state == "pending" and tier.get("level") == "high":
            parts.append(html.escape(f"high risk ({tier.get('why')}): approving needs a typed reason in the box"))
        from milpa_chat.chat.cards import button_ref

        answers = self._inbox.transport.answers
        answer = answers.get(button_ref(a)) or answers.get(a.id)  # a decision names the version it saw
        if answer and (not self.decided or a.data.get("decided_by") != self._inbox.principal):
            parts.append(f"<b>{html.escape(answer)}</b>")
        return f"<small>{' · '.join(parts)}</small>"


class ApprovalInbox:
    """Approvals waiting for ``principal`` (``jupyter:<id>``), and the ones decided lately.

    ``scopes``, when given, become this principal's scopes in the assistant's ``Identities``
    (``users["jupyter:<id>"]``); otherwise the configured ones apply. ``name`` is shown on the
    cards as the decider. ``history`` is how many decided approvals stay listed.
    """

    def __init__(
        self,
        source: Assistant | Store,
        *,
        principal: str = "jupyter",
        name: str | None = None,
        scopes: Iterable[str] | None = None,
        refresh_every: float = 2.0,
        history: int = 20,
        renderer: JupyterRenderer | None = None,
    ) -> None:
        self.assistant, self.store = _source(source)
        user_id = principal.removeprefix("jupyter:")
        if not user_id:
            raise ValueError("ApprovalInbox(principal=...) must name the notebook user, e.g. principal='maria'")
        self.user = ChatUser(user_id, name or user_id)
        self.principal = f"jupyter:{user_id}"
        self.scopes = self._set_scopes(scopes)
        self.refresh_every = refresh_every
        self.history = history
        self.renderer = renderer or JupyterRenderer()
        self.desk = self.assistant.approvals if self.assistant else ApprovalDesk(self.store)
        self.transport = NotebookTransport()
        self.items: dict[str, InboxItem] = {}
        self.header = widgets.HTML(value="")
        self.pending_box = widgets.VBox([])
        self.decided_box = widgets.VBox([])
        self.widget = widgets.VBox(
            [
                self.header,
                widgets.HTML(value="<b>Waiting for you</b>"),
                self.pending_box,
                widgets.HTML(value="<b>Decided lately</b>"),
                self.decided_box,
            ]
        )
        self.updated_at: float | None = None
        self._refreshed_at: float | None = None  # the event loop's time of the last refresh (paces the poller)
        self._policies: dict[str, dict[str, Any]] = {}
        self._lock = asyncio.Lock()
        self._bg = Background(self._on_error)
        self._poller: asyncio.Task[None] | None = None
        self.start()

    def _set_scopes(self, scopes: Iterable[str] | None) -> tuple[str, ...]:
        if isinstance(scopes, str):
            raise TypeError(f"ApprovalInbox(scopes=...) takes a list of scope names; write scopes=[{scopes!r}]")
        if self.assistant is None:
            return tuple(scopes or ())
        if scopes is not None:
            self.assistant.identities.users[self.principal] = tuple(scopes)
        return self.assistant.identities.scopes_for("jupyter", self.user)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    # ---------------------------------------------------------------- reading
    @property
    def pending(self) -> list[InboxItem]:
        """Items waiting for this user, oldest first."""
        return [i for i in self.items.values() if not i.decided]

    @property
    def decided(self) -> list[InboxItem]:
        """Decided items, latest decision first."""
        return sorted(
            (i for i in self.items.values() if i.decided), key=lambda i: -float(i.approval.data.get("decided_at") or 0)
        )

    def item(self, approval_id: str) -> InboxItem:
        try:
            return self.items[approval_id]
        except KeyError:
            shown = ", ".join(self.items) or "none"
            raise KeyError(
                f"approval {approval_id!r} is not in {self.principal}'s inbox (shown: {shown}); "
                "it may be for other approvers, or await inbox.refresh() first"
            ) from None

    async def refresh(self) -> None:
        """Re-read the store and redraw (the inbox also does this by itself every ``refresh_every`` s)."""
        async with self._lock:
            if self.assistant is not None:  # the configuration may have changed meanwhile
                self.scopes = self.assistant.identities.scopes_for("jupyter", self.user)
            shown: list[Approval] = []
            for found in await self.desk.listing():
                approval = await self._expire_if_overdue(found)
                if self._may_decide(approval):
                    shown.append(approval)
            pending = sorted((a for a in shown if a.state in OPEN), key=lambda a: a.data.get("created_at", 0))
            decided = sorted(
                (a for a in shown if a.state not in OPEN), key=lambda a: -float(a.data.get("decided_at") or 0)
            )[: self.history]
            self._redraw(pending, decided)

    def _redraw(self, pending: list[Approval], decided: list[Approval]) -> None:
        keep = {a.id for a in pending + decided}
        for stale in set(self.items) - keep:
            del self.items[stale]
        for approval in pending + decided:
            item = self.items.get(approval.id)
            if item is None:
                item = self.items[approval.id] = InboxItem(self, approval)
            item.show(approval, decidable=self.assistant is not None)
        none = widgets.HTML(value="<i>Nothing waits for you.</i>")
        self.pending_box.children = tuple(self.items[a.id].widget for a in pending) or (none,)
        self.decided_box.children = tuple(self.items[a.id].widget for a in decided)
        self.updated_at = self.store.clock()
        with contextlib.suppress(RuntimeError):  # (refreshed outside a loop: run_sync)
            self._refreshed_at = asyncio.get_running_loop().time()
        self.header.value = self._header()

    def _header(self) -> str:
        stamp = dt.datetime.fromtimestamp(self.updated_at or 0, dt.UTC).strftime("%H:%M:%S UTC")
        who = html.escape(f"{self.user.display} ({self.principal})")
        scopes = html.escape(", ".join(self.scopes) or "(none)")
        mode = "" if self.assistant else "<br><i>Read-only: pass the Assistant to decide here.</i>"
        return (
            f"<b>📥 Approvals for {who}</b> <small style='color:#666'>scopes {scopes} · updated {stamp}</small>{mode}"
        )

    async def _expire_if_overdue(self, approval: Approval) -> Approval:
        if self.assistant is None or approval.state != "pending" or approval.expires_at > self.store.clock():
            return approval
        change = await self.desk.recover(approval)
        if change is not None:
            await self.assistant.flows.follow(change)
            return change.approval
        return await self.desk.get(approval.id) or approval

    def _may_decide(self, approval: Approval) -> bool:
        if approval.kind == "confirm":
            return approval.requester_principal == self.principal
        policy = approval.data.get("policy") or {}
        approvers = policy.get("approver_scopes") or []
        ctx = ToolContext(self.principal, "jupyter", self.scopes)
        if approvers and not ctx.has_any_scope(approvers):
            return False
        return not (policy.get("four_eyes", True) and approval.requester_principal == self.principal)

    def offers_grant(self, approval: Approval) -> bool:
        """Whether "Always allow…" is offered for ``approval`` (the assistant has standing grants that offer one)."""
        grants = getattr(self.assistant, "grants", None)
        return grants is not None and grants.always_button(approval, "approver") is not None

    async def always_allow(self, approval_id: str) -> Approval | None:
        """Draft a standing grant from ``approval_id``, as the Always allow… button does (through the assistant,
        as this user); its signature is a request of its own, decided in a second step."""
        return await self.decide(approval_id, "always")

    async def _always(self, approval_id: str) -> None:
        await self.always_allow(approval_id)

    # ---------------------------------------------------------------- editing
    def offers_edit(self, approval: Approval) -> bool:
        """Whether "Edit" is offered: a pending request that runs a tool, with an assistant that allows edits
        (``Assistant(edits=True)``) to check it."""
        return (
            self.assistant is not None
            and self.assistant.edits
            and approval.state == "pending"
            and approval.tool is not None
            and self.assistant.registry.get(approval.tool) is not None
        )

    def open_edit(self, approval_id: str) -> EditPanel:
        """Open the edit form of ``approval_id``'s item, prefilled with the arguments that would run."""
        item = self.item(approval_id)
        definition = self.assistant.registry.get(item.approval.tool or "") if self.assistant else None
        if definition is None:
            raise LookupError(f"approval {approval_id} runs no registered tool; it has no arguments to edit")

        def save(values: dict[str, Any]) -> None:
            self._bg.spawn(self._save_edit(item, values))

        panel = EditPanel(definition.input_schema, item.approval.args, on_save=save, on_cancel=item.close_edit)
        item.open_edit(panel)
        return panel

    async def edit(self, approval_id: str, arguments: dict[str, Any]) -> Approval:
        """Change the arguments of a pending approval as this user (what "Save edit" does): checked as a new
        call would be; raises :class:`~milpa_chat.runtime.ApprovalRefused` (``errors`` per field) when refused."""
        if self.assistant is None:
            raise PermissionError("this inbox watches a store read-only; create it with the Assistant to edit")
        ctx = self.assistant.identities.context_for("jupyter", self.user, self.user.id)
        change = await self.desk.amend(approval_id, arguments, ctx, via="jupyter")
        await self.refresh()
        return change.approval

    async def _save_edit(self, item: InboxItem, values: dict[str, Any]) -> None:
        from milpa_chat.runtime.approval import ApprovalRefused

        panel = item.editor
        try:
            await self.edit(item.id, values)
        except ApprovalRefused as exc:
            if panel is not None:
                panel.show_refusal(exc.errors, str(exc))
            return
        item.close_edit()

    # --------------------------------------------------------------- deciding
    @property
    def actions(self) -> InboxActions:
        """A selection decided together, reassign, ask, answer, comment (:mod:`milpa_chat.jupyter.inbox_actions`)."""
        if self.assistant is None:
            raise PermissionError("this inbox watches a store read-only; create it with the Assistant to act here")
        from milpa_chat.jupyter.inbox_actions import InboxActions

        return InboxActions(self.assistant, self.user)

    async def approve(self, approval_id: str, reason: str | None = None) -> Approval | None:
        """Approve (or confirm) as this user, as the Approve button does; returns the approval after it."""
        item = self.items.get(approval_id)
        if item and item.approval.state == "effect_uncertain":
            return await self.decide(approval_id, "run_again", reason)
        return await self.decide(
            approval_id, "confirm" if item and item.approval.kind == "confirm" else "approve", reason
        )

    async def reject(self, approval_id: str, reason: str | None = None) -> Approval | None:
        """Reject (or cancel) as this user, as the Reject button does."""
        item = self.items.get(approval_id)
        if item and item.approval.state == "effect_uncertain":
            return await self.decide(approval_id, "mark_done", reason)
        return await self.decide(
            approval_id, "cancel" if item and item.approval.kind == "confirm" else "reject", reason
        )

    async def decide(self, approval_id: str, action: str, reason: str | None = None) -> Approval | None:
        """Send ``action`` (approve, reject, confirm or cancel) for ``approval_id`` through the assistant."""
        if self.assistant is None:
            raise PermissionError(
                "this inbox watches a store read-only; create it with the Assistant "
                "(ApprovalInbox(assistant, ...)) to decide from the notebook"
            )
        from milpa_chat.chat.cards import VERSIONED, button_ref

        item = self.items.get(approval_id)
        seen = item is not None and action in VERSIONED
        ref = button_ref(item.approval) if seen and item is not None else approval_id  # the version this user saw
        inbound = Inbound("jupyter", self.user.id, self.user, action=action, ref=ref, note=reason or None)
        await self.assistant.handle(inbound, self.transport)
        item = self.items.get(approval_id)
        if item is not None:
            item.deciding = False
            item.redraw()
        await self.refresh()
        return await self.desk.get(approval_id)

    def _press_for(self, item: InboxItem) -> Callable[[Button], None]:
        def press(button: Button) -> None:
            if item.deciding or item.decided:
                return
            item.deciding = True
            item.view.disable_buttons()
            item.reason.disabled = True
            item.status.value = "<small><i class='fa fa-spinner fa-spin'></i> Sending your decision…</small>"
            self._bg.spawn(self._decided(item.id, button.action, item.reason.value.strip() or None))

        return press

    async def _decided(self, approval_id: str, action: str, reason: str | None) -> None:
        await self.decide(approval_id, action, reason)

    async def wait_for_decision(self, approval_id: str, *, final: bool = True) -> Approval:
        """Wait (asynchronously) until the approval is decided — with ``final``, until it is done
        (executed, failed, rejected, cancelled or expired) — and return it.

        To give up after a while: ``async with asyncio.timeout(300): await inbox.wait_for_decision(id)``.
        """
        while True:
            approval = await self.desk.get(approval_id)
            if approval is None:
                raise LookupError(f"no approval {approval_id!r} in the store")
            if approval.state in FINAL or (not final and approval.state != "pending"):
                await self.refresh()
                return approval
            await asyncio.sleep(0.1)

    async def idle(self) -> None:
        """Wait until the decisions started by clicks have finished."""
        await self._bg.idle()

    # ------------------------------------------------------------- refreshing
    def start(self) -> None:
        """Refresh now and, inside a running loop (a notebook), every ``refresh_every`` seconds."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            run_sync(self.refresh())
            return
        if self._poller is None or self._poller.done():
            self._poller = loop.create_task(self._poll())

    def close(self) -> None:
        """Stop refreshing (and cancel decisions still running)."""
        if self._poller is not None:
            self._poller.cancel()
        self._bg.cancel()

    async def _poll(self) -> None:
        """Refresh every ``refresh_every`` seconds after the last refresh, whoever made it (a refresh awaited
        by hand puts the next one off)."""
        loop = asyncio.get_running_loop()
        while True:
            last = self._refreshed_at
            if last is not None and loop.time() < last + self.refresh_every:
                await asyncio.sleep(last + self.refresh_every - loop.time())
                continue
            try:
                await self.refresh()
            except Exception as exc:
                log.exception("the approval inbox could not refresh")
                self._on_error(exc)
                await asyncio.sleep(self.refresh_every)

    def _on_error(self, exc: BaseException) -> None:
        self.header.value = self._header() + (
            f"<br><span style='color:#d32f2f'>⚠ {html.escape(type(exc).__name__)}: {html.escape(str(exc))}</span>"
        )
        for item in self.items.values():
            item.deciding = False


def _source(source: Any) -> tuple[Assistant | None, Store]:
    from milpa_chat.chat.assistant import Assistant
    from milpa_chat.store.base import Store

    if isinstance(source, Assistant):
        return source, source.store
    if isinstance(source, Store):
        return None, source
    raise TypeError(
        f"ApprovalInbox takes an Assistant (to decide here) or a Store (to watch read-only), "
        f"got {type(source).__name__}"
    )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(0, int(seconds))} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def _strip_tags(text: str) -> str:
    return re.sub(r"<[^>]+>", "", text)
