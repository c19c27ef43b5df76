"""A Telegram assistant whose payments agent is built on pydantic-ai, the OpenAI Agents SDK, LangGraph or LangChain
(``create_agent`` with its ``HumanInTheLoopMiddleware``); every payment it proposes waits for a manager's tap (kit
approvals), then runs once.

::

    TELEGRAM_TOKEN=123456:ABC... OPENAI_API_KEY=sk-... AGENT_FRAMEWORK=pydantic-ai python -m bots.agent_payments

Write "pay ACME 120" to the bot: the managers' group gets the card; Approve runs the payment, Reject tells the
agent why. A process killed while people decide is resumed by the next one.

Configuration, all from the environment:

``TELEGRAM_TOKEN``     the bot token from @BotFather (required)
``AGENT_FRAMEWORK``    ``pydantic-ai`` (default), ``openai-agents``, ``langchain`` (LangChain's ``create_agent`` on
                       ``ChatOpenAI``, gated by ``HumanInTheLoopMiddleware``) or ``langgraph`` (this one needs no
                       model: its graph reads "pay <to> <amount>" itself)
``OPENAI_API_KEY``     the model's key (pydantic-ai, the OpenAI Agents SDK and LangChain; ``OPENAI_BASE_URL`` for
                       another OpenAI-compatible server, ``OPENAI_MODEL`` for the model, default ``gpt-4o-mini``)
``MILPA_STORE``        the SQLite file for approvals and paused runs (default ``agent_payments.db``; LangGraph and
                       LangChain keep their threads beside it, in ``<MILPA_STORE>.graph``)
``MILPA_IDENTITIES``   who may pay and who approves (default ``bots/identities.example.toml``)
``TELEGRAM_BASE_URL``  another Bot API server (optional)
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import secrets
import sys
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack, suppress
from pathlib import Path
from typing import Any

from milpa_chat import ToolRegistry
from milpa_chat.agents import ApprovalHost, approval_id
from milpa_chat.chat import Assistant, Identities
from milpa_chat.runtime.definition import VerifyPolicy

__all__ = ["FRAMEWORKS", "build", "main"]

EXAMPLE_IDENTITIES = Path(__file__).with_name("identities.example.toml")
MANAGERS = VerifyPolicy(approver_scopes=("payments:approve",), expires_in=3600)
INSTRUCTIONS = "You make payments for the user with send_payment. Answer in one short sentence."
PAYMENT_SCHEMA = {
    "type": "object",
    "properties": {"to": {"type": "string"}, "amount": {"type": "number"}},
    "required": ["to", "amount"],
}
log = logging.getLogger("bots.agent_payments")


def send_payment(to: str, amount: float) -> str:
    """Send a payment of ``amount`` EUR to ``to`` (here: only said; a real one calls the bank with the key)."""
    return f"Paid {float(amount):.2f} EUR to {to} (payment key {approval_id()})."


def _openai(env: Mapping[str, str]) -> tuple[str, str | None, str]:
    key = env.get("OPENAI_API_KEY", "")
    if not key:
        raise SystemExit("error: OPENAI_API_KEY is not set (the agent's model); or use AGENT_FRAMEWORK=langgraph")
    return key, env.get("OPENAI_BASE_URL") or None, env.get("OPENAI_MODEL") or "gpt-4o-mini"


async def pydantic_ai_agent(host: ApprovalHost, env: Mapping[str, str], stack: AsyncExitStack) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from milpa_chat.agents.pydantic_ai import PydanticAIApprovals

    key, base_url, model = _openai(env)
    agent = Agent(
        OpenAIChatModel(model, provider=OpenAIProvider(base_url=base_url, api_key=key)), instructions=INSTRUCTIONS
    )
    agent.tool_plain(requires_approval=True)(send_payment)
    return PydanticAIApprovals(host, agent, verify=MANAGERS)


async def openai_agents_agent(host: ApprovalHost, env: Mapping[str, str], stack: AsyncExitStack) -> Any:
    from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    from milpa_chat.agents.openai_agents import OpenAIAgentsApprovals

    key, base_url, model = _openai(env)
    set_tracing_disabled(base_url is not None)  # traces go to OpenAI's platform only with OpenAI itself
    client = AsyncOpenAI(api_key=key, base_url=base_url)
    agent = Agent(
        name="payments",
        instructions=INSTRUCTIONS,
        tools=[function_tool(send_payment, needs_approval=True)],
        model=OpenAIChatCompletionsModel(model=model, openai_client=client),
    )
    return OpenAIAgentsApprovals(host, agent, verify=MANAGERS)


async def _checkpointer(env: Mapping[str, str], stack: AsyncExitStack) -> Any:
    """LangGraph's SQLite checkpointer beside ``MILPA_STORE``: a paused thread outlives the process."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    checkpoints = f"{env.get('MILPA_STORE') or 'agent_payments.db'}.graph"
    return await stack.enter_async_context(AsyncSqliteSaver.from_conn_string(checkpoints))


