"""The one durable ``Approval``: the record, its states and its effects, as data.

One record per call a human must decide. It is at once the confirm token (its id *is* the token),
the verification request and what every card on every surface shows. This module holds
the record's shape and the pure rules over it; :mod:`milpa_chat.runtime.approvals` holds the desk
that stores it and the one decision function.

States::

    pending -> approved | rejected | cancelled | expired
    approved -> executing -> executed | failed | effect_uncertain
    effect_uncertain -> approved (Run again) | executed (Mark as done)

Effects are *derived* from the record, never queued beside it: a card whose ``shown`` key differs
from the record's :func:`card_key` needs an edit (or its first send), a report is owed when the
state is one the requester is told about and was not told yet, an agent run waits for ``resume``.
So every transition records its effects in the same write, and a card always renders from the
record's current state.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import TYPE_CHECKING, Any, Literal

from milpa_chat.errors import MilpaError

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.result import ToolResult

__all__ = [
    "COLLECTION",
    "FINAL",
    "Approval",
    "ApprovalKind",
    "ApprovalRefused",
    "ApprovalState",
    "active_failure",
    "card_edits",
    "card_key",
    "digest",
    "due_of",
    "effect_key",
    "pending_effects",
    "state_message",
]

COLLECTION = "approvals"
ApprovalKind = Literal["confirm", "verification"]
ApprovalState = Literal[
    "pending", "approved", "rejected", "cancelled", "expired", "executing", "executed", "failed", "effect_uncertain"
]
#: States nothing moves out of.
FINAL = frozenset({"rejected", "cancelled", "expired", "executed", "failed"})
#: States the requester is told about in their chat (besides what the card itself shows).
REPORTED = frozenset({"executed", "failed", "rejected", "expired", "effect_uncertain"})
#: Attempts at one effect (a card edit, a report) before it is given up and the requester is told.
MAX_ATTEMPTS = 6
#: Stored results larger than this (as JSON) keep their message and lose their data.
MAX_RESULT_CHARS = 64_000


class ApprovalRefused(MilpaError):
    """A decision, replay or run that is not allowed; the message says why, for the person who asked."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "FORBIDDEN",
        approval: Approval | None = None,
        errors: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        #: The approval as it was when the decision was refused, when there is one.
        self.approval = approval
        #: An edit whose arguments did not validate: what is wrong with each field (``""``: the whole object).
        self.errors: dict[str, str] = dict(errors or {})


