"""``GrantsPanel``: the standing grants of a house in a notebook — state, use count, and the ways to stop them.

Each grant is a row with its state, its use count, who signed it and its whole text; a notebook
user who may sign (a signer scope, ``grants:sign`` by default) gets Suspend / Lift / Revoke, and
Sign / Decline for a waiting signature or lift. Every button is a decision through the one decision
path, as ``jupyter:<user>`` (the configured notebook principal, never anything a cell or a button
carries), ``via="jupyter"`` — the same rules as in Telegram, Slack and the CLI.

The panel re-reads the store on :meth:`GrantsPanel.refresh`, so a change made elsewhere (another
surface, another process on the same store) shows up.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from milpa_chat.jupyter._async import Background, SafeButton
from milpa_chat.runtime.approval import ApprovalRefused
from milpa_chat.runtime.context import ToolContext

if TYPE_CHECKING:
    from milpa_chat.grants.desk import GrantDesk
    from milpa_chat.grants.records import GrantRecord

__all__ = ["GrantsPanel"]

log = logging.getLogger("milpa_chat.jupyter")

_MOVES = {"in_force": ("suspend", "revoke"), "suspended": ("lift", "revoke")}
_LABELS = {"suspend": "Suspend", "lift": "Lift", "revoke": "Revoke", "sign": "Sign", "decline": "Decline"}


class GrantsPanel:
    """The grants of ``desk`` for the notebook user ``principal`` (``jupyter:<id>``) with ``scopes``."""

    def __init__(
        self, desk: GrantDesk, *, principal: str = "jupyter", name: str | None = None, scopes: Iterable[str] = ()
    ) -> None:
        if isinstance(scopes, str):
            raise TypeError(f"GrantsPanel(scopes=...) takes a list of scope names; write scopes=[{scopes!r}]")
        user_id = principal.removeprefix("jupyter:")
        if not user_id:
            raise ValueError("GrantsPanel(principal=...) must name the notebook user, e.g. principal='maria'")
        self.desk = desk
        self.ctx = ToolContext(f"jupyter:{user_id}", "jupyter", tuple(scopes), extra={"user_name": name or user_id})
        self.status = widgets.HTML(value="")
        self.rows = widgets.VBox([])
        self.reason = widgets.Text(placeholder="Why (kept in the grant's history)")
        self.widget = widgets.VBox([widgets.HTML(value="<b>Standing grants</b>"), self.reason, self.rows, self.status])
        self.records: dict[str, GrantRecord] = {}
        self._bg = Background(self._on_error)
        self._bg.spawn(self.refresh())  # in a notebook, on its loop; outside one, now

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    # ------------------------------------------------------------------ reading
    async def refresh(self) -> None:
        self.records = {r.id: r for r in await self.desk.listing() if r.judged or r.pending}
        self.rows.children = tuple(self._row(r) for r in self.records.values()) or (
            widgets.HTML(value="<i>No standing grants yet.</i>"),
        )

    def _row(self, record: GrantRecord) -> widgets.Widget:
        signed = f", signed by {html.escape(record.signer)}" if record.signer else ""
        stopped = record.data.get("stopped_because")
        why = f"<br><small>stopped because: {html.escape(str(stopped))}</small>" if stopped else ""
        text = widgets.HTML(
            value=(
                f"<b>{html.escape(record.id)}</b> · {html.escape(record.state.replace('_', ' '))} · "
                f"{record.uses} use{'' if record.uses == 1 else 's'}{signed}{why}"
                f"<pre style='white-space:pre-wrap'>{html.escape(record.text)}</pre>"
            )
        )
        buttons: list[widgets.Button] = []
        if self.desk.may_sign(self.ctx):
            buttons += [self._button(move, record.id) for move in _MOVES.get(record.state, ())]
            for change in record.pending:
                buttons += [self._button("sign", change), self._button("decline", change)]
        return widgets.VBox([text, widgets.HBox(buttons)])

    def _button(self, move: str, ref: str) -> widgets.Button:
        button = SafeButton(
            description=_LABELS[move], button_style="danger" if move in ("suspend", "revoke", "decline") else "success"
        )
        button._milpa_ref = ref
        button.on_click(self._press(move, ref))
        return button

    def _press(self, move: str, ref: str) -> Callable[[widgets.Button], None]:
        def press(_button: widgets.Button) -> None:
            self.status.value = "<small>Sending your decision…</small>"
            self._bg.spawn(self._act(move, ref, self.reason.value.strip() or None))

        return press

    # ------------------------------------------------------------------ deciding
    async def _act(self, move: str, ref: str, reason: str | None) -> None:
        await self.act(move, ref, reason)

    async def act(self, move: str, ref: str, reason: str | None = None) -> GrantRecord | None:
        """``suspend``, ``lift`` or ``revoke`` grant ``ref``; ``sign`` or ``decline`` waiting change ``ref``.

        A refusal is shown in the panel (and returned as ``None``), never raised at the notebook.
        """
        try:
            if move in ("sign", "decline"):
                record, _ = await self.desk.decide(
                    ref, "approve" if move == "sign" else "reject", self.ctx, via="jupyter", note=reason
                )
            else:
                record, approval = await self.desk.request(move, ref, self.ctx, via="jupyter", note=reason)
                if approval.state == "pending":
                    self.status.value = "<small>Asked: another person who may sign decides it.</small>"
        except ApprovalRefused as exc:
            self.status.value = f"<small>⚠ {html.escape(str(exc))}</small>"
            await self.refresh()
            return None
        if record is not None and "Asked" not in self.status.value:
            self.status.value = f"<small>{html.escape(record.summary())}</small>"
        await self.refresh()
        return record

    async def suspend(self, grant_id: str, reason: str | None = None) -> GrantRecord | None:
        return await self.act("suspend", grant_id, reason)

    async def lift(self, grant_id: str, reason: str | None = None) -> GrantRecord | None:
        return await self.act("lift", grant_id, reason)

    async def revoke(self, grant_id: str, reason: str | None = None) -> GrantRecord | None:
        return await self.act("revoke", grant_id, reason)

    async def sign(self, change_id: str, reason: str | None = None) -> GrantRecord | None:
        return await self.act("sign", change_id, reason)

    def _on_error(self, exc: BaseException) -> None:
        log.error("A grants panel action failed: %s", exc, exc_info=exc)
        self.status.value = f"<small>⚠ {html.escape(type(exc).__name__)}: {html.escape(str(exc))}</small>"

    async def idle(self) -> None:
        """Wait until every button press has been handled (for tests and scripted notebooks)."""
        await self._bg.idle()

    def buttons(self, grant_or_change: str) -> dict[str, widgets.Button]:
        """The buttons shown for a grant (or a waiting change), by label — what a person would click."""
        found: dict[str, widgets.Button] = {}
        for row in self.rows.children:
            if isinstance(row, widgets.VBox) and len(row.children) == 2:
                for button in row.children[1].children:
                    if getattr(button, "_milpa_ref", None) == grant_or_change:
                        found[button.description] = button
        return found
