"""An upstream MCP server for the proxy tests, written with the official SDK's low-level ``Server``.

Served over stdio (``python -m tests.mcp.upstream CALLS.jsonl``) or streamable HTTP
(``python -m tests.mcp.upstream CALLS.jsonl --http PORT``), always as its own process, so a test can
kill it. Every ``tools/call`` it receives is appended to ``CALLS.jsonl`` (one JSON line: the tool and
its arguments, and the server's pid) before the tool runs: what the upstream really received, counted by the test.

* ``read_note`` — ``readOnlyHint: true``;
* ``delete_note`` — ``destructiveHint: true``;
* ``tag_note`` — no annotations at all;
* ``check_note`` — read-only, answers ``{"holds": ...}`` (a measurement a standing grant can cite);
* ``slow_delete`` — destructive, sleeps ``seconds`` before answering (killed mid-call by a test);
* ``broken`` — read-only, answers ``isError`` with a text;
* ``grow`` — read-only, adds the tool ``shrink`` and tells the client ``tools/list_changed``.

One resource (``notes://index``) and one prompt (``summarize``) exist for the pass-through.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import mcp.types as types
from mcp.server.lowlevel import NotificationOptions, Server

NOTES = {"groceries": "buy milk", "family": "call mom", "garden": "water the plants"}
NAME = {"type": "string", "description": "The note's name"}


def _tool(name: str, description: str, props: dict[str, Any], annotations: dict[str, Any] | None) -> types.Tool:
    schema = {"type": "object", "properties": props, "required": list(props)}
    wire: dict[str, Any] = {"name": name, "description": description, "inputSchema": schema}
    if annotations is not None:
        wire["annotations"] = annotations
    return types.Tool.model_validate(wire)


TOOLS = [
    _tool("read_note", "Read a note", {"name": NAME}, {"readOnlyHint": True}),
    _tool("delete_note", "Delete a note", {"name": NAME}, {"readOnlyHint": False, "destructiveHint": True}),
    _tool("tag_note", "Tag a note", {"name": NAME, "tag": {"type": "string"}}, None),
    _tool("check_note", "Whether a note is safe to delete", {"name": NAME}, {"readOnlyHint": True}),
    _tool(
        "slow_delete", "Delete a note slowly", {"name": NAME, "seconds": {"type": "number"}}, {"destructiveHint": True}
    ),
    _tool("broken", "Always fails", {}, {"readOnlyHint": True}),
    _tool("grow", "Adds the tool 'shrink'", {}, {"readOnlyHint": True}),
]
SHRINK = _tool("shrink", "A tool that appeared later", {}, {"readOnlyHint": True})


class Upstream:
    def __init__(self, calls: Path) -> None:
        self.calls = calls
        self.tools = list(TOOLS)
        self.server: Server[Any] = Server(
            "test-upstream",
            version="1.0",
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_read_resource=self.read_resource,
            on_list_prompts=self.list_prompts,
            on_get_prompt=self.get_prompt,
        )

    def record(self, name: str, arguments: dict[str, Any]) -> None:
        with self.calls.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"tool": name, "arguments": arguments, "pid": os.getpid()}) + "\n")
            f.flush()

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = dict(params.arguments or {})
        self.record(params.name, args)
        name = str(args.get("name", ""))
        if params.name in ("read_note", "check_note") and name not in NOTES:
            return _error(f"No note named {name!r}.")
        if params.name == "read_note":
            return _ok(NOTES[name], {"name": name, "text": NOTES[name]})
        if params.name == "check_note":
            return _ok(f"{name} is safe", {"holds": True})
        if params.name == "delete_note":
            return _ok(f"Deleted {name}.", {"deleted": name})
        if params.name == "tag_note":
            return _ok(f"Tagged {name} with {args.get('tag')}.", None)
        if params.name == "slow_delete":
            await asyncio.sleep(float(args.get("seconds", 30)))
            return _ok(f"Deleted {name} slowly.", {"deleted": name})
        if params.name == "grow":
            if SHRINK not in self.tools:
                self.tools.append(SHRINK)
            await ctx.session.send_tool_list_changed()
            return _ok("grown", {"tools": len(self.tools)})
        if params.name == "shrink":
            return _ok("shrunk", {"ok": True})
        return _error("broken on purpose: the disk is full")

    async def list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[types.Resource(uri="notes://index", name="index", mime_type="text/plain")]
        )

    async def read_resource(self, ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        text = "\n".join(NOTES)
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=str(params.uri), text=text)])

    async def list_prompts(self, ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[types.Prompt(name="summarize", description="Summarize the notes")])

    async def get_prompt(self, ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        message = types.PromptMessage(
            role="user", content=types.TextContent(type="text", text="Summarize: " + ", ".join(NOTES.values()))
        )
        return types.GetPromptResult(messages=[message])


def _ok(text: str, structured: dict[str, Any] | None) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured)


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


async def _stdio(upstream: Upstream) -> None:
    from mcp.server.stdio import stdio_server

    options = upstream.server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read, write):
        await upstream.server.run(read, write, options)


def main(argv: list[str]) -> None:
    upstream = Upstream(Path(argv[0]))
    if "--http" not in argv:
        asyncio.run(_stdio(upstream))
        return
    import uvicorn

    port = int(argv[argv.index("--http") + 1])
    app = upstream.server.streamable_http_app(host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(sys.argv[1:])
