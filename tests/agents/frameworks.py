"""The same payment agent on each framework, scripted: asked anything, its model calls
``send_payment(to="ACME", amount=120)`` (which needs approval), then answers with what the tool returned.

Each driver builds the framework's agent with kit approvals on an :class:`ApprovalHost`, and says what the
framework saw as the tool's outcome (the tool's value, or the denial with its reason)."""

from __future__ import annotations

import asyncio
import json
import secrets
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from milpa_chat.agents import ApprovalHost, approval_id
from milpa_chat.runtime.approval import Approval
from milpa_chat.runtime.definition import VerifyPolicy

APPROVERS = -500
SLACK_APPROVERS = "C0APPROVE"
TEAM = "T1"
#: Slack user ids of the same people.
SLACK_PEOPLE = {"alice": "U1001", "maria": "U2001", "mateo": "U2002"}
#: Alice asks for payments; Maria and Mateo approve them in the approvers' group (Telegram) or channel (Slack).
IDENTITIES: dict[str, Any] = {
    "roles": {"writer": ["payments:send"], "manager": ["payments:approve", "verification:approve"]},
    "users": {
        "telegram:1001": ["writer"],
        "telegram:2001": ["manager"],
        "telegram:2002": ["manager"],
        f"slack:{TEAM}:{SLACK_PEOPLE['alice']}": ["writer"],
        f"slack:{TEAM}:{SLACK_PEOPLE['maria']}": ["manager"],
        f"slack:{TEAM}:{SLACK_PEOPLE['mateo']}": ["manager"],
    },
    "approvers": {"telegram": [str(APPROVERS)], "slack": [SLACK_APPROVERS]},
}
MANAGERS = VerifyPolicy(approver_scopes=("payments:approve",), expires_in=600)
PAYMENT = {"to": "ACME", "amount": 120}
SCHEMA = {
    "type": "object",
    "properties": {"to": {"type": "string"}, "amount": {"type": "number"}},
    "required": ["to", "amount"],
    "additionalProperties": False,
}


@dataclass
class Ledger:
    """Every payment the tool made: ``(to, amount, approval id)``; also appended to ``path`` (one JSON line
    each) so a test sees the payments of another process."""

    path: Path | None = None
    paid: list[tuple[str, float, str | None]] = field(default_factory=list)

    def pay(self, to: str, amount: float) -> str:
        entry = (to, float(amount), approval_id())
        self.paid.append(entry)
        if self.path is not None:
            with self.path.open("a") as out:
                out.write(json.dumps(entry) + "\n")
        return f"Paid {float(amount):.2f} EUR to {to}."


class PydanticAI:
    name = "pydantic-ai"
    framework = "pydantic-ai:agent"

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def build(
        self, host: ApprovalHost, ledger: Ledger, verify: VerifyPolicy | None, stack: AsyncExitStack, workdir: Path
    ) -> tuple[Any, Any]:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
        from pydantic_ai.models.function import FunctionModel

        from milpa_chat.agents.pydantic_ai import PydanticAIApprovals

        def model(messages: list[Any], info: Any) -> ModelResponse:
            for part in messages[-1].parts:
                if isinstance(part, ToolReturnPart):
                    self.seen.append(str(part.content))
                    return ModelResponse(parts=[TextPart(f"Done: {part.content}")])
            return ModelResponse(parts=[ToolCallPart("send_payment", dict(PAYMENT))])

        agent = Agent(FunctionModel(model), output_type=str)

        @agent.tool_plain(requires_approval=True)
        def send_payment(to: str, amount: float) -> str:
            """Send a payment."""
            return ledger.pay(to, amount)

        approvals = PydanticAIApprovals(host, agent, verify=verify)
        return approvals, approvals.chat_agent()


class OpenAIAgents:
    name = "openai-agents"
    framework = "openai-agents:agent"

    def __init__(self, base_url: str | None = None, api_key: str = "sk-test") -> None:
        self.base_url, self.api_key = base_url, api_key
        self.fake: Any = None

    async def build(
        self, host: ApprovalHost, ledger: Ledger, verify: VerifyPolicy | None, stack: AsyncExitStack, workdir: Path
    ) -> tuple[Any, Any]:
        from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
        from openai import AsyncOpenAI

        from milpa_chat.agents.openai_agents import OpenAIAgentsApprovals
        from milpa_chat.testing.llm import FakeOpenAIServer

        set_tracing_disabled(True)
        if self.base_url is None:
            self.fake = await stack.enter_async_context(FakeOpenAIServer())
            self.fake.reply_tool_call("send_payment", dict(PAYMENT), id="call_pay").reply_text("Done.")
            self.base_url, self.api_key = self.fake.base_url, self.fake.api_key
        client = AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=0)

        def send_payment(to: str, amount: float) -> str:
            """Send a payment."""
            return ledger.pay(to, amount)

        agent = Agent(
            name="payer",
            instructions="Pay what you are asked to pay.",
            tools=[function_tool(send_payment, needs_approval=True)],
            model=OpenAIChatCompletionsModel(model="gpt-test", openai_client=client),
        )
        approvals = OpenAIAgentsApprovals(host, agent, verify=verify)
        return approvals, approvals.chat_agent()

    @property
    def seen(self) -> list[str]:
        """Every tool result the model was sent (the last request's tool messages)."""
        if self.fake is None or not self.fake.bodies:
            return []
        return [str(m["content"]) for m in self.fake.bodies[-1]["messages"] if m.get("role") == "tool"]


