"""``milpa-chat mcp proxy --config FILE`` as an MCP host runs it: a subprocess over stdio (the official
``stdio_client``), which spawns the upstream in turn; the person behind the client confirms through elicitation."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp.types as mcp_types
from mcp import ClientSession, StdioServerParameters, stdio_client

from milpa_chat.testing import BotApiServer
from tests.mcp.proxy_rig import APPROVERS, MARIA, ROOT, WAIT, _devnull, calls, tap
from tests.mcp.support import wire


def proxy_file(tmp_path: Path, log: Path) -> Path:
    path = tmp_path / "proxy.toml"
    path.write_text(
        f"""
[proxy]
name = "notes-proxy"
store = "proxy.db"

[[upstream]]
name = "notes"
command = {json.dumps(sys.executable)}
args = ["-m", "tests.mcp.upstream", {json.dumps(str(log))}]
cwd = {json.dumps(str(ROOT))}
env = {{ PYTHONPATH = {json.dumps(str(ROOT))} }}
""",
        encoding="utf-8",
    )
    return path


async def test_the_proxy_command_serves_an_upstream_over_stdio(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    asked: list[str] = []

    async def person(context: Any, params: Any) -> Any:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"confirm": True})

    params = StdioServerParameters(
        command=sys.executable,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT)},
        args=["-m", "milpa_chat.mcp", "proxy", "--config", str(proxy_file(tmp_path, log))],
    )
    with _devnull() as quiet:
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(read, write, elicitation_callback=person) as session,
        ):
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"read_note", "delete_note", "tag_note", "approval_status", "approval_run"} <= names
            note = wire(await session.call_tool("read_note", {"name": "family"}))
            assert note["structuredContent"] == {"name": "family", "text": "call mom"} and asked == []
            deleted = wire(await session.call_tool("delete_note", {"name": "family"}))
            assert deleted["structuredContent"] == {"deleted": "family"}
            assert "Confirm delete_note?" in asked[0] and "name = 'family'" in asked[0]
    assert [(c["tool"], c["arguments"]) for c in calls(log)] == [
        ("read_note", {"name": "family"}),
        ("delete_note", {"name": "family"}),
    ]
    assert (tmp_path / "proxy.db").exists()  # the approval is kept where the file says


def test_a_wrong_proxy_file_is_refused_naming_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[upstream]]\nname = "notes"\ncommand = "x"\nurl = "https://example.com/mcp"\n', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "milpa_chat.mcp", "proxy", "--config", str(bad)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    assert done.returncode == 2
    assert "upstream 'notes' needs exactly one of command" in done.stderr and str(bad) in done.stderr


async def test_the_proxy_command_shows_cards_on_telegram_from_its_file(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    (tmp_path / "identities.toml").write_text(
        f'[roles]\nmanager = ["notes:approve"]\n\n[users]\n"telegram:2001" = ["manager"]\n\n'
        f'[approvers]\ntelegram = ["{APPROVERS}"]\n',
        encoding="utf-8",
    )
    async with BotApiServer() as api:
        api.group(APPROVERS, "Approvers", members=[MARIA])
        config = (
            proxy_file(tmp_path, log)
            .read_text(encoding="utf-8")
            .replace('store = "proxy.db"', 'store = "proxy.db"\nidentities = "identities.toml"')
            + f"""
[upstream.tools.delete_note]
verify = {{ approver_scopes = ["notes:approve"] }}
wait_seconds = 30

[telegram]
token_env = "PROXY_TEST_BOT_TOKEN"
base_url = {json.dumps(api.base_url)}
"""
        )
        (tmp_path / "proxy.toml").write_text(config, encoding="utf-8")
        params = StdioServerParameters(
            command=sys.executable,
            cwd=ROOT,
            args=["-m", "milpa_chat.mcp", "proxy", "--config", str(tmp_path / "proxy.toml")],
            env={"PYTHONPATH": str(ROOT), "PROXY_TEST_BOT_TOKEN": api.token},
        )
        with _devnull() as quiet:
            async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                call = asyncio.ensure_future(session.call_tool("delete_note", {"name": "garden"}))
                card = await api.wait_for_message(APPROVERS, timeout=WAIT)
                assert "Approval needed: delete_note" in (card.text or "") and calls(log) == []
                assert await tap(api, card, "Approve", MARIA) == "Approved."
                done = wire(await asyncio.wait_for(call, WAIT))
    assert done["structuredContent"] == {"deleted": "garden"}
    assert [(c["tool"], c["arguments"]) for c in calls(log)] == [("delete_note", {"name": "garden"})]
