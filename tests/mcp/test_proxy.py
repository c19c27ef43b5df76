"""The gating proxy, official SDK on both sides: an upstream MCP server (its own process, over stdio or
streamable HTTP) that records every call it receives; the kit's proxy in front of it; an MCP
``ClientSession`` calling through the proxy; approvers deciding on Telegram (real python-telegram-bot
against the local Bot API server)."""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import time
from pathlib import Path
from typing import Any, cast

import pytest
from mcp.types import RequestParamsMeta
from mcp.types import ToolListChangedNotification as ToolListChanged

from tests.mcp.proxy_rig import APPROVERS, GATED, MARIA, MATEO, WAIT, Rig, client, direct_client, rig, tap
from tests.mcp.support import wire


async def lists_the_upstream_tools_with_their_effects(r: Rig) -> None:
    async with client(r.url) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
    assert {"notes_read_note", "notes_delete_note", "notes_tag_note", "approval_status"} <= set(tools)
    read, delete, tag = (tools[f"notes_{n}"].annotations for n in ("read_note", "delete_note", "tag_note"))
    assert read is not None and delete is not None and tag is not None
    assert read.read_only_hint is True
    assert delete.destructive_hint is True
    assert tag.read_only_hint is False  # no annotations: it changes things
    assert tools["notes_delete_note"].input_schema["required"] == ["name"]


async def reads_pass_without_a_card(r: Rig) -> None:
    async with client(r.url) as session:
        read = wire(await session.call_tool("notes_read_note", {"name": "garden"}))
        assert read["isError"] is False
        assert read["structuredContent"] == {"name": "garden", "text": "water the plants"}
        broken = wire(await session.call_tool("notes_broken", {}))
        assert broken["isError"] is True and broken["content"][0]["text"] == "broken on purpose: the disk is full"
        bad = wire(await session.call_tool("notes_read_note", {"name": 3}))
        assert bad["isError"] is True and bad["structuredContent"]["error"]["code"] == "VALIDATION_ERROR"
    assert [c["tool"] for c in r.calls()] == ["read_note", "broken"]  # the invalid call never left the proxy
    assert r.api.messages(APPROVERS) == []


async def an_unannotated_tool_is_gated(r: Rig) -> None:
    async with client(r.url) as session:
        asked = wire(await session.call_tool("notes_tag_note", {"name": "garden", "tag": "weekly"}))
    approval = asked["structuredContent"]["approval"]
    assert approval["kind"] == "confirm" and approval["state"] == "pending"
    assert "Only you (the person) can confirm this" in approval["next"]
    assert r.calls("tag_note") == []


async def a_destructive_call_waits_for_the_managers_tap(r: Rig) -> None:
    told: list[str] = []

    async def heard(progress: float, total: float | None, message: str | None) -> None:
        told.append(message or "")

    async with client(r.url) as session:
        call = asyncio.ensure_future(
            session.call_tool("notes_delete_note", {"name": "garden"}, progress_callback=heard)
        )
        card = await r.api.wait_for_message(APPROVERS, timeout=WAIT)
        assert "notes_delete_note" in (card.text or "") and "garden" in (card.text or "")
        assert r.calls("delete_note") == []  # nothing reached the upstream before the decision
        await r.api.wait_until(lambda: bool(told), WAIT, what="a progress notification while it waits")
        assert await tap(r.api, card, "Approve", MARIA) == "Approved."
        done = wire(await asyncio.wait_for(call, WAIT))
    assert done["isError"] is False and done["structuredContent"] == {"deleted": "garden"}
    assert done["content"][0]["text"].startswith("Deleted garden.")
    assert [c["arguments"] for c in r.calls("delete_note")] == [{"name": "garden"}]  # once, as approved
    assert "pending" in told[0] and "shown to the approvers on Telegram" in told[0]
    assert told[-1] == "notes_delete_note: approved."


