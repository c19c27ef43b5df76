"""Standing grants for the payment agent of :mod:`tests.agents.frameworks`: the agent's ``send_payment`` is the
operation ``send:payment`` (what it acts on: the payee's bank record), a grant over it holds while a strict payee
check measured that record green, and a fraud watcher gives signs of life. "Always allow…" on a payment's card
drafts such a grant (fixing the payee, leaving the amount free)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from milpa_chat.command import EffectProfile, Operation, RegistryProjector
from milpa_chat.command.levels import Authority, Externality, Mutation, Reversibility, Subject
from milpa_chat.grants import Condition, Falsifier, GrantDesk, GrantOffer, NamedCall, StandingGrant
from milpa_chat.runtime import ToolContext, ToolRegistry

#: The payees' bank records; a payment acts on its payee's record, so a check of one says nothing of another.
PAYEES: dict[str, str] = {
    "ACME": "ACME Ltd, IBAN DE89 3704 0044 0532 0130 00",
    "Globex": "Globex Corp, IBAN FR14 2004 1010 0505 0001 3M02 606",
}
PAYS = EffectProfile(
    Mutation.PERSISTENT,
    Externality.THIRD_PARTY,
    Reversibility.COMPENSATABLE,
    Authority.WRITE_AS_USER,
    subject=Subject.DATA,
)


def payee_record(arguments: Mapping[str, Any]) -> str | None:
    record = PAYEES.get(str(arguments.get("to")))
    return None if record is None else "sha256:" + hashlib.sha256(record.encode()).hexdigest()


def framework_runs_it(arguments: Mapping[str, Any]) -> str:
    raise AssertionError("an agent's tool is run by its framework, never by the operation's handler")


SEND = Operation(
    "send:payment",  # the tool the agent calls, send_payment, is this operation (any spelling names it)
    "Send a payment",
    framework_runs_it,
    mutating=True,
    effects=PAYS,
    acts_on=payee_record,
)
CHECK = Operation(
    "payee:check",
    "Check a payee's bank record against the register",
    lambda a: {"holds": str(a["to"]) in PAYEES},
    effects=EffectProfile.read_only(),
    acts_on=payee_record,
    input_schema={
        "type": "object",
        "properties": {"to": {"type": "string"}, "strict": {"type": "boolean"}},
        "required": ["to", "strict"],
    },
)
WATCH = Operation("fraud:watch", "Read the fraud reports", lambda a: {"reports": 0}, effects=EffectProfile.read_only())
CHECKED = Condition(
    "payee-checked",
    "the payee's bank record is the registered one",
    NamedCall("payee:check", {"strict": True}, free=("to",)),
)
WATCHED = Falsifier("no-fraud-report", "nobody reports the payee as a fraud", NamedCall("fraud:watch"), 86400)
OFFER = GrantOffer((CHECKED,), WATCHED, "ask the bank to recall the payment", fixed=("to",))


def install(registry: ToolRegistry) -> GrantDesk:
    """The payee check and the fraud watcher as tools, and the grants' desk that knows the payment's operation
    (with the offer "Always allow…" drafts from)."""
    RegistryProjector(registry).register(CHECK, WATCH)
    return GrantDesk(registry).know(CHECK, WATCH).know(SEND, offer=OFFER)


async def measured(registry: ToolRegistry, *payees: str) -> None:
    """Check ``payees`` strictly and read the fraud reports once (receipts and a sign of life)."""
    ops = ToolContext("ops", "cli", ())
    for payee in payees:
        checked = await registry.call("payee_check", {"to": payee, "strict": True}, ops)
        assert checked.success, checked.error
    watched = await registry.call("fraud_watch", {}, ops)
    assert watched.success, watched.error


def grant(seat: str, grant_id: str = "acme-payments", **changes: Any) -> StandingGrant:
    """A grant for ``seat``: payments to ACME, any amount, while ACME's record is checked and fraud watched."""
    parts: dict[str, Any] = {
        "id": grant_id,
        "to": (seat,),
        "operations": (NamedCall("send:payment", {"to": "ACME"}),),
        "ceiling": PAYS,
        "conditions": (CHECKED,),
        "falsifier": WATCHED,
        "undo": "ask the bank to recall the payment",
    }
    parts.update(changes)
    return StandingGrant(**parts)
