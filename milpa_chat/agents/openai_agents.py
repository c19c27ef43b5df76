"""Kit approvals for an OpenAI Agents SDK agent (``pip install 'milpa-chat[openai-agents]'``).

A function tool with ``needs_approval`` pauses the run; each of ``result.interruptions`` becomes a kit approval
with cards on every surface. The ``RunState`` is kept in the kit store (``to_json()``), and once people decided
the run is resumed with ``state.approve(item)`` or ``state.reject(item, rejection_message=reason)`` (also from a
new process after a restart: :meth:`OpenAIAgentsApprovals.resume_pending`). The kit never grants "always
approve". The approved tool runs once, with the approved (possibly edited) arguments::

    approvals = OpenAIAgentsApprovals(ApprovalHost(assistant), agent)
    result = await approvals.run("pay ACME 120 EUR", ctx)
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from milpa_chat._extras import require

require("agents", extra="openai-agents", feature="Kit approvals for OpenAI Agents SDK agents")

from agents import Agent, FunctionTool, Runner, RunState  # noqa: E402

from milpa_chat.agents.host import ApprovalHost, context_from, context_record  # noqa: E402

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import VerifyPolicy

__all__ = ["OpenAIAgentsApprovals"]

Invoke = Callable[[Any, str], Awaitable[Any]]


class OpenAIAgentsApprovals:
    """Runs ``agent`` with kit approvals for its ``needs_approval`` tools.

    ``verify``: a :class:`~milpa_chat.runtime.definition.VerifyPolicy` (approvers decide) for every such tool,
    or one per tool name; a tool without one is confirmed by the person the agent acts for. ``name`` tells
    this agent's paused runs apart from other agents' in the same store. The agent's function tools are
    wrapped in place, so an approved call runs through its approval (claimed once)."""

    def __init__(
        self,
        host: ApprovalHost,
        agent: Agent[Any],
        *,
        verify: VerifyPolicy | Mapping[str, VerifyPolicy] | None = None,
        name: str = "agent",
    ) -> None:
        self.host = host
        self.agent = agent
        self.verify = verify
        self.framework = f"openai-agents:{name}"
        #: tool call id -> approval id of every call this process waits on or resumed
        self.calls: dict[str, str] = {}
        for tool in agent.tools:
            if isinstance(tool, FunctionTool):
                self._wrap(tool)

    async def run(self, input: Any, ctx: ToolContext, **kwargs: Any) -> Any:
        """``Runner.run(agent, input, **kwargs)`` for the person of ``ctx``, waiting on kit approvals as needed;
        returns the final ``RunResult``."""
        result = await Runner.run(self.agent, input, **kwargs)
        return await self._settle(result, ctx, None, kwargs)

    def chat_agent(self, **kwargs: Any) -> Any:
        """This agent as an :class:`~milpa_chat.chat.Assistant`'s agent: ``assistant.agent = approvals.chat_agent()``
        (free text runs it in the background; its answer is posted in the chat)."""

        async def answer(text: str, ctx: ToolContext) -> str:
            return str((await self.run(text, ctx, **kwargs)).final_output)

        return self.host.chat_agent(answer)

    async def resume(self, run_id: str, *, tell: bool = True, **kwargs: Any) -> Any:
        """Go on with a paused run kept in the store (after a restart). ``tell``: post the run's answer in the
        requester's chat (as :meth:`chat_agent` does)."""
        record = await self.host.load_run(run_id)
        if record is None:
            raise LookupError(f"no paused OpenAI Agents run {run_id!r} in the store")
        state = await RunState.from_json(self.agent, record["state"])
        self.calls.update(record["approvals"])
        await self._apply(state, state.get_interruptions(), record["approvals"])
        result = await Runner.run(self.agent, state, **kwargs)
        ctx = context_from(record["ctx"])
        result = await self._settle(result, ctx, run_id, kwargs)
        if tell:
            await self.host.tell(ctx, str(result.final_output))
        return result

    async def resume_pending(self, **kwargs: Any) -> list[Any]:
        """Resume every paused run of this agent kept in the store (call it when the process starts)."""
        runs = await self.host.pending_runs(self.framework)
        return list(await asyncio.gather(*(self.resume(r, **kwargs) for r in runs)))

    # ------------------------------------------------------------------ steps
    async def _settle(self, result: Any, ctx: ToolContext, run_id: str | None, kwargs: Mapping[str, Any]) -> Any:
        while result.interruptions:
            state = result.to_state()
            approvals: dict[str, str] = {}
            for item in result.interruptions:
                name = str(item.tool_name)
                args = json.loads(item.arguments or "{}")
                opened = await self.host.request(name, args, ctx, verify=self._policy(name), schema=self._schema(name))
                approvals[str(item.call_id)] = opened.id
            self.calls.update(approvals)
            run_id = await self.host.save_run(
                run_id,
                {
                    "framework": self.framework,
                    "state": state.to_json(),
                    "approvals": approvals,
                    "ctx": context_record(ctx),
                },
            )
            await self._apply(state, result.interruptions, approvals)
            result = await Runner.run(self.agent, state, **kwargs)
        if run_id is not None:
            await self.host.end_run(run_id)
        return result

    async def _apply(self, state: Any, items: list[Any], approvals: Mapping[str, str]) -> None:
        """Wait for the people's decisions and write them into ``state`` (never "always approve")."""
        waiting = [(item, approvals[str(item.call_id)]) for item in items if str(item.call_id) in approvals]
        decided = await asyncio.gather(*(self.host.wait(aid) for _, aid in waiting))
        for (item, _), decision in zip(waiting, decided, strict=True):
            if decision.approved:
                state.approve(item, always_approve=False)
            else:
                state.reject(item, rejection_message=decision.reason)

    def _wrap(self, tool: FunctionTool) -> None:
        original: Invoke = tool.on_invoke_tool
        if getattr(original, "milpa_kit", False):
            return

        async def invoke(tool_ctx: Any, input_json: str) -> Any:
            approval = self.calls.get(str(getattr(tool_ctx, "tool_call_id", "")))
            if approval is None:
                return await original(tool_ctx, input_json)
            # the approved arguments, whatever the model sent: after an edit, the edited ones
            return await self.host.run(approval, lambda args: original(tool_ctx, json.dumps(args)))

        invoke.milpa_kit = True  # type: ignore[attr-defined]
        tool.on_invoke_tool = invoke

    def _schema(self, name: str) -> dict[str, Any] | None:
        for tool in self.agent.tools:
            if isinstance(tool, FunctionTool) and tool.name == name:
                return dict(tool.params_json_schema)
        return None

    def _policy(self, tool: str) -> VerifyPolicy | None:
        if self.verify is None or not isinstance(self.verify, Mapping):
            return self.verify
        return self.verify.get(tool)
