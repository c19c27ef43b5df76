"""confirm(): the inline prompt for a call_sync that asked for confirmation."""

from __future__ import annotations

import asyncio

import pytest

from milpa_chat import ToolRegistry
from milpa_chat.jupyter import confirm

from .conftest import Tools


async def test_confirm_runs_the_snapshotted_call_once(registry: ToolRegistry, tools: Tools) -> None:
    asked = registry.call_sync("delete_note", {"note_id": 7})  # works inside the running loop
    assert asked.requires_confirmation() and tools.deleted == []
    prompt = confirm(registry, asked)
    assert prompt.state == "pending" and "Confirmation required" in prompt.view.text
    assert "delete_note(note_id=7)" in prompt.view.text
    seen: list[str] = []
    prompt.add_done_callback(lambda p: seen.append(p.state))
    waiting = asyncio.ensure_future(prompt.wait())
    await asyncio.sleep(0)
    prompt.confirm_button.click()
    prompt.confirm_button.click()  # disabled by the first click: refused
    result = await waiting
    assert result is not None and result.success and result.data == {"deleted": 7}
    # mypy keeps the earlier "pending" narrowing across the clicks, which change the state
    assert tools.deleted == [7] and prompt.state == "confirmed" and seen == ["confirmed"]  # type: ignore[comparison-overlap]
    assert "Deleted: 7" in prompt.view.text
    assert await prompt is result  # awaiting again gives the same result


async def test_cancel_runs_nothing_and_spends_the_token(registry: ToolRegistry, tools: Tools) -> None:
    asked = await registry.call("delete_note", {"note_id": 3})
    prompt = confirm(registry, asked)
    prompt.cancel_button.click()
    assert await prompt is None
    assert prompt.state == "cancelled" and "Cancelled: delete_note" in prompt.view.text
    assert "Nothing was done" in prompt.view.text and tools.deleted == []
    late = await registry.call("delete_note", {"confirm_token": asked.confirm_token})
    assert not late.success and tools.deleted == []


async def test_the_prompt_expires_with_its_token(tools: Tools) -> None:
    registry = ToolRegistry(confirm_ttl=0.3)
    registry.scan(tools)
    prompt = confirm(registry, await registry.call("delete_note", {"note_id": 2}))
    async with asyncio.timeout(5):
        assert await prompt is None
    assert prompt.state == "expired" and "Expired: delete_note" in prompt.view.text
    assert prompt.view.buttons == {} and tools.deleted == []


async def test_a_result_that_asks_nothing_is_done_at_once(registry: ToolRegistry) -> None:
    listed = await registry.call("list_notes", {"page": 1})
    prompt = confirm(registry, listed)
    assert prompt.state == "nothing_to_confirm" and await prompt is listed
    assert "Page 1 of 3" in prompt.view.text
    with pytest.raises(LookupError, match="no confirm button"):
        _ = prompt.confirm_button


async def test_another_principal_cannot_use_the_token(registry: ToolRegistry, tools: Tools) -> None:
    from milpa_chat import ToolContext

    asked = await registry.call("delete_note", {"note_id": 5}, ToolContext.jupyter("jupyter:ana"))
    prompt = confirm(registry, asked, context=ToolContext.jupyter("jupyter:eve"))
    prompt.confirm_button.click()
    result = await prompt
    assert result is not None and not result.success and tools.deleted == []
    assert "Invalid or expired confirmation token" in prompt.view.text
