"""The demo tools and the terminal walk-through behind ``milpa-chat demo``.

Everything runs locally on a SQLite file: no tokens, no network.
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

from milpa_chat import Param, ToolContext, ToolError, ToolRegistry, ToolResult, VerifyPolicy, tool
from milpa_chat.runtime import VerificationTool
from milpa_chat.runtime.context import new_request_id

__all__ = ["DemoTools", "build_registry", "run_demo", "tools"]


class DemoTools:
    """A notes app and a payment that needs a manager's approval."""

    def __init__(self) -> None:
        self.notes: dict[int, dict[str, Any]] = {
            i + 1: {"id": i + 1, "title": t, "tags": tags}
            for i, (t, tags) in enumerate(
                [
                    ("Buy milk", ["home"]),
                    ("Call the bank", ["money"]),
                    ("Renew passport", ["travel"]),
                    ("Pay the plumber", ["home", "money"]),
                    ("Book flights", ["travel"]),
                ]
            )
        }
        self.payments: list[dict[str, Any]] = []

    @tool("list_notes", "List saved notes", scopes=["notes:read"], mutating=False)
    def list_notes(self, page: Annotated[int, Param("Page number", clamp=(1, 1000))] = 1) -> ToolResult:
        items = list(self.notes.values())
        return ToolResult.paginated(items[(page - 1) * 3 : page * 3], page, len(items), 3, "Your notes")

    @tool("search_notes", "Search notes by words in the title and by tag", scopes=["notes:read"], mutating=False)
    def search_notes(
        self,
        query: Annotated[str, Param("Words to look for")],
        page: Annotated[int, Param("Page number", clamp=(1, 1000))] = 1,
        tags: Annotated[list[str] | None, Param("Only notes with one of these tags")] = None,
    ) -> ToolResult:
        words = query.lower().split()
        hits = [
            n
            for n in self.notes.values()
            if all(w in n["title"].lower() for w in words) and (not tags or set(tags) & set(n["tags"]))
        ]
        return ToolResult.paginated(hits[(page - 1) * 10 : page * 10], page, len(hits), 10, f"Notes matching {query!r}")

    @tool("delete_note", "Delete a note", scopes=["notes:write"], mutating=True, confirm=True)
    async def delete_note(self, note_id: Annotated[int, Param("The note to delete")]) -> dict[str, Any]:
        note = self.notes.pop(note_id, None)
        if note is None:
            raise ToolError(f"There is no note {note_id}.", code="NOT_FOUND")
        return {"deleted": note_id, "title": note["title"]}

    @tool(
        "send_payment",
        "Send a payment; a manager must approve it first",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",), expires_in=3600),
    )
    async def send_payment(
        self,
        to: Annotated[str, Param("Who receives the money")],
        amount: Annotated[float, Param("Amount in EUR", clamp=(0.01, 10_000))],
        memo: Annotated[str, Param("What it is for")] = "",
    ) -> dict[str, Any]:
        payment = {"to": to, "amount": amount, "memo": memo, "id": len(self.payments) + 1}
        self.payments.append(payment)
        return payment


def build_registry(store_path: str | Path | None = None) -> ToolRegistry:
    """The demo registry on a SQLite file at ``store_path``, or in memory when it is ``None`` (nothing is
    left on disk)."""
    from milpa_chat.store import MemoryStore
    from milpa_chat.store.sqlite import SqliteStore

    store = SqliteStore(str(store_path)) if store_path is not None else MemoryStore()
    registry = ToolRegistry(store=store)
    registry.scan(DemoTools())
    VerificationTool(registry.verifier, resolve_scopes=["payments:approve"]).register(registry)
    return registry


def tools() -> ToolRegistry:
    """Entry point for ``milpa-chat tools milpa_chat.demo:tools``."""
    return build_registry()


# ---------------------------------------------------------------------------- walk-through
Printer = Callable[[str], None]
NEXT_STEPS = (
    "Next: see the same approvals as Telegram and Slack cards in your browser, with real adapters and no "
    "tokens:\n  make playground        (or: milpa-chat playground)\n"
    "Or in Jupyter: notebooks/01_explore_tools.ipynb and notebooks/02_approvals.ipynb."
)
_HEX_ID = re.compile(r"\b[0-9a-f]{32}\b")
_ID_LINE = re.compile(r"^(Request|Request id):\s+[0-9a-f]{32}\s*$")
#: What an approver's card shows of a decision (the verifier's internal fields stay out).
_DECISION_FIELDS = ("state", "approvals", "quorum")


def _render(result: ToolResult) -> str:
    from milpa_chat.renderers import CliRenderer

    return CliRenderer().render(result, ToolContext.cli())


def _hide_ids(text: str) -> str:
    """Cards without the 32-character ids (they are for logs and support, shown with ``--verbose``)."""
    lines = [re.sub(r" · Request: [0-9a-f]{32}", "", line) for line in text.splitlines()]
    tidy = "\n".join(_HEX_ID.sub("…", line) for line in lines if not _ID_LINE.match(line))
    return tidy + "\n" if text.endswith("\n") else tidy


