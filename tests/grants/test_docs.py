"""docs/grants.md, the host's walk-through: saved as a file and run as a reader would, it prints what the page says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "grants.md"


def test_the_host_walk_through_prints_what_the_page_says(tmp_path: Path) -> None:
    [code] = re.findall(r"^```py\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    script = tmp_path / "walk_through.py"
    script.write_text(code, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert run.returncode == 0, run.stderr
    expected = " ".join(line[2:] for line in code.splitlines() if line.startswith("# "))
    assert " ".join(run.stdout.split()) == " ".join(expected.split())


def test_the_page_has_the_host_sections() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for heading in ("## On the host", "## The chat flow", "## In the notebook and the CLI"):
        assert heading in text
