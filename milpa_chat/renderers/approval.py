"""Approval cards: the channel-neutral view and the message it becomes.

The chat layer builds an :class:`ApprovalView` from its durable ``Approval`` record and hands
it to any renderer's ``render_approval``. A *pending* card says who asks, which tool, with
which (redacted) arguments, why, whether it changes data, until when, and carries the
buttons (Confirm/Cancel for ``confirm``, Approve/Reject for ``verification``; each button's
ref is the approval id). Every other state is a *decided* card: who decided what, when and
through which surface, the outcome, and no buttons. ``expired`` and ``cancelled`` say that
nothing was done.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias, get_args

from milpa_chat.renderers._build import Builder, Limits, when
from milpa_chat.renderers._plain import json_document
from milpa_chat.renderers._redact import hide_key, redacted_plain
from milpa_chat.renderers._text import json_text
from milpa_chat.renderers.model import (
    MAX_CALLBACK_BYTES,
    Actions,
    Block,
    Button,
    Code,
    Document,
    Fields,
    Heading,
    LazyDocument,
    Message,
    Paragraph,
    Span,
    Tone,
)

__all__ = ["ApprovalKind", "ApprovalState", "ApprovalView", "compose_approval"]

ApprovalKind: TypeAlias = Literal["confirm", "verification"]
ApprovalState: TypeAlias = Literal[
    "pending", "approved", "rejected", "cancelled", "expired", "executing", "executed", "failed", "effect_uncertain"
]
#: Whose copy of the card: ``approver`` (Approve/Reject), ``requester`` (Confirm/Cancel on a confirm card,
#: Withdraw on a verification), ``viewer`` (no buttons).
ApprovalRole: TypeAlias = Literal["approver", "requester", "viewer"]

_SURFACES: Final = {
    "telegram": "Telegram",
    "slack": "Slack",
    "jupyter": "Jupyter",
    "cli": "the command line",
    "web": "the web",
    "mcp": "MCP",
}
# state -> (heading verb, icon, tone)
_HEADINGS: Final[dict[str, tuple[str, str, Tone]]] = {
    "approved": ("Approved", "✅", "success"),
    "executing": ("Running", "⏳", "info"),
    "executed": ("Done", "✅", "success"),
    "failed": ("Failed", "❌", "danger"),
    "rejected": ("Rejected", "⛔", "danger"),
    "cancelled": ("Cancelled", "✖️", "warning"),
    "expired": ("Expired", "⌛", "warning"),
    "effect_uncertain": ("May not have run", "⚠️", "warning"),
}


_KINDS: Final = frozenset(get_args(ApprovalKind))
_STATES: Final = frozenset(get_args(ApprovalState))
#: The longest id a Confirm button's ``confirm:<id>`` fits in (printable ASCII: one byte a character).
_MAX_ID: Final = MAX_CALLBACK_BYTES - len("confirm:")


@dataclass(frozen=True, slots=True)
class ApprovalView:
    """What an approval card shows. Plain data; the chat layer fills it from its record.

    Fields:
        id: the opaque approval id; every button's ref (``"<action>:<id>"`` ≤ 64 bytes, so
            at most 56 bytes).
        kind: ``"confirm"`` (the requester confirms their own call: Confirm/Cancel) or
            ``"verification"`` (someone else decides: Approve/Reject).
        tool: the tool's name. arguments: the exact arguments (redacted on display).
        requester / requester_principal: display name and principal (``telegram:123``).
        expires_at: when the request lapses (timezone-aware; shown in UTC).
        state: ``pending``, ``approved``, ``rejected``, ``cancelled``, ``expired``,
            ``executing``, ``executed`` or ``failed``.
        reason: why the call needs a decision (or the requester's reason).
        mutating: whether the tool changes data.
        decided_by / decided_at / decided_via: the decider's display name, the moment
            (timezone-aware) and the surface (``telegram``, ``slack``, ``jupyter``, ...).
        decision_note: the decider's comment (e.g. why it was rejected).
        outcome: what running the tool produced (result or error text).
        approvals_required / approved_by: quorum size and who approved so far.
        role: whose copy this is (see ``ApprovalRole``); decides the buttons.
        subject: what a request that runs no tool asks for (shown instead of arguments when set).
        digest: the SHA-256 of the exact arguments that will run (shown shortened, so what is approved
            can be checked against what ran, e.g. in the audit trail).
        effect: what the tool can do, in words, from what it declares (shown instead of "Changes data").
    """

    id: str
    kind: ApprovalKind
    tool: str
    arguments: Mapping[str, Any]
    requester: str
    requester_principal: str
    expires_at: _dt.datetime
    state: ApprovalState = "pending"
    reason: str | None = None
    mutating: bool = True
    decided_by: str | None = None
    decided_at: _dt.datetime | None = None
    decided_via: str | None = None
    decision_note: str | None = None
    outcome: str | None = None
    approvals_required: int = 1
    approved_by: tuple[str, ...] = field(default=())
    role: ApprovalRole = "approver"
    digest: str | None = None
    effect: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"ApprovalView.kind must be 'confirm' or 'verification', got {self.kind!r}")
        if self.state not in _STATES:
            raise ValueError(f"ApprovalView.state must be one of {get_args(ApprovalState)}, got {self.state!r}")
        for moment, name in ((self.expires_at, "expires_at"), (self.decided_at, "decided_at")):
            if moment is not None and (not isinstance(moment, _dt.datetime) or moment.tzinfo is None):
                raise ValueError(
                    f"ApprovalView.{name} must be a timezone-aware datetime (e.g. datetime.now(UTC)), got {moment!r}"
                )
        ref = self.id
        if not (ref.isascii() and ref.isprintable() and len(ref) <= _MAX_ID):  # (such an id always fits)
            Button("x", "confirm", ref)  # raises with the limit in the message when the id is too long
        if type(self.arguments) is not dict and not isinstance(self.arguments, Mapping):
            raise TypeError(f"ApprovalView.arguments must be a mapping, got {type(self.arguments).__name__}")


def compose_approval(view: ApprovalView, *, limits: Limits | None = None) -> Message:
    """The card for ``view`` in its current state."""
    b = Builder(limits or Limits(), hide_key)
    tool = b.text(view.tool, 100)
    who = b.text(view.requester, 100)  # shown up to three times: cleaned and masked once
    by = _by(view, b) if view.state != "pending" else ""
    args = b.plain(view.arguments, b.limits.text_chars)
    heading = _heading(view, tool)
    blocks: list[Block] = [heading, _facts(view, b, tool, who)]
    if view.reason:
        blocks.append(Paragraph.of(Span("Why: ", "bold"), b.text(view.reason)))
    blocks.append(_ARGUMENTS)
    blocks.append(Code(b.text(json_text(args) if args else "{}"), "json"))
    if view.state == "pending" and view.digest:
        verb = "Confirm" if view.kind == "confirm" else "Approve"
        blocks.append(
            Paragraph.of(
                Span(f"On {verb}: ", "bold"),
                f"{tool} runs once with exactly these arguments (after validation), as {who}.",
            )
        )
    if view.state != "pending":
        blocks += _decision(view, b, by)
    buttons = _buttons(view)
    if buttons is not None:
        blocks.append(buttons)
    full = LazyDocument("arguments.json", lambda: _document(view.arguments))
    return Message(tuple(blocks), _summary(view, tool, who, heading, by), _tone(view), b.truncated, full)


#: The line above the arguments (one block for every card: blocks are immutable).
_ARGUMENTS: Final = Paragraph((Span("Arguments:", "bold"),))


def _heading(view: ApprovalView, tool: str) -> Heading:
    if view.state == "pending":
        if view.kind == "confirm":
            return Heading(f"Confirm: {tool}", "🔐")
        return Heading(f"Approval needed: {tool}", "🛂")
    verb, icon, _ = _HEADINGS[view.state]
    if view.state == "approved" and view.kind == "confirm":
        verb = "Confirmed"
    return Heading(f"{verb}: {tool}", icon)


def _facts(view: ApprovalView, b: Builder, tool: str, who: str) -> Fields:
    items = [
        ("Tool", tool),
        ("Requested by", f"{who} ({b.text(view.requester_principal, 100)})"),
        ("Effect", b.text(view.effect, 200))
        if view.effect
        else ("Changes data", "yes" if view.mutating else "no (read-only)"),
    ]
    if view.state == "pending":
        items.append(("Expires", when(view.expires_at)))
    if view.digest:
        items.append(("Arguments digest", view.digest[:16]))
    if view.kind == "verification" and view.approvals_required > 1:
        names = ", ".join(b.text(n, 60) for n in view.approved_by[:10])
        progress = f"{len(view.approved_by)} of {view.approvals_required}"
        items.append(("Approvals", f"{progress} ({names})" if names else progress))
    return Fields(tuple(items))


def _buttons(view: ApprovalView) -> Actions | None:
    if view.role == "viewer":
        return None
    if view.state == "effect_uncertain":
        return Actions.row(
            Button("🔁 Run again", "run_again", view.id, "danger"), Button("✔ Mark as done", "mark_done", view.id)
        )
    if view.state != "pending":
        return None
    if view.kind == "confirm":
        return Actions.row(
            Button("✅ Confirm", "confirm", view.id, "primary"), Button("✖ Cancel", "cancel", view.id, "danger")
        )
    if view.role == "requester":
        return Actions.row(Button("↩ Withdraw", "cancel", view.id))
    return Actions.row(
        Button("✅ Approve", "approve", view.id, "primary"), Button("⛔ Reject", "reject", view.id, "danger")
    )


def _by(view: ApprovalView, b: Builder) -> str:
    parts = []
    if view.decided_by:
        parts.append(f"by {b.text(view.decided_by, 100)}")
    if view.decided_via:
        via = view.decided_via.removesuffix("/batch")  # decided from a batch card (milpa_chat.runtime.batches)
        batch = " (batch)" if via != view.decided_via else ""
        parts.append(f"via {_SURFACES.get(via) or b.text(via, 40)}{batch}")
    if view.decided_at is not None:
        parts.append(f"at {when(view.decided_at)}")
    return " ".join(parts)


def _decision(view: ApprovalView, b: Builder, by: str) -> list[Block]:
    if view.state == "expired":
        return [Paragraph.of(Span(f"Expired at {when(view.expires_at)} without a decision. Nothing was done.", "bold"))]
    verb = "Confirmed" if view.kind == "confirm" else "Approved"
    verb = {"rejected": "Rejected", "cancelled": "Cancelled" if view.kind == "confirm" else "Withdrawn"}.get(
        view.state, verb
    )
    blocks: list[Block] = [Paragraph.of(Span(f"{verb} {by}".strip() + ".", "bold"))]
    if view.decision_note:
        blocks.append(Paragraph.of(Span("Note: ", "bold"), b.text(view.decision_note)))
    if view.state in ("rejected", "cancelled"):
        blocks.append(Paragraph.of("Nothing was done."))
    elif view.state == "effect_uncertain":
        blocks.append(
            Paragraph.of(
                Span("Unknown outcome: ", "bold"),
                b.text(view.outcome or "the run did not report back."),
                " Check, then choose Run again or Mark as done.",
            )
        )
    elif view.state == "executing":
        blocks.append(Paragraph.of(Span("Running now…", "italic")))
    elif view.state in ("executed", "failed"):
        label = "Outcome: " if view.state == "executed" else "Error: "
        blocks.append(Paragraph.of(Span(label, "bold"), b.text(view.outcome or "(no output)")))
    return blocks


def _summary(view: ApprovalView, tool: str, who: str, heading: Heading, by: str) -> str:
    if view.state == "pending":
        if view.kind == "confirm":
            return f"Confirm {tool}? (requested by {who})"
        return f"Approval needed: {who} asks to run {tool}"
    verb = heading.text.split(":", 1)[0]
    return f"{verb}: {tool}" + (f" ({by})" if by and view.state != "expired" else "")


def _tone(view: ApprovalView) -> Tone:
    if view.state == "pending":
        return "warning"
    return _HEADINGS[view.state][2]


def _document(arguments: Mapping[str, Any]) -> Document:
    return Document("arguments.json", json_document(redacted_plain(arguments)), "application/json")
