"""Agent mode: free text goes to :class:`~milpa_chat.gateway.ChatAgent` when a model is configured.

Configured from the environment: ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, or an OpenAI-compatible server's
``OPENAI_BASE_URL`` (e.g. ``http://127.0.0.1:11434/v1`` for Ollama); ``MILPA_LLM_MODEL`` picks the model.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["HOW_TO_ENABLE", "AgentSetup", "agent_from_env"]

HOW_TO_ENABLE = (
    "Agent mode is off: free text is answered with the command list. Turn it on by starting the playground with "
    "OPENAI_API_KEY or ANTHROPIC_API_KEY set, or OPENAI_BASE_URL pointing at an OpenAI-compatible server "
    "(Ollama, vLLM, LM Studio); MILPA_LLM_MODEL picks the model."
)
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5"}


@dataclass(frozen=True)
class AgentSetup:
    """The agent (``None`` when off) and a sentence for the page saying what is on, or how to turn it on."""

    agent: Any
    description: str

    @property
    def enabled(self) -> bool:
        return self.agent is not None


def agent_from_env(env: Mapping[str, str] | None = None) -> AgentSetup:
    """A ``ChatAgent`` over the model the environment names, or an off setup explaining how to enable it."""
    env = os.environ if env is None else env
    base_url = env.get("OPENAI_BASE_URL") or None
    if env.get("ANTHROPIC_API_KEY") and not env.get("OPENAI_API_KEY") and base_url is None:
        provider, api_key = "anthropic", env["ANTHROPIC_API_KEY"]
    elif env.get("OPENAI_API_KEY") or base_url is not None:
        provider, api_key = "openai", env.get("OPENAI_API_KEY") or "local"
    else:
        return AgentSetup(None, HOW_TO_ENABLE)
    model = env.get("MILPA_LLM_MODEL") or DEFAULT_MODELS[provider]
    from milpa_chat.gateway import ChatAgent, LlmService

    llm = LlmService(provider=provider, model=model, api_key=api_key, base_url=base_url, max_retries=0)
    where = f" at {base_url}" if base_url else ""
    text = (
        f"Agent mode is on ({provider} model {model}{where}): free text goes to the agent, and its risky "
        "calls wait for the same buttons."
    )
    return AgentSetup(ChatAgent(llm), text)