def digest(args: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the arguments (sorted keys): what exactly was approved."""
    text = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class Approval:
    """A stored approval, read-only. ``data`` holds every field; ``version`` is the store version (CAS)."""

    id: str
    data: dict[str, Any]
    version: int
    due: float | None = None
    #: :func:`pending_effects` of ``data``, when the desk computed them for the write that made this record.
    _effects: tuple[str, ...] | None = field(default=None, init=False, compare=False, repr=False)
    #: ``data``'s JSON per top-level field (:func:`~milpa_chat.store.base.encode_parts`), when this process
    #: wrote it: the next write re-encodes only the fields it changes.
    _parts: dict[str, str] | None = field(default=None, init=False, compare=False, repr=False)

    # a verification request reads its fields as attributes (req.decided_by, req.subject, ...)
    def __getattr__(self, name: str) -> Any:
        try:
            return self.data[name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def value(self) -> dict[str, Any]:
        """Every field, with ``id`` (the shape of a verification request)."""
        return {"id": self.id, **self.data}

    @property
    def kind(self) -> ApprovalKind:
        return self.data["kind"]  # type: ignore[no-any-return]

    @property
    def state(self) -> ApprovalState:
        return self.data["state"]  # type: ignore[no-any-return]

    @property
    def tool(self) -> str | None:
        tool = self.data.get("tool")
        return None if tool is None else str(tool)

    @property
    def label(self) -> str:
        """What the card names: the tool, or the subject of a request that runs no tool."""
        return self.tool or str(self.data.get("subject") or self.id)

    @property
    def args(self) -> dict[str, Any]:
        return dict(self.data["args"])

    @property
    def requester_principal(self) -> str:
        return str(self.data["requester"]["principal"])

    @property
    def requester_name(self) -> str:
        return str(self.data["requester"].get("name") or self.data["requester"]["principal"])

    @property
    def expires_at(self) -> float:
        return float(self.data["expires_at"])

    @property
    def expires_at_iso(self) -> str | None:
        return _iso(self.data.get("expires_at"))

    @property
    def quorum(self) -> int:
        return int(self.data["policy"]["quorum"])

    @property
    def votes(self) -> list[dict[str, Any]]:
        return list(self.data.get("votes", []))

    @property
    def revision(self) -> int:
        """How many times the arguments were edited (0: as asked); a card shows the revision it was drawn at."""
        return int(self.data.get("revision", 0))

    @property
    def revisions(self) -> list[dict[str, Any]]:
        """Every edit, oldest first: ``revision``, ``by``, ``by_name``, ``at``, ``via``, ``digest`` and
        ``changes`` (``{field: [old, new]}``; a field missing on one side is ``None`` there)."""
        return list(self.data.get("revisions", []))

    @property
    def attempt(self) -> int:
        return int(self.data.get("attempt", 0))

    @property
    def route(self) -> dict[str, str] | None:
        """Where the requester is told about results and decisions (``{surface, chat_id}``), if anywhere."""
        route = self.data.get("route")
        return dict(route) if route else None

    def requester_context(self) -> ToolContext:
        """The requester's context as it was when they asked (for runs no chat layer rebuilds)."""
        from milpa_chat.runtime.context import ToolContext

        r = self.data["requester"]
        return ToolContext(
            principal=r["principal"],
            channel=r.get("channel", "unknown"),
            scopes=tuple(r.get("scopes", ())),
            extra=dict(r.get("extra", {})),
        )

    def effects(self) -> list[str]:
        """What is still to be delivered for the current state (see :func:`pending_effects`)."""
        return pending_effects(self.data) if self._effects is None else list(self._effects)

    def to_dict(self) -> dict[str, Any]:
        return self.value


def as_written(
    id: str, data: dict[str, Any], version: int, due: float | None, effects: list[str], parts: dict[str, str]
) -> Approval:
    """The record a write of this process just stored: with its ``effects`` (:func:`pending_effects`) and its
    JSON ``parts`` (:func:`~milpa_chat.store.base.encode_parts`), both made for that write (a copy made with
    ``dataclasses.replace`` has neither)."""
    approval = Approval(id, data, version, due)
    object.__setattr__(approval, "_effects", tuple(effects))
    object.__setattr__(approval, "_parts", parts)
    return approval


def card_key(v: Mapping[str, Any]) -> str:
    """What a card shows, as a key: a card whose ``shown`` differs needs an edit."""
    key = f"{v['state']}:{len(v.get('votes', []))}:{v.get('attempt', 0)}"
    noted = v.get("noted")
    if noted:  # a reassignment, a question, an answer or a comment shows on every copy
        key = f"{key}:n{noted}"
    revision = v.get("revision")
    return f"{key}:r{revision}" if revision else key


def report_key(v: Mapping[str, Any]) -> str | None:
    """The report owed for the current state, or ``None`` when this state is not reported."""
    state = v["state"]
    if state in REPORTED or (state == "approved" and v.get("tool") is None):
        return f"{state}:{v.get('attempt', 0)}"
    return None


def pending_effects(v: Mapping[str, Any]) -> list[str]:
    """``card:<i>`` for each card to send or edit, ``report``, ``trouble`` and ``resume``, in delivery order."""
    key = card_key(v)
    out = [f"card:{i}" for i, card in enumerate(v.get("cards", [])) if card.get("shown") != key]
    if v.get("route"):
        report = report_key(v)
        # an item of a batch is reported on the batch's card (milpa_chat.runtime.batches), not one by one
        if report is not None and v.get("reported") != report and not v.get("batch"):
            out.append("report")
        if v.get("troubles"):
            out.append("trouble")
        notices = v.get("notices")
        if notices and len(notices) > int(v.get("told", 0)):  # (``told`` counts notices: never below 0)
            out.append("notice")
    if v.get("resume") and not v.get("resumed"):
        state = v["state"]
        if state in FINAL or (state == "approved" and v.get("tool") is None):  # settled
            out.append("resume")
    return out


def effect_key(v: Mapping[str, Any], effect: str) -> str | None:
    """What delivering ``effect`` now would show (a card key, a report key)."""
    if effect.startswith("card:"):
        return card_key(v)
    if effect == "report":
        return report_key(v)
    if effect == "notice":
        return str(len(v.get("notices", [])))
    return None


def active_failure(v: Mapping[str, Any], effect: str) -> Mapping[str, Any] | None:
    """The failure still holding ``effect`` back: one recorded for what it would show now. Once the
    record moves on (a decision after a failed send), the effect is tried again at once."""
    failure = v.get("failures", {}).get(effect)
    if failure is None or failure.get("for") != effect_key(v, effect):
        return None
    return failure  # type: ignore[no-any-return]


def due_of(v: Mapping[str, Any], now: float, effects: list[str] | None = None) -> float | None:
    """When a worker must next look at this record: expiry, lease end, a run to start, an effect to deliver.
    ``effects``: :func:`pending_effects` of ``v``, when the caller has them."""
    times: list[float] = []
    state = v["state"]
    if state == "pending":
        times.append(float(v["expires_at"]))
        policy = v.get("policy", {})
        remind_at = policy.get("remind_at", [])
        if int(v.get("reminded", 0)) < len(remind_at):
            times.append(float(remind_at[int(v.get("reminded", 0))]))
        if policy.get("escalate_at") is not None and not v.get("escalated"):
            times.append(float(policy["escalate_at"]))
    elif state == "executing" and v.get("lease"):
        times.append(float(v["lease"]["until"]))
    elif state == "approved" and v.get("auto_run") and v.get("tool") is not None:
        times.append(float(v.get("deliver_at") or now))
    failing = bool(v.get("failures"))  # (no failure held: no effect's to look up)
    for effect in pending_effects(v) if effects is None else effects:
        failure = active_failure(v, effect) if failing else None
        times.append(float(failure["next_at"]) if failure else float(v.get("deliver_at") or now))
    return min(times) if times else None


def effects_due(v: Mapping[str, Any], now: float) -> bool:
    """Whether some effect may be delivered now (past its hand-off time, and any retry time)."""
    for effect in pending_effects(v):
        failure = active_failure(v, effect)
        at = float(failure["next_at"]) if failure else float(v.get("deliver_at") or 0)
        if at <= now:
            return True
    return False


def card_edits(v: Mapping[str, Any], effect: str) -> int:
    """How many deliveries of the card ``effect`` (``card:<i>``) were recorded (0 for any other effect)."""
    if not effect.startswith("card:"):
        return 0
    cards = v.get("cards", [])
    i = int(effect.partition(":")[2])
    return int(cards[i].get("edits", 0)) if i < len(cards) else 0


def unsent_cards(cards: Any) -> bool:
    """Whether some card of ``cards`` (a record's ``cards``) is not sent yet nor held by a sender."""
    return bool(cards) and any(not card.get("message_id") and "sending" not in card for card in cards)


def hold_new_cards(v: dict[str, Any], holder: str, until: float) -> None:
    """Stamp each card not sent yet (no message id, no sender) with who sends it and until when: another
    worker sends it only once that time has passed or that process is dead (a decision landing while it
    is in flight must not send a second copy)."""
    for card in v.get("cards", []):
        if not card.get("message_id") and "sending" not in card:
            card["sending"] = {"by": holder, "until": until}


def mark_delivered(
    v: dict[str, Any], effect: str, key: str | None, message_id: str | None = None, *, raced: bool = False
) -> None:
    """Record in ``v`` that ``effect`` was delivered showing ``key`` (a card also gets its message id).

    ``raced``: another delivery of the same card was recorded since the snapshot this one rendered, so
    which of the two edits the platform applied last is unknown; the card is left owing an edit (the
    next delivery renders the record as it is then)."""
    if effect.startswith("card:"):
        card = v["cards"][int(effect.partition(":")[2])]
        if message_id:
            card["message_id"] = message_id
            card.pop("sending", None)
        card["edits"] = int(card.get("edits", 0)) + 1
        card["shown"] = None if raced else key
    elif effect == "report":
        v["reported"] = key
    elif effect == "trouble":
        v["troubles"] = []
    elif effect == "notice":
        v["told"] = int(key or len(v.get("notices", [])))
    elif effect == "resume":
        v["resumed"] = True


def _measure() -> Callable[[Any, int], Any]:
    """``json.dumps``' own encoder with ``default=str`` (a fresh one: an error leaves its table of containers
    being encoded behind); the pure-Python one where the C one is missing."""
    if c_make_encoder is None:  # pragma: no cover - CPython always has it
        return lambda o, _: (json.dumps(o, default=str),)
    return c_make_encoder(  # type: ignore[no-any-return]
        {}, str, encode_basestring_ascii, None, ": ", ", ", False, False, True
    )


def outcome_text(result: ToolResult) -> str:
    """One line for the card: the result's message, or what failed."""
    text = (result.message or "Done.") if result.success else f"Failed: {result.error}"
    return text[:500]


def result_record(result: ToolResult) -> dict[str, Any]:
    """The result as stored (for the report and a resumed agent); huge data is left out, never cut mid-value."""
    data = result.to_dict()
    try:  # json.dumps(data, default=str), without building an encoder object around the C one
        small = len("".join(_measure()(data, 0))) <= MAX_RESULT_CHARS
    except (TypeError, ValueError):
        small = False
    if small:
        return data
    return {**data, "data": None, "meta": {**data.get("meta", {}), "data_omitted": True}}


def state_message(a: Approval) -> str:
    """Why an approval in its current state cannot be decided (again)."""
    v = a.data
    who = f" by {v.get('decided_by_name') or v['decided_by']}" if v.get("decided_by") else ""
    when = f" at {_iso(v.get('decided_at'))}" if v.get("decided_at") else ""
    messages = {
        "pending": "This request is still waiting for a decision.",
        "approved": f"This request was already approved{who}{when}.",
        "rejected": f"This request was already rejected{who}{when}.",
        "cancelled": f"This request was cancelled{who}{when}.",
        "expired": f"This request expired{when}; nothing was done.",
        "executing": "This request was already approved and is running.",
        "executed": "This request was already approved and carried out.",
        "failed": "This request was approved, but running it failed.",
        "effect_uncertain": "This request was approved, but its run did not report back: it may or may not have "
        "taken effect. The requester or an approver can choose Run again or Mark as done.",
    }
    return messages.get(a.state, f"This request is {a.state}.")
