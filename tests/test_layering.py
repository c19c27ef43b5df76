"""House rules: dependencies point one way, and the core never imports a channel or provider SDK."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "milpa_chat"
SDKS = ("telegram", "slack_bolt", "slack_sdk", "ipywidgets", "IPython", "openai", "anthropic", "psycopg")
# A layer may import only from the layers listed for it (besides itself and the top-level helpers).
ALLOWED = {
    "store": set(),
    "runtime": {"store"},
    "renderers": {"runtime", "store"},
    "chat": {"runtime", "store", "renderers", "gateway"},
    "gateway": {"runtime", "store", "renderers"},
}
TOP_LEVEL_HELPERS = {"milpa_chat.errors", "milpa_chat._extras", "milpa_chat._failpoints", "milpa_chat"}


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """(module, line, at module level?) for every import in a file; lazy imports inside functions included."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(n) for n in tree.body}
    found: list[tuple[str, int, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno, id(node) in top))
    return found


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layers_import_only_downwards(layer: str) -> None:
    bad = []
    for path in (ROOT / layer).rglob("*.py"):
        for module, line, _ in _imports(path):
            if not module.startswith("milpa_chat.") or module in TOP_LEVEL_HELPERS:
                continue
            target = module.split(".")[1]
            if target != layer and target not in ALLOWED[layer] and f"milpa_chat.{target}" not in TOP_LEVEL_HELPERS:
                bad.append(f"{path.relative_to(ROOT.parent)}:{line} imports {module}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("layer", ["runtime", "chat", "store"])
def test_core_never_imports_a_channel_sdk_at_module_level(layer: str) -> None:
    bad = []
    for path in (ROOT / layer).rglob("*.py"):
        for module, line, at_top in _imports(path):
            root = module.split(".")[0]
            # psycopg belongs to the PostgreSQL backend, imported only when that backend is used
            if root in SDKS and not (layer == "store" and root == "psycopg" and "postgres" in path.name):
                bad.append(f"{path.relative_to(ROOT.parent)}:{line} imports {module} (module level: {at_top})")
    assert not bad, "\n".join(bad)


def test_importing_the_package_loads_no_sdk() -> None:
    code = (
        "import sys, milpa_chat, milpa_chat.runtime, milpa_chat.store, milpa_chat.chat, milpa_chat.renderers, "
        "milpa_chat.gateway, milpa_chat.testing\n"
        f"loaded = sorted(m for m in {SDKS!r} + ('jsonschema', 'aiohttp', 'httpx') if m in sys.modules)\n"
        "print(','.join(loaded))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"importing milpa_chat loaded: {out}"
