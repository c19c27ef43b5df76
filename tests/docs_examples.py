"""Run a docs page's ``python`` blocks, in order, in one fresh module (as a reader would paste them)."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def python_blocks(page: str) -> list[str]:
    text = (DOCS / page).read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def run_page(page: str) -> types.ModuleType:
    """Execute every python block of ``docs/<page>`` in one module and return it (for its names)."""
    module = types.ModuleType(f"docs_{Path(page).stem}_example")
    sys.modules[module.__name__] = module
    try:
        for number, code in enumerate(python_blocks(page), start=1):
            exec(compile(code, f"{page} (python block {number})", "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module
