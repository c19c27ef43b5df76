"""The kit's own agent calls an upstream MCP server's tools through the gate: the proxy imports them into the
assistant's registry; a scripted model (the openai SDK against FakeOpenAIServer) reads a note at once, asks to
delete one, and the deletion reaches the upstream (its own process, over stdio) only after the person's tap on
Telegram (real python-telegram-bot against the local Bot API server)."""

from __future__ import annotations

from pathlib import Path

from milpa_chat import ToolRegistry
from milpa_chat.bots import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.gateway import ChatAgent, LlmService
from milpa_chat.mcp.proxy import McpProxy
from milpa_chat.mcp.proxy_config import ProxyConfig
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer, TelegramUser
from milpa_chat.testing.llm import FakeOpenAIServer
from tests.mcp.proxy_rig import WAIT, _devnull, calls, upstream_entry

ALICE = TelegramUser(1001, "Alice", "alice")
IDENTITIES = {"users": {"telegram:1001": ["notes:use"]}}


async def test_the_kits_agent_calls_an_upstream_tool_through_the_gate(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    config = ProxyConfig.from_mapping({"upstream": [upstream_entry("stdio", log, tools={})]})
    registry = ToolRegistry(store=MemoryStore())
    with _devnull() as quiet:
        async with (
            McpProxy(config, registry, errlog=quiet),
            FakeOpenAIServer() as llm_server,
            BotApiServer() as tg,
            LlmService(
                model="gpt-test", api_key=llm_server.api_key, base_url=llm_server.base_url, max_retries=0
            ) as llm,
        ):
            llm_server.reply_tool_call("notes_read_note", {"name": "garden"}, id="r")
            llm_server.reply_tool_call("notes_delete_note", {"name": "garden"}, id="d")
            llm_server.reply_text("Done: the garden note is gone.")
            assistant = Assistant(registry, Identities.from_dict(IDENTITIES), agent=ChatAgent(llm))
            bot = TelegramBot(assistant, tg.token, tg.base_url)
            await bot.start(poll_timeout=1)
            try:
                update = await tg.send_message(ALICE.id, ALICE, "read the garden note, then delete it")
                card = await tg.wait_for_message(ALICE.id, since=update, timeout=WAIT)
                assert "notes_delete_note" in (card.text or "") and "garden" in (card.text or "")
                assert [c["tool"] for c in calls(log)] == ["read_note"]  # the read ran; the delete waits for Alice
                confirm = next(text for text in card.button_labels if "Confirm" in text)
                await tg.tap_button(card, confirm, ALICE)

                def answered() -> bool:
                    return any(m.text == "Done: the garden note is gone." for m in tg.messages(ALICE.id))

                await tg.wait_until(answered, WAIT, what="the agent's answer after the tap")
            finally:
                await bot.stop()
    assert [(c["tool"], c["arguments"]) for c in calls(log)] == [
        ("read_note", {"name": "garden"}),
        ("delete_note", {"name": "garden"}),
    ]
