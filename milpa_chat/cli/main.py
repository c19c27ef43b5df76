"""The ``milpa-chat`` command.

    milpa-chat tools [pkg.mod:obj]                list the tools of a registry, module or object
    milpa-chat call NAME --args JSON [--tools pkg.mod:obj] [--plan] [--yes]
    milpa-chat run NAME [--ARG VALUE ...] [--tools pkg.mod:obj] [--plan] [--yes]   arguments from the schema
    milpa-chat run NAME --help  (or call NAME --help)   the operation's arguments, generated from its schema
    milpa-chat approvals [list [--all] | show ID | approve ID | reject ID]   the approvals kept in the store
    milpa-chat grants [list | show ID | draft FILE | suspend ID | lift ID | revoke ID | sign CHANGE]   standing grants
    milpa-chat audit verify|export|show [ID]|checkpoint|keygen   the hash-chained audit trail, signed checkpoints
    milpa-chat batch approve|reject ID ID ...      one requester's requests decided together, each on its own
    milpa-chat request reassign|ask|answer|comment ID TEXT   the actions around a decision
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
import sys
from collections.abc import Sequence
from typing import Any

from milpa_chat.cli.errors import CliError
from milpa_chat.cli.parsing import CliParser, add_global_options, split_globals
from milpa_chat.cli.store import DEFAULT_TOOLS, importable_cwd
from milpa_chat.errors import MilpaError

__all__ = ["build_parser", "main"]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("milpa-chat")
    except PackageNotFoundError:
        from milpa_chat import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = CliParser(prog="milpa-chat", description="Tools whose risky actions humans approve.")
    parser.add_argument("--version", action="version", version=f"milpa-chat {_version()}")
    add_global_options(parser, suppress=False)
    sub: argparse._SubParsersAction[argparse.ArgumentParser] = parser.add_subparsers(
        dest="command", required=True, parser_class=CliParser
    )
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
    p_run = sub.add_parser(
        "run",
        add_help=False,
        help="run a tool with its arguments as options (milpa-chat run NAME --help lists them, from its schema)",
    )
    p_run.add_argument("name", nargs="?")
    p_run.add_argument("options", nargs=argparse.REMAINDER)
    p_demo = sub.add_parser("demo", help="walk through the pipeline locally on SQLite")
    p_demo.add_argument("--store", default=argparse.SUPPRESS, help="SQLite file to use (default: a temporary file)")
    p_demo.add_argument("--verbose", action="store_true", help="also the audit trail and the ids the cards leave out")
    from milpa_chat.cli.approvals import add_parsers
    from milpa_chat.cli.audit import add_parser as add_audit

    add_parsers(sub, add_global_options)
    from milpa_chat.cli.grants import add_parsers as add_grants

    add_grants(sub, add_global_options)
    add_audit(sub, add_global_options)
    from milpa_chat.cli.batch import add_parsers as add_batch

    add_batch(sub, add_global_options)
    from milpa_chat.cli.mcp import add_parser as add_mcp_parser

    add_mcp_parser(sub)
    _add_playground(sub)
    return parser


def _add_playground(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    try:
        from milpa_chat.playground.cli import add_parser as add_playground_parser
    except ImportError as exc:  # not installed with this copy: the command says how to get it
        missing = str(exc)
        p = sub.add_parser("playground", help="the local Telegram and Slack playground (not installed)", add_help=False)
        p.add_argument("rest", nargs=argparse.REMAINDER)
        p.set_defaults(unavailable=missing)
        return
    add_playground_parser(sub)


def cmd_playground(ns: argparse.Namespace) -> int:
    if getattr(ns, "unavailable", None):
        raise CliError(
            f"the playground cannot start ({ns.unavailable}); install it with pip install 'milpa-chat[playground]'"
        )
    from milpa_chat.playground import cli as playground

    run = getattr(playground, "cmd_playground", None) or getattr(ns, "handler", None)
    if run is None:
        raise CliError("this milpa_chat.playground has no cmd_playground(ns) to run")
    return int(run(ns))


async def _dispatch(ns: argparse.Namespace) -> int:
    if ns.command == "tools":
        from milpa_chat.cli.tools import cmd_tools

        return await cmd_tools(ns)
    if ns.command == "call":
        from milpa_chat.cli.call import cmd_call

        return await cmd_call(ns)
    if ns.command == "audit":
        from milpa_chat.cli.audit import cmd_audit

        return await cmd_audit(ns)
    if ns.command in ("approvals", "decide"):
        from milpa_chat.cli.approvals import cmd_approvals, cmd_decide

        return await (cmd_approvals if ns.command == "approvals" else cmd_decide)(ns)
    if ns.command in ("batch", "request"):
        from milpa_chat.cli.batch import cmd_batch, cmd_request

        return await (cmd_batch if ns.command == "batch" else cmd_request)(ns)
    if ns.command == "grants":
        from milpa_chat.cli.grants import cmd_grants

        return await cmd_grants(ns)
    import inspect

    from milpa_chat.demo import run_demo

    verbose = ns.verbose and "verbose" in inspect.signature(run_demo).parameters
    options: dict[str, Any] = {"verbose": True} if verbose else {}
    return await run_demo(getattr(ns, "store", None), **options)  # without --store: a temporary SQLite file


def _run_command(ns: argparse.Namespace) -> int:
    if ns.command == "mcp":
        from milpa_chat.cli.mcp import cmd_mcp

        return cmd_mcp(ns)
    if ns.command == "playground":
        return cmd_playground(ns)
    return asyncio.run(_dispatch(ns))


def main(argv: Sequence[str] | None = None) -> int:
    importable_cwd()  # pkg.module:obj of the current directory, for every command (mcp and playground too)
    argv = list(sys.argv[1:] if argv is None else argv)
    lead, rest = split_globals(argv)
    try:
        if rest[:1] == ["run"]:  # its options come from the tool's schema: parsed once the registry is loaded
            from milpa_chat.cli.run import cmd_run

            globals_parser = CliParser(prog="milpa-chat", add_help=False)
            add_global_options(globals_parser, suppress=False)
            return asyncio.run(cmd_run(rest[1:], globals_parser.parse_args(lead)))
        ns = build_parser().parse_args(argv)
        return _run_command(ns)
    except (CliError, MilpaError, OSError) as exc:
        print(f"milpa-chat: {exc}", file=sys.stderr)
        return 2
