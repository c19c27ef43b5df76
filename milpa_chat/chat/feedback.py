"""👍 / 👎 on the agent's answers: the events a person can read back (the buttons' route is
:class:`~milpa_chat.chat.routes.FeedbackTaps`).

Each answer that carries the buttons is kept (collection ``answers``: where it was posted, for whom,
and its first characters). A tap is recorded once per person and answer (a second tap of either
button is told "already recorded"): it is appended to the store's ``feedback`` stream and dispatched
as ``chat.feedback`` on the registry's dispatcher. Who gave it comes from the platform, never from
the button; a tap in another chat than the answer's, or naming an answer that was never posted,
records nothing. :meth:`AnswerFeedback.read` gives the recorded events back, oldest first.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from milpa_chat.chat.inbound import Inbound
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["FEEDBACK_EVENT", "AnswerFeedback", "FeedbackEvent"]

#: The event dispatched on the registry's dispatcher for each recorded tap.
FEEDBACK_EVENT = "chat.feedback"
_STREAM = "feedback"
_ANSWERS = "answers"
_KEEP = 30 * 86400.0


@dataclass(frozen=True, slots=True)
class FeedbackEvent:
    """One recorded tap: which answer, ``up`` or ``down``, by whom (as the platform said), where, when."""

    answer_id: str
    rating: Literal["up", "down"]
    principal: str
    surface: str
    chat_id: str
    answer: str
    at: float

    @classmethod
    def from_dict(cls, value: dict[str, Any], at: float) -> FeedbackEvent:
        rating: Literal["up", "down"] = "up" if value["rating"] == "up" else "down"
        return cls(
            str(value["answer_id"]),
            rating,
            str(value["principal"]),
            str(value["surface"]),
            str(value["chat_id"]),
            str(value.get("answer") or ""),
            at,
        )


class AnswerFeedback:
    """Keeps the answers that carry 👍 / 👎 and records the taps on them (see the module's docstring)."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry
        self.store = registry.store

    async def new_answer(self, surface: str, chat_id: str, principal: str, text: str) -> str:
        """Keep an answer about to be posted with feedback buttons; its id (the buttons' ref)."""
        answer_id = secrets.token_urlsafe(9)
        value = {"surface": surface, "chat_id": chat_id, "principal": principal, "answer": text[:200]}
        await self.store.put(_ANSWERS, answer_id, value, ttl=_KEEP, durable=False)
        return answer_id

    async def record(self, inbound: Inbound, ctx: ToolContext) -> str:
        """Record the tap ``inbound`` (action ``feedback``, ref ``<answer id>.up|down``); what the person
        is told."""
        answer_id, _, rating = (inbound.ref or "").rpartition(".")
        answer = await self.store.get(_ANSWERS, answer_id) if answer_id and rating in ("up", "down") else None
        if answer is None or (answer.value["surface"], answer.value["chat_id"]) != (inbound.surface, inbound.chat_id):
            return "This button is not valid any more."
        vote = {"answer_id": answer_id, "rating": rating, "principal": ctx.principal or ""}
        if await self.store.insert("feedback_votes", f"{answer_id}:{ctx.principal or ''}", vote, ttl=_KEEP) is None:
            return "Your feedback on this answer is already recorded."
        event = {**vote, "surface": inbound.surface, "chat_id": inbound.chat_id, "answer": answer.value["answer"]}
        entry = await self.store.append(_STREAM, event)
        await self.registry.dispatcher.dispatch(FEEDBACK_EVENT, {"event": FeedbackEvent.from_dict(event, entry.at)})
        return "Thanks for the feedback."

    async def read(self, *, after: int = 0, limit: int | None = None) -> list[FeedbackEvent]:
        """The recorded taps, oldest first (``after``: a sequence number already read)."""
        entries = await self.store.read(_STREAM, after=after, limit=limit)
        return [FeedbackEvent.from_dict(e.value, e.at) for e in entries]
