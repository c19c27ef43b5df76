"""The MCP surface is an optional extra: ``import milpa_chat`` never imports the SDK, a missing SDK says how
to install it, and the hints/schemas an MCP client sees are derived from the tool."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from milpa_chat import ToolRegistry, tool
from milpa_chat.mcp import McpServer, annotations_for, output_schema_for

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_import_milpa_chat_does_not_import_the_sdk() -> None:
    run = _python(
        "import sys, milpa_chat, milpa_chat.cli; milpa_chat.cli.build_parser(); "
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))"
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_a_missing_sdk_names_the_extra_to_install() -> None:
    run = _python(
        "import sys; sys.modules['mcp'] = None\n"
        "from milpa_chat import ToolRegistry\nfrom milpa_chat.mcp import McpServer\n"
        "try:\n    McpServer(ToolRegistry())\nexcept ImportError as exc:\n"
        "    print(type(exc).__name__, exc)"
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("MissingExtraError") and 'pip install "milpa-chat[mcp]"' in run.stdout


def test_hints_and_output_schemas_follow_the_declaration() -> None:
    registry = ToolRegistry()
    definition = registry.register(
        "wipe",
        "Wipe it",
        {"type": "object", "properties": {}},
        lambda args, ctx: [1],
        mutating=True,
        idempotent=True,
        output_schema={"type": "array", "items": {"type": "integer"}},
    )
    assert annotations_for(definition) == {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True}
    schema, wrapped = output_schema_for(definition, may_ask=False)
    assert wrapped and schema == {
        "type": "object",
        "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
        "required": ["result"],
    }
    asking, _ = output_schema_for(definition, may_ask=True)
    assert asking is not None and asking["anyOf"][0] == schema and asking["anyOf"][1]["required"] == ["approval"]
    served = McpServer(registry).tools(McpServer(registry).stdio_caller.context(stdio=True))
    assert [t["name"] for t in served] == ["wipe", "approval_status", "approval_run"]
    assert served[0]["outputSchema"] == schema  # the mcp channel confirms only confirm=True tools


@tool("peek", "Look", mutating=False)
def peek() -> int:
    return 1


def test_a_plain_read_says_nothing_of_its_world() -> None:
    registry = ToolRegistry()
    registry.scan(peek)
    definition = registry.get("peek")
    assert definition is not None
    assert annotations_for(definition) == {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True}
