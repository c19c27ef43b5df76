"""House rules: dependencies point one way, and the core never imports a channel or provider SDK."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "milpa_chat"
SDKS = (
    "telegram",
    "slack_bolt",
    "slack_sdk",
    "ipywidgets",
    "IPython",
    "openai",
    "anthropic",
    "psycopg",
    "pydantic_ai",
    "agents",
    "langgraph",
    "langchain_core",
)
# A layer may import only from the layers listed for it (besides itself and the top-level helpers). Every
# subpackage and every module at the package top is a layer here (a test says so), and the layers form no circle.
ALLOWED: dict[str, set[str]] = {
    "store": set(),
    "runtime": {"store"},
    "renderers": {"runtime", "store"},
    "chat": {"runtime", "store", "renderers", "gateway"},
    "gateway": {"runtime", "store", "renderers"},
    "command": {"runtime", "store"},
    # standing grants: the documents and the judge over `command`'s operations; the host desk kept in the
    # store, lent before the runtime's approval gate, drafted and signed through the chat's cards
    "grants": {"runtime", "store", "renderers", "chat", "command"},
    # approvals for agents of other frameworks: the host API over the runtime's desk, cards through the chat
    "agents": {"runtime", "store", "chat", "gateway"},
    # the platforms' adapters
    "bots": {"runtime", "store", "renderers", "chat", "gateway", "command"},
    # local servers standing in for the platforms and a model, for tests and the playground
    "testing": {"runtime", "store", "renderers", "chat"},
    # the notebook's surface, with its grants view
    "jupyter": {"runtime", "store", "renderers", "chat", "command", "grants"},
    # tools served over MCP, and other MCP servers' tools gated through the desk
    "mcp": {"runtime", "store", "renderers", "chat", "gateway", "command", "grants", "bots"},
    "playground": {"runtime", "store", "renderers", "chat", "gateway", "bots", "testing", "__init__"},
    # the command line: one module per command, over everything else
    "cli": {"runtime", "store", "renderers", "chat", "command", "grants", "mcp", "playground", "demo", "__init__"},
    # the package top: its face, and the entry points kept where their users import them from
    "__init__": {"runtime"},
    "demo": {"runtime", "store", "renderers", "__init__"},
    "examples": {"runtime", "store", "__init__"},
    "fleet": {"runtime", "store", "chat", "bots"},
}
#: Modules at the package top that any layer may import: they import nothing of the package but each other.
TOP_LEVEL_HELPERS = {"errors", "_extras", "_failpoints", "_ports"}
#: Old addresses of moved code, each a subpackage that only names the objects of its new homes (checked below).
OLD_ADDRESSES: dict[str, tuple[str, ...]] = {
    "milpa_chat.standing": ("milpa_chat.grants",),
    "milpa_chat.command.grants": ("milpa_chat.grants", "milpa_chat.command.canonical", "milpa_chat.command._unicode16"),
}
#: ``python -m milpa_chat.x`` entry points, imported by nothing: they may run the command line.
ENTRY_POINT_MAY_IMPORT = {"cli"}


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


def _layer_files(layer: str) -> list[Path]:
    return sorted((ROOT / layer).rglob("*.py")) if (ROOT / layer).is_dir() else [ROOT / f"{layer}.py"]


def _module_of(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer_of(module: str) -> str | None:
    """The layer a ``milpa_chat…`` module belongs to (``__init__`` for the package's face), or ``None``."""
    if module == "milpa_chat":
        return "__init__"
    return module.split(".")[1] if module.startswith("milpa_chat.") else None


def test_every_subpackage_and_top_module_has_a_layer() -> None:
    units = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()} | {p.stem for p in ROOT.glob("*.py")}
    old = {m.split(".")[1] for m in OLD_ADDRESSES if m.count(".") == 1}
    missing = sorted(units - set(ALLOWED) - TOP_LEVEL_HELPERS - old)
    assert not missing, f"say in ALLOWED which layers these may import: {missing}"
    assert not (set(ALLOWED) | TOP_LEVEL_HELPERS) - units, "ALLOWED names a layer that no longer exists"


