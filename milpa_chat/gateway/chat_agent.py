"""``ChatAgent``: the agent behind free text in a chat — ``Assistant(registry, identities, agent=ChatAgent(llm))``.

Each chat keeps its conversation in the store (stream ``agent:<surface>:<chat id>``, trimmed to the
last ``history`` messages). A run that reaches a confirmation or a verification opens the approval
card through the assistant's flows, with the paused run stored in ``Approval.resume``; after the
decision the assistant hands the approval back (:meth:`ChatAgent.resume`), the agent continues with
the tool's result — or with the refusal, for a cancelled, rejected or expired request — and its
answer is posted in the chat. Nothing lives only in memory, so this works across restarts.

When one model step asks for several calls that need a decision (twelve deletions at once), every one
opens its request in the same turn (so the approvers see them on one batch card), the paused run is kept
once in the store (collection ``agent_steps``), and the run continues when the last of them is decided,
with each outcome — ran, failed, rejected, expired — as its own tool result.

The assistant is reached through :class:`ChatHost` (``milpa_chat.chat.Assistant`` is one): this
module does not import the chat core.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from milpa_chat.errors import MissingExtraError
from milpa_chat.gateway.errors import (
    LlmAuthError,
    LlmContextTooLongError,
    LlmError,
    LlmRateLimitError,
    LlmUnavailableError,
)
from milpa_chat.gateway.gates import OptionTable, ToolCallGate
from milpa_chat.gateway.intent import NamedTargetCheck
from milpa_chat.gateway.mcp_client import result_for_model
from milpa_chat.gateway.orchestrator import AgentOrchestrator, Progress, step_title
from milpa_chat.gateway.second_opinion import SecondOpinionGate
from milpa_chat.gateway.state import AgentRun, AgentState, StepStatus, declined
from milpa_chat.runtime.result import ErrorCode, ToolResult

if TYPE_CHECKING:
    from milpa_chat.gateway.llm import ChannelObserver, LlmService
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.registry import ToolRegistry
    from milpa_chat.store.base import Store

__all__ = ["AGENT_TAG", "DEFAULT_SYSTEM", "ChatAgent", "ChatHost", "ChatTurn", "DecidedApproval", "trouble_reply"]

log = logging.getLogger("milpa_chat.gateway.chat")

#: Marks an ``Approval.resume`` payload written by :class:`ChatAgent`.
AGENT_TAG = "milpa_chat.gateway.ChatAgent/1"

#: Store collection of the runs paused on several requests of one step: the paused state and each call's
#: outcome as it is decided (the last decision continues the run, once).
STEPS = "agent_steps"

DEFAULT_SYSTEM = (
    "You are an assistant in a chat. Answer briefly, in the language of the user. Use the tools when they "
    "help, and never invent a tool's result. Calls that change things may wait for the user's confirmation "
    "or an approver's decision: when a tool result says a call was cancelled, rejected, expired or refused, "
    "tell the user so and do not try it again unless they ask."
)


class ChatTurn(Protocol):
    """What the agent reads of an inbound chat event (``milpa_chat.chat.Inbound``)."""

    @property
    def surface(self) -> str: ...
    @property
    def chat_id(self) -> str: ...
    @property
    def text(self) -> str | None: ...


class DecidedApproval(Protocol):
    """What the agent reads of a decided approval (``milpa_chat.chat.Approval``)."""

    @property
    def state(self) -> str: ...
    @property
    def data(self) -> dict[str, Any]: ...


class ChatHost(Protocol):
    """What the agent needs from the assistant it serves (``milpa_chat.chat.Assistant``)."""

    @property
    def store(self) -> Store: ...
    @property
    def registry(self) -> ToolRegistry: ...

    async def open_approval(
        self, inbound: Any, name: str, result: ToolResult, *, resume: Mapping[str, Any] | None = None
    ) -> bool:
        """Show the approval card a confirmation or verification result asks for; ``False`` when there is none."""
        ...

    async def plan_title(self, result: ToolResult) -> str:
        """How the plan step of a call waiting on the approval ``result`` opened reads ("Waiting for
        approval by payments:approve — card in #approvals")."""
        ...


class ChatAgent:
    """An :class:`~milpa_chat.gateway.AgentOrchestrator` per chat message, with durable history and approvals.

    ``llm`` answers; ``system`` is the system prompt; ``max_steps`` bounds each run; ``history`` is
    how many messages of a chat are kept. ``gate`` is asked before every call. With ``judge`` (a
    second :class:`~milpa_chat.gateway.LlmService`), each run also gets a
    :class:`~milpa_chat.gateway.SecondOpinionGate` on the user's message (``watch``,
    ``alternatives`` as there) over ``gate``. ``observer`` sees every request body. ``hidden`` tools
    are never offered to the model (approving is for people, so ``resolve_verification`` is hidden).
    """

    def __init__(
        self,
        llm: LlmService,
        *,
        system: str | None = DEFAULT_SYSTEM,
        max_steps: int = 20,
        history: int = 40,
        gate: ToolCallGate | None = None,
        judge: LlmService | None = None,
        watch: Iterable[str] = (),
        alternatives: Mapping[str, str] | None = None,
        observer: ChannelObserver | None = None,
        hidden: Iterable[str] = ("resolve_verification",),
        max_tokens: int = 4096,
    ) -> None:
        if history < 2:
            raise ValueError(f"ChatAgent(history=...) keeps at least 2 messages, got {history}")
        self.llm = llm
        self.system = system
        self.max_steps = max_steps
        self.history_limit = history
        self.gate = gate
        self.judge = judge
        self.watch = tuple(watch)
        self.alternatives = dict(alternatives or {})
        self.observer = observer
        self.hidden = tuple(hidden)
        self.max_tokens = max_tokens
        self._host: ChatHost | None = None

    def bind(self, host: ChatHost) -> None:
        """Called by the ``Assistant`` this agent is given to."""
        self._host = host

    @property
    def host(self) -> ChatHost:
        if self._host is None:
            raise RuntimeError("ChatAgent is not attached to an assistant; pass it as Assistant(..., agent=agent)")
        return self._host

    #: ``__call__`` and ``resume`` take ``stream=`` (a :class:`~milpa_chat.gateway.orchestrator.Progress`).
    streams = True

    # ------------------------------------------------------------- turns
    async def __call__(self, inbound: ChatTurn, ctx: ToolContext, *, stream: Progress | None = None) -> str | None:
        """Answer one free-text message (the ``Assistant`` sends the returned text, or finishes ``stream``
        with it: the text streamed into it as the model wrote it, each tool call a step of the plan)."""
        text = (inbound.text or "").strip()
        if not text:
            return None
        history = self.stream_for(inbound.surface, inbound.chat_id)
        messages = [*self._system(), *await self.history(inbound.surface, inbound.chat_id)]
        messages.append({"role": "user", "content": text})
        base = len(messages) - 1
        orchestrator = self._orchestrator(ctx, text, stream)
        try:
            run = await orchestrator.run(messages)
        except (LlmError, MissingExtraError) as exc:
            return await self._trouble(exc, history)
        where = {"stream": history, "base": base, "task": text, "thread": getattr(inbound, "thread", None)}
        return await self._settle(run, inbound, where, orchestrator)

    async def resume(
        self,
        inbound: ChatTurn,
        ctx: ToolContext,
        approval: DecidedApproval,
        result: ToolResult | None,
        *,
        stream: Progress | None = None,
    ) -> str | None:
        """Continue the run paused on ``approval`` once it was decided.

        ``result`` is the tool's result when it ran; ``None`` when a person did not let it run (the
        approval's state, ``cancelled``/``rejected``/``expired``, goes back to the model). With ``stream``,
        the plan step that waited on the approval (kept in the approval, so found after any restart)
        moves on first: complete when the call ran, error when it did not.
        """
        payload = approval.data.get("resume") or {}
        if payload.get("agent") != AGENT_TAG:
            return None
        who = approval.data.get("decided_by_name") or approval.data.get("decided_by")
        ran = result is not None and result.success
        if result is None:
            result = declined(approval.state, by=who)
        where: dict[str, Any] = {
            "stream": str(payload["stream"]),
            "base": int(payload["base"]),
            "task": str(payload["task"]),
            "thread": payload.get("thread"),
        }
        group = payload.get("group")
        results: dict[str, ToolResult] = {}
        if group is not None:
            decided = await self._decide(str(group), str(payload["call"]), result)
            if decided is None:  # others of the step are still waiting, or this was already handed back
                return None
            record, results = decided
        orchestrator = self._orchestrator(ctx, where["task"], stream)
        step = payload.get("step")
        for other in [] if group is None else record.get("steps", []):  # the step's other waiting calls
            if other["id"] != payload.get("call") and other["id"] in results:
                done = results[other["id"]]
                status: StepStatus = "complete" if done.success else "error"
                await orchestrator.show_step(str(other["id"]), str(other["title"]), status, done.error or None)
        if isinstance(step, Mapping):
            outcome = f"{approval.state} by {who}" if who else str(approval.state)
            if not ran and result.error and approval.state in ("executed", "failed"):
                outcome = f"{outcome}: {result.error}"
            await orchestrator.show_step(str(step["id"]), str(step["title"]), "complete" if ran else "error", outcome)
        try:
            if group is not None:
                run = await orchestrator.resume_step(AgentState.from_dict(record["state"]), results)
            else:
                run = await orchestrator.resume(AgentState.from_dict(payload["state"]), result)
        except (LlmError, MissingExtraError) as exc:
            if group is not None:
                await self.host.store.delete(STEPS, str(group))
            return await self._trouble(exc, where["stream"])
        reply = await self._settle(run, inbound, where, orchestrator)
        if group is not None:
            await self.host.store.delete(STEPS, str(group))  # a late redelivery finds nothing to continue
        return reply

    async def _decide(
        self, group: str, call_id: str, result: ToolResult
    ) -> tuple[dict[str, Any], dict[str, ToolResult]] | None:
        """Record one waiting call's outcome (once: a redelivery keeps the first). The caller whose outcome
        was the last one missing continues the run: it gets the step's record (``state``, ``steps``) and every
        outcome; others get ``None``."""
        store = self.host.store
        while True:
            record = await store.get(STEPS, group)
            if record is None or call_id not in record.value["results"]:
                return None
            value = dict(record.value)
            outcomes = dict(value["results"])
            if outcomes[call_id] is None:
                outcomes[call_id] = json.loads(result.to_json(indent=None))
            value["results"] = outcomes
            if all(o is not None for o in outcomes.values()) and value.get("closer") is None:
                value["closer"] = call_id
            if (
                value != record.value
                and await store.update(STEPS, group, value, expected_version=record.version) is None
            ):
                continue  # another decision of the step was recorded at the same time: read again
            if value.get("closer") != call_id:
                return None
            return value, {cid: ToolResult.from_dict(o) for cid, o in outcomes.items()}

    async def _settle(
        self, run: AgentRun, inbound: ChatTurn, where: dict[str, Any], orchestrator: AgentOrchestrator
    ) -> str | None:
        base: int = where["base"]
        if run.paused and run.state is not None and len(run.state.waiting) > 1:
            return await self._open_step(run.state, inbound, where, orchestrator)
        if run.paused:
            assert run.state is not None
            pending = run.state.pending
            if pending.reason in ("confirmation", "verification") and pending.result is not None:
                title = await self._plan_title(pending.result)
                step = {"id": pending.call.id, "title": title}
                payload = {"agent": AGENT_TAG, "state": run.state.to_dict(), **where, "step": step}
                if await self.host.open_approval(inbound, pending.call.name, pending.result, resume=payload):
                    await orchestrator.show_step(pending.call.id, title, "pending")
                    return None
            await orchestrator.show_step(pending.call.id, f"{pending.call.name} did not run", "error")
            await self._save(where["stream"], _closed(run.state)[base:])
            return f"I did not run {pending.call.name}: {pending.explanation}"
        await self._save(where["stream"], run.messages[base:])
        if run.status == "exhausted":
            return (
                f"I stopped after {run.steps} steps without finishing. Tell me how to go on, or ask for "
                "something smaller."
            )
        return run.answer or ("Done." if run.tool_results else "I have no answer to that.")

    async def _open_step(
        self, state: AgentState, inbound: ChatTurn, where: dict[str, Any], orchestrator: AgentOrchestrator
    ) -> str | None:
        """A step waiting on several calls: keep the paused run once, then open every call's request (each
        carries the step's id and its call's id); a call whose request could not be opened is answered
        as not run at once."""
        group = secrets.token_hex(12)
        waiting = state.waiting
        titles = {
            w.call.id: await self._plan_title(w.result) if w.result is not None else f"{w.call.name} did not run"
            for w in waiting
        }
        await self.host.store.put(
            STEPS,
            group,
            {
                "state": state.to_dict(),
                "results": {w.call.id: None for w in waiting},
                "closer": None,
                "steps": [{"id": cid, "title": title} for cid, title in titles.items()],
            },
        )
        for pending in waiting:
            opened = False
            if pending.reason in ("confirmation", "verification") and pending.result is not None:
                step = {"id": pending.call.id, "title": titles[pending.call.id]}
                payload = {"agent": AGENT_TAG, "group": group, "call": pending.call.id, **where, "step": step}
                opened = await self.host.open_approval(inbound, pending.call.name, pending.result, resume=payload)
                if opened:
                    await orchestrator.show_step(pending.call.id, titles[pending.call.id], "pending")
            if not opened:
                await orchestrator.show_step(pending.call.id, f"{pending.call.name} did not run", "error")
                failed = ToolResult.error(pending.explanation, code=ErrorCode.FORBIDDEN)
                decided = await self._decide(group, pending.call.id, failed)
                if decided is not None:  # nothing else of the step waits: go on now
                    run = await orchestrator.resume_step(AgentState.from_dict(decided[0]["state"]), decided[1])
                    reply = await self._settle(run, inbound, where, orchestrator)
                    await self.host.store.delete(STEPS, group)
                    return reply
        return None

    async def _plan_title(self, result: ToolResult) -> str:
        titled = getattr(self.host, "plan_title", None)
        if callable(titled):
            try:
                return str(await titled(result))
            except Exception:
                log.exception("the plan step of an approval could not be titled")
        return "Waiting for a decision"

    def _describe(self, name: str) -> str:
        definition = self.host.registry.get(name)
        return step_title(name, definition.description if definition is not None else None)

    def _orchestrator(self, ctx: ToolContext, task: str, progress: Progress | None = None) -> AgentOrchestrator:
        options = OptionTable()
        gate = self.gate
        if self.judge is not None:
            gate = SecondOpinionGate(
                self.judge, task, floor=self.gate, watch=self.watch, alternatives=self.alternatives, options=options
            )
        tools = NamedTargetCheck(self.host.registry, ctx, request=task, hidden=self.hidden)
        return AgentOrchestrator(
            self.llm,
            tools,
            max_steps=self.max_steps,
            gate=gate,
            options=options,
            observer=self.observer,
            max_tokens=self.max_tokens,
            progress=progress,
            describe=self._describe,
            gather=True,
        )

    def _system(self) -> list[dict[str, Any]]:
        return [{"role": "system", "content": self.system}] if self.system else []

    async def _trouble(self, exc: Exception, stream: str) -> str:
        log.warning("agent could not ask the model: %s", exc)
        if isinstance(exc, LlmContextTooLongError):
            await self.host.store.trim(stream, keep_last=0)
        return trouble_reply(exc)

    # ----------------------------------------------------------- history
    @staticmethod
    def stream_for(surface: str, chat_id: str) -> str:
        return f"agent:{surface}:{chat_id}"

    async def history(self, surface: str, chat_id: str) -> list[dict[str, Any]]:
        """The chat's kept messages, starting at a user message (trimming never leaves half a turn)."""
        entries = await self.host.store.read(self.stream_for(surface, chat_id))
        messages = [dict(e.value["message"]) for e in entries]
        while messages and messages[0].get("role") != "user":
            messages.pop(0)
        return messages

    async def forget(self, surface: str, chat_id: str) -> None:
        """Drop a chat's conversation history."""
        await self.host.store.trim(self.stream_for(surface, chat_id), keep_last=0)

    async def _save(self, stream: str, messages: list[dict[str, Any]]) -> None:
        for message in messages:
            await self.host.store.append(stream, {"message": message})
        await self.host.store.trim(stream, keep_last=self.history_limit)


def _closed(state: AgentState) -> list[dict[str, Any]]:
    """The paused run's messages with the pending and queued calls answered as not run."""
    pending = state.pending
    result = (
        pending.result
        if pending.reason == "blocked" and pending.result is not None
        else ToolResult.error(pending.explanation, code=ErrorCode.FORBIDDEN)
    )
    if state.held:  # the step's calls in order, the one waiting answered as not run
        return [
            *state.messages,
            *(
                {"role": "tool", "tool_call_id": c.id, "content": result_for_model(r if r is not None else result)}
                for c, r in state.held
            ),
        ]
    messages = [*state.messages, {"role": "tool", "tool_call_id": pending.call.id, "content": result_for_model(result)}]
    for call in state.queued:
        skipped = ToolResult.error(
            f"Not run: {pending.call.name}, asked for in the same step, did not go ahead.", code=ErrorCode.FORBIDDEN
        )
        messages.append({"role": "tool", "tool_call_id": call.id, "content": result_for_model(skipped)})
    return messages


def trouble_reply(exc: Exception) -> str:
    """What a chat user is told when the model cannot be asked (no stack traces, no provider internals)."""
    if isinstance(exc, LlmAuthError):
        return (
            "I can't reach my language model: it refused my credentials. An administrator needs to check the API key."
        )
    if isinstance(exc, LlmRateLimitError):
        wait = f"in {max(1, round(exc.retry_after))} seconds" if exc.retry_after else "in a minute"
        return f"My language model is busy right now (rate limit reached). Please try again {wait}."
    if isinstance(exc, LlmContextTooLongError):
        return (
            "Our conversation got too long for my language model, so I have forgotten the earlier messages. "
            "Please send your request again."
        )
    if isinstance(exc, LlmUnavailableError):
        return "My language model is not answering right now. Please try again in a few minutes."
    if isinstance(exc, MissingExtraError):
        return "My language model is not set up on this server. An administrator needs to install it."
    return "My language model could not answer this request. Please try again later."
