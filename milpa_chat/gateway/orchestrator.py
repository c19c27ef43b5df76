"""``AgentOrchestrator``: ask the model, run the tools it asks for, repeat until it answers.

Each step re-derives the catalogue from the registry minus the option table, asks the model, and
runs the step's tool calls in order through the gate and the registry pipeline. Tool failures go
back to the model as tool messages and the loop continues. A confirmation request, a verification
request, a blocked result, or a gate refusal that did not remove the option stops the run with a
resumable :class:`~milpa_chat.gateway.state.AgentState`: a person decides, and
:meth:`AgentOrchestrator.resume` continues with the outcome.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from milpa_chat.gateway.gates import OptionTable, Refusal, ToolCall, ToolCallGate, maybe_await
from milpa_chat.gateway.mcp_client import result_for_model
from milpa_chat.gateway.state import AgentRun, AgentState, PendingCall, StepStatus, ToolOutcome
from milpa_chat.runtime.result import ErrorCode, ToolResult

if TYPE_CHECKING:
    from milpa_chat.gateway.llm import ChannelObserver
    from milpa_chat.gateway.mcp_client import McpClientService

__all__ = ["TOOL_CALL_MARKERS", "AgentOrchestrator", "ChatModel", "Progress", "step_title"]


class Progress(Protocol):
    """Where a run shows itself while it works (``milpa_chat.chat.streaming.Stream`` is one): the answer's
    text as the model writes it, and each tool call as a step of the plan."""

    async def append(self, text: str) -> None: ...

    async def step(self, id: str, title: str, status: StepStatus, details: str | None = None) -> None: ...


def step_title(name: str, description: str | None = None) -> str:
    """How a tool call's step reads while it runs: its description's first sentence ("Look up invoices…"),
    else ``Running <name>…``."""
    first = (description or "").strip().split("\n", 1)[0].split(". ", 1)[0].strip().rstrip(".")
    if not first or len(first) > 80:
        return f"Running {name}…"
    return f"{first}…"


@runtime_checkable
class ChatModel(Protocol):
    """What the orchestrator needs of a model: :class:`~milpa_chat.gateway.LlmService`'s ``generate``.

    ``generate(messages, tools, max_tokens=..., observer=...)`` takes the history in OpenAI chat
    format and the tool summaries, and returns the assistant message (``content`` and optionally
    ``tool_calls``). ``LlmService`` is the first implementation; a local model, a router over
    several providers or a scripted fake for tests plugs in the same way.
    """

    async def generate(
        self,
        messages: str | Sequence[Mapping[str, Any]],
        tools: Any = None,
        max_tokens: int = 4096,
        *,
        observer: ChannelObserver | None = None,
    ) -> Mapping[str, Any]: ...


log = logging.getLogger("milpa_chat.gateway.agent")

#: Text that means the model wrote a tool call instead of making one.
TOOL_CALL_MARKERS = ("<function=", "<tool_call", "</tool_call", "<|tool_call", "<invoke name=")


@dataclass(slots=True)
class _Progress:
    messages: list[dict[str, Any]]
    steps: int = 0
    queue: list[ToolCall] = field(default_factory=list)
    outcomes: list[ToolOutcome] = field(default_factory=list)
    held: list[tuple[ToolCall, ToolResult | None]] = field(default_factory=list)


class AgentOrchestrator:
    """The ask -> act loop over a :class:`ChatModel` (an :class:`~milpa_chat.gateway.LlmService`) and a
    :class:`~milpa_chat.gateway.McpClientService`.

    ``max_steps`` bounds the model calls of a run (a resumed run keeps counting). ``gate`` is asked
    before every call (:class:`~milpa_chat.gateway.ToolCallGate`). ``options`` is the table the
    catalogue is derived from each step (the gate's own ``options`` when it has one and none is
    given). ``observer`` sees every request body exactly as sent. ``system`` is put first when the
    history has no system message. ``progress`` (a :class:`Progress`) is shown the answer's text as it
    streams (when the model streams: ``llm.streams``) and each call as a step (``describe(name)``: its
    title, by default ``Running <name>…``).

    ``gather``: how a step with several calls needing a decision pauses. ``False`` (the default) pauses at
    the first one, the step's later calls queued behind it. ``True`` handles every call of the step first:
    those that need nothing run, each gated one opens its own request, and the run pauses once with all
    of them in ``AgentState.waiting``; :meth:`resume_step` continues when every one is decided, each
    result going back to the model as its own tool message, in the step's order.
    """

    def __init__(
        self,
        llm: ChatModel,
        tools: McpClientService,
        *,
        max_steps: int = 20,
        gate: ToolCallGate | None = None,
        options: OptionTable | None = None,
        observer: ChannelObserver | None = None,
        system: str | None = None,
        max_tokens: int = 4096,
        progress: Progress | None = None,
        describe: Callable[[str], str] | None = None,
        gather: bool = False,
    ) -> None:
        if max_steps < 1:
            raise ValueError(f"AgentOrchestrator(max_steps=...) must be at least 1, got {max_steps}")
        self.llm = llm
        self.tools = tools
        self.max_steps = max_steps
        self.gate = gate
        gate_table = getattr(gate, "options", None)
        self.options = options if options is not None else (gate_table if isinstance(gate_table, OptionTable) else None)
        self.observer = observer
        self.system = system
        self.max_tokens = max_tokens
        self.progress = progress
        self.describe = describe or (lambda name: step_title(name))
        self.gather = gather

    # ------------------------------------------------------------------ API
    async def run(self, prompt: str | Sequence[Mapping[str, Any]]) -> AgentRun:
        """Run from a user prompt or a whole history (OpenAI chat format). Provider errors propagate
        as :class:`~milpa_chat.gateway.LlmError`."""
        if isinstance(prompt, str):
            messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        else:
            messages = [dict(m) for m in copy.deepcopy(list(prompt))]
        if self.system and not (messages and messages[0].get("role") == "system"):
            messages.insert(0, {"role": "system", "content": self.system})
        return await self._drive(_Progress(messages))

    async def resume(self, state: AgentState | Mapping[str, Any], result: ToolResult) -> AgentRun:
        """Continue a paused run with the outcome of the pending call.

        ``result`` is what the tool returned after the human's decision, or — for a call a person
        did not let run — a failure such as :func:`~milpa_chat.gateway.declined`; the model reads it
        as the call's result. When the pending call did not succeed, the calls queued behind it in
        the same step are not run either (the model is told, and can ask again).
        """
        if not isinstance(state, AgentState):
            state = AgentState.from_dict(state)
        if state.held:
            return await self.resume_step(state, {state.pending.call.id: result})
        progress = self._restore(state)
        await self._record(state.pending.call, result)
        self._answer(progress, state.pending.call, result)
        if not result.success:
            self._skip_queue(progress, state.pending.call.name)
        return await self._drive(progress)

    async def resume_step(self, state: AgentState | Mapping[str, Any], results: Mapping[str, ToolResult]) -> AgentRun:
        """Continue a run paused on several calls of one step (``gather=True``) once every one is decided.

        ``results`` maps each waiting call's id (``state.waiting``) to its outcome, as for :meth:`resume`.
        Each goes back to the model as its own tool message, in the order the model asked for the calls.
        """
        if not isinstance(state, AgentState):
            state = AgentState.from_dict(state)
        waiting = [w.call.id for w in state.waiting] or [state.pending.call.id]
        missing = [cid for cid in waiting if cid not in results]
        unknown = [cid for cid in results if cid not in waiting]
        if missing or unknown:
            raise ValueError(
                "AgentOrchestrator.resume_step(): results must name exactly the waiting calls "
                f"{waiting}; missing {missing}, unknown {unknown}"
            )
        if not state.held:
            return await self.resume(state, results[waiting[0]])
        progress = self._restore(state)
        calls = {w.call.id: w.call for w in state.waiting}
        for cid in waiting:
            await self._record(calls[cid], results[cid])
        for call, held in state.held:
            self._answer(progress, call, held if held is not None else results[call.id])
        return await self._drive(progress)

    def _restore(self, state: AgentState) -> _Progress:
        if self.options is None and state.removed:
            self.options = OptionTable()  # the removals of the paused run still hold
        if self.options is not None:
            for removal in state.removed:
                self.options.remove(str(removal["option"]), str(removal["code"]), removal.get("message"))
        return _Progress(copy.deepcopy(state.messages), state.steps, list(state.queued))

    # ----------------------------------------------------------------- loop
    async def _drive(self, p: _Progress) -> AgentRun:
        while True:
            pending = await (self._gather(p) if self.gather else self._act_all(p))
            if pending:
                return self._pause(p, pending if isinstance(pending, list) else [pending])
            if p.steps >= self.max_steps:
                log.info("agent stopped after %d steps without a final answer", p.steps)
                return AgentRun("exhausted", p.messages, p.steps, p.outcomes)
            reply = await self._ask(p)
            calls = reply.get("tool_calls") or []
            if not calls:
                return self._final(p, str(reply.get("content") or ""))
            p.queue = [ToolCall.from_message(c) for c in calls]

    async def _ask(self, p: _Progress) -> Mapping[str, Any]:
        tools = self.tools.get_tool_summaries(self.options)
        reply: Mapping[str, Any]
        if self.progress is not None and getattr(self.llm, "streams", False):
            reply = await cast(Any, self.llm).generate(
                p.messages, tools, max_tokens=self.max_tokens, observer=self.observer, on_text=self.progress.append
            )
        else:
            reply = await self.llm.generate(p.messages, tools, max_tokens=self.max_tokens, observer=self.observer)
        p.steps += 1
        p.messages.append(dict(reply))
        return reply

    def _final(self, p: _Progress, text: str) -> AgentRun:
        if any(marker in text for marker in TOOL_CALL_MARKERS):
            notice = (
                "The model wrote a tool call as text instead of making it, so nothing was run and "
                f"nothing changed. What it wrote:\n```\n{text.strip()}\n```"
            )
            return AgentRun("tool_call_as_text", p.messages, p.steps, p.outcomes, answer=notice)
        return AgentRun("answered", p.messages, p.steps, p.outcomes, answer=text)

    def _pause(self, p: _Progress, waiting: list[PendingCall]) -> AgentRun:
        removed = self.options.to_list() if self.options is not None else []
        pending = waiting[0]
        state = AgentState(
            copy.deepcopy(p.messages),
            pending,
            list(p.queue),
            p.steps,
            removed,
            waiting=list(waiting) if p.held else [],
            held=list(p.held),
        )
        log.info("agent paused at %s (%s), %d call(s) waiting", pending.call.name, pending.reason, len(waiting))
        return AgentRun("paused", p.messages, p.steps, p.outcomes, state=state)

    # ------------------------------------------------------------------ act
    async def _act_all(self, p: _Progress) -> PendingCall | None:
        while p.queue:
            call = p.queue.pop(0)
            pending = await self._act(p, call)
            if pending is not None:
                return pending
        return None

    async def _gather(self, p: _Progress) -> list[PendingCall]:
        """Every call of the step: those needing nothing run, each gated one is opened, the results wait so
        they go back in the step's order. A refused or blocked call before any gated one pauses the run as
        without ``gather``; after one, its explanation is its result (the requests already opened stand)."""
        slots: list[tuple[ToolCall, ToolResult | None]] = []
        waiting: list[PendingCall] = []
        while p.queue:
            call = p.queue[0]
            outcome = await self._try(call)
            if isinstance(outcome, PendingCall) and outcome.reason in ("blocked", "refused"):
                if not waiting:
                    p.queue.pop(0)
                    for done, result in slots:
                        assert result is not None
                        self._answer(p, done, result)
                    return [outcome]
                outcome = (
                    outcome.result
                    if outcome.reason == "blocked" and outcome.result is not None
                    else ToolResult.error(outcome.explanation, code=ErrorCode.FORBIDDEN)
                )
            p.queue.pop(0)
            if isinstance(outcome, PendingCall):
                waiting.append(outcome)
                slots.append((call, None))
            else:
                slots.append((call, outcome))
        if not waiting:
            for done, result in slots:
                assert result is not None
                self._answer(p, done, result)
            return []
        p.held = slots
        return waiting

    async def _act(self, p: _Progress, call: ToolCall) -> PendingCall | None:
        outcome = await self._try(call)
        if isinstance(outcome, PendingCall):
            return outcome
        self._answer(p, call, outcome)
        return None

    async def _try(self, call: ToolCall) -> PendingCall | ToolResult:
        """One call: its result, or why it waits (the call is not answered here)."""
        if call.problem is not None:
            return ToolResult.error(
                f"{call.name or 'The call'} was not run: {call.problem}.", code=ErrorCode.VALIDATION_ERROR
            )
        if self.options is not None and self.options.was_removed(call.name):
            return self._removed_result(call.name)
        refusal = await self._refusal(call)
        if refusal is not None:
            if self.options is not None and self.options.was_removed(call.name):
                return ToolResult.error(str(refusal), code=ErrorCode.FORBIDDEN, meta={"option_removed": True})
            return PendingCall(call, "refused", refusal=str(refusal), refusal_code=getattr(refusal, "code", None))
        await self.show_step(call.id, self.describe(call.name), "in_progress")
        result = await self._call(call)
        await self._record(call, result)
        if not result.requires_confirmation():
            await self.show_step(call.id, self.describe(call.name), "complete" if result.success else "error")
        if result.requires_confirmation():
            return PendingCall(
                call, "verification" if result.meta.get("requires_verification") else "confirmation", result
            )
        if result.is_blocked():
            return PendingCall(call, "blocked", result)
        return result

    async def show_step(self, id: str, title: str, status: StepStatus, details: str | None = None) -> None:
        """Show a step on :attr:`progress` (nothing without one; a failing display never stops the run)."""
        if self.progress is None:
            return
        try:
            await self.progress.step(id, title, status, details)
        except Exception:
            log.exception("the run's progress could not show step %s", id)

    async def _refusal(self, call: ToolCall) -> str | None:
        if self.gate is None:
            return None
        try:
            return await maybe_await(self.gate.refuse(call))
        except Exception as exc:  # a gate that cannot decide refuses: fail closed
            log.exception("tool call gate failed on %s", call.name)
            return Refusal(f"The gate could not decide on {call.name} ({exc}); it was not run.", "gate_failed")

    async def _call(self, call: ToolCall) -> ToolResult:
        try:
            return await self.tools.call_tool(call.name, call.arguments)
        except Exception as exc:
            log.exception("tool %s raised", call.name)
            return ToolResult.error(f"Error executing tool: {exc}", code=ErrorCode.INTERNAL_ERROR)

    async def _record(self, call: ToolCall, result: ToolResult) -> None:
        if self.gate is None:
            return
        try:
            await maybe_await(self.gate.record(call, result))
        except Exception:
            log.exception("tool call gate failed to record %s", call.name)

    def _removed_result(self, name: str) -> ToolResult:
        assert self.options is not None
        removal = self.options.reason(name)
        why = f": {removal.message or removal.code}" if removal is not None else ""
        return ToolResult.error(
            f"{name} is no longer available in this run{why}. Use another way.",
            code=ErrorCode.FORBIDDEN,
            meta={"option_removed": True},
        )

    def _answer(self, p: _Progress, call: ToolCall, result: ToolResult) -> None:
        p.outcomes.append(ToolOutcome(call, result))
        p.messages.append({"role": "tool", "tool_call_id": call.id, "content": result_for_model(result)})

    def _skip_queue(self, p: _Progress, before: str) -> None:
        while p.queue:
            call = p.queue.pop(0)
            self._answer(
                p,
                call,
                ToolResult.error(
                    f"Not run: {before}, asked for in the same step, did not go ahead. "
                    "Ask again if it is still needed.",
                    code=ErrorCode.FORBIDDEN,
                    meta={"decision": "skipped"},
                ),
            )