def test_the_layers_form_no_circle() -> None:
    done: set[str] = set()

    def visit(layer: str, path: list[str]) -> None:
        assert layer not in path, "the layers import in a circle: " + " -> ".join([*path, layer])
        if layer not in done:
            for below in sorted(ALLOWED.get(layer, ())):
                visit(below, [*path, layer])
            done.add(layer)

    for layer in sorted(ALLOWED):
        visit(layer, [])


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layers_import_only_downwards(layer: str) -> None:
    bad = []
    for path in _layer_files(layer):
        module_here = _module_of(path)
        old_address = next(
            (_layer_of(new[0]) for old, new in OLD_ADDRESSES.items() if module_here.startswith(old)), None
        )
        for module, line, _ in _imports(path):
            target = _layer_of(module)
            if target is None or target == layer or target in TOP_LEVEL_HELPERS or target in ALLOWED[layer]:
                continue
            if target == old_address or (path.name == "__main__.py" and target in ENTRY_POINT_MAY_IMPORT):
                continue
            bad.append(f"{path.relative_to(ROOT.parent)}:{line} imports {module}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("helper", sorted(TOP_LEVEL_HELPERS))
def test_top_level_helpers_import_only_each_other(helper: str) -> None:
    bad = [
        f"{helper}.py:{line} imports {module}"
        for module, line, _ in _imports(ROOT / f"{helper}.py")
        if _layer_of(module) is not None and _layer_of(module) not in TOP_LEVEL_HELPERS
    ]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("old", sorted(OLD_ADDRESSES))
def test_an_old_address_only_names_its_new_home(old: str) -> None:
    """Moved code's old address holds no code of its own: imports of the new home, ``__all__``, the loop that
    files its old module names, and ``__getattr__`` for names the new home loads only when asked for."""
    homes = OLD_ADDRESSES[old]
    folder = ROOT.parent.joinpath(*old.split("."))
    bad = []
    for path in sorted(folder.rglob("*.py")):
        for module, line, _ in _imports(path):
            if module.startswith("milpa_chat") and not module.startswith(homes):
                bad.append(f"{path.name}:{line} imports {module}, not a new home {homes}")
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) or (isinstance(node, ast.FunctionDef) and node.name != "__getattr__"):
                bad.append(f"{path.name}:{node.lineno} defines {node.name}: code belongs in {homes[0]}")
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
        "milpa_chat.gateway, milpa_chat.testing, milpa_chat.agents\n"
        f"loaded = sorted(m for m in {SDKS!r} + ('jsonschema', 'aiohttp', 'httpx') if m in sys.modules)\n"
        "print(','.join(loaded))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"importing milpa_chat loaded: {out}"


def _runtime_imports(path: Path, *, typing: bool = False) -> set[str]:
    """Modules a file imports when it runs (lazy imports included; ``if TYPE_CHECKING:`` blocks only with
    ``typing``: a circle through them is still a circle in the design, though not at run time)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = (
        set()
        if typing
        else {
            id(n)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)
        }
    )
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def import_cycles(package: str, *, typing: bool = False) -> list[list[str]]:
    """Circles of imports between the modules of one subpackage (its ``__init__`` re-exports are left out);
    ``typing``: imports under ``if TYPE_CHECKING:`` count too."""
    graph: dict[str, set[str]] = {}
    for path in (ROOT / package).rglob("*.py"):
        if path.name == "__init__.py":
            continue
        module = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
        graph[module] = {m for m in _runtime_imports(path, typing=typing) if m.startswith(f"milpa_chat.{package}.")}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([m.rsplit(".", 1)[1] for m in [*stack[stack.index(nxt) :], nxt]])
            elif nxt in graph and nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return cycles


SUBPACKAGES = sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").exists())


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_no_circular_imports_inside_a_subpackage(package: str) -> None:
    cycles = import_cycles(package)
    assert not cycles, f"milpa_chat.{package} imports in a circle: " + "; ".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_no_circle_inside_a_subpackage_counting_type_checking_imports(package: str) -> None:
    cycles = import_cycles(package, typing=True)
    assert not cycles, f"milpa_chat.{package} imports in a circle: " + "; ".join(" -> ".join(c) for c in cycles)


def package_cycles(*, typing: bool = False) -> list[list[str]]:
    """Circles of imports between any modules of the package, across subpackages and the package top (lazy
    imports included; ``__init__`` re-exports left out, as above; ``typing``: ``TYPE_CHECKING`` imports too)."""
    modules = {_module_of(p): p for p in ROOT.rglob("*.py") if p.name != "__init__.py"}
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        named = _runtime_imports(path, typing=typing)
        # ``from milpa_chat.x import y`` names the module ``milpa_chat.x.y`` when there is one
        named |= {
            f"{node.module}.{a.name}"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module in named
            for a in node.names
        }
        graph[module] = {m for m in named if m in modules and m != module}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return cycles


def test_no_circular_imports_anywhere_in_the_package() -> None:
    cycles = package_cycles()
    assert not cycles, "imports in a circle: " + "; ".join(" -> ".join(c) for c in cycles)


def test_no_circle_anywhere_counting_type_checking_imports() -> None:
    """The design's circles too: a circle through ``TYPE_CHECKING`` imports is hidden from the interpreter only."""
    cycles = package_cycles(typing=True)
    assert not cycles, "imports in a circle: " + "; ".join(" -> ".join(c) for c in cycles)


