"""``milpa-chat audit verify | export | show ID``: the hash-chained audit trail of a store."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Callable

from milpa_chat.cli.store import open_cli_store
from milpa_chat.runtime.trail import AuditTrail

__all__ = ["add_parser", "cmd_audit"]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser],
               common: Callable[[argparse.ArgumentParser], None] | None = None) -> None:
    p = sub.add_parser("audit", help="check, export or tell the audit trail kept in a store")
    p.add_argument("action", choices=["verify", "export", "show"])
    p.add_argument("id", nargs="?", help="with show: the approval id")
    if common is not None:
        common(p)  # --store and the others
    else:
        p.add_argument("--store", default=None, help="the store: a SQLite file, sqlite:///file.db, postgresql://...")


async def cmd_audit(ns: argparse.Namespace) -> int:
    if ns.action == "show" and not ns.id:
        print("milpa-chat: audit show needs the approval id: milpa-chat audit show <id> "
              "(milpa-chat approvals --all lists them)", file=sys.stderr)
        return 2

    store = open_cli_store(getattr(ns, "store", None))
    try:
        trail = AuditTrail(store)
        if ns.action == "verify":
            verdict = await trail.verify()
            print(verdict)
            return 0 if verdict.ok else 1
        entries = await trail.entries() if ns.action == "export" else await trail.story(ns.id)
        if ns.action == "export":
            for line in trail.export_lines(entries):
                print(line)
            return 0
        if not entries:
            print(f"No trail entries about {ns.id}.")
            return 1
        for e in entries:
            when = dt.datetime.fromtimestamp(e.at, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            facts = ", ".join(f"{k}={v}" for k, v in e.fields.items() if v not in (None, ""))
            print(f"#{e.seq} {when} {e.kind}: {facts}")
        return 0
    finally:
        await store.close()
