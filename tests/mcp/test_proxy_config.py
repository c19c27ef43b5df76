"""The proxy file: every mistake is refused naming the key and the fix; effects are read from the upstream's
annotations, fail closed, and the file overrides them per tool."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest

from milpa_chat.errors import DeclarationError
from milpa_chat.mcp.proxy import McpProxy, gating_of
from milpa_chat.mcp.proxy_config import ProxyConfig
from milpa_chat.runtime import ToolContext
from tests.mcp.proxy_rig import _devnull, calls, upstream_entry

STDIO = {"name": "files", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]}


def refused(data: dict[str, Any]) -> str:
    with pytest.raises(DeclarationError) as caught:
        ProxyConfig.from_mapping(data, where="proxy.toml")
    return str(caught.value)


def test_mistakes_in_the_file_are_named() -> None:
    assert "upstream.0.comand: is not a setting the proxy knows" in refused({"upstream": [{**STDIO, "comand": "npx"}]})
    assert "needs exactly one of command" in refused({"upstream": [{**STDIO, "url": "https://x.example/mcp"}]})
    assert "names no upstream; add an [[upstream]] table" in refused({"proxy": {"name": "p"}})
    assert "two upstreams are named 'files'" in refused({"upstream": [STDIO, STDIO]})
    assert "approver_scopes" in refused({"upstream": [{**STDIO, "tools": {"write_file": {"verify": {}}}}]})
    text = refused(
        {
            "upstream": [
                {
                    "name": "t",
                    "url": "https://t.example/mcp",
                    "headers": {"Authorization": "Bearer ${MILPA_NOT_SET_ANYWHERE}"},
                }
            ]
        }
    )
    assert text == (
        "proxy.toml uses ${MILPA_NOT_SET_ANYWHERE}, which is not set in the environment; export "
        "MILPA_NOT_SET_ANYWHERE=... before starting the proxy"
    )


def test_secrets_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TICKETS_TOKEN", "s3cret")
    config = ProxyConfig.from_toml_text(
        '[[upstream]]\nname = "t"\nurl = "https://t.example/mcp"\n'
        'headers = { Authorization = "Bearer ${TICKETS_TOKEN}" }\n'
    )
    assert config.upstream[0].headers == {"Authorization": "Bearer s3cret"}


def tool(name: str, annotations: dict[str, Any] | None) -> types.Tool:
    wire: dict[str, Any] = {"name": name, "inputSchema": {"type": "object"}}
    if annotations is not None:
        wire["annotations"] = annotations
    return types.Tool.model_validate(wire)


def test_effects_fail_closed_and_the_file_overrides_them() -> None:
    upstream = ProxyConfig.from_mapping(
        {
            "upstream": [
                {
                    **STDIO,
                    "scopes": ["files:use"],
                    "tools": {
                        "write_file": {"verify": {"approver_scopes": ["files:approve"], "quorum": 2}, "risk": "high"},
                        "list_allowed": {"mutating": False, "confirm": False, "scopes": ["files:list"]},
                    },
                }
            ]
        }
    ).upstream[0]
    read = gating_of(tool("read_file", {"readOnlyHint": True, "idempotentHint": True}), upstream)
    assert read == {"mutating": False, "confirm": False, "verify": None, "scopes": ("files:use",), "idempotent": True}
    for hints in (
        None,
        {"destructiveHint": True},
        {"openWorldHint": True},
        {"readOnlyHint": False},
        {"readOnlyHint": True, "destructiveHint": True},
    ):  # contradictory hints: fail closed
        gated = gating_of(tool("move_file", hints), upstream)
        assert gated["mutating"] is True and gated["confirm"] is True, hints
    write = gating_of(tool("write_file", {"destructiveHint": True}), upstream)
    assert write["confirm"] is False and write["verify"].approver_scopes == ("files:approve",)
    assert write["verify"].quorum == 2 and write["verify"].risk == "high"
    listed = gating_of(tool("list_allowed", None), upstream)
    assert listed["mutating"] is False and listed["confirm"] is False and listed["scopes"] == ("files:list",)


async def test_an_upstream_that_does_not_answer_in_time_is_named_and_the_next_call_works(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    fast = {"slow_delete": {"mutating": False, "confirm": False}}  # the file says it needs no approval
    config = ProxyConfig.from_mapping({"upstream": [upstream_entry("stdio", log, timeout=1, tools=fast)]})
    with _devnull() as quiet:
        async with McpProxy(config, errlog=quiet) as proxy:
            late = await proxy.registry.call("notes_slow_delete", {"name": "garden", "seconds": 30}, ToolContext.cli())
            assert late.error == (
                "upstream 'notes' did not answer tools/call slow_delete within 1 s; it may still be running it. "
                "Check the upstream before repeating it, or raise timeout for 'notes' in the proxy file"
            )
            read = await proxy.registry.call("notes_read_note", {"name": "garden"}, ToolContext.cli())
            assert read.success and read.data == {"name": "garden", "text": "water the plants"}
    assert [c["tool"] for c in calls(log)] == ["slow_delete", "read_note"]


async def test_an_upstream_that_died_while_idle_is_started_again_for_the_next_call(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    config = ProxyConfig.from_mapping({"upstream": [upstream_entry("stdio", log)]})
    with _devnull() as quiet:
        async with McpProxy(config, errlog=quiet) as proxy:
            first = await proxy.registry.call("notes_read_note", {"name": "garden"}, ToolContext.cli())
            assert first.success
            os.kill(calls(log)[0]["pid"], signal.SIGKILL)
            await asyncio.sleep(0.5)
            second = await proxy.registry.call("notes_read_note", {"name": "family"}, ToolContext.cli())
            assert second.success, second.error  # never sent to the dead process: sent to a new one
    assert [c["arguments"] for c in calls(log)] == [{"name": "garden"}, {"name": "family"}]
    assert calls(log)[0]["pid"] != calls(log)[1]["pid"]
