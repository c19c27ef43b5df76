"""``milpa-chat batch approve|reject ID ID ... --as PRINCIPAL``: a selection of one requester's requests decided
together, each through the one decision function (``milpa_chat.runtime.batches.BatchDesk``); and
``milpa-chat request reassign|ask|answer|comment ID TEXT --as PRINCIPAL``: the actions around a decision
(``milpa_chat.runtime.approval_actions.ApprovalActions``). Both act as the configured principal, never as an
argument; an approved request an assistant opened runs at that assistant's next sweep, as its requester."""

from __future__ import annotations

import argparse
from typing import Any

from milpa_chat.cli.decide import find
from milpa_chat.cli.errors import CliError
from milpa_chat.cli.identity import PRINCIPAL_ENV, CliIdentity
from milpa_chat.cli.store import load_registry, open_cli_store, runs_cli_approvals
from milpa_chat.runtime.approval import ApprovalRefused
from milpa_chat.runtime.approval_actions import ApprovalActions
from milpa_chat.runtime.approvals import ApprovalDesk
from milpa_chat.runtime.batches import BatchDesk
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.trail import AuditTrail

__all__ = ["add_parsers", "cmd_batch", "cmd_request"]

ACTIONS = ("reassign", "ask", "answer", "comment")


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: Any = None) -> None:
    p = sub.add_parser("batch", help="approve or reject several requests of one requester, each on its own")
    verbs = p.add_subparsers(dest="action", metavar="{approve,reject}", required=True)
    for verb in ("approve", "reject"):
        v = verbs.add_parser(verb, help=f"{verb} every request named, each through the one decision function")
        v.add_argument("ids", nargs="+", help="the approval ids (milpa-chat approvals lists them)")
        v.add_argument("--note", default=None, help="why (kept with each decision)")
        v.add_argument(
            "--tools", default=None, help="pkg.mod:obj holding the tools: requests the command line opened run here"
        )
        if common is not None:
            common(v)
    r = sub.add_parser("request", help="reassign, ask about, answer about or comment on one pending request")
    acts = r.add_subparsers(dest="action", metavar="{" + ",".join(ACTIONS) + "}", required=True)
    for act, what in zip(ACTIONS, ("WHO", "QUESTION", "ANSWER", "COMMENT"), strict=True):
        a = acts.add_parser(act, help=f"{act} (as --as PRINCIPAL)")
        a.add_argument("id", help="the approval id, or its first 8 characters")
        a.add_argument("text", nargs="+", metavar=what)
        if common is not None:
            common(a)


def _actor(ns: argparse.Namespace, verb: str) -> ToolContext:
    identity = CliIdentity.from_options(ns.as_, ns.identities, ns.scopes)
    if identity.principal is None:
        raise CliError(f"{verb} needs who you are: add --as PRINCIPAL (or set {PRINCIPAL_ENV}) with --identities FILE")
    return identity.context()


async def cmd_batch(ns: argparse.Namespace) -> int:
    ctx = _actor(ns, f"batch {ns.action}")
    store = open_cli_store(ns.store)
    try:
        desk = ApprovalDesk(store)
        if ns.tools:  # what the command line opened runs here, once each, as its requester
            identity = CliIdentity.from_options(ns.as_, ns.identities, ns.scopes)
            registry = load_registry(ns.tools, store)
            runs_cli_approvals(registry, identity.requester)
            desk = registry.approvals
        else:
            desk.trail = AuditTrail(store)
        batches = BatchDesk(desk)
        try:
            batch = await batches.open(ns.ids, ctx)
            _, changes, outcomes = await batches.decide(batch.id, ns.action, ctx, via="cli", note=ns.note)
        except ApprovalRefused as exc:
            raise CliError(str(exc).rstrip(".")) from exc
        if desk.follower is not None:
            await batches.run(changes, desk.follower)
        now = {o.id: o for o in await batches.outcomes(batch)}
        for o in outcomes:
            shown = o if o.refused or o.id not in now else now[o.id]
            print(f"{'refused' if o.refused else shown.state:>9}  {o.id}  {o.tool}: {shown.text}")
        done = sum(not o.refused for o in outcomes)
        waiting = " (an assistant's approved requests run at its next sweep)" if desk.follower is None else ""
        print(f"{done} of {len(outcomes)} decided{waiting}.")
        return 0 if done == len(outcomes) else 1
    finally:
        await store.close()


async def cmd_request(ns: argparse.Namespace) -> int:
    ctx = _actor(ns, f"request {ns.action}")
    store = open_cli_store(ns.store)
    try:
        desk = ApprovalDesk(store)
        desk.trail = AuditTrail(store)
        actions = ApprovalActions(desk)
        text = " ".join(ns.text)
        try:
            approval = await (actions.find(ns.id) if len(ns.id) < 32 else find(desk, ns.id))
            act = {
                "reassign": actions.reassign,
                "ask": actions.ask,
                "answer": actions.answer,
                "comment": actions.comment,
            }[ns.action]
            change = await act(approval.id, text, ctx, via="cli")
        except ApprovalRefused as exc:
            raise CliError(str(exc).rstrip(".")) from exc
        print(change.message)
        return 0
    finally:
        await store.close()
