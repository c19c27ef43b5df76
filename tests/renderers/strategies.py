"""Hypothesis strategies: tool results of every shape and approval cards, full of hostile text.

Every value stored under a secret-named key is :data:`SECRET` followed by a number, so a test
can assert that the marker never shows up on any surface.
"""

from __future__ import annotations

import datetime as dt
import string
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from milpa_chat.renderers import (
    Actions,
    ApprovalView,
    Button,
    Code,
    Divider,
    Document,
    Fields,
    Heading,
    ItemList,
    LazyDocument,
    Message,
    Note,
    Paragraph,
    Span,
    Table,
    is_secret_key,
)
from milpa_chat.runtime.result import ErrorCode, ToolResult

from .samples import HOSTILE, UNICODE

SECRET = "sEkReT"
SECRET_KEYS = ["apiKey", "api-key", "API_KEY", "Authorization", "client_secret", "password", "token",
               "secret", "access_token", "X-Api-Key", "Private Key"]  # fmt: skip
SPECIAL = "<>&\"'*_~`[]()|!#\\/\n\r\t\x00\x1b\u200b\u200d\u202e\u2066\ufeff\u0301é👍🏽👨‍👩‍👧שלוםمرحبا東京𝔘"

fragments = st.sampled_from([*HOSTILE.values(), *UNICODE.values(), "</pre>", "<b>", "&amp;", "", " "])
texts = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=SPECIAL, max_size=60),
    fragments,
    st.lists(fragments, max_size=6).map("".join),
    # long lines and long multi-line texts: they must be split or shortened, never broken
    st.tuples(fragments, st.integers(1, 600)).map(lambda t: t[0] * t[1]),
    st.tuples(st.text(alphabet=SPECIAL, min_size=1, max_size=4), st.integers(500, 4500)).map(lambda t: t[0] * t[1]),
)
short_texts = st.one_of(st.text(max_size=20), st.text(alphabet=SPECIAL, max_size=12), fragments)
keys = st.one_of(short_texts, st.sampled_from(["id", "name", "title", "nombre", *SECRET_KEYS]))
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), texts)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=6) | st.lists(inner, max_size=4).map(tuple) | st.dictionaries(keys, inner, max_size=6)
    ),
    max_leaves=12,
)


def plant(value: Any, counter: list[int]) -> Any:
    """``value`` with every secret-named key's value replaced by a fresh :data:`SECRET` marker."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if is_secret_key(k):
                counter[0] += 1
                out[k] = f"{SECRET}{counter[0]}"
            else:
                out[k] = plant(v, counter)
        return out
    if isinstance(value, list | tuple):
        return type(value)(plant(v, counter) for v in value)
    return value


records = st.lists(st.dictionaries(keys, scalars, max_size=5), max_size=25)  # what list tools return


@st.composite
def data_values(draw: st.DrawFn) -> Any:
    value = draw(json_values | records)
    if isinstance(value, dict) and draw(st.booleans()):
        value[draw(st.sampled_from(SECRET_KEYS))] = "x"
    return plant(value, [0])


def _meta(draw: st.DrawFn) -> dict[str, Any]:
    meta: dict[str, Any] = plant(draw(st.dictionaries(keys, json_values, max_size=3)), [1000])
    for key in draw(st.sets(st.sampled_from(["ref", "approval_id", "request_id", "tool", "suggestion"]))):
        meta[key] = draw(st.one_of(short_texts, st.text(alphabet=string.ascii_letters, max_size=80), st.integers()))
    return meta


@st.composite
def results(draw: st.DrawFn) -> ToolResult:
    """Any result shape, with hostile data, messages and meta."""
    kind = draw(
        st.sampled_from(["success", "error", "list", "detail", "confirmation", "gate", "blocked", "plan", "raw"])
    )
    data, meta = draw(data_values()), _meta(draw)
    message = draw(st.none() | texts)
    if kind == "success":
        return ToolResult.success(data, message, meta)
    if kind == "error":
        return _error(draw, data, meta)
    if kind == "list":
        items = data if isinstance(data, list) else [data]
        page, limit = draw(st.integers(-3, 10**9)), draw(st.integers(1, 10**6))
        return ToolResult.paginated(items, page, draw(st.integers(0, 10**12)), limit, message, meta)
    if kind == "detail":
        actions: list[Mapping[str, Any]] = draw(
            st.lists(st.dictionaries(st.sampled_from(["label", "action", "ref", "style"]), short_texts), max_size=12)
        )
        return ToolResult.detail(data, draw(texts), message, actions).with_meta(meta)
    if kind == "confirmation":
        return ToolResult.confirmation(
            draw(texts), data, draw(short_texts), draw(short_texts), draw(short_texts | st.integers())
        )
    if kind == "gate":
        return _gate(draw, message, meta)
    if kind == "blocked":
        return ToolResult.blocked(draw(texts), draw(st.none() | texts))
    if kind == "plan":
        plan = {"tool": draw(short_texts), "mutating": draw(st.booleans()), "args": data}
        return ToolResult(True, {"plan": plan}, message, None, meta)
    meta["type"] = draw(st.one_of(short_texts, st.sampled_from(["list", "detail", "confirmation", "error"])))
    meta["pagination"] = draw(json_values)
    return ToolResult(draw(st.booleans()), data, message, draw(st.none() | texts), meta)


def _error(draw: st.DrawFn, data: Any, meta: dict[str, Any]) -> ToolResult:
    code = draw(st.sampled_from([*ErrorCode, "OTHER"]))
    extra = draw(st.fixed_dictionaries({}, optional={
        "retry_after_seconds": st.one_of(st.none(), st.floats(0, 1e9), st.integers(-5, 10**12), texts),
        "suggestions": st.lists(short_texts, max_size=4),
        "errors": st.lists(short_texts | st.fixed_dictionaries({"path": short_texts, "message": texts}), max_size=5),
        "available": st.lists(short_texts, max_size=5),
    }))  # fmt: skip
    return ToolResult.error(draw(texts), data, {**meta, **plant(extra, [2000])}, code=code)


def _gate(draw: st.DrawFn, message: str | None, meta: dict[str, Any]) -> ToolResult:
    """The registry's own confirm-gate result (its token is a secret too)."""
    gate = {
        "requires_confirmation": True,
        "confirm_token": SECRET + "gate",
        "action_summary": draw(texts),
        "expires_at": draw(st.one_of(texts, st.datetimes().map(dt.datetime.isoformat))),
    }
    return ToolResult(True, gate, message, None, {**meta, "type": "confirmation", "requires_confirmation": True})


