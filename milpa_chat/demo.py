"""The demo tools and the terminal walk-through behind ``milpa-chat demo``.

Everything runs locally on a SQLite file: no tokens, no network.
"""

from __future__ import annotations

import json
import logging
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
            for i, (t, tags) in enumerate([
                ("Buy milk", ["home"]), ("Call the bank", ["money"]), ("Renew passport", ["travel"]),
                ("Pay the plumber", ["home", "money"]), ("Book flights", ["travel"]),
            ])
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
        hits = [n for n in self.notes.values()
                if all(w in n["title"].lower() for w in words) and (not tags or set(tags) & set(n["tags"]))]
        return ToolResult.paginated(hits[(page - 1) * 10 : page * 10], page, len(hits), 10, f"Notes matching {query!r}")

    @tool("delete_note", "Delete a note", scopes=["notes:write"], mutating=True, confirm=True)
    async def delete_note(self, note_id: Annotated[int, Param("The note to delete")]) -> dict[str, Any]:
        note = self.notes.pop(note_id, None)
        if note is None:
            raise ToolError(f"There is no note {note_id}.", code="NOT_FOUND")
        return {"deleted": note_id, "title": note["title"]}

    @tool("send_payment", "Send a payment; a manager must approve it first", scopes=["payments:send"],
          mutating=True, verify=VerifyPolicy(approver_scopes=("payments:approve",), expires_in=3600))
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
    """The demo registry on a SQLite store (a temporary file unless ``store_path`` is given)."""
    from milpa_chat.store.sqlite import SqliteStore

    if store_path is None:
        store_path = Path(tempfile.mkdtemp(prefix="milpa-demo-")) / "milpa.db"
    registry = ToolRegistry(store=SqliteStore(str(store_path)))
    registry.scan(DemoTools())
    VerificationTool(registry.verifier, resolve_scopes=["payments:approve"]).register(registry)
    return registry


def tools() -> ToolRegistry:
    """Entry point for ``milpa-chat tools milpa_chat.demo:tools``."""
    return build_registry()


# ---------------------------------------------------------------------------- walk-through
Printer = Callable[[str], None]


def _render(result: ToolResult) -> str:
    from milpa_chat.renderers import CliRenderer

    return CliRenderer().render(result, ToolContext.cli())


def _show_audit(out: Printer) -> None:
    """Print the audit trail (logger ``milpa_chat.audit``) inline, so the last pipeline step is visible."""

    class Inline(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            out(f"  audit: {record.getMessage()}")

    logger = logging.getLogger("milpa_chat.audit")
    if not any(isinstance(h, Inline) for h in logger.handlers):
        logger.addHandler(Inline())
        logger.setLevel(logging.INFO)
        logger.propagate = False


async def run_demo(store_path: str | Path | None = None, out: Printer = print) -> int:
    """Walk through the pipeline: success, validation error, denial, confirm, verification. Returns 0."""
    registry = build_registry(store_path)
    _show_audit(out)
    alice = ToolContext.telegram(1001, 1001, ["notes:read", "notes:write", "payments:send"], first_name="Alice")
    guest = ToolContext.telegram(2002, 2002, ["notes:read"], first_name="Guest")
    boss = ToolContext.telegram(3003, 3003, ["payments:approve"], first_name="Manager")

    def step(title: str) -> None:
        out(f"\n=== {title} ===")

    async def show(who: str, name: str, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        out(f"> {who}: {name} {json.dumps(args, ensure_ascii=False)}")
        result = await registry.call(name, args, replace(ctx, request_id=new_request_id()))
        out(_render(result))
        return result

    store = registry.store
    out(f"milpa-chat demo — store: SQLite at {getattr(store, 'path', store)}")
    step("1. A read-only tool")
    await show("alice", "list_notes", {"page": 1}, alice)
    step("2. A validation error names the field")
    await show("alice", "search_notes", {"query": "bank", "page": "two"}, alice)
    step("3. A denial names the missing scope")
    await show("guest", "delete_note", {"note_id": 2}, guest)
    step("4. Confirm round trip (Telegram asks before a mutating tool runs)")
    asked = await show("alice", "delete_note", {"note_id": 2}, alice)
    token = asked.confirm_token
    out("  [Alice taps Confirm]")
    await show("alice", "delete_note", {"confirm_token": token}, alice)
    out("  [Alice taps Confirm again — the token was used once]")
    await show("alice", "delete_note", {"confirm_token": token}, alice)
    step("5. Verification round trip (a manager approves a payment)")
    opened = await show("alice", "send_payment", {"to": "ACME Plumbing", "amount": 120.5, "memo": "sink"}, alice)
    rid = opened.data["request_id"]
    out("  [Alice tries to approve her own payment]")
    await show("alice", "resolve_verification", {"request_id": rid, "decision": "grant"}, alice)
    out("  [The manager taps Approve]")
    await show("manager", "resolve_verification", {"request_id": rid, "decision": "grant"}, boss)
    out("  [The approved call runs with the approved arguments]")
    await show("alice", "send_payment", {"verification_id": rid}, alice)
    final = await registry.verifier.get(rid)
    out(f"  request {rid}: state={final.state if final else '?'} (stored in SQLite, survives restarts)")
    await store.close()
    return 0
