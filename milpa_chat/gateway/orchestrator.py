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
        if self.options is None and state.removed:
            self.options = OptionTable()  # the removals of the paused run still hold
        if self.options is not None:
            for removal in state.removed:
                self.options.remove(str(removal["option"]), str(removal["code"]), removal.get("message"))
        progress = _Progress(copy.deepcopy(state.messages), state.steps, list(state.queued))
        await self._record(state.pending.call, result)
        self._answer(progress, state.pending.call, result)
        if not result.success:
            self._skip_queue(progress, state.pending.call.name)
        return await self._drive(progress)

    # ----------------------------------------------------------------- loop
    async def _drive(self, p: _Progress) -> AgentRun:
        while True:
            pending = await self._act_all(p)
            if pending is not None:
                return self._pause(p, pending)
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

    def _pause(self, p: _Progress, pending: PendingCall) -> AgentRun:
        removed = self.options.to_list() if self.options is not None else []
        state = AgentState(copy.deepcopy(p.messages), pending, list(p.queue), p.steps, removed)
        log.info("agent paused at %s (%s)", pending.call.name, pending.reason)
        return AgentRun("paused", p.messages, p.steps, p.outcomes, state=state)

    # ------------------------------------------------------------------ act
    async def _act_all(self, p: _Progress) -> PendingCall | None:
        while p.queue:
            call = p.queue.pop(0)
            pending = await self._act(p, call)
            if pending is not None:
                return pending
        return None

    async def _act(self, p: _Progress, call: ToolCall) -> PendingCall | None:
        if call.problem is not None:
            self._answer(
                p,
                call,
                ToolResult.error(
                    f"{call.name or 'The call'} was not run: {call.problem}.", code=ErrorCode.VALIDATION_ERROR
                ),
            )
            return None
        if self.options is not None and self.options.was_removed(call.name):
            self._answer(p, call, self._removed_result(call.name))
            return None
        refusal = await self._refusal(call)
        if refusal is not None:
            if self.options is not None and self.options.was_removed(call.name):
                self._answer(
                    p, call, ToolResult.error(str(refusal), code=ErrorCode.FORBIDDEN, meta={"option_removed": True})
                )
                return None
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
        self._answer(p, call, result)
        return None

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
