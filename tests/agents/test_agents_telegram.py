"""Kit approvals for agents of three frameworks (pydantic-ai, the OpenAI Agents SDK, LangGraph), in Telegram through
the real python-telegram-bot against the local Bot API server: a person writes, the framework's model proposes a
payment, the card appears, people tap, and the tool runs once with exactly the approved arguments (or the
framework gets its own denial with the reason); the chat shows the card, then the result."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from milpa_chat import ToolRegistry
from milpa_chat.agents import ApprovalHost
from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.runtime.approval import ApprovalRefused, digest
from milpa_chat.runtime.definition import VerifyPolicy
from milpa_chat.runtime.trail import AuditTrail
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer, ManualClock, TelegramMessage, TelegramUser

from .frameworks import APPROVERS, FRAMEWORKS, IDENTITIES, MANAGERS, Ledger

ALICE = TelegramUser(1001, "Alice", "alice")
MARIA = TelegramUser(2001, "Maria", "maria")
MATEO = TelegramUser(2002, "Mateo", "mateo")
WAIT = 15.0
pytestmark = pytest.mark.parametrize("framework", sorted(FRAMEWORKS))


@dataclass
class Chat:
    tg: BotApiServer
    host: ApprovalHost
    ledger: Ledger
    clock: ManualClock
    driver: Any
    trail: AuditTrail

    async def ask(self, text: str = "please pay ACME 120 EUR", *, where: int = APPROVERS) -> TelegramMessage:
        """Alice asks the agent; returns the approval card shown ``where`` (the approvers' group by default)."""
        sent = await self.tg.send_message(ALICE.id, ALICE, text)
        card = await self.tg.wait_for_message(where, since=sent, timeout=WAIT)
        for _ in range(500):  # people decide once the cards are out (the record knows every copy)
            approvals = await self.host.desk.listing()
            if approvals and all(c.get("message_id") for c in approvals[0].data["cards"]):
                return card
            await asyncio.sleep(0.01)
        raise TimeoutError("the approval's cards were not recorded as sent")

    async def tap(self, card: TelegramMessage, word: str, user: TelegramUser) -> str:
        now = self.tg.message(card.chat.id, card.message_id)
        label = next(b for b in now.button_labels if word.lower() in b.lower())
        update = await self.tg.tap_button(card, label, user)
        query = self.tg.callback_query(update)
        await self.tg.wait_until(lambda: query.answered, WAIT, what="the tap's answer")
        return query.answer_text or ""

    def card_text(self, card: TelegramMessage) -> str:
        return self.tg.message(card.chat.id, card.message_id).text or ""

    def alice_says(self) -> list[str]:
        return [m.text or "" for m in self.tg.messages(ALICE.id)]

    async def alice_told(self, words: str) -> None:
        await self.tg.wait_until(lambda: any(words in t for t in self.alice_says()), WAIT, what=f"{words!r} to Alice")

    async def only_approval(self) -> Any:
        (approval,) = await self.host.desk.listing()
        return approval


@asynccontextmanager
async def chat(framework: str, tmp_path: Path, verify: VerifyPolicy | None = MANAGERS) -> AsyncIterator[Chat]:
    clock = ManualClock()
    registry = ToolRegistry(store=MemoryStore(clock=clock))
    trail = AuditTrail(registry.store).attach(registry)
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES), edits=True)
    host, ledger, driver = ApprovalHost(assistant, poll=0.02), Ledger(), FRAMEWORKS[framework]()
    async with AsyncExitStack() as stack:
        _, assistant.agent = await driver.build(host, ledger, verify, stack, tmp_path)
        tg = await stack.enter_async_context(BotApiServer())
        tg.group(APPROVERS, "Approvers", members=[MARIA, MATEO])
        bot = TelegramBot(assistant, tg.token, tg.base_url, sweep_interval=None)
        await bot.start(poll_timeout=1)
        try:
            yield Chat(tg, host, ledger, clock, driver, trail)
        finally:
            for task in list(host._tasks):
                task.cancel()
            await bot.stop()


