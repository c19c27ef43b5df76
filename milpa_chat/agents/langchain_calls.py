"""LangChain's tool calls inside a LangGraph resume (``HumanInTheLoopMiddleware``): which approval each call is.

* :func:`call_ids`: the model's call ids of a batched action request (the request itself names none);
* :func:`keyed_by_call`: the resume's config with a callback that, as each tool call starts, makes
  :func:`milpa_chat.agents.approval_id` that call's own approval id (two approved calls of one model turn run in
  one resume, each with its own idempotency key);
* :func:`tool_message` / :func:`message_result`: the approved call's ``ToolMessage``, as the approval's result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from milpa_chat.agents.host import bind_approval_id
from milpa_chat.runtime.result import ToolResult

__all__ = ["call_ids", "keyed_by_call", "message_result", "tool_message"]

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


def keyed_by_call(config: Mapping[str, Any], approvals: Mapping[str, str]) -> dict[str, Any]:
    """``config`` plus a LangChain callback: a tool call whose id is in ``approvals`` runs with that approval id
    as :func:`~milpa_chat.agents.approval_id` (the callback runs inline, in the context of that one call)."""
    if not approvals:
        return dict(config)
    from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager

    class ApprovalKeys(BaseCallbackHandler):
        run_inline = True  # a plain function called inline: in the context the tool then runs in (sync or async)

        def on_tool_start(self, serialized: Any, input_str: str, **kwargs: Any) -> None:
            approval = approvals.get(str(kwargs.get("tool_call_id")))
            if approval is not None:
                bind_approval_id(approval)

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
