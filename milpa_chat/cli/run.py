"""``milpa-chat run NAME [--ARG VALUE ...]``: a tool's arguments as options, parsed by a parser built from its
schema (:mod:`milpa_chat.cli.schema`); ``run NAME --help`` lists them."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from milpa_chat.cli.call import execute
from milpa_chat.cli.output import same_place
from milpa_chat.cli.schema import arguments_from, command_for, operation_parser
from milpa_chat.cli.session import session
from milpa_chat.cli.store import DEFAULT_TOOLS, load_registry
from milpa_chat.runtime.context import ToolContext

if TYPE_CHECKING:
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["cmd_run"]


def _run_usage(registry: ToolRegistry) -> str:
    from milpa_chat.command.projectors import CliCommandProjector

    lines = [
        "usage: milpa-chat run NAME [--ARG VALUE ...] [--tools pkg.mod:obj] [--plan] [--yes]",
        "       milpa-chat run NAME --help    the tool's arguments, from its schema",
        "",
        "tools:",
    ]
    lines += [f"  {c.name:<24} {c.description}" for c in CliCommandProjector().catalogue(registry, ToolContext.cli())]
    return "\n".join(lines)


_OWN = {"--tools": "tools", "--store": "store", "--as": "as_", "--identities": "identities", "--scopes": "scopes"}


def _command_options(argv: Sequence[str], before: argparse.Namespace | None, left: set[str]) -> argparse.Namespace:
    """The command's own options (``--tools``, ``--store``, ``--as``, ...) in ``argv``, except those in
    ``left`` (the tool's arguments of the same name); the rest come from ``before`` (written before ``run``)."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for flag, dest in _OWN.items():
        if flag not in left:
            pre.add_argument(flag, dest=dest, default=argparse.SUPPRESS)
    known, _ = pre.parse_known_args(list(argv))
    for dest in _OWN.values():
        if not hasattr(known, dest):
            setattr(known, dest, getattr(before, dest, None))
    known.tools = known.tools or DEFAULT_TOOLS
    return known


def _shadowed(argv: Sequence[str]) -> set[str]:
    """The command's own options that the tool ``argv[0]`` also has as arguments, and that ``argv`` writes
    after its name (read from the tool's catalogue, on a scratch store)."""
    rest = argv[1:]
    written = {f for f in _OWN if any(w == f or w.startswith(f + "=") for w in rest)}
    if not written or not argv or argv[0].startswith("-"):
        return set()
    from milpa_chat.store.memory import MemoryStore

    known = _command_options(argv, None, written - {"--tools"})
    command = command_for(load_registry(str(known.tools), MemoryStore()), argv[0])
    return written & {f for a in command.arguments for f in (a.flag, f"--{a.name}")}


async def cmd_run(argv: Sequence[str], before: argparse.Namespace | None = None) -> int:
    """``milpa-chat run NAME [--arg value ...]``: the arguments parsed by a parser built from the schema.

    ``before``: the options written before ``run`` (``--store``, ``--as``, ...); the same options after it
    take over, unless the tool has an argument of that name (then it is the tool's, and the command's
    option is only read before ``run``).
    """
    known = _command_options(argv, before, _shadowed(argv))
    async with session(str(known.tools), known) as (registry, ctx):
        if not argv or argv[0].startswith("-"):
            print(_run_usage(registry))
            return 0 if argv[:1] in (["-h"], ["--help"]) else 2
        name, rest = argv[0], argv[1:]
        command = command_for(registry, name)
        ns = operation_parser(command, prog=f"milpa-chat run {name}").parse_args(rest)
        plan, yes = getattr(ns, "_plan", False), getattr(ns, "_yes", False)
        return await execute(
            registry,
            command.name,
            arguments_from(ns),
            plan=plan,
            yes=yes,
            ctx=ctx,
            where=same_place(str(known.tools), known.store),
        )