async def an_approvers_edit_is_what_the_upstream_receives(r: Rig) -> None:
    async with client(r.url) as session:
        call = asyncio.ensure_future(session.call_tool("notes_delete_note", {"name": "family"}))
        card = await r.api.wait_for_message(APPROVERS, timeout=WAIT)
        tapped = await r.api.tap_button(card, next(b for b in card.button_labels if "Edit" in b), MARIA)
        prompt = await r.api.wait_for_message(APPROVERS, since=tapped, timeout=WAIT)  # one field: asked at once
        assert "New value for name (now family)?" in (prompt.text or "")
        reply = await r.api.send_message(APPROVERS, MARIA, "groceries", reply_to=prompt)
        await r.api.wait_for_message(APPROVERS, since=reply, timeout=WAIT)
        await r.api.wait_until(
            lambda: "groceries" in (r.api.message(card.chat.id, card.message_id).text or ""),
            WAIT,
            what="the card showing the edit",
        )
        assert await tap(r.api, card, "Approve", MATEO) == "Approved."  # another manager approves the edit
        done = wire(await asyncio.wait_for(call, WAIT))
    assert done["structuredContent"] == {"deleted": "groceries"}
    assert [c["arguments"] for c in r.calls("delete_note")][-1:] == [{"name": "groceries"}]
    assert {"name": "family"} not in [c["arguments"] for c in r.calls("delete_note")]


@pytest.mark.parametrize("kind", ["stdio", "http"])
async def test_the_proxy_gates_upstream_tools_and_runs_each_approved_call_once(tmp_path: Path, kind: str) -> None:
    async with rig(tmp_path, kind) as r:
        await lists_the_upstream_tools_with_their_effects(r)
        await reads_pass_without_a_card(r)
        await an_unannotated_tool_is_gated(r)
        await a_destructive_call_waits_for_the_managers_tap(r)
        await an_approvers_edit_is_what_the_upstream_receives(r)


async def test_a_client_that_does_not_wait_follows_up_with_approval_status_and_run(tmp_path: Path) -> None:
    only_verify = {"delete_note": {"verify": {"approver_scopes": ["notes:approve"]}}}  # no wait_seconds
    async with rig(tmp_path, "stdio", tools=only_verify) as r, client(r.url) as session:
        asked = wire(await session.call_tool("notes_delete_note", {"name": "garden"}))
        approval_id = asked["structuredContent"]["approval"]["approval_id"]
        card = await r.api.wait_for_message(APPROVERS, timeout=WAIT)
        assert await tap(r.api, card, "Reject", MARIA) == "Rejected — nothing was done."
        waited = wire(
            await session.call_tool(
                "notes_delete_note", {"name": "family"}, meta=cast(RequestParamsMeta, {"milpa-chat/wait_seconds": 0.5})
            )
        )
        assert waited["structuredContent"]["approval"]["state"] == "pending"  # still waiting when time was up
        status = wire(await session.call_tool("approval_status", {"approval_id": approval_id}))
        assert status["structuredContent"]["state"] == "rejected"
        ran = wire(await session.call_tool("approval_run", {"approval_id": approval_id}))
        assert ran["isError"] is True and "Rejected by Maria" in ran["content"][0]["text"]
    assert r.calls("delete_note") == []


async def test_an_upstream_killed_mid_call_is_a_clear_error_and_a_retry_does_not_call_it_again(tmp_path: Path) -> None:
    async with rig(tmp_path, "stdio") as r, client(r.url) as session:
        await passes_resources_prompts_and_tool_list_changes_through(r, session)
        call = asyncio.ensure_future(session.call_tool("notes_slow_delete", {"name": "garden", "seconds": 60}))
        card = await r.api.wait_for_message(APPROVERS, timeout=WAIT)
        assert await tap(r.api, card, "Approve", MARIA) == "Approved."
        await r.api.wait_until(lambda: bool(r.calls("slow_delete")), WAIT, what="the upstream receiving the call")
        os.kill(r.calls("slow_delete")[0]["pid"], signal.SIGKILL)
        failed = wire(await asyncio.wait_for(call, WAIT))
        text = failed["content"][0]["text"]
        assert failed["isError"] is True
        assert text.startswith(
            "upstream 'notes' closed the connection during tools/call slow_delete; it may or "
            "may not have taken effect. The proxy connects again on the next call"
        )
        approval_id = failed["structuredContent"]["error"]["approval_id"]
        retried = wire(await session.call_tool("approval_run", {"approval_id": approval_id}))
        assert retried["isError"] is True and retried["content"][0]["text"] == text  # the recorded outcome
        status = wire(await session.call_tool("approval_status", {"approval_id": approval_id}))
        assert status["structuredContent"]["state"] == "failed"
        again = wire(await session.call_tool("notes_read_note", {"name": "garden"}))  # a new upstream process
        assert again["structuredContent"] == {"name": "garden", "text": "water the plants"}
    assert len(r.calls("slow_delete")) == 1
    assert r.calls("read_note")[0]["pid"] != r.calls("slow_delete")[0]["pid"]


