"""A standing grant lends a proxied call: the upstream's destructive tool runs without a card for the content a
read-only upstream tool measured safe, and asks the approvers again for any other content."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from mcp.types import RequestParamsMeta

from milpa_chat.command import EffectProfile
from milpa_chat.command.grants import Condition, Falsifier, NamedCall, StandingGrant
from milpa_chat.runtime import ToolContext
from milpa_chat.standing import GrantDesk
from tests.mcp.proxy_rig import APPROVERS, CALLER, GATED, WAIT, client, rig
from tests.mcp.support import wire

DELETE: dict[str, Any] = {
    "mutation": "persistent",
    "externality": "none",
    "reversibility": "compensatable",
    "authority": "write_as_user",
    "subject": "data",
}
TOOLS = {
    "delete_note": {**GATED, "acts_on": "name", "effects": DELETE},
    "check_note": {"acts_on": "name"},  # answers {"holds": true}: a measurement on the note it names
    "read_note": {"acts_on": "name"},  # a read: the falsifier's sign of life
}
GRANT = StandingGrant(
    id="delete-checked-notes",
    to=(CALLER.principal,),
    operations=(NamedCall("notes:delete_note"),),
    ceiling=EffectProfile(**DELETE),
    undo="restore the note from the nightly backup",
    conditions=(
        Condition("checked", "the note was checked safe to delete", NamedCall("notes:check_note", free=("name",))),
    ),
    falsifier=Falsifier(
        "no-complaint", "nobody misses a deleted note", NamedCall("notes:read_note", free=("name",)), 86400
    ),
)
MARIA = ToolContext("telegram:2001", "telegram", ("grants:sign",), extra={"user_name": "Maria"})
MATEO = ToolContext("telegram:2002", "telegram", ("grants:sign",), extra={"user_name": "Mateo"})


async def test_a_standing_grant_lets_the_next_matching_call_through_without_a_card(tmp_path: Path) -> None:
    async with rig(tmp_path, "stdio", grants=True, tools=TOOLS) as r, client(r.url) as session:
        desk = r.proxy.registry.grants
        assert isinstance(desk, GrantDesk)
        _, approval = await desk.draft(GRANT, MARIA, via="telegram")
        signed, _ = await desk.decide(approval.id, "approve", MATEO, via="telegram")
        assert signed is not None and signed.state == "in_force"

        assert wire(await session.call_tool("notes_check_note", {"name": "garden"}))["isError"] is False
        assert wire(await session.call_tool("notes_read_note", {"name": "garden"}))["isError"] is False
        lent = wire(await session.call_tool("notes_delete_note", {"name": "garden"}))
        assert lent["isError"] is False and lent["structuredContent"] == {"deleted": "garden"}
        assert not [m for m in r.api.messages(APPROVERS) if "notes_delete_note" in (m.text or "")]  # lent: no card
        assert [c["arguments"] for c in r.calls("delete_note")] == [{"name": "garden"}]

        asked = wire(
            await session.call_tool(
                "notes_delete_note", {"name": "family"}, meta=cast(RequestParamsMeta, {"milpa-chat/wait_seconds": 0})
            )
        )
        assert asked["structuredContent"]["approval"]["state"] == "pending"  # never measured: approvers decide
        await r.api.wait_until(
            lambda: any(
                "notes_delete_note" in (m.text or "") and "family" in (m.text or "") for m in r.api.messages(APPROVERS)
            ),
            WAIT,
            what="the family note's card",
        )
        assert [c["arguments"] for c in r.calls("delete_note")] == [{"name": "garden"}]
