"""Agent mode: free text goes to :class:`~milpa_chat.gateway.ChatAgent`, over a real model or a scripted one.

A real model is configured from the environment: ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, or an
OpenAI-compatible server's ``OPENAI_BASE_URL`` (e.g. ``http://127.0.0.1:11434/v1`` for Ollama);
``MILPA_LLM_MODEL`` picks the model. Without any of them the agent runs on the playground's scripted model
(:mod:`milpa_chat.playground.scripted_model`) behind the kit's local OpenAI server, through the same SDK,
gateway and agent loop a real model goes through, and the page says so.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "HOW_TO_ENABLE",
    "SCRIPTED",
    "STREAM_DELAY_ENV",
    "AgentSetup",
    "agent_from_env",
    "start_agent",
    "stream_delay",
]

HOW_TO_ENABLE = (
    "Agent mode is off: free text is answered with the command list. Turn it on by starting the playground with "
    "OPENAI_API_KEY or ANTHROPIC_API_KEY set, or OPENAI_BASE_URL pointing at an OpenAI-compatible server "
    "(Ollama, vLLM, LM Studio); MILPA_LLM_MODEL picks the model."
)
SCRIPTED = (
    "Agent mode: scripted model — no provider key; set OPENAI_API_KEY/ANTHROPIC_API_KEY for a real model. "
    "Type a plain request in any chat: “pay ACME 120”, “delete the note about milk”, “find notes about the "
    "plumber”, “list my notes”."
)
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5"}
#: Seconds between the words of the scripted model's answers (default 0: each answer streams at once); e.g.
#: ``0.2`` to watch a Telegram draft or a Slack stream grow word by word.
STREAM_DELAY_ENV = "MILPA_PLAYGROUND_STREAM_DELAY"
#: The model name the scripted model answers to (what the requests it reads carry).
SCRIPTED_MODEL = "scripted-playground-model"


@dataclass(frozen=True)
class AgentSetup:
    """The agent (``None`` when off) and a sentence for the page saying what is on, or how to turn it on.
    ``scripted``: the agent runs on the playground's scripted model (no provider key)."""

    agent: Any
    description: str
    scripted: bool = False

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


def stream_delay(env: Mapping[str, str] | None = None) -> float:
    """:data:`STREAM_DELAY_ENV` as seconds (0 when unset), or a clear error naming the variable."""
    raw = ((os.environ if env is None else env).get(STREAM_DELAY_ENV) or "0").strip()
    try:
        delay = float(raw)
    except ValueError:
        delay = -1.0
    if not 0 <= delay <= 10:
        raise ValueError(f"{STREAM_DELAY_ENV}={raw!r}: give the seconds between words, from 0 to 10 (e.g. 0.2)")
    return delay


async def start_agent(env: Mapping[str, str] | None, stack: contextlib.AsyncExitStack) -> AgentSetup:
    """:func:`agent_from_env`; without a provider configured, the scripted model on a local OpenAI server
    (started on ``stack``, stopped with it) behind the same ``ChatAgent``."""
    setup = agent_from_env(env)
    if setup.enabled:
        return setup
    from milpa_chat.gateway import ChatAgent, LlmService
    from milpa_chat.playground.scripted_model import ScriptedModel
    from milpa_chat.testing.llm import FakeOpenAIServer

    model = ScriptedModel(word_delay=stream_delay(env))
    server = await stack.enter_async_context(FakeOpenAIServer(api_key="scripted", responder=model))
    llm = LlmService(
        provider="openai", model=SCRIPTED_MODEL, api_key="scripted", base_url=server.base_url, max_retries=0
    )
    stack.push_async_callback(llm.aclose)
    return AgentSetup(ChatAgent(llm), SCRIPTED, scripted=True)
