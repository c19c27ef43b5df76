"""``milpa-chat approvals`` and ``milpa-chat decide``: the approvals of a store, from the shell.

A decision here is the same :meth:`~milpa_chat.runtime.ApprovalDesk.decide` a button tap makes, as
the local shell (``ToolContext.cli()``: the process is the trust boundary, the OS user is shown as
the decider's name). This process runs no tool and edits no card: an approved request stays
``approved`` and due, and the assistant's next sweep (any worker on the same store) runs it as the
requester and edits every card.
"""

from __future__ import annotations

import argparse
import getpass
from datetime import UTC, datetime

from milpa_chat.runtime.approval import ApprovalRefused
from milpa_chat.runtime.approvals import DECISIONS, ApprovalDesk
from milpa_chat.runtime.context import ToolContext
from milpa_chat.store import open_store

__all__ = ["add_parsers", "cmd_approvals", "cmd_decide"]


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p_list = sub.add_parser("approvals", help="list the approvals kept in a store")
    p_list.add_argument("--store", required=True, help="the store: a SQLite file, sqlite:///file.db, postgresql://...")
    p_list.add_argument("--all", action="store_true", help="decided ones too (default: open ones)")
    p_list.add_argument("--stats", action="store_true", help="how each approver decided (last --days days)")
    p_list.add_argument("--days", type=float, default=30.0, help="the window of --stats (default 30)")
    p_decide = sub.add_parser("decide", help="decide an approval as the local shell")
    p_decide.add_argument("id", help="the approval id (milpa-chat approvals lists them)")
    p_decide.add_argument("decision", choices=[d.replace("_", "-") for d in DECISIONS])
    p_decide.add_argument("--note", default=None, help="why (shown on every card)")
    p_decide.add_argument("--store", required=True, help="the store the assistant uses")


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


async def cmd_approvals(ns: argparse.Namespace) -> int:
    store = open_store(ns.store)
    try:
        desk = ApprovalDesk(store)
        if ns.stats:
            from milpa_chat.runtime.approval_stats import approver_stats

            stats = approver_stats(await desk.listing(), since=store.clock() - ns.days * 86400)
            print("\n".join(s.line() for s in stats) or f"No approvals were decided in the last {ns.days:g} days.")
            return 0
        shown = [a for a in await desk.listing() if ns.all or a.state in ("pending", "approved", "effect_uncertain")]
        if not shown:
            print("No open approvals." if not ns.all else "No approvals.")
        for a in sorted(shown, key=lambda a: float(a.data.get("created_at", 0))):
            votes = f", {len(a.votes)} of {a.quorum} approvals" if a.kind == "verification" else ""
            print(f"{a.id}  {a.state:<16} {a.kind:<12} {a.label}  by {a.requester_name}{votes}, "
                  f"expires {_when(a.expires_at)}")
    finally:
        await store.close()
    return 0


async def cmd_decide(ns: argparse.Namespace) -> int:
    store = open_store(ns.store)
    shell = ToolContext.cli().with_extra(user_name=f"{getpass.getuser()} (local shell)")
    try:
        change = await ApprovalDesk(store).decide(ns.id, ns.decision.replace("-", "_"), shell, via="cli",
                                                  note=ns.note)
    except ApprovalRefused as exc:
        print(f"milpa-chat: {exc}")
        return 1
    finally:
        await store.close()
    print(change.message)
    if change.approval.state == "approved" and change.approval.tool is not None:
        print("The assistant runs it at its next sweep, as the requester, and updates every card.")
    return 0
