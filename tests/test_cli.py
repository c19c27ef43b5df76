"""The ``milpa-chat`` command: tools, call (with the confirm prompt), demo."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from milpa_chat.cli import main
from milpa_chat.demo import run_demo


def test_tools_lists_the_demo_tools_with_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools"]) == 0
    out = capsys.readouterr().out
    assert "delete_note (mutating, confirm) [scopes: notes:write]" in out
    assert "send_payment (mutating, needs approval)" in out
    assert "- page: integer (optional) — Page number" in out


def test_call_asks_before_a_confirm_tool_and_runs_on_yes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    assert main(["call", "delete_note", "--args", '{"note_id": 3}']) == 0
    out = capsys.readouterr().out
    assert "Confirmation required" in out and "Renew passport" in out


def test_call_cancelled_at_the_prompt_does_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    assert main(["call", "delete_note", "--args", '{"note_id": 3}']) == 1
    assert "Cancelled — nothing was done." in capsys.readouterr().out


def test_call_errors_are_explained(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "list_notes", "--args", "{page: 1}"]) == 2
    assert "--args is not valid JSON" in capsys.readouterr().err
    assert main(["call", "list_notes", "--args", "[1]"]) == 2
    assert "must be a JSON object" in capsys.readouterr().err
    assert main(["tools", "no_such_module_here:x"]) == 2
    assert "cannot import 'no_such_module_here'" in capsys.readouterr().err
    assert main(["call", "list_notes", "--args", '{"page": "x"}']) == 1
    assert "page" in capsys.readouterr().out


def test_plan_mode_runs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "delete_note", "--plan", "--args", '{"note_id": 1}']) == 0
    assert "Nothing was run" in capsys.readouterr().out


async def test_demo_walks_through_every_step(tmp_path: Path) -> None:
    lines: list[str] = []
    assert await run_demo(tmp_path / "demo.db", lines.append) == 0
    text = "\n".join(lines)
    assert "page: Input should be a valid integer" in text
    assert "Missing required scope for tool 'delete_note'" in text
    assert "Call the bank" in text and "Invalid or expired confirmation token" in text
    assert "four-eyes" in text or "Missing required scope for tool 'resolve_verification'" in text
    assert "Verification granted" in text and "state=executed" in text
    assert "audit: [ToolAudit]" in text
    assert (tmp_path / "demo.db").exists()


def test_console_script_runs_the_demo(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "milpa_chat.cli", "demo", "--store", str(tmp_path / "d.db")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "state=executed" in proc.stdout
