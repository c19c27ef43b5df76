"""The tool catalogue a model or an MCP client sees, and token budgets (``TokenEstimator``)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from milpa_chat.runtime.definition import ToolDefinition

__all__ = ["MODEL_LIMITS", "TokenEstimator", "summary_of"]

MODEL_LIMITS: dict[str, int] = {
    "gpt-3.5-turbo": 4096,
    "gpt-4": 8192,
    "gpt-4-32k": 32768,
    "gpt-4-turbo": 128000,
    "gpt-4o": 128000,
    "gpt-4.1": 1_000_000,
    "claude-2": 100000,
    "claude-3-haiku": 200000,
    "claude-3-sonnet": 200000,
    "claude-3-opus": 200000,
    "claude-3.5-sonnet": 200000,
    "claude-sonnet": 200000,
    "claude-haiku": 200000,
    "claude-opus": 200000,
}
DEFAULT_LIMIT = 8192
TOOL_BUDGET_PERCENT = 30


def _normalise_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    if not schema:
        return {"type": "object", "properties": {}}
    return dict(schema)


#: Added to the description an agent reads of a tool that does not declare its effect.
UNDECLARED = " (Its effect is not declared: it is treated as changing things, so it may ask for confirmation.)"


def summary_of(tool: ToolDefinition) -> dict[str, Any]:
    """The MCP/LLM wire shape of one tool: ``{name, description, inputSchema[, version, outputSchema]}``."""
    description = tool.description
    if not tool.effect_declared:
        description += UNDECLARED
    out: dict[str, Any] = {
        "name": tool.name,
        "description": description,
        "inputSchema": _normalise_schema(tool.input_schema),
    }
    if tool.version is not None:
        out["version"] = tool.version
    if tool.output_schema is not None:
        out["outputSchema"] = _normalise_schema(tool.output_schema)
    return out


class TokenEstimator:
    """A rough token count (4 bytes of JSON per token) and each model's tool budget (30 % of its context)."""

    def __init__(self, limits: dict[str, int] | None = None) -> None:
        self.limits = dict(MODEL_LIMITS)
        if limits:
            self.limits.update(limits)

    @staticmethod
    def estimate_tokens(text: str) -> int:
        return math.ceil(len(text.encode("utf-8")) / 4)

    def estimate_tool_tokens(self, summary: dict[str, Any]) -> int:
        return self.estimate_tokens(json.dumps(summary, ensure_ascii=False))

    def model_limit(self, model: str) -> int:
        """Exact match first, then the longest known prefix, else 8192."""
        if model in self.limits:
            return self.limits[model]
        best = max((k for k in self.limits if model.startswith(k)), key=len, default=None)
        return self.limits[best] if best else DEFAULT_LIMIT

    def tool_budget(self, model: str) -> int:
        return self.model_limit(model) * TOOL_BUDGET_PERCENT // 100

    def select_within_budget(self, summaries: Sequence[dict[str, Any]], budget: int) -> dict[str, Any]:
        """Greedy in order; a tool that does not fit is skipped and scanning goes on."""
        selected: list[dict[str, Any]] = []
        excluded: list[str] = []
        used = 0
        for s in summaries:
            t = self.estimate_tool_tokens(s)
            if used + t <= budget:
                selected.append(s)
                used += t
            else:
                excluded.append(s["name"])
        return {"tools": selected, "excluded": excluded, "tokens_used": used, "budget": budget}

    def usage_report(self, summaries: Iterable[dict[str, Any]], model: str = "gpt-4") -> str:
        per_tool = {s["name"]: self.estimate_tool_tokens(s) for s in summaries}
        used = sum(per_tool.values())
        budget = self.tool_budget(model)
        pct = round(used / budget * 100, 2) if budget else 100.0
        status = "✅ Within budget" if used <= budget else f"⚠️ OVER BUDGET by {used - budget} tokens"
        top = sorted(per_tool.items(), key=lambda kv: -kv[1])[:10]
        lines = [
            "=== Token Usage Report ===",
            f"Model: {model}",
            f"Context Limit: {self.model_limit(model)} tokens",
            f"Tool Budget ({TOOL_BUDGET_PERCENT}%): {budget} tokens",
            "",
            f"Tools Registered: {len(per_tool)}",
            f"Tokens Used: {used} tokens",
            f"Budget Usage: {pct}%",
            "",
            f"Status: {status}",
            "",
            "Top 10 Tools by Token Usage:",
            *(f"  - {name}: {tokens} tokens" for name, tokens in top),
        ]
        return "\n".join(lines)


_REVERSIBILITY = {
    "irreversible": "cannot be undone",
    "compensatable": "can be compensated afterwards",
    "reversible": "can be undone",
    "guaranteed": "is undone for sure if needed",
    "unknown": "may not be undoable",
    "not_applicable": "",
}


def effect_words(tool: ToolDefinition) -> str:
    """What the tool can do, in words, from what it declares (an operation's effect profile, else
    ``mutating``); an undeclared effect says so."""
    effects = tool.extra.get("effects")
    if isinstance(effects, Mapping) and effects.get("mutation"):
        mutation = str(effects["mutation"])
        parts = ["reads only" if mutation == "none" else f"changes {mutation.replace('_', ' ')} state"]
        reach = str(effects.get("externality") or "none")
        if reach != "none":
            parts.append(f"reaches {reach.replace('_', ' ')}")
        undo = _REVERSIBILITY.get(str(effects.get("reversibility") or ""), "")
        if undo and mutation != "none":
            parts.append(undo)
        return ", ".join(parts)
    if not tool.effect_declared:
        return "not declared: treated as changing data"
    return "changes data" if tool.mutating else "reads only"