aware = st.datetimes(timezones=st.sampled_from([dt.UTC, dt.timezone(dt.timedelta(hours=-7, minutes=-30))]))


@st.composite
def approval_views(draw: st.DrawFn) -> ApprovalView:
    args = draw(st.dictionaries(keys, json_values, max_size=5))
    args[draw(st.sampled_from(SECRET_KEYS))] = "x"
    return ApprovalView(
        id=draw(st.text(alphabet=string.ascii_letters + string.digits + "_-", min_size=1, max_size=56)),
        kind=draw(st.sampled_from(["confirm", "verification"])),
        tool=draw(texts),
        arguments=plant(args, [0]),
        requester=draw(texts),
        requester_principal=draw(short_texts),
        expires_at=draw(aware),
        state=draw(
            st.sampled_from(
                ["pending", "approved", "rejected", "cancelled", "expired", "executing", "executed", "failed"]
            )
        ),
        reason=draw(st.none() | texts),
        mutating=draw(st.booleans()),
        decided_by=draw(st.none() | short_texts),
        decided_at=draw(st.none() | aware),
        decided_via=draw(st.none() | st.sampled_from(["telegram", "slack", "jupyter", "cli", "web"]) | short_texts),
        decision_note=draw(st.none() | texts),
        outcome=draw(st.none() | texts),
        approvals_required=draw(st.integers(1, 5)),
        approved_by=tuple(draw(st.lists(short_texts, max_size=6))),
    )


@st.composite
def messages(draw: st.DrawFn) -> Message:
    """Messages built directly (as the chat layer may), with raw, uncleaned text in every block."""
    block = st.one_of(
        st.builds(Heading, texts, st.sampled_from(["", "✅", "⚠️"])),
        st.lists(st.builds(Span, texts, st.sampled_from(["plain", "bold", "italic", "code"])), max_size=4).map(
            lambda spans: Paragraph(tuple(spans))
        ),
        st.lists(st.tuples(short_texts, texts), max_size=14).map(lambda items: Fields(tuple(items))),
        st.lists(texts, max_size=12).map(lambda items: ItemList(tuple(items))),
        st.builds(Code, texts, st.sampled_from(["", "json", "py<>"])),
        st.builds(Note, texts),
        st.just(Divider()),
        st.lists(short_texts, min_size=1, max_size=4).flatmap(
            lambda cols: st.lists(st.tuples(*[texts] * len(cols)), max_size=12).map(
                lambda rows: Table(tuple(cols), tuple(rows), 1)
            )
        ),
    )
    buttons = st.lists(
        st.builds(
            Button,
            st.text(min_size=1, max_size=75).filter(str.strip),
            st.sampled_from(["go", "page", "a.b-c_d"]),
            st.text(alphabet=string.ascii_letters + string.digits + ":/", max_size=40),
        ),
        max_size=130,
    )
    rows = draw(st.lists(buttons, max_size=3))
    blocks = [*draw(st.lists(block, min_size=1, max_size=8)), *(Actions((tuple(r),)) for r in rows if r)]
    return Message(
        tuple(blocks),
        draw(texts),
        truncated=draw(st.booleans()),
        full=LazyDocument("full.txt", lambda: Document("full.txt", b"everything", "text/plain")),
    )
