"""The code blocks of README.md and docs/*.md, run as a reader pastes them.

The rules (tests/test_docs_blocks.py applies them to every page; the per-area ``test_docs.py`` files use
``run_page`` for the names a page leaves behind):

* A page is one continuing session. Its ``python`` blocks run in order in one fresh namespace, in a fresh
  process whose working directory is an empty temporary folder, as cells of one notebook would: a block may use
  the names an earlier block of the same page defined, never a name from another page. Top-level ``await``
  works: a page that uses it reads as a notebook, and all its blocks run while one event loop runs, as Jupyter
  cells do (so ``asyncio.run`` is not for those pages); other pages run as a script. Every ``test_*`` function a
  block defines is then called, as pytest would (a coroutine function in a fresh event loop; on a notebook
  page, in its loop).
* A block whose first line is ``# <file name>`` (``# shop.py``, ``# identities.toml``) is a file the reader
  saves: it is written into the page's folder under that name (a Python file is also run, like any block).
* ``bash``/``sh`` blocks run with bash, in the page's folder, with the Python environment's executables first
  on PATH (``milpa-chat``, ``python``); a ``console`` block is a transcript (prompts and output), shown, not
  run. A page's shell
  blocks share one environment (an ``export`` in one block holds in the next); ``$HOME`` is the page's folder, and
  a question (``Confirm? [y/N]``) is answered ``y``. Every command must exit 0.
* Only a marker skips: a Python block holding a line ``# needs: <reason>`` is skipped with that reason; a shell
  line ending in ``# needs: <reason>`` is skipped with that reason (the block's other lines run; a block whose
  every line is marked counts as skipped). The reasons: a real platform or provider key, a long-running server,
  the network (an install), or the whole suite itself (``make test``).
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import linecache
import os
import re
import subprocess
import sys
import types
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
SHELL = ("bash", "sh")
NEEDS = re.compile(r"#\s*needs:\s*(.+?)\s*$")
OUTCOME = "@@docs-block "
FILE_NAME = re.compile(r"^#\s*([\w.-]+\.(?:py|toml|json))\s*$")


@dataclass(frozen=True)
class Block:
    page: str
    number: int  # 1-based, counted over the page's blocks of every language
    lang: str
    code: str

    @property
    def needs(self) -> str | None:
        """The marker's reason when the whole block is skipped (Python), else None."""
        if self.lang in SHELL:
            return None
        for line in self.code.splitlines():
            found = NEEDS.match(line.strip())
            if found:
                return found.group(1)
        return None

    @property
    def file_name(self) -> str | None:
        first = self.code.splitlines()[0] if self.code.strip() else ""
        found = FILE_NAME.match(first.strip())
        return found.group(1) if found else None

    @property
    def label(self) -> str:
        return f"{self.page} ({self.lang} block {self.number})"


def page_path(page: str) -> Path:
    return ROOT / page if (ROOT / page).exists() else DOCS / page


