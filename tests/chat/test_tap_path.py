"""How far one Approve tap travels: the functions and files of the kit it crosses, counted with cProfile.

A figure for the house's shape (printed, not asserted: it moves with every change), beside the behaviour it
measures (the tap approves and the payment runs once)."""

from __future__ import annotations

import cProfile
import pstats
from pathlib import Path

from milpa_chat import ToolRegistry, VerifyPolicy, tool
from milpa_chat.chat import Assistant, ChatUser, Identities
from milpa_chat.store import MemoryStore
from milpa_chat.testing import RecordingTransport

PACKAGE = str(Path(__file__).resolve().parents[2] / "milpa_chat")
ALICE, MARIA = ChatUser("1001", "Alice"), ChatUser("2001", "Maria")


class Payments:
    def __init__(self) -> None:
        self.sent: list[float] = []

    @tool("pay", "Pay", scopes=["pay:send"], mutating=True, verify=VerifyPolicy(approver_scopes=("pay:approve",)))
    async def pay(self, amount: float) -> str:
        self.sent.append(amount)
        return f"paid {amount}"


def crossed(profile: cProfile.Profile) -> tuple[int, int]:
    """(functions, files) of the package that ran while ``profile`` was on."""
    stats = pstats.Stats(profile)
    ours = [key for key in stats.stats if key[0].startswith(PACKAGE)]  # type: ignore[attr-defined]
    return len(ours), len({key[0] for key in ours})


async def test_one_approve_tap_and_the_functions_it_crosses() -> None:
    payments = Payments()
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(payments)
    identities = Identities(
        users={"telegram:1001": ["pay:send"], "telegram:2001": ["pay:approve"]}, approvers={"telegram": ["-500"]}
    )
    assistant = Assistant(registry, identities)
    telegram = RecordingTransport("telegram")
    assistant.attach(telegram)
    await telegram.say(assistant, ALICE, "/pay 12")
    card = telegram.last("-500")
    profile = cProfile.Profile()
    profile.enable()
    await telegram.tap(assistant, MARIA, card, "Approve")
    profile.disable()
    functions, files = crossed(profile)
    print(f"\none Approve tap (decide, claim, run, record, edit the cards): {functions} functions in {files} files")
    assert payments.sent == [12.0]
    assert functions > 0 and files > 0


async def test_every_copy_of_a_decided_card_says_the_same_and_only_live_cards_differ_by_role() -> None:
    """Maria's Approve edits the requester's copy and the approvers' copy to the same outcome, without buttons;
    a pending card still offers each role its own buttons, whichever copy was drawn before it."""
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(Payments())
    identities = Identities(
        users={"telegram:1001": ["pay:send"], "telegram:2001": ["pay:approve"]}, approvers={"telegram": ["-500"]}
    )
    assistant = Assistant(registry, identities)
    telegram = RecordingTransport("telegram")
    assistant.attach(telegram)
    await telegram.say(assistant, ALICE, "/pay 12")
    (pending,) = await assistant.approvals.listing()
    roles = ("approver", "requester", "viewer", "approver")  # each drawn after another role's copy
    labels = [[b.label for b in assistant.outbox.card(pending, role).buttons] for role in roles]
    assert labels == [["✅ Approve", "⛔ Reject"], ["↩ Withdraw"], [], ["✅ Approve", "⛔ Reject"]]

    await telegram.tap(assistant, MARIA, telegram.last("-500"), "Approve")
    requester_copy, approver_copy = telegram.messages[ALICE.id][0], telegram.last("-500")
    assert requester_copy.message == approver_copy.message
    assert "Done: pay" in approver_copy.text and "Approved by Maria" in approver_copy.text
    assert approver_copy.buttons == ()
