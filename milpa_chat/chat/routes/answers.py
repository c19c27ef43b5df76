"""The agent's answers: shown as they are produced where a surface streams, with 👍 / 👎 when asked, and the
route of those two buttons.

:class:`AgentAnswers` is how the :class:`~milpa_chat.chat.routes.messages.AgentText` route shows free text's
answer and how a paused agent run resumes once its approval is decided (``Assistant.resume_agent``): into a
stream the surface opens where it can and the agent takes one (``agent.streams``), else sent when done; with
``feedback`` on, the answer is kept (:class:`~milpa_chat.chat.feedback.AnswerFeedback`) and carries the
buttons. :class:`FeedbackTaps` records a tap on them.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from milpa_chat.chat import cards
from milpa_chat.chat.approvals import requester_user
from milpa_chat.chat.inbound import Inbound
from milpa_chat.chat.streaming import FEEDBACK, feedback_buttons
from milpa_chat.renderers.model import Actions, Message

if TYPE_CHECKING:
    from collections.abc import Mapping

    from milpa_chat.chat.feedback import AnswerFeedback
    from milpa_chat.chat.streaming import Stream
    from milpa_chat.chat.surface import Surface
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.result import ToolResult

__all__ = ["AgentAnswers", "FeedbackTaps"]

log = logging.getLogger("milpa_chat.chat")

ContextFor = Callable[[Inbound], "ToolContext"]
Run = Callable[["Stream | None"], Awaitable["str | Message | None"]]


class AgentAnswers:
    """Shows the agent's (``agent()``) answers; ``feedback()``: whether they carry 👍 / 👎 (kept in
    ``answer_feedback``)."""

    def __init__(
        self,
        agent: Callable[[], Any],
        context_for: ContextFor,
        answer_feedback: AnswerFeedback,
        feedback: Callable[[], bool],
    ) -> None:
        self.agent = agent
        self.context_for = context_for
        self.answer_feedback = answer_feedback
        self.feedback = feedback

    async def text(self, inbound: Inbound, surface: Surface) -> None:
        """Free text to the agent: its answer streamed where the surface can, else sent when it is done."""
        agent = self.agent()
        assert agent is not None
        ctx = self.context_for(inbound)

        async def run(stream: Stream | None) -> str | Message | None:
            if stream is not None:
                reply: str | Message | None = await agent(inbound, ctx, stream=stream)
                return reply
            return await agent(inbound, ctx)  # type: ignore[no-any-return]

        await self.answer(inbound, surface, run)

    async def resume(self, approval: Approval, result: ToolResult | None, surfaces: Mapping[str, Surface]) -> None:
        """Hand a decided approval back to the agent run waiting on it, and show the agent's answer.

        ``result`` is the tool's result when it ran, ``None`` when it was cancelled, rejected or expired.
        """
        resume = getattr(self.agent(), "resume", None)
        route = approval.route
        if not approval.data.get("resume") or not callable(resume) or route is None:
            return
        thread = approval.data["resume"].get("thread")
        inbound = Inbound(
            route["surface"], route["chat_id"], requester_user(approval), thread=str(thread) if thread else None
        )
        surface = surfaces.get(inbound.surface)
        if surface is None:
            raise LookupError(f"no transport attached for {inbound.surface} to resume the agent")
        ctx = self.context_for(inbound)

        async def run(stream: Stream | None) -> str | Message | None:
            try:
                if stream is not None:
                    reply: str | Message | None = await resume(inbound, ctx, approval, result, stream=stream)
                    return reply
                return await resume(inbound, ctx, approval, result)  # type: ignore[no-any-return]
            except Exception:
                log.exception("the agent could not resume after approval %s", approval.id)
                return "Something went wrong while I continued your request; the error was logged."

        await self.answer(inbound, surface, run)

    async def answer(self, inbound: Inbound, surface: Surface, run: Run) -> None:
        """Run the agent (``run(stream)``) and show its answer: into a stream the surface opens where it can
        and the agent takes one (``agent.streams``), else sent when done; with 👍 / 👎 when ``feedback()``."""
        stream: Stream | None = None
        if getattr(self.agent(), "streams", False) and surface.traits.streams:
            try:
                stream = await surface.open_stream(inbound)
            except Exception:
                log.warning("could not open a stream on %s; the answer is sent when done", inbound.surface)
        if stream is None:
            try:
                await surface.typing(inbound.chat_id)
            except Exception:  # typing is cosmetic
                log.debug("typing indicator failed", exc_info=True)
        try:
            reply = await run(stream)
        except BaseException:
            if stream is not None and not stream.finished:
                await _finish_quietly(stream, "Sorry, this answer could not be finished.")
            raise
        text = reply if isinstance(reply, str) else None
        answer_id = None
        if self.feedback() and text:
            answer_id = await self.answer_feedback.new_answer(
                inbound.surface, inbound.chat_id, self.context_for(inbound).principal or "", text
            )
        if stream is not None:
            try:
                await stream.finish(text, feedback=answer_id)
            except Exception as exc:  # the stream broke at its end: the answer still reaches the person
                log.warning("a stream on %s could not finish (%s); the answer is sent", inbound.surface, exc)
                if text:
                    await surface.send(inbound.chat_id, cards.text(text))
            if isinstance(reply, Message):
                await surface.send(inbound.chat_id, reply)
            return
        if reply is None:
            return
        message = cards.text(reply) if isinstance(reply, str) else reply
        if answer_id is not None:
            message = dataclasses.replace(message, blocks=(*message.blocks, Actions.row(*feedback_buttons(answer_id))))
        await surface.send(inbound.chat_id, message)


class FeedbackTaps:
    """A tap of 👍 or 👎 under an agent's answer."""

    def __init__(self, feedback: AnswerFeedback, context_for: ContextFor) -> None:
        self.feedback = feedback
        self.context_for = context_for

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        return inbound.kind == "action" and inbound.action == FEEDBACK

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        told = await self.feedback.record(inbound, self.context_for(inbound))
        await surface.answer(inbound, told, alert=told != "Thanks for the feedback.")
        return True


async def _finish_quietly(stream: Stream, text: str) -> None:
    try:
        await stream.finish(text)
    except Exception:
        log.debug("could not finish a stream after a failure", exc_info=True)
