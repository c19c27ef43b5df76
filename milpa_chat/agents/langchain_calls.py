"""Which approval each approved call inside a LangGraph resume is (several run in one resume of the graph).

* :func:`call_ids`: the model's call ids of a batched action request (the request itself names none);
* :func:`interrupt_tasks`: the graph's tasks (nodes) paused on a plain ``interrupt()``, by task id, with the
  approval each one's interrupt asked for;
* :func:`keyed_by_call`: the resume's config with a callback that, as each of LangChain's tool calls
  (``HumanInTheLoopMiddleware``) or each resumed ``interrupt()`` node starts, makes
  :func:`milpa_chat.agents.approval_id` that call's own approval id (two approved calls of one model turn, or two
  parallel interrupt nodes, run in one resume, each with its own idempotency key);
* :func:`tool_message` / :func:`message_result`: the approved call's ``ToolMessage``, as the approval's result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from milpa_chat.agents.host import bind_approval_id
from milpa_chat.runtime.result import ToolResult

__all__ = ["call_ids", "interrupt_tasks", "keyed_by_call", "message_result", "tool_message"]

#: What LangChain's middleware puts before the result of an edited call (``HumanInTheLoopMiddleware._notice``).
EDIT_NOTICE_END = "\n\nTool response:\n"


def call_ids(snapshot: Any, calls: list[tuple[str, dict[str, Any], Any]]) -> list[str | None]:
    """The ids of the model's tool calls a batched request asks about: the middleware asks about the last
    model turn's gated calls, in order, so each request is the next call of that turn with its name and args."""
    messages = (getattr(snapshot, "values", None) or {}).get("messages") or []
    turn = next((m for m in reversed(messages) if getattr(m, "tool_calls", None)), None)
    pending = list(getattr(turn, "tool_calls", None) or [])
    ids: list[str | None] = []
    for tool, args, _ in calls:
        at = next((i for i, c in enumerate(pending) if c.get("name") == tool and c.get("args") == args), None)
        ids.append(None if at is None else pending[at].get("id"))
        pending = pending if at is None else pending[at + 1 :]
    return ids


def interrupt_tasks(snapshot: Any, approvals: Mapping[str, str | None]) -> dict[str, str | None]:
    """The tasks of ``snapshot`` (``graph.aget_state(config, subgraphs=True)``, nested graphs included) paused on
    exactly one of the interrupts in ``approvals`` (interrupt id: the approval that runs, or ``None`` when it does
    not run), by task id. A task paused on several (a subgraph's node with parallel interrupts inside) names none
    of them: its inner tasks do."""
    tasks: dict[str, str | None] = {}
    for task in getattr(snapshot, "tasks", None) or ():
        ids = [i.id for i in task.interrupts if i.id in approvals]
        if len(ids) == 1:
            tasks[task.id] = approvals[ids[0]]
        tasks.update(interrupt_tasks(task.state, approvals))  # a subgraph's snapshot, with its own tasks
    return tasks


def keyed_by_call(
    config: Mapping[str, Any], approvals: Mapping[str, str], tasks: Mapping[str, str | None] | None = None
) -> dict[str, Any]:
    """``config`` plus a LangChain callback: a tool call whose id is in ``approvals``, and a graph node run by a
    task in ``tasks`` (see :func:`interrupt_tasks`), run with that approval id as
    :func:`~milpa_chat.agents.approval_id` (the callback runs inline, in the context of that one call or node,
    before its code: an ``async def`` node on the event loop and a plain one in its thread both inherit it)."""
    by_task = dict(tasks or {})
    if not approvals and not by_task:
        return dict(config)
    from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager

    class ApprovalKeys(BaseCallbackHandler):
        run_inline = True  # a plain function called inline: in the context the call then runs in (sync or async)

        def on_tool_start(self, serialized: Any, input_str: str, **kwargs: Any) -> None:
            approval = approvals.get(str(kwargs.get("tool_call_id")))
            if approval is not None:
                bind_approval_id(approval)

        def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
            # a node's run carries its task's namespace, "node:<task id>" (after "outer:<id>|" in a subgraph)
            namespace = str((kwargs.get("metadata") or {}).get("langgraph_checkpoint_ns") or "")
            task = namespace.rsplit("|", 1)[-1].rpartition(":")[2]
            if task in by_task:
                bind_approval_id(by_task[task])

    keys = ApprovalKeys()
    callbacks = config.get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        callbacks = callbacks.copy()
        callbacks.add_handler(keys, inherit=True)
    else:
        callbacks = [*(callbacks or []), keys]
    return {**config, "callbacks": callbacks}


def tool_message(state: Any, call_id: str) -> Any:
    """The ``ToolMessage`` that answered the model's call ``call_id`` in a messages state, or ``None``."""
    messages = state.get("messages") if isinstance(state, Mapping) else None
    found = [m for m in messages or [] if getattr(m, "tool_call_id", None) == call_id]
    return found[-1] if found else None


def message_result(message: Any, *, edited: bool) -> Any:
    """What the tool returned, from its ``ToolMessage``: the content (an edited call's without the middleware's
    notice to the model); a message with ``status="error"`` records a failure."""
    content = message.content if isinstance(message.content, str) else message.text
    if edited and EDIT_NOTICE_END in content:
        content = content.split(EDIT_NOTICE_END, 1)[1]
    if getattr(message, "status", "success") == "error":
        return ToolResult.error(content[:500])
    return content