def blocks(page: str) -> list[Block]:
    text = page_path(page).read_text(encoding="utf-8")
    found = re.findall(r"^```(\w+)\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)
    return [Block(page, n, lang, code) for n, (lang, code) in enumerate(found, start=1)]


def python_blocks(page: str) -> list[str]:
    return [b.code for b in blocks(page) if b.lang in ("python", "py")]


def run_page(page: str) -> types.ModuleType:
    """Execute every python block of ``docs/<page>`` in one module, in this process, and return it (for its
    names). Blocks marked ``# needs:`` are left out; top-level ``await`` runs in one loop for the page."""
    module = types.ModuleType(f"docs_{Path(page).stem}_example")
    sys.modules[module.__name__] = module
    loop = asyncio.new_event_loop()
    try:
        for block in blocks(page):
            if block.lang in ("python", "py") and block.needs is None:
                _exec(block, module.__dict__, loop)
    finally:
        loop.close()
        del sys.modules[module.__name__]
    return module


def _exec(block: Block, namespace: dict[str, object], loop: asyncio.AbstractEventLoop) -> None:
    # the block's source is readable by inspect.getsource, as a notebook cell's is (an operation's digest reads it)
    linecache.cache[block.label] = (len(block.code), None, block.code.splitlines(keepends=True), block.label)
    code = compile(block.code, block.label, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    if code.co_flags & inspect.CO_COROUTINE:
        loop.run_until_complete(eval(code, namespace))
    else:
        exec(code, namespace)


def _run_tests(before: dict[str, object], namespace: dict[str, object]) -> None:
    for name, value in list(namespace.items()):
        if name.startswith("test_") and callable(value) and before.get(name) is not value:
            if inspect.iscoroutinefunction(value):
                asyncio.run(asyncio.wait_for(value(), 60))  # a fresh event loop, as pytest-asyncio gives
            else:
                value()


def _shell_script(block: Block) -> tuple[str, list[str]]:
    """The block as a bash script, and the reasons of the lines a marker skips."""
    lines, skipped = [], []
    for line in block.code.splitlines():
        command = line
        found = NEEDS.search(command)
        if found:
            skipped.append(f"`{command.split('#')[0].strip()}`: {found.group(1)}")
            continue
        lines.append(command)
    return "\n".join(lines), skipped


def _run_shell(block: Block, folder: Path) -> list[str]:
    script, skipped = _shell_script(block)
    saved = folder / ".docs-shell-env"
    prelude = f"[ -f {saved} ] && source {saved}\nset -e -o pipefail\n"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(folder),
        "XDG_DATA_HOME": str(folder / ".local" / "share"),
    }  # the user's files stay untouched
    done = subprocess.run(
        ["bash", "-c", f"{prelude}{script}\nexport -p > {saved}\n"],
        cwd=folder,
        env=env,
        text=True,
        input="y\n" * 20,
        capture_output=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"exit {done.returncode}\n{done.stdout}\n{done.stderr}".strip())
    return skipped


def _is_notebook(page: str) -> bool:
    """A page with a top-level ``await`` reads as a notebook: its cells run while the event loop runs."""
    for block in blocks(page):
        if block.lang in ("python", "py"):
            code = compile(block.code, block.label, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            if code.co_flags & inspect.CO_COROUTINE:
                return True
    return False


async def _run_cell(block: Block, namespace: dict[str, object]) -> None:
    linecache.cache[block.label] = (len(block.code), None, block.code.splitlines(keepends=True), block.label)
    code = compile(block.code, block.label, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    before = dict(namespace)
    if code.co_flags & inspect.CO_COROUTINE:
        await eval(code, namespace)
    else:
        exec(code, namespace)
    for name, value in list(namespace.items()):
        if name.startswith("test_") and inspect.iscoroutinefunction(value) and before.get(name) is not value:
            await asyncio.wait_for(value(), 60)


def _run_block(
    block: Block,
    folder: Path,
    namespace: dict[str, object],
    notebook: asyncio.AbstractEventLoop | None,
    loop: asyncio.AbstractEventLoop,
) -> dict[str, object]:
    outcome: dict[str, object] = {"block": block.label, "status": "ran"}
    try:
        if block.needs is not None:
            outcome.update(status="skipped", reason=block.needs)
        elif block.lang in SHELL and not _shell_script(block)[0].strip():
            outcome.update(status="skipped", reason="; ".join(_shell_script(block)[1]))
        elif block.lang in SHELL:
            outcome["skipped_lines"] = _run_shell(block, folder)
        else:
            if block.file_name:
                (folder / block.file_name).write_text(block.code, encoding="utf-8")
            if notebook is not None:
                notebook.run_until_complete(_run_cell(block, namespace))
            else:
                before = dict(namespace)
                _exec(block, namespace, loop)
                _run_tests(before, namespace)
    except BaseException as exc:  # every failure is reported, with its block
        outcome.update(status="failed", reason=f"{type(exc).__name__}: {exc}"[:2000])
    return outcome


def run_page_blocks(page: str, folder: Path) -> list[dict[str, object]]:
    """Run every block of ``page`` in ``folder`` (this process); one outcome per block, printed as it ends."""
    os.chdir(folder)
    module = types.ModuleType("__docs__")
    sys.modules[module.__name__] = module
    loop = asyncio.new_event_loop()
    notebook = loop if _is_notebook(page) else None
    outcomes: list[dict[str, object]] = []
    for block in blocks(page):
        if block.lang not in (*SHELL, "python", "py"):
            if block.file_name:
                (folder / block.file_name).write_text(block.code, encoding="utf-8")
            continue
        outcome = _run_block(block, folder, module.__dict__, notebook, loop)
        outcomes.append(outcome)
        print(OUTCOME + json.dumps(outcome), flush=True)
    return outcomes


if __name__ == "__main__":  # python -m tests.docs_examples PAGE FOLDER
    sys.path.insert(0, str(ROOT))
    run_page_blocks(sys.argv[1], Path(sys.argv[2]))
    os._exit(0)  # a page's left-over threads (servers a block started) must not keep the process alive
