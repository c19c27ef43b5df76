"""``milpa_chat.command`` stays lazy and builds on the runtime only."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import milpa_chat.command

PACKAGE = Path(milpa_chat.command.__file__).resolve().parent
#: The old address of ``milpa_chat.grants``, which names that package's objects (tests/test_layering.py
#: checks it holds nothing else); the command package's own modules build on the runtime only.
OLD_ADDRESS = PACKAGE / "grants"
ALLOWED = ("milpa_chat.command", "milpa_chat.runtime", "milpa_chat.errors")
SDKS = ("telegram", "slack_bolt", "slack_sdk", "ipywidgets", "IPython", "openai", "anthropic", "psycopg", "mcp")


def imported_modules(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return found


def test_import_milpa_chat_does_not_import_the_command_package() -> None:
    code = "import sys, milpa_chat; print('milpa_chat.command' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_importing_the_command_package_imports_no_channel_sdk() -> None:
    code = f"import sys, milpa_chat.command; print([m for m in {SDKS!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_command_package_builds_on_the_runtime_only() -> None:
    bad = []
    for path in PACKAGE.rglob("*.py"):
        if path.is_relative_to(OLD_ADDRESS):
            continue
        for module in imported_modules(path):
            if module.startswith("milpa_chat") and not module.startswith(ALLOWED) and module != "milpa_chat":
                bad.append(f"{path.name} imports {module}")
            if module.split(".")[0] in SDKS:
                bad.append(f"{path.name} imports {module}")
    assert not bad, "\n".join(bad)


def test_every_public_name_is_exported() -> None:
    for name in milpa_chat.command.__all__:
        assert hasattr(milpa_chat.command, name), name
    for name in (
        "Operation",
        "CommandProvider",
        "SurfaceProjector",
        "EffectProfile",
        "InvocationContext",
        "RegistryProjector",
        "Mutates",
        "Reads",
        "Needs",
        "Confirms",
        "Target",
        "Because",
        "operation",
    ):
        assert name in milpa_chat.command.__all__
