"""docs/mcp.md runs: every ``python`` block, in order, in one fresh module (as a reader would paste them)."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"


def blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", DOC.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)


def test_every_example_in_docs_mcp_md_runs() -> None:
    module = types.ModuleType("docs_mcp_example")
    sys.modules[module.__name__] = module
    try:
        for number, code in enumerate(blocks(), start=1):
            exec(compile(code, f"{DOC.name} (python block {number})", "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    assert len(blocks()) >= 4
    assert module.payments.sent == [("ACME", 30.0)], "the approved payment ran once, after approval_run"
    assert callable(module.mcp_server) and module.app is not None
