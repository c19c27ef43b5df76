"""``milpa-chat approvals approve | reject ID --as PRINCIPAL``: one decision, through the one decision path.

The decider is the configured principal (never an argument of the tool call). An approval the
command line opened is run here once approved: the desk of the registry it was requested with
(``--tools``, the demo tools by default) claims the run in the same write as the decision, runs it
as the requester and records the result, so it runs exactly once however many people approve at
the same moment. An approval an assistant opened is only decided here; the assistant runs it.
"""

from __future__ import annotations

import argparse

from milpa_chat.runtime.approval import ApprovalRefused
from milpa_chat.runtime.approvals import ApprovalDesk
from milpa_chat.runtime.result import ToolResult

__all__ = ["cmd_verdict"]


async def cmd_verdict(ns: argparse.Namespace, verdict: str) -> int:
    """Approve or reject approval ``ns.id`` as the configured principal."""
    from milpa_chat.cli import DEFAULT_TOOLS, CliError, render
    from milpa_chat.cli_approvals import find
    from milpa_chat.cli_identity import PRINCIPAL_ENV, CliIdentity
    from milpa_chat.cli_store import load_registry, open_cli_store, runs_cli_approvals
    from milpa_chat.runtime.trail import AuditTrail

    identity = CliIdentity.from_options(ns.as_, ns.identities, ns.scopes)
    if identity.principal is None:
        raise CliError(f"approvals {verdict} needs the approver: add --as PRINCIPAL (or set {PRINCIPAL_ENV}), "
                       "with their scopes from --identities FILE or --scopes")
    ctx = identity.context()
    store = open_cli_store(ns.store)
    try:
        desk = ApprovalDesk(store)
        approval = await find(desk, ns.id)
        results: list[ToolResult] = []
        if verdict == "approve" and approval.tool is not None and approval.data["requester"].get("channel") == "cli":
            spec = ns.tools or DEFAULT_TOOLS
            registry = load_registry(spec, store)
            if not registry.has(approval.tool):
                raise CliError(f"--tools {spec} has no tool {approval.tool!r}, which approval {approval.id} runs; "
                               "pass the --tools the request was made with")
            results = runs_cli_approvals(registry, identity.requester)
            desk = registry.approvals
        else:
            desk.trail = AuditTrail(store)
        try:
            change = await desk.decide(approval.id, verdict, ctx, via="cli", note=ns.note)
        except ApprovalRefused as exc:
            if exc.code != "FORBIDDEN":  # decided already, expired, not a request approvers decide
                raise CliError(f"{str(exc).rstrip('.')}; milpa-chat approvals show {approval.id} tells its story") \
                    from exc
            fix = ("another principal decides: --as NAME" if "own request" in str(exc) else
                   "decide as another principal with --as, or give this one the approver scope in --identities "
                   "or --scopes")
            raise CliError(f"{str(exc).rstrip('.')} (you act as {ctx.principal}, scopes: "
                           f"{', '.join(ctx.scopes) or 'none'}); {fix}") from exc
        print(change.message)
        for result in results:
            print(render(result))
        if change.approval.state == "approved" and not results and change.approval.tool is not None:
            print("The assistant runs it at its next sweep, as the requester, and updates every card.")
        current = await desk.get(approval.id)
        if current is not None and current.state != change.approval.state:
            print(f"Approval {approval.id} is now {current.state}.")
        return 0 if all(r.success for r in results) else 1
    finally:
        await store.close()
