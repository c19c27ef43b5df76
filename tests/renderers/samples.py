"""Named sample results and approval cards: every shape, hostile input and unicode.

The golden files under ``golden/`` show each of them on every channel.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import Any

from milpa_chat.renderers import ApprovalView
from milpa_chat.runtime.result import ToolResult

T0 = dt.datetime(2026, 8, 15, 14, 8, 11, tzinfo=dt.UTC)
BASE_META: dict[str, Any] = {
    "tool": "delete_note",
    "took_ms": 1.25,
    "request_id": "9f1c2d3e4b5a69788796a5b4c3d2e1f0",
    "channel": "telegram",
    "principal": "telegram:1001",
}

HOSTILE = {
    "script": "<script>alert('x')</script>",
    "closing_tag": "</b></pre></code> & &amp; &#x41; &bogus;",
    "markdown": "*bold* _it_ ~strike~ `code` [link](http://x) ```fence```",
    "slack_controls": "<!channel> <!here> <@U024BE7LH> <http://evil.example|click me>",
    "zero_width": "pay\u200bpal\u2060.com\ufeff",
    "bidi_override": "invoice_\u202egnp.exe",
    "ansi": "\x1b[31mred\x1b[0m\x07bell\x00nul",
    "crlf": "one\r\ntwo\rthree",
}
UNICODE = {
    "emoji": "👍🏽 family 👨‍👩‍👧‍👦 flag 🇲🇽 keycap 1️⃣",
    "rtl_hebrew": "שלום עולם",
    "rtl_arabic": "مرحبا بالعالم",
    "combining": "Ze\u0301ro cafe\u0301 n\u0303 a\u0308\u0301",
    "cjk": "東京 서울 北京",
    "astral": "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𓀀",
}

NOTES = [
    {"id": 11, "title": "Buy milk", "done": False, "tags": ["home"]},
    {"id": 12, "title": "Call the bank & <insurer>", "done": True, "tags": []},
    {"id": 13, "title": "Book flights ✈️", "done": False, "tags": ["travel", "2026"]},
]


RESULTS: dict[str, ToolResult] = {
    "success_scalar": ToolResult.success(42, "The answer"),
    "success_empty": ToolResult.success(),
    "success_text": ToolResult.success("first line\nsecond line"),
    "success_dict": ToolResult.success(
        {
            "id": 7,
            "title": "Buy milk",
            "tags": ["home", "urgent"],
            "owner": {"name": "Ana"},
            "done": False,
            "due": None,
            "price": 3.5,
        },
        "Note saved",
    ),
    "success_list": ToolResult.success(["alpha", "beta", "gamma"]),
    "success_records": ToolResult.success(NOTES, "3 notes"),
    "success_secrets": ToolResult.success(
        {
            "service": "mail",
            "apiKey": "sk-live-1",
            "login": {"Authorization": "Bearer x", "user": "ana"},
            "accounts": [{"name": "a", "client_secret": "cs-1"}],
        },
        "Connected",
    ),
    "success_timeout": ToolResult.success(
        {"rows": 3}, "Report ready", {"timeout_exceeded": True, "execution_time": 31.25, "timeout_limit": 30}
    ),
    "plan": ToolResult(
        True,
        {
            "plan": {
                "tool": "delete_note",
                "mutating": True,
                "requires_confirmation": True,
                "scopes_required": ["notes:write"],
                "timeout": 30.0,
                "args": {"note_id": 7},
            }
        },
        "Plan: 'delete_note' would run (dry run, nothing executed).",
        None,
        BASE_META,
    ),
    "list_page": ToolResult.paginated(NOTES, 2, 23, 3, "Your notes", {"ref": "ls_4f2a"}),
    "list_empty": ToolResult.paginated([], 1, 0, 10),
    "detail": ToolResult.detail(
        NOTES[1],
        "Note",
        "Last edited today",
        [
            {"label": "Mark done", "action": "done", "style": "primary"},
            {"label": "Delete", "action": "delete", "style": "danger"},
            {"label": "Archive" * 3, "action": "archive:now", "ref": "x"},
        ],
    ),
    "confirmation_gate": ToolResult(
        True,
        {
            "requires_confirmation": True,
            "confirm_token": "0123456789abcdef0123456789abcdef",
            "action_summary": "delete_note(note_id=7)",
            "expires_at": "2026-08-15T14:08:11+00:00",
        },
        "delete_note(note_id=7)",
        None,
        {**BASE_META, "type": "confirmation", "requires_confirmation": True},
    ),
    "confirmation_tool": ToolResult.confirmation(
        "Delete note 'Buy milk'?", {"title": "Buy milk", "created": "2026-08-01"}, "delete", "note", 7
    ),
    "blocked": ToolResult.blocked("Deleting notes is blocked on Fridays.", "Archive it instead, or wait until Monday."),
    "error_validation": ToolResult.error(
        "page: Input should be a valid integer; query: Missing required field",
        {
            "errors": [
                {"path": "page", "message": "Input should be a valid integer"},
                {"path": "query", "message": "Missing required field"},
            ]
        },
        BASE_META,
        code="VALIDATION_ERROR",
    ),
    "error_forbidden": ToolResult.error("Missing required scope: notes:write", None, BASE_META, code="FORBIDDEN"),
    "error_rate_limited": ToolResult.error(
        "Rate limit exceeded for 'telegram:telegram:1001:delete_note': max 100 tokens per 60s.",
        None,
        {**BASE_META, "retry_after_seconds": 42.0},
        code="RATE_LIMITED",
    ),
    "error_tool_not_found": ToolResult.error(
        "Tool not found: delet_note. Did you mean: delete_note?",
        {"suggestions": ["delete_note"]},
        {**BASE_META, "tool": "delet_note"},
        code="TOOL_NOT_FOUND",
    ),
    "error_internal": ToolResult.error(
        "Internal error while running delete_note", None, BASE_META, code="INTERNAL_ERROR"
    ),
    "error_plain": ToolResult.error("Something odd happened"),
    "hostile": ToolResult.success(dict(HOSTILE), HOSTILE["script"]),
    "hostile_records": ToolResult.paginated(
        [{"id": f"<{i}>", "name": v} for i, v in enumerate(HOSTILE.values())],
        1,
        8,
        8,
        extra_meta={"ref": "ls_\u202eevil"},
    ),
    "unicode": ToolResult.success(dict(UNICODE), "Ünïcödé ✓ שלום"),
    "huge_value": ToolResult.success({"id": 1, "body": ("lorem ipsum & <dolor> " * 400).strip()}, "Big note"),
}


def results() -> dict[str, ToolResult]:
    return dict(RESULTS)


_PENDING = ApprovalView(
    id="ap_7Kq2mZxR4b",
    kind="verification",
    tool="pay_invoice",
    arguments={
        "invoice_id": 42,
        "amount": 1250.5,
        "currency": "EUR",
        "api_key": "sk-live-123",
        "memo": "Q3 rent <b>urgent</b>",
    },
    requester="Alice Ng",
    requester_principal="telegram:1001",
    expires_at=T0,
    reason="Payments over 1,000 EUR need a manager's approval.",
    approvals_required=2,
    approved_by=("Bob",),
)
_CONFIRM = ApprovalView(
    id="ap_c0nf1rm",
    kind="confirm",
    tool="delete_note",
    arguments={"note_id": 7},
    requester="Alice Ng",
    requester_principal="telegram:1001",
    expires_at=T0,
)
_DECIDED: dict[str, Any] = {
    "decided_by": "Carol Diaz",
    "decided_via": "slack",
    "decided_at": T0 - dt.timedelta(minutes=3),
}
APPROVALS: dict[str, ApprovalView] = {
    "approval_pending_verification": _PENDING,
    "approval_pending_confirm": _CONFIRM,
    "approval_confirmed": replace(
        _CONFIRM,
        state="approved",
        decided_by="Alice Ng",
        decided_via="telegram",
        decided_at=T0 - dt.timedelta(seconds=20),
    ),
    "approval_approved": replace(_PENDING, state="approved", approved_by=("Bob", "Carol Diaz"), **_DECIDED),
    "approval_executing": replace(_PENDING, state="executing", **_DECIDED),
    "approval_executed": replace(_PENDING, state="executed", outcome="Paid invoice 42 (1,250.50 EUR).", **_DECIDED),
    "approval_failed": replace(_PENDING, state="failed", outcome="Bank refused: account frozen", **_DECIDED),
    "approval_rejected": replace(
        _PENDING,
        state="rejected",
        decision_note="Wrong amount <see thread>",
        **{**_DECIDED, "decided_via": "jupyter"},
    ),
    "approval_cancelled": replace(
        _CONFIRM,
        state="cancelled",
        decided_by="Alice Ng",
        decided_via="telegram",
        decided_at=T0 - dt.timedelta(seconds=5),
    ),
    "approval_expired": replace(_PENDING, state="expired"),
    "approval_hostile": replace(
        _PENDING,
        tool="pay_\u202eeciovni",
        requester="<b>Mallory</b> \u200b",
        requester_principal="slack:T1:U<!channel>",
        arguments={**HOSTILE, "password": "hunter2", "nested": [{"token": "t0k3n"}]},
        reason=HOSTILE["markdown"],
        mutating=False,
    ),
}


def approvals() -> dict[str, ApprovalView]:
    return dict(APPROVALS)