#: What the package top may hold: the everyday face, errors and private helpers (everything else lives in a
#: subpackage); the last three are entry points kept where their users import them from.
TOP_LEVEL = {
    "__init__.py",
    "errors.py",
    "_extras.py",
    "_failpoints.py",
    "_ports.py",
    "demo.py",
    "examples.py",
    "fleet.py",
}


def test_the_package_top_holds_only_its_face() -> None:
    extra = sorted(p.name for p in ROOT.glob("*.py") if p.name not in TOP_LEVEL)
    assert not extra, f"modules at the package top that belong in a subpackage: {extra}"


def test_the_cycle_finder_finds_a_circle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "milpa_chat" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from milpa_chat.demo.b import B\n")
    (pkg / "b.py").write_text("def f():\n    from milpa_chat.demo.a import A\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from milpa_chat.demo.a import A\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path / "milpa_chat")
    assert import_cycles("demo") == [["a", "b", "a"]]
    (pkg / "d.py").write_text("from milpa_chat.demo.c import C\n")  # c names d's module only for types
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from milpa_chat.demo.d import D\n"
    )
    assert import_cycles("demo") == [["a", "b", "a"]]
    assert import_cycles("demo", typing=True) == [["a", "b", "a"], ["c", "d", "c"]]


def test_the_package_cycle_finder_finds_a_circle_across_subpackages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("one", "two"):
        (tmp_path / "milpa_chat" / name).mkdir(parents=True)
        (tmp_path / "milpa_chat" / name / "__init__.py").write_text("")
    (tmp_path / "milpa_chat" / "top.py").write_text("from milpa_chat.one import a\n")
    (tmp_path / "milpa_chat" / "one" / "a.py").write_text("from milpa_chat.two.b import B\n")
    (tmp_path / "milpa_chat" / "two" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from milpa_chat.top import T\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path / "milpa_chat")
    assert package_cycles() == []
    assert package_cycles(typing=True) == [
        ["milpa_chat.one.a", "milpa_chat.two.b", "milpa_chat.top", "milpa_chat.one.a"]
    ]
    (tmp_path / "milpa_chat" / "two" / "b.py").write_text("def f():\n    import milpa_chat.top\n")
    assert package_cycles() == [["milpa_chat.one.a", "milpa_chat.two.b", "milpa_chat.top", "milpa_chat.one.a"]]


#: The audit trail's parts, each below :mod:`milpa_chat.runtime.trail`, which assembles them and names their
#: public objects: none imports the trail (even for types), so each is read and tested on its own.
TRAIL_PARTS = ("trail_chain", "trail_checkpoints", "trail_fields", "trail_keys", "trail_lanes")


@pytest.mark.parametrize("part", TRAIL_PARTS)
def test_the_trails_parts_sit_below_the_trail(part: str) -> None:
    imported = {m for m, _, _ in _imports(ROOT / "runtime" / f"{part}.py")}
    assert "milpa_chat.runtime.trail" not in imported, f"runtime/{part}.py imports runtime/trail.py"
    trail = {m for m, _, _ in _imports(ROOT / "runtime" / "trail.py")}
    assert f"milpa_chat.runtime.{part}" in trail, f"runtime/trail.py does not assemble runtime/{part}.py"


def test_the_trails_public_names_are_importable_from_the_trail() -> None:
    from milpa_chat.runtime import trail, trail_lanes

    assert trail.LANE_ENV is trail_lanes.LANE_ENV
    for name in trail.__all__:
        assert getattr(trail, name) is not None, name
