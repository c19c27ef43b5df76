"""AgentOrchestrator over the real SDKs and the local fake servers: steps, pauses, resumes, errors."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from milpa_chat.gateway import (
    AgentOrchestrator,
    AgentState,
    LlmService,
    LlmUnavailableError,
    McpClientService,
    declined,
)
from milpa_chat.runtime.context import ToolContext
from milpa_chat.testing.llm import FakeOpenAIServer, ScriptedToolCall

from .agent_tools import Notes, registry_with, tool_messages
from .conftest import FakeServer

MakeLlm = Callable[..., LlmService]


@pytest.fixture
def notes() -> Notes:
    return Notes()


@pytest.fixture
def tools(notes: Notes) -> McpClientService:
    return McpClientService(registry_with(notes))


async def test_multi_step_run_reaches_a_final_answer(
    server: FakeServer, make_llm: MakeLlm, tools: McpClientService
) -> None:
    server.reply_tool_call("list_notes", id="c1").reply_tool_call("get_note", {"note_id": 2}, id="c2")
    server.reply_text("Note 2 says eggs.")
    run = await AgentOrchestrator(make_llm(), tools, system="Be terse.").run("What does note 2 say?")
    assert run.status == "answered" and run.answer == "Note 2 says eggs." and run.steps == 3
    assert [o.call.name for o in run.tool_results] == ["list_notes", "get_note"]
    assert [o.result.data["title"] for o in run.tool_results if o.call.name == "get_note"] == ["eggs"]
    assert tool_messages(server.bodies[1]) == [
        (
            "c1",
            {
                "success": True,
                "data": {
                    "notes": [{"id": 1, "title": "milk"}, {"id": 2, "title": "eggs"}, {"id": 3, "title": "bread"}]
                },
            },
        )
    ]
    assert tool_messages(server.bodies[2])[-1] == ("c2", {"success": True, "data": {"id": 2, "title": "eggs"}})
    assert "Be terse." in json.dumps(server.bodies[0])
    assert [m["role"] for m in run.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]


async def test_max_steps_stops_the_loop(server: FakeServer, make_llm: MakeLlm, tools: McpClientService) -> None:
    for _ in range(3):
        server.reply_tool_call("list_notes")
    run = await AgentOrchestrator(make_llm(), tools, max_steps=2).run("loop forever")
    assert run.status == "exhausted" and run.answer is None and run.steps == 2
    assert len(server.requests) == 2 and server.pending == 1
    assert len(run.tool_results) == 2 and run.messages[-1]["role"] == "tool"  # the last step's calls were answered


async def test_several_tool_calls_in_one_step_run_in_order(
    server: FakeServer, make_llm: MakeLlm, tools: McpClientService
) -> None:
    server.reply_tool_calls(
        [
            ScriptedToolCall("get_note", {"note_id": 1}, "a"),
            ScriptedToolCall("get_note", {"note_id": 99}, "b"),
            ScriptedToolCall("no_such_tool", {}, "c"),
        ]
    )
    server.reply_text("milk; 99 does not exist")
    run = await AgentOrchestrator(make_llm(), tools).run("notes 1 and 99")
    assert run.status == "answered" and run.steps == 2
    sent = dict(tool_messages(server.bodies[1]))
    assert list(sent) == ["a", "b", "c"]
    assert sent["a"]["data"]["title"] == "milk"
    assert sent["b"] == {"success": False, "error": "No note 99", "code": "NOT_FOUND"}
    assert sent["c"]["code"] == "TOOL_NOT_FOUND"  # errors go back to the model and the loop goes on


async def test_confirmation_pauses_and_resumes_from_stored_json(
    server: FakeServer, make_llm: MakeLlm, notes: Notes
) -> None:
    registry = registry_with(notes)
    ctx = ToolContext.cli()
    server.reply_tool_calls(
        [
            ScriptedToolCall("get_note", {"note_id": 1}, "r1"),
            ScriptedToolCall("delete_note", {"note_id": 1}, "d1"),
            ScriptedToolCall("get_note", {"note_id": 3}, "r3"),
        ]
    )
    server.reply_text("Deleted note 1 (milk).")
    run = await AgentOrchestrator(make_llm(), McpClientService(registry, ctx)).run("delete the milk note")
    assert run.status == "paused" and run.answer is None and notes.deleted == []
    assert run.state is not None and run.pending is not None
    assert run.pending.reason == "confirmation" and run.pending.call.name == "delete_note"
    assert [c.id for c in run.state.queued] == ["r3"]
    assert run.state.approval["confirm_token"] == run.pending.confirm_token
    stored = json.loads(json.dumps(run.state.to_dict()))  # what a store keeps

    result = await registry.call("delete_note", {"confirm_token": run.pending.confirm_token}, ctx)
    later = AgentOrchestrator(make_llm(), McpClientService(registry, ctx))  # e.g. another process
    resumed = await later.resume(stored, result)
    assert resumed.status == "answered" and resumed.answer == "Deleted note 1 (milk)." and notes.deleted == [1]
    assert resumed.steps == 2 and [o.call.id for o in resumed.tool_results] == ["d1", "r3"]
    sent = dict(tool_messages(server.bodies[1]))
    assert list(sent) == ["r1", "d1", "r3"] and sent["d1"]["data"] == {"deleted": 1}


async def test_a_declined_call_goes_back_to_the_model_and_never_runs(
    server: FakeServer, make_llm: MakeLlm, notes: Notes
) -> None:
    registry = registry_with(notes)
    server.reply_tool_calls(
        [ScriptedToolCall("delete_note", {"note_id": 2}, "d2"), ScriptedToolCall("get_note", {"note_id": 3}, "r3")]
    )
    server.reply_text("OK, I left note 2 alone.")
    orchestrator = AgentOrchestrator(make_llm(), McpClientService(registry))
    run = await orchestrator.run("delete note 2")
    assert run.state is not None
    resumed = await orchestrator.resume(AgentState.from_dict(run.state.to_dict()), declined("cancelled", by="Alice"))
    assert resumed.answer == "OK, I left note 2 alone." and notes.deleted == [] and 2 in notes.notes
    sent = dict(tool_messages(server.bodies[1]))
    assert sent["d2"]["decision"] == "cancelled" and "Alice cancelled this call; it was not run" in sent["d2"]["error"]
    assert sent["r3"]["decision"] == "skipped"  # queued behind a declined call: not run either


async def test_blocked_and_verification_results_pause(server: FakeServer, make_llm: MakeLlm, notes: Notes) -> None:
    tools = McpClientService(registry_with(notes))
    server.reply_tool_call("export_notes").reply_tool_call("pay", {"to": "ACME", "amount": 5})
    blocked = await AgentOrchestrator(make_llm(), tools).run("export everything")
    assert blocked.pending is not None and blocked.pending.reason == "blocked"
    assert "house rules" in blocked.pending.explanation
    verify = await AgentOrchestrator(make_llm(), tools).run("pay ACME 5")
    assert verify.pending is not None and verify.pending.reason == "verification"
    assert verify.state is not None and verify.state.approval["request_id"] == verify.pending.request_id
    assert notes.paid == []


async def test_observer_sees_exactly_each_payload_sent(
    server: FakeServer, make_llm: MakeLlm, tools: McpClientService
) -> None:
    seen: list[tuple[str, Mapping[str, Any]]] = []

    class Recorder:
        def observe(self, url: str, payload: Mapping[str, Any]) -> None:
            seen.append((url, payload))

    server.reply_tool_call("get_note", {"note_id": 3}).reply_text("bread")
    await AgentOrchestrator(make_llm(), tools, observer=Recorder(), system="S").run("note 3?")
    assert [p for _, p in seen] == server.bodies and len(seen) == 2
    assert {u for u, _ in seen} == {server.url + server.path}


async def test_tool_call_written_as_text_runs_nothing(
    server: FakeServer, make_llm: MakeLlm, tools: McpClientService, notes: Notes
) -> None:
    server.reply_text('<tool_call>{"name": "delete_note", "arguments": {"note_id": 1}}</tool_call>')
    run = await AgentOrchestrator(make_llm(), tools).run("delete 1")
    assert run.status == "tool_call_as_text" and run.answer is not None and "nothing was run" in run.answer
    assert notes.deleted == []


async def test_unreadable_arguments_go_back_as_a_tool_error(tools: McpClientService) -> None:
    async with FakeOpenAIServer() as server:
        raw = {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-test",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"id": "bad", "type": "function", "function": {"name": "get_note", "arguments": "{oops"}}
                        ],
                    },
                }
            ],
        }
        server.reply_raw(json.dumps(raw)).reply_text("sorry")
        async with LlmService(model="gpt-test", api_key=server.api_key, base_url=server.base_url, max_retries=0) as llm:
            run = await AgentOrchestrator(llm, tools).run("note?")
        assert run.answer == "sorry"
        ((call_id, content),) = tool_messages(server.bodies[1])
        assert call_id == "bad" and content["code"] == "VALIDATION_ERROR" and "not valid JSON" in content["error"]


async def test_provider_errors_propagate_as_llm_errors(
    server: FakeServer, make_llm: MakeLlm, tools: McpClientService
) -> None:
    server.fail(503)
    with pytest.raises(LlmUnavailableError):
        await AgentOrchestrator(make_llm(), tools).run("hi")


def test_max_steps_must_be_positive(tools: McpClientService) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        AgentOrchestrator(LlmService(model="gpt-test", api_key="k"), tools, max_steps=0)


async def test_gather_runs_the_free_calls_opens_every_gated_one_and_resumes_once_all_are_decided(
    server: FakeServer, make_llm: MakeLlm, notes: Notes
) -> None:
    registry = registry_with(notes)
    ctx = ToolContext.cli()
    server.reply_tool_calls(
        [
            ScriptedToolCall("delete_note", {"note_id": 1}, "d1"),
            ScriptedToolCall("get_note", {"note_id": 3}, "r3"),
            ScriptedToolCall("delete_note", {"note_id": 2}, "d2"),
        ]
    )
    server.reply_text("Deleted note 1; you kept note 2.")
    run = await AgentOrchestrator(make_llm(), McpClientService(registry, ctx), gather=True).run("tidy up")
    assert run.status == "paused" and run.state is not None and notes.deleted == []
    assert [w.call.id for w in run.state.waiting] == ["d1", "d2"] and run.state.queued == []
    assert [c.id for c, r in run.state.held if r is not None] == ["r3"]  # the free call already ran
    assert len(server.requests) == 1  # the model waits for the whole step
    stored = json.loads(json.dumps(run.state.to_dict()))

    later = AgentOrchestrator(make_llm(), McpClientService(registry, ctx), gather=True)
    with pytest.raises(ValueError, match=r"missing \['d2'\]"):
        await later.resume_step(stored, {"d1": declined("rejected")})
    with pytest.raises(ValueError, match=r"unknown \['r3'\]"):
        await later.resume_step(stored, {"d1": declined("rejected"), "d2": declined("rejected"), "r3": declined("x")})
    token = run.state.waiting[0].confirm_token
    ran = await registry.call("delete_note", {"confirm_token": token}, ctx)
    resumed = await later.resume_step(stored, {"d1": ran, "d2": declined("cancelled", by="Alice")})
    assert resumed.status == "answered" and notes.deleted == [1] and 2 in notes.notes
    sent = tool_messages(server.bodies[1])
    assert [cid for cid, _ in sent] == ["d1", "r3", "d2"]  # one result per call, in the model's order
    results = dict(sent)
    assert results["d1"]["data"] == {"deleted": 1} and results["r3"]["data"]["title"] == "bread"
    assert results["d2"]["decision"] == "cancelled"
