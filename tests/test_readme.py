"""The README, pasted in order: its identities file written where it says, its Python blocks run as
one script in a fresh process against the local Bot API server (the real python-telegram-bot
polling), and every ``print(...)  # expected`` line printing what its comment says."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from milpa_chat.testing import BotApiServer, TelegramUser

README = Path(__file__).resolve().parents[1] / "README.md"


def blocks(kind: str) -> list[str]:
    return re.findall(rf"^```{kind}\n(.*?)^```$", README.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)


def expected_prints(code: str) -> list[str]:
    """``print(...)  # text`` followed by ``# text`` lines: what the reader is told to expect."""
    out: list[str] = []
    lines = code.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("print(") and "#" in line:
            out.append(line.split("#", 1)[1].strip())
        elif line.startswith("print(") and i + 1 < len(lines) and lines[i + 1].startswith("# "):
            out.append(lines[i + 1][2:].strip())
    return out


def test_the_readme_shows_the_identities_file_and_the_python_runs_when_pasted(tmp_path: Path) -> None:
    [identities] = blocks("toml")
    python = blocks("python")
    assert len(python) >= 2 and "identities.toml" in python[-1]
    (tmp_path / "identities.toml").write_text(identities, encoding="utf-8")
    (tmp_path / "readme.py").write_text("\n\n".join(python), encoding="utf-8")
    asyncio.run(_drive(tmp_path, python))


async def _drive(folder: Path, python: list[str]) -> None:
    async with BotApiServer() as server:
        env = {
            **os.environ,
            "TELEGRAM_TOKEN": server.token,
            "TELEGRAM_BASE_URL": server.base_url,
            "PYTHONUNBUFFERED": "1",
        }
        proc = subprocess.Popen(  # noqa: ASYNC220
            [sys.executable, "readme.py"],
            cwd=folder,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            await server.wait_for(lambda call: call.method == "getUpdates", timeout=60)
            writer = TelegramUser(42, "Ana", "ana")
            asked = await server.send_message(42, writer, "/delete_note 2")
            card = await server.wait_for_message(42, since=asked, timeout=30)
            buttons = [b["text"] for row in (card.reply_markup or {}).get("inline_keyboard", []) for b in row]
            assert "delete_note" in (card.text or "") and any("Confirm" in b for b in buttons), (card.text, buttons)
            guest = TelegramUser(5, "Gus", "gus")
            refused = await server.send_message(5, guest, "/delete_note 2")
            denial = await server.wait_for_message(5, since=refused, timeout=30)
            assert "notes:write" in (denial.text or ""), denial.text
        finally:
            proc.send_signal(signal.SIGINT)  # Ctrl-C, as the comment says
            out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    for text in expected_prints(python[0]):
        assert text in out, (text, out)
    assert (folder / "bot.db").exists()
