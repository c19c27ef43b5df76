"""``milpa-chat approvals [list | show ID | approve ID | reject ID]``: the approvals of a store, from the shell.

A decision here is the same :meth:`~milpa_chat.runtime.ApprovalDesk.decide` a button tap makes, as
the configured principal (``--as``, scopes from ``--identities`` / ``--scopes``): the approver
scopes and the four-eyes rule apply as on every surface. An approval opened from the command line
runs, once approved, in the approving process (as the requester, exactly once). One an assistant
opened stays ``approved`` and due: the assistant's next sweep runs it and edits every card.

``milpa-chat decide ID DECISION`` (as the local shell) is kept for scripts, and says it is deprecated.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from milpa_chat.cli.decide import cmd_verdict, find, opened_here
from milpa_chat.cli.store import open_cli_store
from milpa_chat.runtime.approval import ApprovalRefused
from milpa_chat.runtime.approvals import DECISIONS, ApprovalDesk
from milpa_chat.runtime.context import ToolContext

if TYPE_CHECKING:
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.store.base import Store

__all__ = ["add_parsers", "cmd_approvals", "cmd_decide"]

Common = Callable[[argparse.ArgumentParser], None]
OPEN = ("pending", "approved", "executing", "effect_uncertain")


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: Common | None = None) -> None:
    p = sub.add_parser("approvals", help="list, show, approve or reject the approvals kept in a store")
    _list_options(p, None)
    actions = p.add_subparsers(dest="action", metavar="{list,show,approve,reject}")
    p_list = actions.add_parser("list", help="the open approvals (--all: decided ones too)")
    _list_options(p_list, argparse.SUPPRESS)
    p_show = actions.add_parser("show", help="one approval: what runs, who asked, who decided, what happened")
    p_show.add_argument("id", help="the approval id (milpa-chat approvals lists them)")
    for verb in ("approve", "reject"):
        p_verb = actions.add_parser(verb, help=f"{verb} one as --as PRINCIPAL (the requester cannot {verb} their own)")
        p_verb.add_argument("id", help="the approval id (milpa-chat approvals lists them)")
        p_verb.add_argument("--note", default=None, help="why (shown on every card)")
        p_verb.add_argument(
            "--tools",
            default=None,
            help="pkg.mod:obj holding the tool that runs once approved (default: the demo tools)",
        )
    for parser in (p, p_list, p_show, *[actions.choices[v] for v in ("approve", "reject")]):
        if common is not None:
            common(parser)
    p_decide = sub.add_parser("decide", help="deprecated: milpa-chat approvals approve|reject ID --as PRINCIPAL")
    p_decide.add_argument("id", help="the approval id (milpa-chat approvals lists them)")
    p_decide.add_argument("decision", choices=[d.replace("_", "-") for d in DECISIONS])
    p_decide.add_argument("--note", default=None, help="why (shown on every card)")
    p_decide.add_argument("--tools", default=None, help="pkg.mod:obj holding the tool a command-line request runs")
    if common is not None:
        common(p_decide)


def _list_options(p: argparse.ArgumentParser, default: Any) -> None:
    kw: dict[str, Any] = {} if default is None else {"default": default}
    p.add_argument("--all", action="store_true", help="decided ones too (default: open ones)", **kw)
    p.add_argument("--stats", action="store_true", help="how each approver decided (last --days days)", **kw)
    p.add_argument(
        "--days",
        type=float,
        help="the window of --stats (default 30)",
        **({"default": 30.0} if default is None else kw),
    )


def _when(ts: float | None) -> str:
    return "-" if ts is None else datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d %H:%M UTC")


async def cmd_approvals(ns: argparse.Namespace) -> int:
    action = getattr(ns, "action", None) or "list"
    if action in ("approve", "reject"):
        return await cmd_verdict(ns, action)
    store = open_cli_store(ns.store)
    try:
        desk = ApprovalDesk(store)
        if action == "show":
            return await _show(desk, ns.id)
        return await _list(desk, store, ns)
    finally:
        await store.close()


async def _list(desk: ApprovalDesk, store: Store, ns: argparse.Namespace) -> int:
    if ns.stats:
        from milpa_chat.runtime.approval_stats import approver_stats

        stats = approver_stats(await desk.listing(), since=store.clock() - ns.days * 86400)
        print("\n".join(s.line() for s in stats) or f"No approvals were decided in the last {ns.days:g} days.")
        return 0
    shown = [a for a in await desk.listing() if ns.all or a.state in OPEN]
    if not shown:
        print("No open approvals." if not ns.all else "No approvals.")
    for a in sorted(shown, key=lambda a: float(a.data.get("created_at", 0))):
        votes = f", {len(a.votes)} of {a.quorum} approvals" if a.kind == "verification" else ""
        print(
            f"{a.id}  {a.state:<16} {a.kind:<12} {a.label}  by {a.requester_name}{votes}, expires {_when(a.expires_at)}"
        )
    return 0


def show_lines(a: Approval) -> list[str]:
    """What ``approvals show`` prints about one approval."""
    v = a.data
    r = v["requester"]
    lines = [
        f"{a.id}  {a.kind} of {a.label}: {a.state}",
        f"  summary:    {v.get('summary') or '-'}",
        f"  arguments:  {json.dumps(a.args, ensure_ascii=False, sort_keys=True)}  (digest {v.get('digest')})",
        f"  requested:  by {r.get('name') or r.get('principal')} ({r.get('principal')}, via {r.get('channel')}) "
        f"at {_when(v.get('created_at'))}; expires {_when(a.expires_at)}",
    ]
    if a.kind == "verification":
        policy = v.get("policy", {})
        who = ", ".join(policy.get("approver_scopes") or ()) or "anyone identified"
        lines.append(
            f"  approvers:  {who}; {len(a.votes)} of {a.quorum} approvals"
            f"{'; four-eyes' if policy.get('four_eyes') else ''}"
        )
    for vote in a.votes:
        note = f" — {vote['note']}" if vote.get("note") else ""
        lines.append(
            f"  approved:   by {vote.get('name')} ({vote.get('principal')}, via {vote.get('via')}) "
            f"at {_when(vote.get('at'))}{note}"
        )
    if (
        v.get("decided_by")
        and a.state not in ("pending",)
        and not (a.votes and v["decided_by"] == a.votes[-1].get("principal"))
    ):
        note = f" — {v['decision_note']}" if v.get("decision_note") else ""
        lines.append(
            f"  decided:    by {v.get('decided_by_name')} ({v['decided_by']}, via {v.get('decided_via')}) "
            f"at {_when(v.get('decided_at'))}{note}"
        )
    if a.tool is not None:
        lines.append(f"  runs:       {int(v.get('attempt', 0))} time(s)")
    if v.get("outcome"):
        lines.append(f"  outcome:    {v['outcome']}")
    return lines


async def _show(desk: ApprovalDesk, approval_id: str) -> int:
    print("\n".join(show_lines(await find(desk, approval_id))))
    return 0


async def cmd_decide(ns: argparse.Namespace) -> int:
    print(
        "milpa-chat: decide is deprecated; use milpa-chat approvals approve|reject ID --as PRINCIPAL", file=sys.stderr
    )
    decision = ns.decision.replace("-", "_")
    store = open_cli_store(ns.store)
    try:
        approval = await ApprovalDesk(store).get(ns.id)
        if approval is None or not opened_here(approval):
            return await _decide_as_shell(store, ns, decision)
    finally:
        await store.close()
    return await cmd_verdict(ns, decision, shell=True)  # the command line runs what it opened


async def _decide_as_shell(store: Store, ns: argparse.Namespace, decision: str) -> int:
    shell = ToolContext.cli().with_extra(user_name=f"{getpass.getuser()} (local shell)")
    try:
        change = await ApprovalDesk(store).decide(ns.id, decision, shell, via="cli", note=ns.note)
    except ApprovalRefused as exc:
        print(f"milpa-chat: {exc}")
        return 1
    print(change.message)
    if change.approval.state == "approved" and change.approval.tool is not None:
        print("The assistant runs it at its next sweep, as the requester, and updates every card.")
    return 0