#: The test's own patience: for the twenty cards, then for the twenty runs after the taps.
PATIENCE = 120.0
#: Each call waits inside tools/call for its decision longer than the test is patient: the outcome (the result, not
#: a "still pending" answer) never depends on how fast a loaded machine shows twenty cards and answers the taps.
#: (With the file's 30 s, a machine that took over 30 s from a card to its tap, well within the test's 60 s for the
#: cards, turned a correct "still pending" answer into a failure.)
PATIENT_DELETE = {"delete_note": {**GATED, "wait_seconds": 4 * PATIENCE}, "slow_delete": GATED}


async def test_twenty_concurrent_clients_each_decided_and_run_once_and_the_proxys_overhead(tmp_path: Path) -> None:
    async with rig(tmp_path, "http", tools=PATIENT_DELETE) as r:
        assert r.upstream_url is not None

        async def one(i: int) -> dict[str, Any]:
            async with client(r.url) as session:
                return wire(await session.call_tool("notes_delete_note", {"name": f"n{i}"}))

        started = time.monotonic()
        calls = asyncio.gather(*(one(i) for i in range(20)))
        await r.api.wait_until(lambda: len(_cards(r)) == 20, PATIENCE, what="twenty cards")
        shown = time.monotonic() - started
        answers = await asyncio.gather(*(tap(r.api, card, "Approve", MARIA) for card in _cards(r)))
        assert answers == ["Approved."] * 20
        done = await asyncio.wait_for(calls, PATIENCE)
        print(f"\ntwenty waited calls: cards shown after {shown:.1f} s, all run {time.monotonic() - started:.1f} s")
        assert [d["structuredContent"] for d in done] == [{"deleted": f"n{i}"} for i in range(20)]
        assert sorted(c["arguments"]["name"] for c in r.calls("delete_note")) == sorted(f"n{i}" for i in range(20))
        await _overhead(r.url, r.upstream_url)


async def passes_resources_prompts_and_tool_list_changes_through(r: Rig, session: Any) -> None:
    resources = (await session.list_resources()).resources
    assert [str(x.uri) for x in resources] == ["notes://index"]
    read = await session.read_resource("notes://index")
    assert read.contents[0].text == "groceries\nfamily\ngarden"
    prompts = (await session.list_prompts()).prompts
    assert [p.name for p in prompts] == ["notes_summarize"]
    prompt = await session.get_prompt("notes_summarize")
    assert prompt.messages[0].content.text.startswith("Summarize: buy milk")
    heard: list[Any] = []

    async def listen(message: Any) -> None:
        heard.append(message)

    async with client(r.url, message_handler=listen) as watcher:
        assert "notes_shrink" not in {t.name for t in (await watcher.list_tools()).tools}
        grown = wire(await session.call_tool("notes_grow", {}))  # the upstream adds a tool and says list_changed
        assert grown["structuredContent"] == {"tools": 8}
        await r.api.wait_until(lambda: r.proxy.registry.has("notes_shrink"), WAIT, what="the tools imported again")
        await r.api.wait_until(
            lambda: any(isinstance(m, ToolListChanged) for m in heard), WAIT, what="the proxy's own tools/list_changed"
        )
    assert "notes_shrink" in {t.name for t in (await session.list_tools()).tools}
    assert wire(await session.call_tool("notes_shrink", {}))["structuredContent"] == {"ok": True}


def _cards(r: Rig) -> list[Any]:
    return [m for m in r.api.messages(APPROVERS) if any("Approve" in b for b in m.button_labels)]


async def _overhead(proxy_url: str, upstream_url: str, n: int = 200) -> None:
    async def timed(session: Any, name: str, times: int = n) -> list[float]:
        spent = []
        for _ in range(times):
            t0 = time.perf_counter()
            answer = await session.call_tool(name, {"name": "garden"})
            spent.append(time.perf_counter() - t0)
            assert answer.is_error is False
        return spent

    async with direct_client(upstream_url) as upstream, client(proxy_url) as proxied:
        await timed(upstream, "read_note", 20)  # warm both paths
        await timed(proxied, "notes_read_note", 20)
        direct = statistics.median(await timed(upstream, "read_note"))
        through = statistics.median(await timed(proxied, "notes_read_note"))
    print(
        f"\nread-only tools/call, median of {n}: direct {direct * 1000:.2f} ms, through the proxy "
        f"{through * 1000:.2f} ms, overhead {(through - direct) * 1000:.2f} ms per call"
    )
