"""``SecondOpinionGate``: a second model reads each watched call against the human's request.

The judge answers one line, ``ALLOW`` or ``DENY: <reason>``. A denial takes the tool off the
:class:`~milpa_chat.gateway.gates.OptionTable` (code ``beyond_request``), so the reason goes back to
the agent and it can take another way; it also leaves a witness in the log, outside the
conversation it writes to. An allow is silent. A judge that fails, answers nothing or answers
without a verdict does not count as approval: each refuses with its own cause and never removes
the option, so the run pauses for a person.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from milpa_chat.gateway.gates import OptionTable, Refusal, ToolCall, ToolCallGate, maybe_await

if TYPE_CHECKING:
    from milpa_chat.gateway.llm import LlmService
    from milpa_chat.runtime.result import ToolResult

__all__ = [
    "BEYOND_REQUEST",
    "JUDGE_EMPTY",
    "JUDGE_FAILED",
    "JUDGE_NO_VERDICT",
    "SecondOpinionGate",
    "judge_prompt",
]

BEYOND_REQUEST = "beyond_request"
JUDGE_FAILED = "judge_failed"
JUDGE_EMPTY = "judge_empty"
JUDGE_NO_VERDICT = "judge_no_verdict"

_DENY = re.compile(r"\bDENY\b\s*:?\s*(.*)", re.IGNORECASE)
_ALLOW = re.compile(r"\bALLOW\b", re.IGNORECASE)
_DEFAULT_DENIAL = "a second reader considered that this goes beyond what was asked"

log = logging.getLogger("milpa_chat.gateway.second_opinion")


def judge_prompt(task: str, call: ToolCall) -> str:
    """What the judge is asked: the request verbatim and the proposed call (never the agent's reasoning)."""
    if not call.arguments:
        shown = "(no arguments)"
    else:
        try:
            shown = json.dumps(call.arguments, indent=4, ensure_ascii=False)
        except (TypeError, ValueError):
            shown = "(unreadable arguments)"
    return (
        "You are a second reader deciding whether one tool call may run.\n\n"
        f"The request, verbatim: «{task}»\n\n"
        f"The proposed call:\ntool: {call.name}\narguments: {shown}\n\n"
        "Rule: ALLOW when carrying out the request requires this tool call; DENY when running it goes "
        "beyond the request.\n"
        "Asking what would happen is answered by reading, not by changing anything.\n\n"
        "Answer with one line: ALLOW, or DENY: <short reason, in the language of the request>."
    )


class SecondOpinionGate:
    """Ask ``judge`` (a second :class:`~milpa_chat.gateway.LlmService`) before each watched call.

    ``task`` is the human's request, verbatim. ``floor`` is an optional gate asked first: its
    refusal is returned as it is, without asking the judge or touching the table (a floor refusal
    is a pause, not a removal). ``watch`` names the tools that get a second look; empty means every
    call is judged. ``alternatives`` maps a tool to a read-only tool to suggest instead. ``options``
    is the table a denial removes the tool from; give the orchestrator the same table.
    """

    def __init__(
        self,
        judge: LlmService,
        task: str,
        *,
        floor: ToolCallGate | None = None,
        watch: Iterable[str] = (),
        alternatives: Mapping[str, str] | None = None,
        options: OptionTable | None = None,
        logger: logging.Logger | None = None,
        max_tokens: int = 200,
    ) -> None:
        self.judge = judge
        self.task = task
        self.floor = floor
        self.watch = frozenset(watch)
        self.alternatives = dict(alternatives or {})
        self.options = options
        self.log = logger or log
        self.max_tokens = max_tokens

    async def refuse(self, call: ToolCall) -> str | None:
        if self.floor is not None:
            reason = await maybe_await(self.floor.refuse(call))
            if reason is not None:
                return reason
        if self.watch and call.name not in self.watch:
            return None
        return await self._judge(call)

    async def record(self, call: ToolCall, result: ToolResult) -> None:
        if self.floor is not None:
            await maybe_await(self.floor.record(call, result))

    async def _judge(self, call: ToolCall) -> Refusal | None:
        try:
            reply = await self.judge.generate(judge_prompt(self.task, call), max_tokens=self.max_tokens)
        except Exception as exc:
            self.log.warning("second opinion failed for %s: %s", call.name, exc)
            return Refusal(
                f"The second reader could not judge this call to {call.name} ({exc}); it was not run "
                f"and a person has to decide.",
                JUDGE_FAILED,
            )
        content = reply.get("content")
        text = content.strip() if isinstance(content, str) else ""
        if not text:
            self.log.warning("second opinion answered nothing for %s", call.name)
            return Refusal(
                f"The second reader answered nothing about this call to {call.name}; it was not run "
                f"and a person has to decide.",
                JUDGE_EMPTY,
            )
        denied = _DENY.search(text)
        if denied is not None:
            return self._deny(call, denied.group(1).strip())
        if _ALLOW.search(text):
            return None  # approving is silent
        self.log.warning("second opinion gave no verdict for %s: %r", call.name, text[:200])
        return Refusal(
            f"The second reader answered about this call to {call.name} without ALLOW or DENY; it was "
            f"not run and a person has to decide.",
            JUDGE_NO_VERDICT,
        )

    def _deny(self, call: ToolCall, reason: str) -> Refusal:
        verdict = reason or _DEFAULT_DENIAL
        alternative = self.alternatives.get(call.name)
        if alternative:
            verdict += f" — instead run `{alternative}`, which answers the same without changing anything."
        self.log.info("second opinion denied %s: %s", call.name, verdict)
        if self.options is not None:
            self.options.remove(call.name, BEYOND_REQUEST, verdict)
        return Refusal(verdict, BEYOND_REQUEST)