class LangGraph:
    name = "langgraph"
    framework = "langgraph:graph"

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def build(
        self, host: ApprovalHost, ledger: Ledger, verify: VerifyPolicy | None, stack: AsyncExitStack, workdir: Path
    ) -> tuple[Any, Any]:
        from typing import TypedDict

        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
        from langgraph.graph import END, START, StateGraph
        from langgraph.types import interrupt

        from milpa_chat.agents.langgraph import LangGraphApprovals

        class State(TypedDict, total=False):
            request: str
            result: str

        async def pay(state: State) -> State:
            answer = interrupt({"tool": "send_payment", "args": dict(PAYMENT)})
            result = answer["message"] if answer["type"] == "reject" else ledger.pay(**answer["args"])
            self.seen.append(result)
            return {"result": f"Done: {result}"}

        saver = await stack.enter_async_context(AsyncSqliteSaver.from_conn_string(str(workdir / "graph.db")))
        builder = StateGraph(State)
        builder.add_node("pay", pay)
        builder.add_edge(START, "pay")
        builder.add_edge("pay", END)
        approvals = LangGraphApprovals(
            host, builder.compile(checkpointer=saver), verify=verify, schemas={"send_payment": SCHEMA}
        )
        agent = approvals.chat_agent(
            lambda text: ({"request": text}, {"configurable": {"thread_id": secrets.token_hex(8)}})
        )
        return approvals, agent


class LangChain:
    """An agent from LangChain's ``create_agent`` gated by its ``HumanInTheLoopMiddleware``, on a scripted chat
    model (tool call first, then an answer with what the tool returned)."""

    name = "langchain"
    framework = "langgraph:agent"

    def __init__(self, mode: str = "batched") -> None:
        self.mode = mode
        self.seen: list[str] = []

    async def build(
        self, host: ApprovalHost, ledger: Ledger, verify: VerifyPolicy | None, stack: AsyncExitStack, workdir: Path
    ) -> tuple[Any, Any]:
        from langchain.agents import create_agent
        from langchain.agents.middleware import HumanInTheLoopMiddleware
        from langchain_core.tools import tool
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        from milpa_chat.agents.langgraph import LangGraphApprovals

        @tool
        def send_payment(to: str, amount: float) -> str:
            """Send a payment."""
            return ledger.pay(to, amount)

        saver = await stack.enter_async_context(AsyncSqliteSaver.from_conn_string(str(workdir / "agent.db")))
        agent = create_agent(
            scripted_chat_model(self.seen),
            tools=[send_payment],
            middleware=[HumanInTheLoopMiddleware({"send_payment": True}, interrupt_mode=self.mode)],  # type: ignore[arg-type]
            checkpointer=saver,
        )
        approvals = LangGraphApprovals(host, agent, verify=verify, name="agent", schemas={"send_payment": SCHEMA})
        chat = approvals.chat_agent(
            lambda text: (
                {"messages": [{"role": "user", "content": text}]},
                {"configurable": {"thread_id": secrets.token_hex(8)}},
            )
        )
        return approvals, chat


def scripted_chat_model(seen: list[str]) -> Any:
    """A LangChain chat model that calls ``send_payment`` once, then answers with what the tool returned (kept in
    ``seen``, as the model was sent it)."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class ScriptedPayer(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted-payer"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            last = messages[-1]
            if isinstance(last, ToolMessage):
                seen.append(str(last.content))
                reply = AIMessage(content=f"Done: {last.content}")
            else:
                call = {"name": "send_payment", "args": dict(PAYMENT), "id": f"call_{secrets.token_hex(4)}"}
                reply = AIMessage(content="", tool_calls=[call])
            return ChatResult(generations=[ChatGeneration(message=reply)])

    return ScriptedPayer()


FRAMEWORKS: dict[str, Any] = {
    "pydantic-ai": PydanticAI,
    "openai-agents": OpenAIAgents,
    "langgraph": LangGraph,
    "langchain": LangChain,
}


async def pending(host: ApprovalHost, count: int) -> list[Approval]:
    """The first ``count`` pending approvals of ``host``'s desk once they are open, by payee."""
    for _ in range(1000):
        found = await host.desk.listing(state="pending")
        if len(found) >= count:
            return sorted(found, key=lambda a: str(a.args["to"]))
        await asyncio.sleep(0.01)
    raise TimeoutError(f"{count} approvals were not opened")


async def recorded(host: ApprovalHost, approval: Approval) -> Approval:
    """``approval`` as its record says now."""
    done = await host.desk.get(approval.id)
    assert done is not None
    return done
