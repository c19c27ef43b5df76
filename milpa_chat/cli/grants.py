"""``milpa-chat grants [list | show | draft | suspend | lift | revoke | sign | decline]``: grants from the shell.

``draft FILE`` reads a grant's JSON text strictly and opens its signature (a grant naming
``supersedes`` replaces those grants once signed). Every change is a decision of the configured
principal (``--as``, scopes from ``--identities`` / ``--scopes``) through the one decision path,
``via="cli"``: suspend and revoke take effect at once, lift opens a request another signer decides
(``grants sign CHANGE`` — or on its card in a chat), and ``sign`` decides a waiting signature or
lift. Nothing here runs without a person named.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from milpa_chat.cli.errors import CliError
from milpa_chat.cli.identity import PRINCIPAL_ENV, CliIdentity
from milpa_chat.cli.store import open_cli_store
from milpa_chat.runtime.approval import ApprovalRefused

if TYPE_CHECKING:
    from milpa_chat.grants.desk import GrantDesk
    from milpa_chat.grants.records import GrantRecord
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.store.base import Store

__all__ = ["add_parsers", "cmd_grants", "show_lines"]

Common = Callable[[argparse.ArgumentParser], None]
ACTIONS = ("list", "show", "draft", "suspend", "lift", "revoke", "sign", "decline")


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: Common | None = None) -> None:
    p = sub.add_parser("grants", help="list, show, suspend, lift or revoke the standing grants kept in a store")
    p.add_argument("--all", action="store_true", help="drafts and declined drafts too")
    actions = p.add_subparsers(dest="action", metavar="{" + ",".join(ACTIONS) + "}")
    p_list = actions.add_parser("list", help="every grant with its state and use count")
    p_list.add_argument("--all", action="store_true", default=argparse.SUPPRESS, help="drafts too")
    parsers = [p, p_list]
    p_show = actions.add_parser("show", help="one grant: its whole text, who signed it, its history")
    p_show.add_argument("id", help="the grant id (milpa-chat grants lists them)")
    parsers.append(p_show)
    p_draft = actions.add_parser(
        "draft",
        help="draft a grant from its JSON text (read strictly) and open its "
        "signature; a grant that names supersedes replaces those grants once signed",
    )
    p_draft.add_argument("file", help="the grant's JSON text (- for standard input)")
    p_draft.add_argument(
        "--signer-may-be-drafter",
        action="store_true",
        help="let the person who drafts it sign it too (still a second, separate step)",
    )
    p_draft.add_argument("--note", default=None, help="shown with the request for a signature")
    parsers.append(p_draft)
    helps = {
        "suspend": "stop a grant now (as --as PRINCIPAL, who may sign)",
        "lift": "ask to lift a suspension (another signer decides it)",
        "revoke": "take a grant out of force for good",
        "sign": "sign a waiting grant, or approve a waiting lift (CHANGE: its approval id)",
        "decline": "decline a waiting signature or lift (CHANGE: its approval id)",
    }
    for verb, text in helps.items():
        p_verb = actions.add_parser(verb, help=text)
        p_verb.add_argument(
            "id",
            help="the approval id of the change"
            if verb in ("sign", "decline")
            else "the grant id (milpa-chat grants lists them)",
        )
        p_verb.add_argument("--note", default=None, help="why (kept in the grant's history, shown on its cards)")
        parsers.append(p_verb)
    for parser in parsers:
        if common is not None:
            common(parser)


def _when(ts: object) -> str:
    if not isinstance(ts, int | float):
        return "-"
    return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d %H:%M UTC")


def show_lines(record: GrantRecord) -> list[str]:
    """What ``grants show`` prints: the summary, the signature, the whole text, the history."""
    d = record.data
    drafted = d.get("drafted_by") or {}
    lines = [
        record.summary(),
        f"drafted by {drafted.get('name') or drafted.get('principal')} via "
        f"{drafted.get('via')} at {_when(d.get('drafted_at'))}",
    ]
    signed = d.get("signed_by")
    if signed:
        lines.append(
            f"signed by {signed.get('name') or signed.get('principal')} via {signed.get('via')} at "
            f"{_when(d.get('signed_at'))}"
        )
    if d.get("stopped_because"):
        lines.append(f"stopped because: {d['stopped_because']}")
    for approval_id, action in record.pending.items():
        lines.append(f"waiting: {action} ({approval_id}) — milpa-chat grants sign {approval_id} --as SIGNER")
    lines.append("text (as signed):")
    lines.append(record.text)
    for entry in d.get("history", []):
        who = entry.get("name") or entry.get("by") or entry.get("by_grant") or "-"
        lines.append(
            f"  {_when(entry.get('at'))}  {entry.get('action')}  by {who} via {entry.get('via') or '-'}: "
            f"{entry.get('outcome') or ''}"
        )
    return lines


def _desk(store: Store) -> GrantDesk:
    from milpa_chat.grants.desk import GrantDesk
    from milpa_chat.runtime.registry import ToolRegistry
    from milpa_chat.runtime.trail import AuditTrail

    registry = ToolRegistry(store=store)
    registry.approvals.install(trail=AuditTrail(store))
    return GrantDesk(registry)


def _person(ns: argparse.Namespace, verb: str) -> ToolContext:
    identity = CliIdentity.from_options(
        getattr(ns, "as_", None), getattr(ns, "identities", None), getattr(ns, "scopes", None)
    )
    if identity.principal is None:
        raise CliError(
            f"grants {verb} needs the person who decides: add --as PRINCIPAL (or set {PRINCIPAL_ENV}), "
            "with a signer scope (grants:sign) from --identities FILE or --scopes"
        )
    return identity.context()


async def cmd_grants(ns: argparse.Namespace) -> int:
    action = getattr(ns, "action", None) or "list"
    store = open_cli_store(getattr(ns, "store", None))
    try:
        desk = _desk(store)
        if action == "list":
            return await _list(desk, bool(getattr(ns, "all", False)))
        if action == "show":
            print("\n".join(show_lines(await _find(desk, ns.id))))
            return 0
        if action == "draft":
            return await _draft(desk, ns)
        return await _change(desk, ns, action)
    finally:
        await store.close()


async def _list(desk: GrantDesk, everything: bool) -> int:
    shown = [r for r in await desk.listing() if everything or r.judged]
    if not shown:
        print("No standing grants." + ("" if everything else " (--all shows drafts too)"))
    for record in shown:
        print(record.summary())
    return 0


async def _find(desk: GrantDesk, grant_id: str) -> GrantRecord:
    found = await desk.get(grant_id)
    if found is None:
        raise CliError(
            f"no standing grant {grant_id!r} in this store; milpa-chat grants --all lists them "
            "(is --store the store the grant was drafted on?)"
        )
    return found


def _read_text(path: str) -> str:
    """The grant's text from ``path`` (``-``: standard input), or a usage error naming the file."""
    import sys

    try:
        return sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"grants draft {path}: {exc.strerror}; give the file holding the grant's JSON text") from exc