async def langchain_agent(host: ApprovalHost, env: Mapping[str, str], stack: AsyncExitStack) -> Any:
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    from milpa_chat.agents.langgraph import LangGraphApprovals

    key, base_url, model = _openai(env)
    agent = create_agent(
        # chat completions, which every OpenAI-compatible server speaks (not the Responses API)
        ChatOpenAI(model=model, api_key=SecretStr(key), base_url=base_url, use_responses_api=False),
        tools=[tool(send_payment)],
        system_prompt=INSTRUCTIONS,
        middleware=[HumanInTheLoopMiddleware({"send_payment": True})],
        checkpointer=await _checkpointer(env, stack),
    )
    return LangGraphApprovals(host, agent, verify=MANAGERS, name="agent", schemas={"send_payment": PAYMENT_SCHEMA})


async def langgraph_agent(host: ApprovalHost, env: Mapping[str, str], stack: AsyncExitStack) -> Any:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    from milpa_chat.agents.langgraph import LangGraphApprovals, record_result

    class State(TypedDict, total=False):
        request: str
        result: str

    async def pay(state: State) -> State:
        found = re.search(r"pay\s+(\S+)\s+(\d+(?:\.\d+)?)", state.get("request", ""), re.IGNORECASE)
        if found is None:
            return {"result": 'Write "pay <to> <amount>", e.g. "pay ACME 120".'}
        answer = interrupt({"tool": "send_payment", "args": {"to": found[1], "amount": float(found[2])}})
        if answer["type"] == "reject":
            return {"result": answer["message"]}
        return {"result": record_result(answer, send_payment(**answer["args"]))}  # the approval's result

    builder = StateGraph(State)
    builder.add_node("pay", pay)
    builder.add_edge(START, "pay")
    builder.add_edge("pay", END)
    graph = builder.compile(checkpointer=await _checkpointer(env, stack))
    return LangGraphApprovals(host, graph, verify=MANAGERS, schemas={"send_payment": PAYMENT_SCHEMA})


FRAMEWORKS = {
    "pydantic-ai": pydantic_ai_agent,
    "openai-agents": openai_agents_agent,
    "langgraph": langgraph_agent,
    "langchain": langchain_agent,
}
#: How a person's text becomes the graph's input (LangGraph and LangChain runs; each run its own thread).
GRAPH_INPUTS: dict[str, Callable[[str], dict[str, Any]]] = {
    "langgraph": lambda text: {"request": text},
    "langchain": lambda text: {"messages": [{"role": "user", "content": text}]},
}


async def build(env: Mapping[str, str], stack: AsyncExitStack) -> tuple[Assistant, Any]:
    """The assistant (over ``MILPA_STORE``) whose agent is the chosen framework's, with kit approvals."""
    from milpa_chat.store.sqlite import SqliteStore

    framework = env.get("AGENT_FRAMEWORK") or "pydantic-ai"
    if framework not in FRAMEWORKS:
        raise SystemExit(f"error: AGENT_FRAMEWORK={framework!r}; use one of: {', '.join(FRAMEWORKS)}")
    store = SqliteStore(env.get("MILPA_STORE") or "agent_payments.db")
    stack.push_async_callback(store.close)
    identities = Identities.from_toml(env.get("MILPA_IDENTITIES") or EXAMPLE_IDENTITIES)
    assistant = Assistant(ToolRegistry(store=store), identities, name="Payments agent", edits=True)
    approvals = await FRAMEWORKS[framework](ApprovalHost(assistant), env, stack)
    if framework in GRAPH_INPUTS:
        graph_input = GRAPH_INPUTS[framework]
        assistant.agent = approvals.chat_agent(
            lambda text: (graph_input(text), {"configurable": {"thread_id": secrets.token_hex(8)}})
        )
    else:
        assistant.agent = approvals.chat_agent()
    return assistant, approvals


async def serve(env: Mapping[str, str]) -> None:
    from milpa_chat.bots.telegram import TelegramBot

    token = env.get("TELEGRAM_TOKEN", "")
    if ":" not in token:
        raise SystemExit(
            "error: TELEGRAM_TOKEN is not set: create a bot with @BotFather, then run\n"
            "  TELEGRAM_TOKEN=123456:ABC... python -m bots.agent_payments"
        )
    async with AsyncExitStack() as stack:
        assistant, approvals = await build(env, stack)
        bot = TelegramBot(assistant, token, env.get("TELEGRAM_BASE_URL") or None)
        await bot.start()
        stack.push_async_callback(bot.stop)
        resumed = asyncio.create_task(approvals.resume_pending())  # what a killed process left paused
        log.info("Polling; write 'pay ACME 120' to the bot")
        try:
            await asyncio.Event().wait()
        finally:
            resumed.cancel()


def main(env: Mapping[str, str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    with suppress(KeyboardInterrupt):
        asyncio.run(serve(os.environ if env is None else env))
    return 0


if __name__ == "__main__":
    sys.exit(main())