async def test_the_person_confirms_and_the_tool_runs_once_with_the_approved_arguments(
    framework: str, tmp_path: Path
) -> None:
    async with chat(framework, tmp_path, verify=None) as c:
        card = await c.ask(where=ALICE.id)
        assert "Confirm: send_payment" in (card.text or "") and "ACME" in (card.text or "")
        approval = await c.only_approval()
        assert approval.data["requester"]["principal"] == "telegram:1001" and c.ledger.paid == []
        assert "Confirmed" in await c.tap(card, "Confirm", ALICE)
        await c.alice_told("Paid 120.00 EUR to ACME.")
        await c.alice_told("Done")
        done = await c.host.desk.get(approval.id)
        assert done is not None and done.state == "executed"
        assert c.ledger.paid == [("ACME", 120.0, approval.id)]  # once; the approval id is the idempotency key
        # what ran is what the card showed: the digest on the card is the digest of the arguments run
        assert done.data["digest"] == approval.data["digest"] == digest(done.args)
        assert c.ledger.paid[0][:2] == (done.args["to"], float(done.args["amount"]))
        # the card, then the tool's result, then the agent's answer
        await c.tg.wait_until(lambda: any((m.text or "").startswith("Done") for m in c.tg.messages(ALICE.id)), WAIT)
        said = [m.versions[0].text or "" for m in c.tg.messages(ALICE.id)]
        assert "Confirm: send_payment" in said[0] and "Paid 120.00" in said[1] and said[-1].startswith("Done"), said


async def test_an_approver_approves_and_four_eyes_keeps_the_requester_out(framework: str, tmp_path: Path) -> None:
    async with chat(framework, tmp_path) as c:
        card = await c.ask()
        assert "send_payment" in (card.text or "")
        assert "cannot approve" in await c.tap(card, "Approve", ALICE)  # she may not approve (her own) request
        assert c.ledger.paid == []
        await c.tap(card, "Approve", MARIA)
        await c.alice_told("Paid 120.00 EUR to ACME.")
        await c.tg.wait_until(lambda: "Paid 120.00" in c.card_text(card), WAIT)
        done = await c.only_approval()
        assert done.state == "executed" and done.data["decided_by"] == "telegram:2001"
        assert [p[:2] for p in c.ledger.paid] == [("ACME", 120.0)]


async def test_a_rejection_with_a_reason_reaches_the_framework_as_its_denial(framework: str, tmp_path: Path) -> None:
    async with chat(framework, tmp_path) as c:
        card = await c.ask()
        approval = await c.only_approval()
        typed = await c.tg.send_message(
            APPROVERS, MARIA, f'/resolve_verification {approval.id} reject "over the monthly budget"'
        )
        await c.tg.wait_for_message(APPROVERS, since=typed, timeout=WAIT)
        await c.alice_told("rejected by Maria (over the monthly budget)")
        await c.tg.wait_until(lambda: "Rejected" in c.card_text(card), WAIT)
        assert not c.tg.message(card.chat.id, card.message_id).button_labels
        assert c.ledger.paid == []
        await c.tg.wait_until(
            lambda: any("Rejected by Maria: over the monthly budget." in s for s in c.driver.seen),
            WAIT,
            what="the framework's denial with the reason",
        )


async def test_an_approver_edits_the_amount_and_another_approves_the_edited_call(
    framework: str, tmp_path: Path
) -> None:
    async with chat(framework, tmp_path) as c:
        card = await c.ask()
        tapped = await c.tg.tap_button(card, next(b for b in card.button_labels if "Edit" in b), MARIA)
        chooser = await c.tg.wait_for_message(APPROVERS, since=tapped, timeout=WAIT)
        chosen = await c.tg.tap_button(chooser, next(b for b in chooser.button_labels if "amount" in b.lower()), MARIA)
        prompt = await c.tg.wait_for_message(APPROVERS, since=chosen, timeout=WAIT)
        bad = await c.tg.send_message(APPROVERS, MARIA, "plenty", reply_to=prompt)
        assert "not valid" in ((await c.tg.wait_for_message(APPROVERS, since=bad, timeout=WAIT)).text or "")
        good = await c.tg.send_message(APPROVERS, MARIA, "80", reply_to=prompt)
        await c.tg.wait_for_message(APPROVERS, since=good, timeout=WAIT)
        await c.tg.wait_until(lambda: "→ 80" in c.card_text(card), WAIT, what="the edited card")
        assert "You edited this version" in await c.tap(card, "Approve", MARIA)
        await c.tap(card, "Approve", MATEO)
        await c.alice_told("Paid 80.00 EUR to ACME.")
        done = await c.only_approval()
        assert [p[:2] for p in c.ledger.paid] == [("ACME", 80.0)]
        assert done.args == {"to": "ACME", "amount": 80.0} and done.revision == 1
        assert done.data["digest"] == digest(done.args) != digest({"to": "ACME", "amount": 120})
        # the trail: the card showed the edited digest, and the run started with that digest and the approval id as key
        story = await c.trail.story(done.id)
        started = [e.fields for e in story if e.kind == "started"]
        assert [(f["args_digest"], f["key"]) for f in started] == [(done.data["digest"], done.id)]
        assert done.data["digest"] in {e.fields["args_digest"] for e in story if e.kind == "shown"}
        assert (await c.trail.verify()).ok