async def _draft(desk: GrantDesk, ns: argparse.Namespace) -> int:
    from milpa_chat.grants.errors import InvalidGrant

    ctx = _person(ns, "draft")
    text = _read_text(ns.file)
    try:
        record, approval = await desk.draft(
            text, ctx, via="cli", note=ns.note, four_eyes=False if ns.signer_may_be_drafter else None
        )
    except InvalidGrant as exc:
        raise CliError(f"grants draft {ns.file}: the grant does not read: {exc}") from exc
    except ApprovalRefused as exc:
        raise CliError(str(exc).rstrip(".")) from exc
    print(
        f"Drafted {record.id}; it lends nothing until a person signs it: milpa-chat grants sign {approval.id} "
        f"--as SIGNER (or on its card)."
    )
    return 0


async def _change(desk: GrantDesk, ns: argparse.Namespace, action: str) -> int:
    ctx = _person(ns, action)
    try:
        if action in ("sign", "decline"):
            record, approval = await desk.decide(
                ns.id, "approve" if action == "sign" else "reject", ctx, via="cli", note=ns.note
            )
        else:
            record, approval = await desk.request(action, ns.id, ctx, via="cli", note=ns.note)
    except ApprovalRefused as exc:
        raise CliError(
            f"{str(exc).rstrip('.')} (you act as {ctx.principal}, scopes: {', '.join(ctx.scopes) or 'none'})"
        ) from exc
    if record is None:
        raise CliError(f"approval {ns.id} is no change of a standing grant; milpa-chat approvals show {ns.id}")
    if approval.state == "pending":
        print(
            f"Asked: {approval.data.get('summary')}. Another signer decides it: milpa-chat grants sign "
            f"{approval.id} --as SIGNER (or on its card)."
        )
    else:
        print(record.summary())
    return 0
