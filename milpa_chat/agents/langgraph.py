"""Kit approvals for a LangGraph graph (``pip install 'milpa-chat[langgraph]'``).

A node that calls ``interrupt({"tool": name, "args": {...}})`` pauses the graph; each such interrupt becomes a
kit approval with cards on every surface. Once people decided, the graph is resumed through its own
checkpointer with ``Command(resume=...)``; each interrupt gets a decision in the shape of LangChain's
human-in-the-loop decisions, plus the approved arguments and who decided::

    {"type": "approve" | "edit" | "reject", "args": {...approved...}, "approval_id": "...",
     "edited_action": {"name": ..., "args": ...},   # "edit" only
     "message": "Rejected by Maria: ...",            # "reject" only (also an expiry or a withdrawal)
     "decided_by": [...]}

The resume that runs an approved call is claimed through its approval first, so it happens once (two workers,
a retried delivery, a restarted process: one resume); :func:`milpa_chat.agents.approval_id` inside the node
is the idempotency key (parallel nodes resumed together: each node its own approval's id). The node tells
the kit what the tool returned with :func:`record_result` (``value = record_result(answer,
send_payment(**answer["args"]))``): that value is the approval's result (the trail, the card's "Done" line,
``milpa-chat approvals show``); a node that does not call it leaves the final state's answer there. The
paused run is kept in the kit store; a new process resumes it (:meth:`LangGraphApprovals.resume_pending`)::

    approvals = LangGraphApprovals(ApprovalHost(assistant), graph)
    state = await approvals.run({"request": "pay ACME 120"}, ctx, config={"configurable": {"thread_id": "t1"}})

An agent made with LangChain's ``create_agent(..., middleware=[HumanInTheLoopMiddleware(...)])`` is such a graph:
each of the middleware's action requests (``interrupt_mode="batched"``, one approval per gated call of a model
turn, or ``"per_call"``) becomes a kit approval, and the middleware gets its own decisions back:
``{"type": "approve"}``, ``{"type": "edit", "edited_action": {"name": ..., "args": <edited>}}`` after an edit,
``{"type": "reject", "message": <the reason>}`` on a rejection, a withdrawal or an expiry. The approval's result
is the approved call's own ``ToolMessage`` content (without the middleware's edit notice).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

from milpa_chat._extras import require

require("langgraph", extra="langgraph", feature="Kit approvals for LangGraph graphs")

from langgraph.types import Command  # noqa: E402

from milpa_chat.agents.host import (  # noqa: E402
    ApprovalHost,
    Decision,
    approval_id_as,
    context_from,
    context_record,
)
from milpa_chat.agents.langchain_calls import (  # noqa: E402
    call_ids,
    interrupt_tasks,
    keyed_by_call,
    message_result,
    tool_message,
)
from milpa_chat.runtime.approval import ApprovalRefused  # noqa: E402

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import VerifyPolicy

__all__ = ["LangGraphApprovals", "hitl_decision", "record_result", "resume_value"]

T = TypeVar("T")
#: What the nodes of the resume under way said their tools returned, by approval id.
_results: ContextVar[dict[str, Any] | None] = ContextVar("milpa_chat_langgraph_results", default=None)


def record_result(answer: Mapping[str, Any], value: T) -> T:
    """In a node resumed by :class:`LangGraphApprovals`: ``value`` (what the approved tool returned) is the
    result of the approval ``answer`` (the node's ``interrupt(...)`` value) decided; returns ``value``.
    Elsewhere (the graph run without the kit) it only returns ``value``."""
    results = _results.get()
    if results is not None and answer.get("approval_id"):
        results[str(answer["approval_id"])] = value
    return value


def resume_value(decision: Decision) -> dict[str, Any]:
    """What the node's ``interrupt(...)`` returns for ``decision``."""
    value: dict[str, Any] = {"approval_id": decision.id, "args": decision.args, "decided_by": decision.deciders}
    tool = decision.approval.tool
    if not decision.approved:
        return {**value, "type": "reject", "message": decision.reason}
    if decision.edited:
        return {**value, "type": "edit", "edited_action": {"name": tool, "args": decision.args}}
    return {**value, "type": "approve"}


class LangGraphApprovals:
    """Runs a compiled ``graph`` (with a checkpointer) with kit approvals for its tool interrupts.

    ``verify``: a :class:`~milpa_chat.runtime.definition.VerifyPolicy` (approvers decide) for every tool, or
    one per tool name; a tool without one is confirmed by the person the graph acts for. ``name`` tells this
    graph's paused runs apart from other agents' in the same store."""

    def __init__(
        self,
        host: ApprovalHost,
        graph: Any,
        *,
        verify: VerifyPolicy | Mapping[str, VerifyPolicy] | None = None,
        name: str = "graph",
        schemas: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.host = host
        self.graph = graph
        self.verify = verify
        self.schemas = dict(schemas or {})
        self.framework = f"langgraph:{name}"
        self.answer_key = "result"

    async def run(self, input: Any, ctx: ToolContext, *, config: Mapping[str, Any]) -> Any:
        """``graph.ainvoke(input, config)`` for the person of ``ctx``, waiting on kit approvals at each tool
        interrupt; returns the graph's final state."""
        if not (config.get("configurable") or {}).get("thread_id"):
            raise ValueError(
                "LangGraphApprovals.run(config=...) needs {'configurable': {'thread_id': ...}}: the "
                "graph's checkpointer keeps the paused run under it"
            )
        result = await self.graph.ainvoke(input, dict(config))
        return await self._settle(result, ctx, dict(config), None)

    def chat_agent(self, prepare: Any, *, answer_key: str = "result") -> Any:
        """This graph as an :class:`~milpa_chat.chat.Assistant`'s agent: ``assistant.agent =
        approvals.chat_agent(lambda text: ({"request": text}, {"configurable": {"thread_id": ...}}))``;
        ``prepare(text)`` gives the graph's input and config; the final state's ``answer_key`` is posted."""

        async def answer(text: str, ctx: ToolContext) -> str:
            graph_input, config = prepare(text)
            return _answer(await self.run(graph_input, ctx, config=config), answer_key)

        self.answer_key = answer_key
        return self.host.chat_agent(answer)

    async def resume(self, run_id: str, *, tell: bool = True) -> Any:
        """Go on with a paused run kept in the store (after a restart). ``tell``: post the final state's answer
        in the requester's chat."""
        record = await self.host.load_run(run_id)
        if record is None:
            raise LookupError(f"no paused LangGraph run {run_id!r} in the store")
        result = await self._resume(record["approvals"], record["config"], record.get("shapes"))
        ctx = context_from(record["ctx"])
        result = await self._settle(result, ctx, record["config"], run_id)
        if tell:
            await self.host.tell(ctx, _answer(result, self.answer_key))
        return result

    async def resume_pending(self) -> list[Any]:
        """Resume every paused run of this graph kept in the store (call it when the process starts)."""
        runs = await self.host.pending_runs(self.framework)
        return list(await asyncio.gather(*(self.resume(r) for r in runs)))

    # ------------------------------------------------------------------ steps
    async def _settle(self, result: Any, ctx: ToolContext, config: dict[str, Any], run_id: str | None) -> Any:
        while isinstance(result, Mapping) and result.get("__interrupt__"):
            approvals: dict[str, str] = {}
            shapes: dict[str, dict[str, Any]] = {}
            for interrupt in result["__interrupt__"]:
                shape = _shape(interrupt.value)
                if shape["kind"] == "batched":  # the middleware's request names no call ids: the model's turn does
                    shape["call_ids"] = call_ids(await self.graph.aget_state(config), shape["calls"])
                keys = []
                for i, (tool, args, allowed) in enumerate(shape["calls"]):
                    opened = await self.host.request(
                        tool,
                        args,
                        ctx,
                        verify=self._policy(tool),
                        schema=self.schemas.get(tool),
                        editable=allowed is None or "edit" in allowed,
                    )
                    key = interrupt.id if shape["kind"] != "batched" else f"{interrupt.id}#{i}"
                    approvals[key] = opened.id
                    keys.append(key)
                shapes[interrupt.id] = {
                    "kind": shape["kind"],
                    "keys": keys,
                    "allowed": [allowed for _, _, allowed in shape["calls"]],
                    "call_ids": shape["call_ids"],
                }
            run_id = await self.host.save_run(
                run_id,
                {
                    "framework": self.framework,
                    "config": _jsonable(config),
                    "approvals": approvals,
                    "shapes": shapes,
                    "ctx": context_record(ctx),
                },
            )
            result = await self._resume(approvals, config, shapes)
        if run_id is not None:
            await self.host.end_run(run_id)
        return result

    async def _resume(
        self, approvals: Mapping[str, str], config: dict[str, Any], shapes: Mapping[str, Any] | None = None
    ) -> Any:
        """Wait for the decisions, then resume the graph once: the resume is claimed through every approval
        whose call now runs (nested), so only one caller ever resumes an approved call; each approval records
        its own call's value."""
        decided = dict(
            zip(approvals, await asyncio.gather(*(self.host.wait(a) for a in approvals.values())), strict=True)
        )
        shapes = shapes or {key: {"kind": "tool", "keys": [key], "allowed": [None]} for key in approvals}
        values: dict[str, Any] = {}
        runs: list[tuple[Decision, str | None]] = []
        refused: list[tuple[Decision, str]] = []
        nodes: dict[str, str | None] = {}  # a plain interrupt: the approval its node runs (None: it runs none)
        for iid, shape in shapes.items():
            answers = []
            call_ids = shape.get("call_ids") or [None] * len(shape["keys"])
            for key, allowed, call_id in zip(shape["keys"], shape["allowed"], call_ids, strict=True):
                decision = decided[key]
                answer = resume_value(decision) if shape["kind"] == "tool" else hitl_decision(decision, allowed)
                answers.append(answer)
                runs_here = answer["type"] in ("approve", "edit")
                if shape["kind"] == "tool":
                    nodes[key] = decision.id if runs_here else None
                if runs_here:
                    runs.append((decision, None if shape["kind"] == "tool" else call_id))
                elif decision.approved:  # approved with an edit this tool does not take: it does not run
                    refused.append((decision, answer["message"]))
            values[iid] = {"decisions": answers} if shape["kind"] == "batched" else answers[0]
        for decision, message in refused:
            await _not_run(self.host, decision.id, message)
        command: Command[Any] = Command(resume=values)
        outcome: dict[str, Any] = {}

        keys = {call_id: decision.id for decision, call_id in runs if call_id is not None}

        async def resume() -> None:
            # each of LangChain's tool calls and each resumed interrupt node runs with its own approval id as
            # approval_id(); other code, in a resume that runs several approved calls, has none (no one call)
            tasks = interrupt_tasks(await self.graph.aget_state(config, subgraphs=True), nodes) if nodes else {}
            token = _results.set({})
            try:
                with approval_id_as(runs[0][0].id if len(runs) == 1 else None):
                    outcome["state"] = await self.graph.ainvoke(command, keyed_by_call(config, keys, tasks))
                outcome["results"] = _results.get()
            finally:
                _results.reset(token)

        step: Callable[[], Awaitable[None]] = resume
        for decision, call_id in runs:
            step = self._claimed(decision, call_id, step, outcome, config)
        await step()
        if "state" in outcome:
            return outcome["state"]
        return (await self.graph.aget_state(config)).values  # another caller resumed it: its state

    def _claimed(
        self,
        decision: Decision,
        call_id: str | None,
        inner: Callable[[], Awaitable[None]],
        outcome: dict[str, Any],
        config: dict[str, Any],
    ) -> Callable[[], Awaitable[None]]:
        """``inner`` run once under ``decision``'s claim; the approval records its own call's value: the
        ``ToolMessage`` of ``call_id`` (LangChain's middleware), else what the node passed to
        :func:`record_result`, else the final state's answer."""

        async def run(_args: dict[str, Any]) -> Any:
            await inner()
            state = outcome["state"] if "state" in outcome else (await self.graph.aget_state(config)).values
            if call_id is not None and (message := tool_message(state, call_id)) is not None:
                return message_result(message, edited=decision.edited)
            recorded = outcome.get("results") or {}
            return recorded[decision.id] if decision.id in recorded else _summary(state)

        async def step() -> None:
            await self.host.run(decision.id, run)

        return step

    def _policy(self, tool: str) -> VerifyPolicy | None:
        if self.verify is None or not isinstance(self.verify, Mapping):
            return self.verify
        return self.verify.get(tool)


def hitl_decision(decision: Decision, allowed: list[str] | None) -> dict[str, Any]:
    """LangChain's ``HumanInTheLoopMiddleware`` decision for ``decision`` (``allowed``: the decisions the
    middleware takes for that tool, ``None`` for all)."""
    tool = decision.approval.tool
    if not decision.approved:
        return {"type": "reject", "message": decision.reason}
    if decision.edited:
        if allowed is not None and "edit" not in allowed:
            return {
                "type": "reject",
                "message": f"The call was edited before it was approved, but {tool} takes no edits here: nothing "
                "was done. Ask again with the right arguments.",
            }
        return {"type": "edit", "edited_action": {"name": tool, "args": decision.args}}
    return {"type": "approve"}


async def _not_run(host: ApprovalHost, approval: str, message: str) -> None:
    """Settle an approved call that will not run (the record says why), once."""

    async def refuse(_args: dict[str, Any]) -> None:
        raise RuntimeError(message)

    with suppress(RuntimeError, ApprovalRefused):
        await host.run(approval, refuse)


def _shape(value: Any) -> dict[str, Any]:
    """The calls an interrupt asks about: ``{"kind": "tool" | "tool_approval" | "batched", "calls": [(tool,
    args, allowed decisions or None), ...]}``."""
    if isinstance(value, Mapping) and isinstance(value.get("action_requests"), list):  # HITL middleware, batched
        configs = {c.get("action_name"): c.get("allowed_decisions") for c in value.get("review_configs") or []}
        calls = []
        for request in value["action_requests"]:
            tool, args = _proposal({"tool": request.get("name"), "args": request.get("args")})
            calls.append((tool, args, _allowed(tool, configs.get(tool))))
        return {"kind": "batched", "calls": calls, "call_ids": [None] * len(calls)}
    if isinstance(value, Mapping) and value.get("type") == "tool_approval":  # HITL middleware, per call
        tool, args = _proposal({"tool": value.get("name"), "args": value.get("args")})
        call_id = value.get("tool_call_id")
        return {"kind": "tool_approval", "calls": [(tool, args, None)], "call_ids": [call_id]}
    tool, args = _proposal(value)
    return {"kind": "tool", "calls": [(tool, args, None)], "call_ids": [None]}


def _allowed(tool: str, allowed: Any) -> list[str] | None:
    if allowed is None:
        return None
    decisions = [str(d) for d in allowed]
    if "reject" not in decisions:
        raise ValueError(
            f"HumanInTheLoopMiddleware allows {decisions} for {tool!r}: kit approvals need 'reject' among them "
            f"(a person may say no); use interrupt_on={{{tool!r}: True}} or add 'reject' to allowed_decisions"
        )
    return decisions


def _proposal(value: Any) -> tuple[str, dict[str, Any]]:
    if isinstance(value, Mapping) and isinstance(value.get("tool"), str) and isinstance(value.get("args", {}), Mapping):
        return value["tool"], dict(value.get("args") or {})
    raise ValueError(
        f"a kit approval needs interrupt({{'tool': <name>, 'args': {{...}}}}) or LangChain's "
        f"HumanInTheLoopMiddleware; the graph interrupted with {value!r}"
    )


def _summary(state: Any) -> str:
    """One line for the record and the chat: the last message of a messages state, else the state's keys."""
    messages = state.get("messages") if isinstance(state, Mapping) else None
    if messages:
        content = getattr(messages[-1], "content", messages[-1])
        return str(content)[:500]
    if isinstance(state, Mapping):
        result = state.get("result")
        return str(result)[:500] if result is not None else "Done."
    return str(state)[:500]


def _answer(state: Any, key: str) -> str:
    if isinstance(state, Mapping) and state.get(key) is not None:
        return str(state[key])
    return _summary(state)


def _jsonable(config: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "configurable": {
            k: v for k, v in (config.get("configurable") or {}).items() if isinstance(v, str | int | float | bool)
        }
    }
