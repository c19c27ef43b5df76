"""``milpa-chat demo``: the terminal walk-through reads as cards, ids and the audit trail only with verbose."""

from __future__ import annotations

import asyncio
import re
import tempfile
from pathlib import Path

from milpa_chat.demo import run_demo

HEX_ID = re.compile(r"\b[0-9a-f]{32}\b")


def test_the_cards_have_no_audit_lines_ids_or_verifier_internals(tmp_path: Path) -> None:
    lines: list[str] = []
    assert asyncio.run(run_demo(tmp_path / "demo.db", lines.append)) == 0
    text = "\n".join(lines)
    assert "audit:" not in text and not HEX_ID.search(text)
    assert "⛔ Already used" in text and "nothing ran again" in text  # the replayed token, titled as what it is
    assert "Verification granted" in text and "State:     approved" in text
    for internal in ("Verifier:", "Metadata:", "Missing:", "Principal:", "Request id:"):
        assert internal not in text
    assert "page: Input should be a valid integer" in text and "notes:write" in text and "state=executed" in text
    assert text.rstrip().endswith("notebooks/02_approvals.ipynb.") and "make playground" in text
    for notebook in re.findall(r"notebooks/\S+\.ipynb", text):
        assert (Path(__file__).resolve().parents[2] / notebook).exists(), notebook


def test_verbose_shows_the_audit_trail_and_the_ids(tmp_path: Path) -> None:
    lines: list[str] = []
    assert asyncio.run(run_demo(tmp_path / "demo.db", lines.append, verbose=True)) == 0
    text = "\n".join(lines)
    assert "audit: [ToolAudit]" in text and HEX_ID.search(text) and "Verifier:" in text
    quiet: list[str] = []
    asyncio.run(run_demo(tmp_path / "again.db", quiet.append))
    assert not any(line.startswith("  audit:") for line in quiet)  # the verbose run's handler was removed


def test_without_a_store_path_nothing_is_left_on_disk() -> None:
    before = set(Path(tempfile.gettempdir()).iterdir())
    lines: list[str] = []
    assert asyncio.run(run_demo(None, lines.append)) == 0
    assert "store: SQLite at " in lines[0] and "(a temporary file, removed at the end" in lines[0]
    assert "state=executed" in "\n".join(lines)
    assert set(Path(tempfile.gettempdir()).iterdir()) - before == set()
