"""The ``milpa-chat`` command.

    milpa-chat tools [pkg.mod:obj]                list the tools of a registry, module or object
    milpa-chat call NAME --args JSON [--tools pkg.mod:obj] [--plan] [--yes]
    milpa-chat run NAME [--ARG VALUE ...] [--tools pkg.mod:obj] [--plan] [--yes]   arguments from the schema
    milpa-chat run NAME --help  (or call NAME --help)   the operation's arguments, generated from its schema
    milpa-chat approvals [list [--all] | show ID | approve ID | reject ID]   the approvals kept in the store
    milpa-chat grants [list | show ID | draft FILE | suspend ID | lift ID | revoke ID | sign CHANGE]   standing grants
    milpa-chat audit verify|export|show [ID]      the hash-chained audit trail
    milpa-chat demo [--store FILE]                the pipeline walk-through on SQLite
    milpa-chat mcp [--tools pkg.mod:obj] [--http PORT --tokens FILE]   serve the tools over MCP
    milpa-chat playground                         the local Telegram and Slack playground in a browser

Every command that keeps state takes ``--store PATH`` (else ``MILPA_STORE``, else a SQLite file in
the user's data directory) and acts as ``--as PRINCIPAL`` (else ``MILPA_PRINCIPAL``, else the local
shell) with scopes from ``--identities FILE`` and ``--scopes a,b``. Usage errors are one line on
stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from milpa_chat.errors import MilpaError
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.registry import ToolRegistry
from milpa_chat.runtime.result import ToolResult

if TYPE_CHECKING:
    from milpa_chat.store.base import Store

DEFAULT_TOOLS = "milpa_chat.cli_store:demo_tools"
#: The options every command that keeps state takes, before or after the command's name.
GLOBAL_OPTIONS = ("--store", "--as", "--identities", "--scopes")


class CliError(MilpaError):
    """A usage problem; printed without a traceback, exit status 2."""


class CliParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line: what was wrong, and where the help is."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def load_registry(spec: str, store: Store | None = None) -> ToolRegistry:
    """``pkg.mod:obj`` -> a registry (on ``store`` when given); see :func:`milpa_chat.cli_store.load_registry`."""
    from milpa_chat.cli_store import load_registry as load

    return load(spec, store)


def render(result: ToolResult) -> str:
    from milpa_chat.renderers import CliRenderer

    return CliRenderer().render(result, ToolContext.cli())


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("milpa-chat")
    except PackageNotFoundError:
        from milpa_chat import __version__

        return __version__


def add_global_options(p: argparse.ArgumentParser, *, suppress: bool = True) -> None:
    """``--store``, ``--as``, ``--identities``, ``--scopes`` (after a command's name they take over the ones
    given before it)."""
    kw: dict[str, Any] = {"default": argparse.SUPPRESS} if suppress else {"default": None}
    p.add_argument("--store", metavar="PATH", help="the store: a SQLite file, sqlite:///file.db, postgresql://... "
                   "(default: $MILPA_STORE, else store.db in the user's data directory)", **kw)
    p.add_argument("--as", dest="as_", metavar="PRINCIPAL", help="act as this principal (alice is cli:alice; "
                   "default: $MILPA_PRINCIPAL, else the local shell with every scope)", **kw)
    p.add_argument("--identities", metavar="FILE", help="TOML file giving each principal its scopes ([roles], "
                   "[users], [defaults]; default: $MILPA_IDENTITIES)", **kw)
    p.add_argument("--scopes", metavar="A,B", help="scopes of --as, added to those of --identities", **kw)


async def cmd_tools(ns: argparse.Namespace) -> int:
    from milpa_chat.cli_identity import CliIdentity
    from milpa_chat.cli_schema import type_text
    from milpa_chat.cli_store import load_registry as load
    from milpa_chat.cli_store import open_cli_store

    CliIdentity.from_options(ns.as_, ns.identities, ns.scopes)  # a wrong --identities is said at once
    store = open_cli_store(ns.store)
    try:
        registry = load(ns.tools, store, hint="milpa-chat tools package.module:object")
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
                print(f"    - {pname}: {type_text(pschema)}{'' if required else ' (optional)'}"
                      f"{' — ' + pschema['description'] if pschema.get('description') else ''}")
    finally:
        await store.close()
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
    from milpa_chat.cli_session import session

    if ns.name is None:
        ns.parser.print_help()
        return 0 if ns.help else 2
    async with session(ns.tools, ns) as (registry, ctx):
        if ns.help:
            return _call_help(registry, ns.name)
        return await execute(registry, ns.name, _parse_args(ns.args), plan=ns.plan, yes=ns.yes, ctx=ctx,
                             where=same_place(ns.tools, ns.store))


def _call_help(registry: ToolRegistry, name: str) -> int:
    from milpa_chat.cli_schema import command_for, operation_parser

    command = command_for(registry, name, hidden=())
    print(operation_parser(command, prog=f"milpa-chat run {name}").format_help(), end="")
    print(f"\nor, as JSON: milpa-chat call {name} --args '{{...}}'")
    return 0


def same_place(tools: str, store: str | None) -> str:
    """The options that point a later command at the same tools and store (for the hints printed)."""
    words = ([] if tools == DEFAULT_TOOLS else ["--tools", tools]) + ([] if not store else ["--store", store])
    return "".join(f" {shlex.quote(w)}" for w in words)


async def execute(registry: ToolRegistry, name: str, args: dict[str, Any], *, plan: bool, yes: bool,
                  ctx: ToolContext | None = None, where: str = "") -> int:
    """Call ``name`` through the pipeline as ``ctx`` (the local shell by default); ask before a confirm
    tool runs (unless ``yes``). ``where``: the options naming the tools and store, for the hints."""
    ctx = ctx or ToolContext.cli()
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
            await registry.confirmations.cancel(token, ctx)  # the one decision function: the request is closed
            print("Cancelled — nothing was done.")
            return 1
    approval_id = result.meta.get("approval_id") if result.success else None
    if approval_id and result.meta.get("requires_verification") and not plan:
        print(f"Another person decides it: milpa-chat approvals approve {approval_id} --as APPROVER{where} "
              f"(or reject); milpa-chat approvals show {approval_id}")
    return 0 if result.success else 1


def build_parser() -> argparse.ArgumentParser:
    parser = CliParser(prog="milpa-chat", description="Tools whose risky actions humans approve.")
    parser.add_argument("--version", action="version", version=f"milpa-chat {_version()}")
    add_global_options(parser, suppress=False)
    sub: argparse._SubParsersAction[argparse.ArgumentParser] = parser.add_subparsers(
        dest="command", required=True, parser_class=CliParser)
    p_tools = sub.add_parser("tools", help="list the tools of a module or object")
    p_tools.add_argument("tools", nargs="?", default=DEFAULT_TOOLS, help="pkg.mod:obj (default: the demo tools)")
    add_global_options(p_tools)
    p_call = sub.add_parser("call", help="call a tool through the whole pipeline (cli channel)", add_help=False)
    p_call.add_argument("-h", "--help", action="store_true", help="this help; with NAME, the tool's arguments")
    p_call.add_argument("name", nargs="?")
    p_call.set_defaults(parser=p_call)
    p_call.add_argument("--args", default="{}", help="arguments as a JSON object")
    p_call.add_argument("--tools", default=DEFAULT_TOOLS, help="pkg.mod:obj holding the tools")
    p_call.add_argument("--plan", action="store_true", help="dry run: validate and authorize only")
    p_call.add_argument("--yes", action="store_true", help="confirm without asking")
    add_global_options(p_call)
    p_run = sub.add_parser("run", add_help=False, help="run a tool with its arguments as options "
                           "(milpa-chat run NAME --help lists them, from its schema)")
    p_run.add_argument("name", nargs="?")
    p_run.add_argument("options", nargs=argparse.REMAINDER)
    p_demo = sub.add_parser("demo", help="walk through the pipeline locally on SQLite")
    p_demo.add_argument("--store", default=argparse.SUPPRESS, help="SQLite file to use (default: a temporary file)")
    p_demo.add_argument("--verbose", action="store_true", help="also the audit trail and the ids the cards leave out")
    from milpa_chat.cli_approvals import add_parsers
    from milpa_chat.cli_audit import add_parser as add_audit

    add_parsers(sub, add_global_options)
    from milpa_chat.cli_grants import add_parsers as add_grants

    add_grants(sub, add_global_options)
    add_audit(sub, add_global_options)
    from milpa_chat.mcp.cli import add_parser as add_mcp_parser

    add_mcp_parser(sub)
    _add_playground(sub)
    return parser


def _add_playground(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    try:
        from milpa_chat.playground.cli import add_parser as add_playground_parser
    except ImportError as exc:  # not installed with this copy: the command says how to get it
        missing = str(exc)
        p = sub.add_parser("playground", help="the local Telegram and Slack playground (not installed)",
                           add_help=False)
        p.add_argument("rest", nargs=argparse.REMAINDER)
        p.set_defaults(unavailable=missing)
        return
    add_playground_parser(sub)


def cmd_playground(ns: argparse.Namespace) -> int:
    if getattr(ns, "unavailable", None):
        raise CliError(f"the playground cannot start ({ns.unavailable}); install it with "
                       "pip install 'milpa-chat[playground]'")
    from milpa_chat.playground import cli as playground

    run = getattr(playground, "cmd_playground", None) or getattr(ns, "handler", None)
    if run is None:
        raise CliError("this milpa_chat.playground has no cmd_playground(ns) to run")
    return int(run(ns))


def _split_globals(argv: list[str]) -> tuple[list[str], list[str]]:
    """The global options written before the command's name, and the rest."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in GLOBAL_OPTIONS:
            i += 2
        elif word.startswith(tuple(f"{o}=" for o in GLOBAL_OPTIONS)):
            i += 1
        else:
            break
    return argv[:i], argv[i:]