def _show_audit(out: Printer) -> logging.Handler:
    """Print the audit trail (logger ``milpa_chat.audit``) inline, so the last pipeline step is visible."""

    class Inline(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            out(f"  audit: {record.getMessage()}")

    logger = logging.getLogger("milpa_chat.audit")
    handler = Inline()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    return handler


class _Walk:
    """One walk-through: calls a tool as someone, prints the command and the card."""

    def __init__(self, registry: ToolRegistry, out: Printer, verbose: bool) -> None:
        self.registry = registry
        self.out = out
        self.verbose = verbose

    def say(self, text: str) -> None:
        self.out(text if self.verbose else _hide_ids(text))

    async def call(self, who: str, name: str, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.say(f"> {who}: {name} {json.dumps(args, ensure_ascii=False)}")
        return await self.registry.call(name, args, replace(ctx, request_id=new_request_id()))

    async def show(self, who: str, name: str, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        result = await self.call(who, name, args, ctx)
        self.say(_render(result))
        return result

    async def replay(self, who: str, name: str, token: str, ctx: ToolContext) -> ToolResult:
        """The same confirmation once more: refused, and titled for what it is."""
        result = await self.call(who, name, {"confirm_token": token}, ctx)
        if result.success:
            self.say(_render(result))
            return result
        approval = await self.registry.approvals.get(token)
        state = approval.state if approval is not None else "unknown"
        self.say(
            f"⛔ Already used\n──────────────\n\nThis confirmation ran once already (its request is {state}); "
            f"nothing ran again.\nThe pipeline answered: {result.error}\n"
        )
        return result

    async def decide(self, who: str, request_id: str, ctx: ToolContext) -> ToolResult:
        result = await self.call(who, "resolve_verification", {"request_id": request_id, "decision": "grant"}, ctx)
        if self.verbose or not result.success or not isinstance(result.data, dict):
            self.say(_render(result))
            return result
        shown = {k: v for k, v in result.data.items() if k in _DECISION_FIELDS}
        self.say(_render(ToolResult.success(shown, result.message)))
        return result


async def run_demo(store_path: str | Path | None = None, out: Printer = print, *, verbose: bool = False) -> int:
    """Walk through the pipeline on SQLite: success, validation error, denial, confirm, verification. Returns 0.

    ``store_path``: the SQLite file (kept); without it, a temporary file removed when the walk-through ends.
    ``verbose``: also print the audit trail and the ids (request ids, tokens) the cards leave out."""
    if store_path is None:
        with tempfile.TemporaryDirectory(prefix="milpa-chat-demo-") as folder:
            return await _run(Path(folder) / "demo.db", out, verbose, temporary=True)
    return await _run(store_path, out, verbose, temporary=False)


async def _run(store_path: str | Path, out: Printer, verbose: bool, *, temporary: bool) -> int:
    registry = build_registry(store_path)
    handler = _show_audit(out) if verbose else None
    try:
        await _walk(_Walk(registry, out, verbose), store_path, temporary)
    finally:
        if handler is not None:
            logging.getLogger("milpa_chat.audit").removeHandler(handler)
        await registry.store.close()
    return 0


async def _walk(w: _Walk, store_path: str | Path, temporary: bool) -> None:
    alice = ToolContext.telegram(1001, 1001, ["notes:read", "notes:write", "payments:send"], first_name="Alice")
    guest = ToolContext.telegram(2002, 2002, ["notes:read"], first_name="Guest")
    boss = ToolContext.telegram(3003, 3003, ["payments:approve"], first_name="Manager")
    where = f"SQLite at {store_path}" + (
        " (a temporary file, removed at the end; --store FILE keeps one)" if temporary else ""
    )
    w.out(f"milpa-chat demo — store: {where}")
    w.out("\n=== 1. A read-only tool ===")
    await w.show("alice", "list_notes", {"page": 1}, alice)
    w.out("\n=== 2. A validation error names the field ===")
    await w.show("alice", "search_notes", {"query": "bank", "page": "two"}, alice)
    w.out("\n=== 3. A denial names the missing scope ===")
    await w.show("guest", "delete_note", {"note_id": 2}, guest)
    w.out("\n=== 4. Confirm round trip (Telegram asks before a mutating tool runs) ===")
    asked = await w.show("alice", "delete_note", {"note_id": 2}, alice)
    token = str(asked.confirm_token)
    w.out("  [Alice taps Confirm]")
    await w.show("alice", "delete_note", {"confirm_token": token}, alice)
    w.out("  [Alice taps Confirm again — the token was used once]")
    await w.replay("alice", "delete_note", token, alice)
    w.out("\n=== 5. Verification round trip (a manager approves a payment) ===")
    opened = await w.show("alice", "send_payment", {"to": "ACME Plumbing", "amount": 120.5, "memo": "sink"}, alice)
    rid = opened.data["request_id"]
    w.out("  [Alice tries to approve her own payment]")
    await w.show("alice", "resolve_verification", {"request_id": rid, "decision": "grant"}, alice)
    w.out("  [The manager taps Approve]")
    await w.decide("manager", rid, boss)
    w.out("  [The approved call runs with the approved arguments]")
    await w.show("alice", "send_payment", {"verification_id": rid}, alice)
    final = await w.registry.verifier.get(rid)
    kept = "stored in SQLite" + ("; this run's file is removed at the end" if temporary else ", survives restarts")
    w.say(f"  the payment request: state={final.state if final else '?'} ({kept})")
    w.out("\n" + NEXT_STEPS)
