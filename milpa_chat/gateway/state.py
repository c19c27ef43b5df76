"""What an agent run hands back: ``AgentRun``, and the resumable ``AgentState`` of a paused run.

A paused state is plain JSON (:meth:`AgentState.to_dict`), so it can be stored with the approval a
person is asked for and resumed by another process after a restart.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from milpa_chat.gateway.gates import ToolCall
from milpa_chat.runtime.result import ErrorCode, ToolResult

__all__ = [
    "AgentRun",
    "AgentState",
    "PauseReason",
    "PendingCall",
    "RunStatus",
    "StepStatus",
    "ToolOutcome",
    "declined",
]

RunStatus = Literal["answered", "paused", "exhausted", "tool_call_as_text"]
#: ``confirmation`` (the requester confirms), ``verification`` (an approver decides), ``blocked``
#: (a rule blocked the call), ``refused`` (a gate refused without removing the option).
PauseReason = Literal["confirmation", "verification", "blocked", "refused"]
#: A step of the agent's plan as a stream shows it (Slack's task states): waiting, running, done, failed.
StepStatus = Literal["pending", "in_progress", "complete", "error"]
STATE_VERSION = 1


def _jsonable(result: ToolResult) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(result.to_json(indent=None))
    return decoded


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """A call the run made and the result the model was given for it."""

    call: ToolCall
    result: ToolResult


@dataclass(frozen=True, slots=True)
class PendingCall:
    """The call a paused run waits on, why, and what the pipeline (or the gate) said about it."""

    call: ToolCall
    reason: PauseReason
    result: ToolResult | None = None
    refusal: str | None = None
    refusal_code: str | None = None

    @property
    def confirm_token(self) -> str | None:
        """The registry's one-time token when the call waits for its requester to confirm."""
        return self.result.confirm_token if self.result is not None else None

    @property
    def request_id(self) -> str | None:
        """The verification request id when the call waits for an approver."""
        data = self.result.data if self.result is not None else None
        value = data.get("request_id") if isinstance(data, Mapping) else None
        return str(value) if value is not None else None

    @property
    def explanation(self) -> str:
        """A sentence for a person: why the call did not run (yet)."""
        if self.refusal is not None:
            return self.refusal
        if self.result is None:
            return f"{self.call.name} did not run."
        return self.result.error or self.result.message or f"{self.call.name} needs a decision first."

    def to_dict(self) -> dict[str, Any]:
        return {
            "call": self.call.to_dict(),
            "reason": self.reason,
            "result": None if self.result is None else _jsonable(self.result),
            "refusal": None if self.refusal is None else str(self.refusal),
            "refusal_code": self.refusal_code,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PendingCall:
        result = data.get("result")
        return cls(
            ToolCall.from_dict(data["call"]),
            data["reason"],
            None if result is None else ToolResult.from_dict(result),
            data.get("refusal"),
            data.get("refusal_code"),
        )


@dataclass(slots=True)
class AgentState:
    """A run stopped at ``pending``: the messages so far, the call waiting for a decision, and the calls
    of the same step still queued behind it. ``removed`` are the option table's removals.

    A run paused with ``gather`` waits on several calls of one step: ``waiting`` lists them all (``pending``
    is the first), and ``held`` is the step's calls in the model's order, each with its result when it
    needed no decision (``None`` for a waiting one)."""

    messages: list[dict[str, Any]]
    pending: PendingCall
    queued: list[ToolCall] = field(default_factory=list)
    steps: int = 0
    removed: list[dict[str, Any]] = field(default_factory=list)
    waiting: list[PendingCall] = field(default_factory=list)
    held: list[tuple[ToolCall, ToolResult | None]] = field(default_factory=list)

    @property
    def approval(self) -> dict[str, Any]:
        """What a person is asked to decide: ``{kind, tool, confirm_token | request_id}``."""
        out: dict[str, Any] = {"kind": self.pending.reason, "tool": self.pending.call.name}
        if self.pending.confirm_token:
            out["confirm_token"] = self.pending.confirm_token
        if self.pending.request_id:
            out["request_id"] = self.pending.request_id
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (lists, dicts, strings, numbers), ready to store."""
        state: dict[str, Any] = {
            "version": STATE_VERSION,
            "messages": self.messages,
            "pending": self.pending.to_dict(),
            "queued": [c.to_dict() for c in self.queued],
            "steps": self.steps,
            "removed": self.removed,
        }
        if self.held:
            state["waiting"] = [w.to_dict() for w in self.waiting]
            state["held"] = [{"call": c.to_dict(), "result": None if r is None else _jsonable(r)} for c, r in self.held]
        decoded: dict[str, Any] = json.loads(json.dumps(state, ensure_ascii=False, default=str))
        return decoded

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentState:
        if data.get("version") != STATE_VERSION:
            raise ValueError(
                f"AgentState.from_dict(): unknown state version {data.get('version')!r} "
                f"(this version of milpa-chat reads {STATE_VERSION})"
            )
        return cls(
            messages=[dict(m) for m in data["messages"]],
            pending=PendingCall.from_dict(data["pending"]),
            queued=[ToolCall.from_dict(c) for c in data.get("queued", [])],
            steps=int(data.get("steps", 0)),
            removed=[dict(r) for r in data.get("removed", [])],
            waiting=[PendingCall.from_dict(w) for w in data.get("waiting", [])],
            held=[
                (ToolCall.from_dict(h["call"]), None if h.get("result") is None else ToolResult.from_dict(h["result"]))
                for h in data.get("held", [])
            ],
        )


@dataclass(slots=True)
class AgentRun:
    """The outcome of :meth:`AgentOrchestrator.run` or :meth:`~AgentOrchestrator.resume`.

    ``status``: ``answered`` (``answer`` holds the model's final text), ``paused`` (``state`` holds
    the resumable state; a person decides), ``exhausted`` (``max_steps`` model calls without a final
    answer) or ``tool_call_as_text`` (the model wrote a tool call as text; nothing was run, ``answer``
    says so). ``messages`` is the whole history, ``steps`` the model calls made so far (a resumed run
    keeps counting), ``tool_results`` the calls this invocation handled with their results.
    """

    status: RunStatus
    messages: list[dict[str, Any]]
    steps: int
    tool_results: list[ToolOutcome] = field(default_factory=list)
    answer: str | None = None
    state: AgentState | None = None

    @property
    def paused(self) -> bool:
        return self.status == "paused"

    @property
    def pending(self) -> PendingCall | None:
        return self.state.pending if self.state is not None else None


_DECLINED = {
    "cancelled": "The user cancelled this call; it was not run.",
    "rejected": "An approver rejected this call; it was not run.",
    "expired": "Nobody decided in time; the request expired and the call was not run.",
}


def declined(decision: str, *, by: str | None = None, note: str | None = None) -> ToolResult:
    """The result a model is given for a call a person did not let run (``cancelled``, ``rejected``, ``expired``)."""
    text = _DECLINED.get(decision, f"The call was {decision}; it was not run.")
    if by and decision in ("cancelled", "rejected"):
        text = text.replace("The user", by).replace("An approver", f"{by} (an approver)")
    if note:
        text += f" Note: {note}"
    return ToolResult.error(
        text + " Do not try it again unless the user asks.",
        code=ErrorCode.FORBIDDEN,
        meta={"decision": decision, "decided_by": by},
    )