async def _dispatch(ns: argparse.Namespace) -> int:
    if ns.command == "tools":
        return await cmd_tools(ns)
    if ns.command == "call":
        return await _call(ns)
    if ns.command == "audit":
        from milpa_chat.cli_audit import cmd_audit

        return await cmd_audit(ns)
    if ns.command in ("approvals", "decide"):
        from milpa_chat.cli_approvals import cmd_approvals, cmd_decide

        return await (cmd_approvals if ns.command == "approvals" else cmd_decide)(ns)
    if ns.command == "grants":
        from milpa_chat.cli_grants import cmd_grants

        return await cmd_grants(ns)
    import inspect

    from milpa_chat.demo import run_demo

    verbose = ns.verbose and "verbose" in inspect.signature(run_demo).parameters
    options: dict[str, Any] = {"verbose": True} if verbose else {}
    return await run_demo(getattr(ns, "store", None), **options)  # without --store: a temporary SQLite file


def _run_command(ns: argparse.Namespace) -> int:
    if ns.command == "mcp":
        from milpa_chat.mcp.cli import cmd_mcp

        return cmd_mcp(ns)
    if ns.command == "playground":
        return cmd_playground(ns)
    return asyncio.run(_dispatch(ns))


def main(argv: Sequence[str] | None = None) -> int:
    from milpa_chat.cli_store import importable_cwd

    importable_cwd()  # pkg.module:obj of the current directory, for every command (mcp and playground too)
    argv = list(sys.argv[1:] if argv is None else argv)
    lead, rest = _split_globals(argv)
    try:
        if rest[:1] == ["run"]:  # its options come from the tool's schema: parsed once the registry is loaded
            from milpa_chat.cli_schema import cmd_run

            globals_parser = CliParser(prog="milpa-chat", add_help=False)
            add_global_options(globals_parser, suppress=False)
            return asyncio.run(cmd_run(rest[1:], globals_parser.parse_args(lead)))
        ns = build_parser().parse_args(argv)
        return _run_command(ns)
    except (CliError, MilpaError, OSError) as exc:
        print(f"milpa-chat: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # python -m milpa_chat.cli: run the imported module, whose CliError the others raise
    from milpa_chat.cli import main as _main

    raise SystemExit(_main())
