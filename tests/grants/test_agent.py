"""Policy integrity: an agent that tries to grant itself more gets nothing lent.

The model is scripted (the local OpenAI-compatible server) and speaks for a user who holds every scope
that matters — publish, approve, sign grants. It asks in free text, opens a look-alike request, puts a
grant's whole text into a tool's arguments, and calls ``resolve_verification`` on a real signature a
colleague is waiting for. No grant is signed, none is lent, and its publish call gets a card.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from milpa_chat.chat import Assistant, ChatUser, Identities
from milpa_chat.gateway import ChatAgent, LlmService
from milpa_chat.runtime.verification_tool import VerificationTool
from milpa_chat.store import MemoryStore
from milpa_chat.testing.llm import FakeOpenAIServer
from milpa_chat.testing.transport import RecordingTransport
from tests.grants.house import APPROVER, PUBLISHED, grant, house

ALICE = ChatUser("1001", "Alice", "alice")
BRUNO = ChatUser("2001", "Bruno", "bruno")
IDENTITIES = {
    "roles": {"all": ["release:publish", "release:approve", "grants:sign", "notes:write"]},
    "users": {"telegram:1001": ["all"], "telegram:2001": ["all"]},
    "approvers": {"telegram": ["-500"]},
}


def tool_results(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["tool_call_id"]: json.loads(m["content"]) for m in body["messages"] if m.get("role") == "tool"}


@pytest.fixture
async def oa() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as fake:
        yield fake


async def test_an_agent_that_tries_to_grant_itself_more_gets_nothing_lent(oa: FakeOpenAIServer) -> None:
    registry, desk = house(MemoryStore())
    VerificationTool(registry.verifier, approver_scopes=("grants:sign",)).register(registry)
    notes: list[str] = []

    def save(args, ctx):
        notes.append(args["text"])
        return "saved"

    registry.register(
        "save_note",
        "Save a note",
        {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        save,
        mutating=False,
        scopes=("notes:write",),
    )
    seat = "telegram:1001"
    document = grant(to=(seat,))
    _, signature = await desk.draft(document, APPROVER, via="slack")  # a colleague's draft, waiting for a signer
    scanned = await registry.call(
        "release_scan",
        {"archive": "clean.tgz", "strict": True},
        APPROVER.__class__(seat, "telegram", ("release:publish",)),
    )
    assert scanned.success
    await registry.call("reports_watch", {}, APPROVER)

    async with LlmService(model="gpt-test", api_key=oa.api_key, base_url=oa.base_url, max_retries=0, timeout=5) as llm:
        assistant = Assistant(registry, Identities.from_dict(IDENTITIES), agent=ChatAgent(llm, hidden=()))
        tg = RecordingTransport("telegram")
        assistant.attach(tg)
        text = document.to_json()
        (
            oa.reply_tool_call("save_note", {"text": text}, id="note")
            .reply_tool_call(
                "resolve_verification",
                {"request_id": signature.id, "decision": "grant", "reason": "the user asked me to"},
                id="sign",
            )
            .reply_tool_call("request_verification", {"subject": "standing:sign", "reason": text}, id="ask")
            .reply_tool_call("request_verification", {"subject": "release-stable", "reason": text}, id="alike")
            .reply_tool_call("release_publish", {"archive": "clean.tgz", "channel": "stable"}, id="pub")
        )
        await tg.say(
            assistant,
            ALICE,
            f"Always allow my releases to stable, sign the grant for me and publish clean.tgz. Here it is: {text}",
        )
        told = tool_results(oa.bodies[-1])
        assert "only a person decides it" in told["sign"]["error"]  # a model decides nothing, grants included
        assert "only a person asks for" in told["ask"]["error"]
        assert notes == [text]  # grant-shaped text in an argument is only text

        # a person approves the look-alike request the agent opened: it is no grant's change
        await tg.tap(assistant, BRUNO, tg.last("-500"), "Approve")
        assert tool_results(oa.bodies[-1])["alike"]["decision"] == "approved"

    record = await desk.get(document.id)
    assert record is not None and record.state == "draft" and record.uses == 0
    assert (await registry.approvals.get(signature.id)).state == "pending"  # type: ignore[union-attr]
    assert [r.id for r in await desk.listing() if r.judged] == []
    assert PUBLISHED == []
    [card] = [a for a in await registry.approvals.listing(state="pending") if a.tool == "release_publish"]
    assert card.requester_principal == seat  # the publish call waits for a person, as before
