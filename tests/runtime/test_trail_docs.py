"""docs/audit.md runs as pasted: its ``python`` and ``bash`` blocks, in order, in one fresh directory, with the
``milpa-chat`` command of this checkout on PATH."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "audit.md"


def blocks() -> list[tuple[str, str]]:
    return re.findall(r"^```(python|bash)\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), flags=re.M | re.S)


def test_every_block_of_docs_audit_md_runs_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(PAGE.parents[1])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    command = bin_dir / "milpa-chat"
    command.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m milpa_chat.cli "$@"\n')
    command.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": root}
    for name in ("MILPA_AUDIT_KEY_FILE", "MILPA_AUDIT_KEY", "MILPA_AUDIT_PUBLIC_KEY", "MILPA_STORE"):
        env.pop(name, None)
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    module = types.ModuleType("docs_audit_example")
    found = blocks()
    assert [kind for kind, _ in found].count("bash") >= 4 and len(found) >= 6
    for number, (kind, code) in enumerate(found, 1):
        if kind == "python":
            exec(compile(code, f"audit.md (block {number})", "exec"), module.__dict__)
            continue
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", code], cwd=work, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, (number, code, done.stdout, done.stderr)
    checkpoints = [json.loads(line) for line in (work / "checkpoints.jsonl").read_text().splitlines()]
    # the page's first block asks for a payment (entry 1, before the key); then 250 appends and --now
    assert [c["seq"] for c in checkpoints] == [2, 100, 200, 251]
    assert re.fullmatch(r"251:[0-9a-f]{64}\n", (work / "head.txt").read_text())
