"""Kit approvals for a pydantic-ai agent (``pip install 'milpa-chat[pydantic-ai]'``).

Every call that needs approval (a tool with ``requires_approval=True``, or one that raises
``ApprovalRequired``) ends a run with ``DeferredToolRequests``; each becomes a kit approval with cards on every
surface. When people decided, the run goes on with ``DeferredToolResults``: ``ToolApproved(override_args=...)``
with the approved (possibly edited) arguments, ``ToolDenied(reason)`` on a rejection, a withdrawal or an expiry.
The message history and the pending calls are kept in the kit store, so a new process resumes the run
(:meth:`PydanticAIApprovals.resume_pending`). The approved tool runs once, by whoever claims its approval::

    approvals = PydanticAIApprovals(ApprovalHost(assistant), agent)
    result = await approvals.run("pay ACME 120 EUR", ctx)
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from milpa_chat._extras import require

require("pydantic_ai", extra="pydantic-ai", feature="Kit approvals for pydantic-ai agents")

from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied  # noqa: E402
from pydantic_ai.capabilities import AbstractCapability  # noqa: E402
from pydantic_ai.messages import ModelMessagesTypeAdapter  # noqa: E402

from milpa_chat.agents.host import ApprovalHost, context_from, context_record  # noqa: E402

if TYPE_CHECKING:
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.tools import ToolDefinition

    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import VerifyPolicy

__all__ = ["PydanticAIApprovals"]


@dataclass
class _KitCalls(AbstractCapability[Any]):
    """Learns each call's JSON schema while it validates, and runs an approved call through its approval
    (claimed once, with the approved arguments, its result recorded)."""

    host: ApprovalHost
    approvals: Mapping[str, str] = field(default_factory=dict)
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)

    async def wrap_tool_validate(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: Any, handler: Any
    ) -> dict[str, Any]:
        self.schemas[call.tool_call_id] = dict(tool_def.parameters_json_schema)
        return await handler(args)  # type: ignore[no-any-return]

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: Any,
    ) -> Any:
        approval = self.approvals.get(call.tool_call_id)
        if approval is None or not ctx.tool_call_approved:
            return await handler(args)
        return await self.host.run(approval, lambda _approved: handler(args))


class PydanticAIApprovals:
    """Runs ``agent`` with kit approvals for its approval-required tools.

    ``verify``: a :class:`~milpa_chat.runtime.definition.VerifyPolicy` (approvers decide) for every such tool,
    or one per tool name; a tool without one is confirmed by the person the agent acts for. ``name`` tells
    this agent's paused runs apart from other agents' in the same store."""

    def __init__(
        self,
        host: ApprovalHost,
        agent: Agent[Any, Any],
        *,
        verify: VerifyPolicy | Mapping[str, VerifyPolicy] | None = None,
        name: str = "agent",
    ) -> None:
        self.host = host
        self.agent = agent
        self.verify = verify
        self.framework = f"pydantic-ai:{name}"

    async def run(self, prompt: str, ctx: ToolContext, **kwargs: Any) -> Any:
        """``agent.run(prompt, **kwargs)`` for the person of ``ctx``, waiting on kit approvals as needed;
        returns the final ``AgentRunResult``."""
        calls = _KitCalls(self.host)
        result = await self.agent.run(prompt, **self._options(calls, kwargs))
        return await self._settle(result, ctx, None, calls, kwargs)

    def chat_agent(self, **kwargs: Any) -> Any:
        """This agent as an :class:`~milpa_chat.chat.Assistant`'s agent: ``assistant.agent = approvals.chat_agent()``
        (free text runs it in the background; its answer is posted in the chat)."""

        async def answer(text: str, ctx: ToolContext) -> str:
            return str((await self.run(text, ctx, **kwargs)).output)

        return self.host.chat_agent(answer)

    async def resume(self, run_id: str, *, tell: bool = True, **kwargs: Any) -> Any:
        """Go on with a paused run kept in the store (after a restart): wait for its decisions, then resume.
        ``tell``: post the run's answer in the requester's chat (as :meth:`chat_agent` does)."""
        record = await self.host.load_run(run_id)
        if record is None:
            raise LookupError(f"no paused pydantic-ai run {run_id!r} in the store")
        messages = ModelMessagesTypeAdapter.validate_python(record["messages"])
        calls = _KitCalls(self.host, dict(record["approvals"]))
        results = await self._decisions(record["approvals"])
        result = await self.agent.run(
            message_history=messages, deferred_tool_results=results, **self._options(calls, kwargs)
        )
        ctx = context_from(record["ctx"])
        result = await self._settle(result, ctx, run_id, calls, kwargs)
        if tell:
            await self.host.tell(ctx, str(result.output))
        return result

    async def resume_pending(self, **kwargs: Any) -> list[Any]:
        """Resume every paused run of this agent kept in the store (call it when the process starts)."""
        runs = await self.host.pending_runs(self.framework)
        return list(await asyncio.gather(*(self.resume(r, **kwargs) for r in runs)))

    # ------------------------------------------------------------------ steps
    def _options(self, calls: _KitCalls, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        output = kwargs.get("output_type", self.agent.output_type)
        outputs = list(output) if isinstance(output, list | tuple) else [output]
        if DeferredToolRequests not in outputs:
            outputs.append(DeferredToolRequests)
        return {**kwargs, "output_type": outputs, "capabilities": [*kwargs.get("capabilities", ()), calls]}

    async def _settle(
        self, result: Any, ctx: ToolContext, run_id: str | None, calls: _KitCalls, kwargs: Mapping[str, Any]
    ) -> Any:
        while isinstance(result.output, DeferredToolRequests):
            requests: DeferredToolRequests = result.output
            if requests.calls:
                raise RuntimeError(
                    "pydantic-ai deferred calls for external execution; kit approvals answer only "
                    "calls that need approval (requires_approval=True or ApprovalRequired)"
                )
            approvals = {}
            for call in requests.approvals:
                args = requests.validated_args.get(call.tool_call_id) or call.args_as_dict()
                opened = await self.host.request(
                    call.tool_name,
                    args,
                    ctx,
                    verify=self._policy(call.tool_name),
                    schema=calls.schemas.get(call.tool_call_id),
                )
                approvals[call.tool_call_id] = opened.id
            messages = ModelMessagesTypeAdapter.dump_python(result.all_messages(), mode="json")
            run_id = await self.host.save_run(
                run_id,
                {"framework": self.framework, "messages": messages, "approvals": approvals, "ctx": context_record(ctx)},
            )
            calls = _KitCalls(self.host, approvals, calls.schemas)
            results = await self._decisions(approvals)
            result = await self.agent.run(
                message_history=result.all_messages(), deferred_tool_results=results, **self._options(calls, kwargs)
            )
        if run_id is not None:
            await self.host.end_run(run_id)
        return result

    async def _decisions(self, approvals: Mapping[str, str]) -> DeferredToolResults:
        decided = await asyncio.gather(*(self.host.wait(aid) for aid in approvals.values()))
        answers: dict[str, ToolApproved | ToolDenied] = {}
        for call_id, decision in zip(approvals, decided, strict=True):
            answers[call_id] = (
                ToolApproved(override_args=decision.args) if decision.approved else ToolDenied(decision.reason)
            )
        return DeferredToolResults(approvals=dict(answers))

    def _policy(self, tool: str) -> VerifyPolicy | None:
        if self.verify is None or not isinstance(self.verify, Mapping):
            return self.verify
        return self.verify.get(tool)
