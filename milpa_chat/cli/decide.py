"""``milpa-chat approvals approve | reject ID --as PRINCIPAL``: one decision, through the one decision path.

The decider is the configured principal (never an argument of the tool call). An approval the
command line opened is run here once approved: the desk of the registry it was requested with
(``--tools``, the demo tools by default) claims the run in the same write as the decision, runs it
as the requester and records the result, so it runs exactly once however many people approve at
the same moment. An approval an assistant opened is only decided here; the assistant runs it.
"""

from __future__ import annotations

import argparse
import getpass
from typing import TYPE_CHECKING

from milpa_chat.cli.errors import CliError
from milpa_chat.cli.identity import PRINCIPAL_ENV, CliIdentity
from milpa_chat.cli.output import render
from milpa_chat.cli.store import DEFAULT_TOOLS, load_registry, open_cli_store, runs_cli_approvals
from milpa_chat.runtime.approval import ApprovalRefused
from milpa_chat.runtime.approvals import ApprovalDesk
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.result import ToolResult
from milpa_chat.runtime.trail import AuditTrail

if TYPE_CHECKING:
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.store.base import Store

__all__ = ["cmd_verdict", "find", "opened_here"]

#: The decisions that start a run of the tool.
RUNS = ("approve", "run_again")


def opened_here(approval: Approval) -> bool:
    """Whether the command line opened ``approval`` (then the command line runs it, once approved)."""
    return approval.tool is not None and approval.data["requester"].get("channel") == "cli"


async def find(desk: ApprovalDesk, approval_id: str) -> Approval:
    """The approval ``approval_id``, or a usage error saying how to find the right id."""
    approval = await desk.get(approval_id)
    if approval is None:
        raise CliError(
            f"no approval {approval_id!r} in this store; milpa-chat approvals --all lists them "
            "(is --store the store the request was made on?)"
        )
    return approval


def _decider(identity: CliIdentity, decision: str, *, shell: bool) -> ToolContext:
    if identity.principal is not None:
        return identity.context()
    if shell:
        return ToolContext.cli().with_extra(user_name=f"{getpass.getuser()} (local shell)")
    raise CliError(
        f"approvals {decision} needs the approver: add --as PRINCIPAL (or set {PRINCIPAL_ENV}), "
        "with their scopes from --identities FILE or --scopes"
    )


def _refusal(exc: ApprovalRefused, approval: Approval, ctx: ToolContext) -> Exception:
    text = str(exc).rstrip(".")
    if exc.code != "FORBIDDEN":  # decided already, expired, not a request approvers decide
        return CliError(f"{text}; milpa-chat approvals show {approval.id} tells its story")
    fix = (
        "another principal decides: --as NAME"
        if "own request" in text
        else "decide as another principal with --as, or give this one the approver scope in --identities or --scopes"
    )
    return CliError(f"{text} (you act as {ctx.principal}, scopes: {', '.join(ctx.scopes) or 'none'}); {fix}")


def _runner(
    ns: argparse.Namespace, store: Store, approval: Approval, identity: CliIdentity
) -> tuple[ApprovalDesk, list[ToolResult]]:
    """The desk of the registry that runs ``approval`` here once decided, and where its results go."""
    spec = getattr(ns, "tools", None) or DEFAULT_TOOLS
    registry = load_registry(spec, store)
    if approval.tool is None or not registry.has(approval.tool):
        raise CliError(
            f"--tools {spec} has no tool {approval.tool!r}, which approval {approval.id} runs; "
            "pass the --tools the request was made with"
        )
    return registry.approvals, runs_cli_approvals(registry, identity.requester)


async def cmd_verdict(ns: argparse.Namespace, decision: str, *, shell: bool = False) -> int:
    """Take ``decision`` on approval ``ns.id`` as the configured principal (``shell``: else as the local shell)."""
    identity = CliIdentity.from_options(ns.as_, ns.identities, ns.scopes)
    ctx = _decider(identity, decision, shell=shell)
    store = open_cli_store(ns.store)
    try:
        desk = ApprovalDesk(store)
        approval = await find(desk, ns.id)
        results: list[ToolResult] = []
        if decision in RUNS and opened_here(approval):
            desk, results = _runner(ns, store, approval, identity)
        else:
            desk.install(trail=AuditTrail(store))
        try:
            change = await desk.decide(approval.id, decision, ctx, via="cli", note=ns.note)
        except ApprovalRefused as exc:
            raise _refusal(exc, approval, ctx) from exc
        print(change.message)
        for result in results:
            print(render(result))
        if not results and change.approval.state == "approved" and change.approval.tool is not None:
            print(
                "The assistant runs it at its next sweep, as the requester, and updates every card."
                if change.approval.data.get("auto_run")
                else "It runs when the requester calls it again (over MCP: approval_run)."
            )
        current = await desk.get(approval.id)
        if current is not None and current.state != change.approval.state:
            print(f"Approval {approval.id} is now {current.state}.")
        return 0 if all(r.success for r in results) else 1
    finally:
        await store.close()
