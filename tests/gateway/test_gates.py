"""ToolCallGate, OptionTable and SecondOpinionGate, with the agent loop on a real SDK and a fake judge."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable

import pytest

from milpa_chat.gateway import (
    AgentOrchestrator,
    LlmService,
    McpClientService,
    OptionTable,
    Refusal,
    SecondOpinionGate,
    ToolCall,
)
from milpa_chat.gateway.second_opinion import BEYOND_REQUEST, JUDGE_EMPTY, JUDGE_FAILED, JUDGE_NO_VERDICT
from milpa_chat.runtime.result import ToolResult
from milpa_chat.testing.llm import FakeOpenAIServer, ScriptedToolCall

from .agent_tools import Notes, registry_with, tool_messages, tool_names
from .conftest import FakeServer

MakeLlm = Callable[..., LlmService]
DELETE_2 = ToolCall("d", "delete_note", {"note_id": 2})


@pytest.fixture
def notes() -> Notes:
    return Notes()


@pytest.fixture
def tools(notes: Notes) -> McpClientService:
    return McpClientService(registry_with(notes))


@pytest.fixture
async def judge_server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def judge(judge_server: FakeOpenAIServer) -> AsyncIterator[LlmService]:
    async with LlmService(
        model="gpt-judge", api_key=judge_server.api_key, base_url=judge_server.base_url, max_retries=0, timeout=5
    ) as service:
        yield service


class Floor:
    """A syntactic gate: refuses the names it is given, records what it sees."""

    def __init__(self, *refused: str, table: OptionTable | None = None) -> None:
        self.refused = set(refused)
        self.table = table
        self.recorded: list[tuple[str, ToolResult]] = []

    def refuse(self, call: ToolCall) -> str | None:
        if call.name not in self.refused:
            return None
        if self.table is not None:
            self.table.remove(call.name, "policy", "not in this session")
        return f"{call.name} is not allowed here"

    async def record(self, call: ToolCall, result: ToolResult) -> None:
        self.recorded.append((call.name, result))


# ------------------------------------------------------------------ ToolCallGate and OptionTable
async def test_a_refusal_that_removed_nothing_pauses_the_run(
    server: FakeServer, make_llm: MakeLlm, tools: McpClientService, notes: Notes
) -> None:
    floor = Floor("delete_note")
    server.reply_tool_calls([("get_note", {"note_id": 1}), ("delete_note", {"note_id": 1})])
    run = await AgentOrchestrator(make_llm(), tools, gate=floor).run("delete note 1")
    assert run.status == "paused" and run.pending is not None
    assert run.pending.reason == "refused" and run.pending.refusal == "delete_note is not allowed here"
    assert [name for name, _ in floor.recorded] == ["get_note"]  # refused calls are never recorded
    assert notes.deleted == [] and server.pending == 0


async def test_a_refusal_that_removed_the_option_goes_back_and_the_catalogue_shrinks(
    server: FakeServer, make_llm: MakeLlm, tools: McpClientService, notes: Notes
) -> None:
    table = OptionTable()
    floor = Floor("delete_note", table=table)
    server.reply_tool_call("delete_note", {"note_id": 1}, id="d1")
    server.reply_tool_call("delete_note", {"note_id": 1}, id="d2")  # the model insists from memory
    server.reply_text("I cannot delete notes here.")
    run = await AgentOrchestrator(make_llm(), tools, gate=floor, options=table).run("delete note 1")
    assert run.status == "answered" and run.answer == "I cannot delete notes here." and notes.deleted == []
    assert "delete_note" in tool_names(server.bodies[0])
    assert "delete_note" not in tool_names(server.bodies[1]) and "delete_note" not in tool_names(server.bodies[2])
    sent = dict(tool_messages(server.bodies[2]))
    assert sent["d1"]["error"] == "delete_note is not allowed here"
    assert "no longer available" in sent["d2"]["error"] and "not in this session" in sent["d2"]["error"]
    assert table.was_removed("delete_note") and table.removed() == ["delete_note"]


async def test_the_catalogue_is_re_derived_every_step(
    server: FakeServer, make_llm: MakeLlm, tools: McpClientService
) -> None:
    table = OptionTable()

    class RemovesAfterUse:
        def refuse(self, call: ToolCall) -> None:
            return None

        def record(self, call: ToolCall, result: ToolResult) -> None:
            table.remove("list_notes", "used_once")

    server.reply_tool_call("list_notes").reply_text("done")
    await AgentOrchestrator(make_llm(), tools, gate=RemovesAfterUse(), options=table).run("list")
    assert "list_notes" in tool_names(server.bodies[0]) and "list_notes" not in tool_names(server.bodies[1])


async def test_a_gate_that_raises_fails_closed(server: FakeServer, make_llm: MakeLlm, tools: McpClientService) -> None:
    class Broken:
        def refuse(self, call: ToolCall) -> str | None:
            raise RuntimeError("policy store down")

        def record(self, call: ToolCall, result: ToolResult) -> None: ...

    server.reply_tool_call("list_notes")
    run = await AgentOrchestrator(make_llm(), tools, gate=Broken()).run("list")
    assert run.pending is not None and run.pending.refusal_code == "gate_failed"
    assert "policy store down" in run.pending.explanation


def test_option_table_keeps_the_first_reason_and_ignores_blank_input() -> None:
    table = OptionTable([{"option": "a", "code": "x", "message": "first"}])
    table.remove("a", "y", "second")
    table.remove(" ", "code")
    table.remove("b", "  ")
    first = table.reason("a")
    assert table.removed() == ["a"] and first is not None and first.message == "first"
    assert OptionTable(table.to_list()).to_list() == table.to_list()


# ------------------------------------------------------------------ SecondOpinionGate
async def test_allow_is_silent(
    judge: LlmService, judge_server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    judge_server.reply_text("ALLOW")
    gate = SecondOpinionGate(judge, "borra la nota 2", options=OptionTable())
    with caplog.at_level(logging.DEBUG, logger="milpa_chat.gateway.second_opinion"):
        assert await gate.refuse(DELETE_2) is None
    assert caplog.records == []
    prompt = judge_server.bodies[0]["messages"][0]["content"]
    assert "«borra la nota 2»" in prompt and "tool: delete_note" in prompt
    assert '"note_id": 2' in prompt and judge_server.bodies[0]["max_tokens"] == 200
    assert "tools" not in judge_server.bodies[0]


async def test_deny_removes_the_option_and_leaves_a_witness(
    judge: LlmService, judge_server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    judge_server.reply_text("Hmm, ALLOW would be wrong.\nDENY: only reading was asked\nthanks")
    table = OptionTable()
    gate = SecondOpinionGate(judge, "what is note 2?", options=table, alternatives={"delete_note": "get_note"})
    with caplog.at_level(logging.INFO, logger="milpa_chat.gateway.second_opinion"):
        reason = await gate.refuse(DELETE_2)
    assert isinstance(reason, Refusal) and reason.code == BEYOND_REQUEST
    assert reason.startswith("only reading was asked — instead run `get_note`")
    assert table.was_removed("delete_note") and table.reason("delete_note").code == BEYOND_REQUEST  # type: ignore[union-attr]
    assert [r.levelname for r in caplog.records] == ["INFO"] and "denied delete_note" in caplog.records[0].message


async def test_deny_without_a_reason_gets_the_default(judge: LlmService, judge_server: FakeOpenAIServer) -> None:
    judge_server.reply_text("deny")
    reason = await SecondOpinionGate(judge, "x").refuse(DELETE_2)
    assert reason == "a second reader considered that this goes beyond what was asked"


@pytest.mark.parametrize(
    ("script", "code", "words"),
    [
        ("", JUDGE_EMPTY, "answered nothing"),
        ("I am not sure about this one.", JUDGE_NO_VERDICT, "without ALLOW or DENY"),
        (500, JUDGE_FAILED, "could not judge"),
    ],
)
async def test_a_judge_that_cannot_answer_refuses_with_its_own_cause(
    judge: LlmService,
    judge_server: FakeOpenAIServer,
    caplog: pytest.LogCaptureFixture,
    script: str | int,
    code: str,
    words: str,
) -> None:
    if isinstance(script, int):
        judge_server.fail(script)
    else:
        judge_server.reply_text(script)
    table = OptionTable()
    with caplog.at_level(logging.WARNING, logger="milpa_chat.gateway.second_opinion"):
        reason = await SecondOpinionGate(judge, "delete note 2", options=table).refuse(DELETE_2)
    assert isinstance(reason, Refusal) and reason.code == code and words in reason
    assert table.removed() == []  # a judge that could not answer never removes the option
    assert [r.levelname for r in caplog.records] == ["WARNING"]


async def test_floor_first_and_watch_list(judge: LlmService, judge_server: FakeOpenAIServer) -> None:
    table = OptionTable()
    gate = SecondOpinionGate(judge, "x", floor=Floor("delete_note"), watch=["pay"], options=table)
    assert await gate.refuse(DELETE_2) == "delete_note is not allowed here"
    assert await gate.refuse(ToolCall("g", "get_note", {"note_id": 1})) is None  # not watched: not judged
    assert judge_server.requests == [] and table.removed() == []
    judge_server.reply_text("ALLOW")
    assert await gate.refuse(ToolCall("p", "pay", {})) is None
    assert "arguments: (no arguments)" in judge_server.bodies[0]["messages"][0]["content"]


async def test_second_opinion_in_the_loop_lets_the_agent_take_another_way(
    server: FakeServer,
    make_llm: MakeLlm,
    tools: McpClientService,
    notes: Notes,
    judge: LlmService,
    judge_server: FakeOpenAIServer,
) -> None:
    judge_server.reply_text("DENY: the user only asked to read").reply_text("ALLOW")
    server.reply_tool_call("delete_note", {"note_id": 2}, id="d")
    server.reply_tool_calls([ScriptedToolCall("get_note", {"note_id": 2}, "g")]).reply_text("Note 2 says eggs.")
    gate = SecondOpinionGate(judge, "what does note 2 say?", options=OptionTable())
    run = await AgentOrchestrator(make_llm(), tools, gate=gate).run("what does note 2 say?")
    assert run.answer == "Note 2 says eggs." and notes.deleted == []
    assert dict(tool_messages(server.bodies[1]))["d"]["error"] == "the user only asked to read"
    assert "delete_note" not in tool_names(server.bodies[1])


async def test_removals_survive_a_pause(server: FakeServer, make_llm: MakeLlm, tools: McpClientService) -> None:
    table = OptionTable()
    server.reply_tool_call("list_notes").reply_tool_call("delete_note", {"note_id": 1}).reply_text("ok")
    run = await AgentOrchestrator(make_llm(), tools, gate=Floor("list_notes", table=table), options=table).run("x")
    assert run.state is not None and run.state.removed[0]["option"] == "list_notes"
    later = AgentOrchestrator(make_llm(), tools)  # another process, no table of its own
    await later.resume(run.state.to_dict(), ToolResult.success({"deleted": 1}))
    assert later.options is not None and later.options.was_removed("list_notes")
    assert "list_notes" not in tool_names(server.bodies[2])
