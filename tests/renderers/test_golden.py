"""Golden (snapshot) tests: every shape and approval card on every channel.

Each file ``golden/<sample>.txt`` shows what one sample becomes on Telegram, Slack, Jupyter,
web, CLI and JSON, so a review reads the output, not the code. After an intended change,
regenerate them and review the diff::

    MILPA_UPDATE_GOLDEN=1 .venv/bin/pytest tests/renderers/test_golden.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from milpa_chat.renderers import ApprovalView
from milpa_chat.runtime.result import ToolResult

from .golden_format import describe
from .samples import approvals, results

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("MILPA_UPDATE_GOLDEN") == "1"
SAMPLES: dict[str, ToolResult | ApprovalView] = {**results(), **approvals()}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_golden(name: str) -> None:
    text = describe(SAMPLES[name])
    path = GOLDEN / f"{name}.txt"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no golden file {path.name}; run with MILPA_UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; review and regenerate (see module doc)"


def test_no_stray_golden_files() -> None:
    stray = {p.stem for p in GOLDEN.glob("*.txt")} - set(SAMPLES)
    assert not stray, f"golden files without a sample: {sorted(stray)}"
