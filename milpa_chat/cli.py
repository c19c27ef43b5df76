"""The ``milpa-chat`` command.

    milpa-chat tools [pkg.mod:obj]                list the tools of a registry, module or object
    milpa-chat call NAME --args JSON [--tools pkg.mod:obj] [--plan] [--yes]
    milpa-chat run NAME [--ARG VALUE ...] [--tools pkg.mod:obj] [--plan] [--yes]   arguments from the schema
    milpa-chat run NAME --help  (or call NAME --help)   the operation's arguments, generated from its schema
    milpa-chat demo [--store FILE]                the pipeline walk-through on SQLite
    milpa-chat approvals --store URL [--all]      the approvals kept in a store
    milpa-chat decide ID DECISION --store URL     approve, reject, cancel, run-again or mark-done one
    milpa-chat audit verify|export|show [ID] --store URL   the hash-chained audit trail
    milpa-chat mcp [--tools pkg.mod:obj] [--http PORT --tokens FILE]   serve the tools over MCP
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import sys
from collections.abc import Sequence
from typing import Any

from milpa_chat.errors import MilpaError
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.registry import ToolRegistry
from milpa_chat.runtime.result import ToolResult

DEFAULT_TOOLS = "milpa_chat.demo:tools"


class CliError(MilpaError):
    """A usage problem; printed without a traceback, exit status 2."""


def load_registry(spec: str) -> ToolRegistry:
    """``pkg.mod:obj`` -> a registry. ``obj`` may be a ToolRegistry, a factory returning one, a class
    (instantiated without arguments), an instance or module with ``@tool`` methods; without ``:obj``
    the module itself is scanned."""
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CliError(f"cannot import {module_name!r} ({exc}); pass --tools package.module:object") from exc
    obj: Any = module
    if attr:
        try:
            for part in attr.split("."):
                obj = getattr(obj, part)
        except AttributeError as exc:
            raise CliError(f"{module_name!r} has no attribute {attr!r}") from exc
    is_factory = callable(obj) and not isinstance(obj, ToolRegistry) and not hasattr(obj, "__milpa_tool__")
    if isinstance(obj, type) or is_factory:
        obj = obj()
    if isinstance(obj, ToolRegistry):
        return obj
    registry = ToolRegistry()
    if registry.scan(obj) == 0:
        raise CliError(f"{spec!r} declares no @tool functions or methods")
    return registry


def render(result: ToolResult) -> str:
    from milpa_chat.renderers import CliRenderer

    return CliRenderer().render(result, ToolContext.cli())


def cmd_tools(ns: argparse.Namespace) -> int:
    registry = load_registry(ns.tools)
    for summary in registry.get_tool_summaries():
        defn = registry.get(summary["name"])
        assert defn is not None
        flags = [f for f, on in (("effect undeclared: treated as mutating", not defn.effect_declared),
                                 ("mutating", defn.mutating and defn.effect_declared), ("confirm", defn.confirm),
                                 ("needs approval", defn.verify is not None)) if on]
        scopes = f" [scopes: {', '.join(defn.scopes)}]" if defn.scopes else ""
        extra = f" ({', '.join(flags)})" if flags else ""
        print(f"{summary['name']}{extra}{scopes}\n    {summary['description']}")
        for pname, pschema in summary["inputSchema"].get("properties", {}).items():
            required = pname in summary["inputSchema"].get("required", [])
            print(f"    - {pname}: {pschema.get('type', 'any')}{'' if required else ' (optional)'}"
                  f"{' — ' + pschema['description'] if pschema.get('description') else ''}")
    return 0


def _parse_args(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"--args is not valid JSON ({exc.msg} at column {exc.colno}); "
                       "example: --args '{\"note_id\": 5}'") from exc
    if not isinstance(value, dict):
        raise CliError(f"--args must be a JSON object like '{{\"page\": 1}}', got {type(value).__name__}")
    return value


def _ask(prompt: str) -> bool:
    try:
        answer = input(prompt)
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes", "confirm")


async def _call(ns: argparse.Namespace) -> int:
    if ns.help or ns.name is None:
        return _call_help(ns)
    registry = load_registry(ns.tools)
    return await execute(registry, ns.name, _parse_args(ns.args), plan=ns.plan, yes=ns.yes)


def _call_help(ns: argparse.Namespace) -> int:
    if ns.name is None:
        ns.parser.print_help()
        return 0 if ns.help else 2
    from milpa_chat.cli_schema import command_for, operation_parser

    command = command_for(load_registry(ns.tools), ns.name, hidden=())
    print(operation_parser(command, prog=f"milpa-chat run {ns.name}").format_help(), end="")
    print(f"\nor, as JSON: milpa-chat call {ns.name} --args '{{...}}'")
    return 0


async def execute(registry: ToolRegistry, name: str, args: dict[str, Any], *, plan: bool, yes: bool) -> int:
    """Call ``name`` through the pipeline as the local shell; ask before a confirm tool runs (unless ``yes``)."""
    ctx = ToolContext.cli()
    if plan:
        ctx = ctx.as_plan()
    result = await registry.call(name, args, ctx)
    print(render(result))
    token = result.confirm_token
    if result.success and token and result.data.get("requires_confirmation"):
        if yes or _ask("Confirm? [y/N] "):
            result = await registry.call(name, {"confirm_token": token}, ctx)
            print(render(result))
        else:
            print("Cancelled — nothing was done.")
            return 1
    return 0 if result.success else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="milpa-chat", description="Tools whose risky actions humans approve.")
    sub = parser.add_subparsers(dest="command", required=True)
    p_tools = sub.add_parser("tools", help="list the tools of a module or object")
    p_tools.add_argument("tools", nargs="?", default=DEFAULT_TOOLS, help="pkg.mod:obj (default: the demo tools)")
    p_call = sub.add_parser("call", help="call a tool through the whole pipeline (cli channel)", add_help=False)
    p_call.add_argument("-h", "--help", action="store_true", help="this help; with NAME, the tool's arguments")
    p_call.add_argument("name", nargs="?")
    p_call.set_defaults(parser=p_call)
    p_call.add_argument("--args", default="{}", help="arguments as a JSON object")
    p_call.add_argument("--tools", default=DEFAULT_TOOLS, help="pkg.mod:obj holding the tools")
    p_call.add_argument("--plan", action="store_true", help="dry run: validate and authorize only")
    p_call.add_argument("--yes", action="store_true", help="confirm without asking")
    p_run = sub.add_parser("run", add_help=False, help="run a tool with its arguments as options "
                           "(milpa-chat run NAME --help lists them, from its schema)")
    p_run.add_argument("name", nargs="?")
    p_run.add_argument("options", nargs=argparse.REMAINDER)
    p_demo = sub.add_parser("demo", help="walk through the pipeline locally on SQLite")
    p_demo.add_argument("--store", default=None, help="SQLite file to use (default: a temporary file)")
    from milpa_chat.cli_approvals import add_parsers
    from milpa_chat.cli_audit import add_parser as add_audit

    add_parsers(sub)
    add_audit(sub)
    from milpa_chat.mcp.cli import add_parser as add_mcp_parser

    add_mcp_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:  # its options come from the tool's schema: parsed once the registry is loaded
        from milpa_chat.cli_schema import cmd_run

        try:
            return asyncio.run(cmd_run(argv[1:]))
        except CliError as exc:
            print(f"milpa-chat: {exc}", file=sys.stderr)
            return 2
    ns = build_parser().parse_args(argv)
    try:
        if ns.command == "tools":
            return cmd_tools(ns)
        if ns.command == "call":
            return asyncio.run(_call(ns))
        if ns.command == "audit":
            from milpa_chat.cli_audit import cmd_audit

            return asyncio.run(cmd_audit(ns))
        if ns.command in ("approvals", "decide"):
            from milpa_chat.cli_approvals import cmd_approvals, cmd_decide

            return asyncio.run((cmd_approvals if ns.command == "approvals" else cmd_decide)(ns))
        if ns.command == "mcp":
            from milpa_chat.mcp.cli import cmd_mcp

            return cmd_mcp(ns)
        from milpa_chat.demo import run_demo

        return asyncio.run(run_demo(ns.store))
    except CliError as exc:
        print(f"milpa-chat: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # python -m milpa_chat.cli: run the imported module, whose CliError the others raise
    from milpa_chat.cli import main as _main

    raise SystemExit(_main())
