"""``milpa-chat call NAME --args JSON``: one call through the whole pipeline as the command's caller, asking
before a confirm tool runs."""

from __future__ import annotations

import argparse
import json
from typing import Any

from milpa_chat.cli.errors import CliError
from milpa_chat.cli.output import render, same_place
from milpa_chat.cli.schema import command_for, operation_parser
from milpa_chat.cli.session import session
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["cmd_call", "execute"]


def _parse_args(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(
            f"--args is not valid JSON ({exc.msg} at column {exc.colno}); example: --args '{{\"note_id\": 5}}'"
        ) from exc
    if not isinstance(value, dict):
        raise CliError(f"--args must be a JSON object like '{{\"page\": 1}}', got {type(value).__name__}")
    return value


def _ask(prompt: str) -> bool:
    try:
        answer = input(prompt)
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes", "confirm")


async def cmd_call(ns: argparse.Namespace) -> int:
    if ns.name is None:
        ns.parser.print_help()
        return 0 if ns.help else 2
    async with session(ns.tools, ns) as (registry, ctx):
        if ns.help:
            return _call_help(registry, ns.name)
        return await execute(
            registry,
            ns.name,
            _parse_args(ns.args),
            plan=ns.plan,
            yes=ns.yes,
            ctx=ctx,
            where=same_place(ns.tools, ns.store),
        )


def _call_help(registry: ToolRegistry, name: str) -> int:
    command = command_for(registry, name, hidden=())
    print(operation_parser(command, prog=f"milpa-chat run {name}").format_help(), end="")
    print(f"\nor, as JSON: milpa-chat call {name} --args '{{...}}'")
    return 0


async def execute(
    registry: ToolRegistry,
    name: str,
    args: dict[str, Any],
    *,
    plan: bool,
    yes: bool,
    ctx: ToolContext | None = None,
    where: str = "",
) -> int:
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
        print(
            f"Another person decides it: milpa-chat approvals approve {approval_id} --as APPROVER{where} "
            f"(or reject); milpa-chat approvals show {approval_id}"
        )
    return 0 if result.success else 1
