"""Read a tool's description and parameter descriptions from its docstring.

The description is the first paragraph. Parameter descriptions come from a Google-style
``Args:`` (or ``Arguments:``/``Parameters:``) section or a NumPy-style ``Parameters`` section::

    Args:
        query: Text to look for.
        page (int): Page number,
            starting at 1.

    Parameters
    ----------
    query : str
        Text to look for.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

__all__ = ["parse_docstring"]

_GOOGLE_HEADERS = ("args:", "arguments:", "parameters:", "params:", "keyword args:", "keyword arguments:")
_SECTION = re.compile(r"^\s*[A-Z][A-Za-z ]*:\s*$")
_GOOGLE_ITEM = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_ITEM = re.compile(r"^(\*{0,2}\w+)\s*(?::.*)?$")


def parse_docstring(obj: Any) -> tuple[str, dict[str, str]]:
    """``(first paragraph, {parameter: description})`` of ``obj``'s docstring (empty when none)."""
    doc = inspect.getdoc(obj) or ""
    lines = doc.splitlines()
    return _first_paragraph(lines), {**_numpy(lines), **_google(lines)}


def _first_paragraph(lines: list[str]) -> str:
    taken: list[str] = []
    for index, line in enumerate(lines):
        if not line.strip() or _is_header(lines, index):
            break
        taken.append(line.strip())
    return " ".join(taken)


def _is_header(lines: list[str], index: int) -> bool:
    line = lines[index].strip()
    if line.lower() in _GOOGLE_HEADERS or _SECTION.match(lines[index]):
        return True
    following = lines[index + 1].strip() if index + 1 < len(lines) else ""
    return bool(line) and len(following) >= 3 and set(following) == {"-"}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _collect(items: dict[str, list[str]], name: str | None, text: str) -> None:
    if name is not None and text:
        items[name].append(text)


def _google(lines: list[str]) -> dict[str, str]:
    items: dict[str, list[str]] = {}
    inside, base, current = False, 0, None
    for line in lines:
        stripped = line.strip()
        if stripped.lower() in _GOOGLE_HEADERS:
            inside, base, current = True, -1, None
            continue
        if not inside or not stripped:
            continue
        if base < 0:
            base = _indent(line)
        if _indent(line) < base or (_indent(line) == base and _SECTION.match(line)):
            inside = False
            continue
        match = _GOOGLE_ITEM.match(stripped) if _indent(line) == base else None
        if match:
            current = match.group(1).lstrip("*")
            items[current] = []
            _collect(items, current, match.group(2).strip())
        else:
            _collect(items, current, stripped)
    return {name: " ".join(parts) for name, parts in items.items() if parts}


def _numpy(lines: list[str]) -> dict[str, str]:
    items: dict[str, list[str]] = {}
    inside, current = False, None
    for index, line in enumerate(lines):
        stripped = line.strip()
        nxt = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if nxt and set(nxt) == {"-"} and len(nxt) >= 3:
            inside, current = stripped.lower() in ("parameters", "other parameters"), None
            continue
        if not inside or not stripped or set(stripped) == {"-"}:
            continue
        match = _NUMPY_ITEM.match(stripped) if _indent(line) == 0 else None
        if match:
            current = match.group(1).lstrip("*")
            items[current] = []
        else:
            _collect(items, current, stripped)
    return {name: " ".join(parts) for name, parts in items.items() if parts}
