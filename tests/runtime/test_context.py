"""ToolContext: factories and scope matching."""

from __future__ import annotations

import pytest

from milpa_chat import ToolContext


def test_cli_is_full_access_local_shell() -> None:
    ctx = ToolContext.cli()
    assert (ctx.principal, ctx.channel, ctx.scopes, ctx.mode) == ("local-shell", "cli", ("*",), "execute")
    assert len(ctx.request_id) == 32 and int(ctx.request_id, 16) >= 0
    assert ctx.has_scope("anything:at-all")


def test_factories_per_channel() -> None:
    assert ToolContext.stdio("r1").to_dict()["channel"] == "mcp"
    assert ToolContext.stdio("r1").principal == "stdio"
    mcp = ToolContext.mcp("r2", "agent:x", ["tasks:write"])
    assert (mcp.principal, mcp.scopes, mcp.request_id) == ("agent:x", ("tasks:write",), "r2")
    tg = ToolContext.telegram(-100, 42, ["notes:read"])
    assert (tg.principal, tg.channel, tg.extra["chat_id"]) == ("telegram:42", "telegram", -100)
    sl = ToolContext.slack("T1", "U2", "C3")
    assert (sl.principal, sl.channel, sl.extra["channel_id"]) == ("slack:T1:U2", "slack", "C3")
    assert ToolContext.web(None).principal is None
    assert ToolContext.jupyter().channel == "jupyter"


def test_scope_matching_is_exact_with_star_wildcard_only() -> None:
    ctx = ToolContext(principal="p", channel="mcp", scopes=("admin:*", "notes:read"))
    assert ctx.has_scope("notes:read")
    assert not ctx.has_scope("admin:write")
    assert ctx.has_scope("admin:*")
    assert ctx.has_any_scope(["x", "notes:read"])
    assert not ctx.has_any_scope([])
    assert ctx.has_all_scopes([])
    assert not ctx.has_all_scopes(["notes:read", "x"])


def test_as_plan_keeps_everything_else() -> None:
    ctx = ToolContext.telegram(1, 2, ["a"])
    plan = ctx.as_plan()
    assert plan.mode == "plan" and plan.is_plan
    assert (plan.principal, plan.scopes, plan.request_id, dict(plan.extra)) == (
        ctx.principal,
        ctx.scopes,
        ctx.request_id,
        dict(ctx.extra),
    )


def test_bad_construction_is_explained() -> None:
    with pytest.raises(TypeError, match=r"scopes=\['notes:read'\]"):
        ToolContext(scopes="notes:read")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'execute' or 'plan'"):
        ToolContext(mode="dry")  # type: ignore[arg-type]
    assert "extra" not in ToolContext.cli().to_dict()
