"""Every public name of every package can be imported, and ``import milpa_chat`` stays cheap: the package
top and ``milpa_chat.runtime`` load the runtime's modules when a name is first asked for."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "milpa_chat"
PACKAGES = sorted(
    ".".join(p.parent.relative_to(ROOT.parent).parts) for p in ROOT.rglob("__init__.py") if "__pycache__" not in p.parts
)


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_in_all_imports(package: str) -> None:
    # a fresh interpreter per package, so no name resolves only because another package loaded its module
    code = (
        f"import {package} as p\n"
        "for n in getattr(p, '__all__', ()):\n"
        f"    exec(f'from {package} import {{n}}')\n"
        "print('ok')"
    )
    assert _run(code) == "ok"


@pytest.mark.parametrize("package", ["milpa_chat", "milpa_chat.runtime"])
def test_dir_lists_every_name_before_it_is_loaded(package: str) -> None:
    code = f"import {package} as p\nprint(sorted(set(p.__all__) - set(dir(p))))"
    assert _run(code) == "[]"


def test_import_milpa_chat_loads_no_part_of_the_runtime_or_store() -> None:
    code = "import sys, milpa_chat; print(sorted(m for m in sys.modules if m.startswith('milpa_chat')))"
    assert _run(code) == "['milpa_chat', 'milpa_chat.errors']"


def test_the_top_names_are_the_runtimes_objects() -> None:
    import milpa_chat
    from milpa_chat.runtime import declare, params, registry, result

    assert milpa_chat.ToolRegistry is registry.ToolRegistry
    assert milpa_chat.tool is declare.tool
    assert milpa_chat.Param is params.Param is declare.Param
    assert milpa_chat.ErrorCode is result.ErrorCode
    assert milpa_chat.ToolResult is result.ToolResult


def test_modules_stay_reachable_as_attributes() -> None:
    code = (
        "import milpa_chat\n"
        "print(milpa_chat.runtime.pipeline.STEPS is milpa_chat.runtime.STEPS, milpa_chat.store.MemoryStore.__name__)"
    )
    assert _run(code) == "True MemoryStore"


@pytest.mark.parametrize("package", ["milpa_chat", "milpa_chat.runtime"])
def test_an_unknown_name_is_an_attribute_error_naming_it(package: str) -> None:
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'no_such_name'"):
        module.no_such_name  # noqa: B018
    with pytest.raises(ImportError, match="no_such_name"):
        exec(f"from {package} import no_such_name")