async def test_a_quorum_of_two_runs_the_call_after_the_second_approval(framework: str, tmp_path: Path) -> None:
    async with chat(framework, tmp_path, verify=VerifyPolicy(approver_scopes=("payments:approve",), quorum=2)) as c:
        card = await c.ask()
        assert "1 of 2" in await c.tap(card, "Approve", MARIA)
        await asyncio.sleep(0.2)
        assert c.ledger.paid == []
        await c.tap(card, "Approve", MATEO)
        await c.alice_told("Paid 120.00 EUR to ACME.")
        done = await c.only_approval()
        assert len(c.ledger.paid) == 1 and [v["principal"] for v in done.votes] == ["telegram:2001", "telegram:2002"]


async def test_an_expired_request_runs_nothing_and_the_framework_is_told(framework: str, tmp_path: Path) -> None:
    async with chat(
        framework, tmp_path, verify=VerifyPolicy(approver_scopes=("payments:approve",), expires_in=60)
    ) as c:
        card = await c.ask()
        c.clock.advance(61)
        await c.tg.wait_until(lambda: "Expired" in c.card_text(card), WAIT, what="the expired card")
        await c.tg.wait_until(lambda: any("expired" in s for s in c.driver.seen), WAIT, what="the denial")
        assert not c.tg.message(card.chat.id, card.message_id).button_labels
        assert c.ledger.paid == [] and (await c.only_approval()).state == "expired"
        assert any("expired" in s for s in c.driver.seen), c.driver.seen


async def test_twenty_concurrent_taps_run_the_call_once(framework: str, tmp_path: Path) -> None:
    async with chat(framework, tmp_path) as c:
        card = await c.ask()
        label = next(b for b in card.button_labels if "Approve" in b)
        updates = await asyncio.gather(*(c.tg.tap_button(card, label, MARIA if i % 2 else MATEO) for i in range(20)))
        await c.tg.wait_until(lambda: all(c.tg.callback_query(u).answered for u in updates), WAIT)
        await c.alice_told("Paid 120.00 EUR to ACME.")
        await asyncio.sleep(0.3)
        print(f"\n{framework}: 20 concurrent taps on Approve -> {len(c.ledger.paid)} run(s)")
        assert len(c.ledger.paid) == 1


async def test_the_frameworks_model_cannot_decide_its_own_approval(framework: str, tmp_path: Path) -> None:
    async with chat(framework, tmp_path) as c:
        card = await c.ask()
        approval = await c.only_approval()
        model_ctx = approval.requester_context().as_model()
        manager_model = c.host.assistant.identities.context_for(
            "telegram", _user(MARIA), str(APPROVERS)
        ).as_model()  # even an approver's own model
        refused = 0
        for ctx, decision in ((model_ctx, "approve"), (manager_model, "approve"), (model_ctx, "cancel")):
            with pytest.raises(ApprovalRefused, match="A model cannot"):
                await c.host.desk.decide(approval.id, decision, ctx)
            refused += 1
        tool = await c.host.registry.call(
            "resolve_verification", {"request_id": approval.id, "decision": "grant"}, manager_model
        )
        refused += not tool.success
        print(f"\n{framework}: {refused} model attempts to decide -> 0 lifted")
        assert refused == 4 and (await c.only_approval()).state == "pending" and c.ledger.paid == []
        await c.tap(card, "Approve", MARIA)  # the person's tap still decides
        await c.alice_told("Paid 120.00 EUR to ACME.")


def _user(user: TelegramUser) -> Any:
    from milpa_chat.chat.inbound import ChatUser

    return ChatUser(str(user.id), user.first_name, user.username)
