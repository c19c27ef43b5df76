"""Run the installed ``milpa-chat`` console script in a directory of its own, as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

SCRIPT = Path(sys.executable).with_name("milpa-chat")

SHOP = """
from pathlib import Path
from typing import Annotated, Any

from milpa_chat import Param, ToolRegistry, VerifyPolicy, tool

LEDGER = Path(__file__).with_name("ledger.txt")


class Shop:
    @tool("pay", "Pay a supplier; a manager approves it first", scopes=["payments:send"], mutating=True,
          verify=VerifyPolicy(approver_scopes=("payments:approve",)))
    def pay(self, to: Annotated[str, Param("Who is paid")], amount: Annotated[float, Param("EUR")]) -> dict[str, Any]:
        with LEDGER.open("a", encoding="utf-8") as fh:
            fh.write(f"{to} {amount}\\n")
        return {"paid": to, "amount": amount}


def tools(store: Any) -> ToolRegistry:
    registry = ToolRegistry(store=store)
    registry.scan(Shop())
    return registry


registry = ToolRegistry()  # built without a store: the command moves it onto its own
registry.scan(Shop())
"""

IDENTITIES = """
[roles]
clerk = ["payments:send"]
manager = ["payments:approve"]

[users]
"cli:alice" = ["clerk"]
"cli:bob" = ["manager"]
"cli:carol" = ["manager"]
"""


@dataclass
class Shell:
    """A working directory (holding ``shop.py``), an empty ``TMPDIR`` and a data directory of its own."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def make(cls, root: Path) -> Shell:
        (root / "work").mkdir()
        (root / "tmp").mkdir()
        (root / "work" / "shop.py").write_text(SHOP, encoding="utf-8")
        (root / "work" / "ids.toml").write_text(IDENTITIES, encoding="utf-8")
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "MILPA_STORE", "MILPA_PRINCIPAL", "MILPA_IDENTITIES")
        }
        env.update(TMPDIR=str(root / "tmp"), XDG_DATA_HOME=str(root / "data"), HOME=str(root / "home"), COLUMNS="200")
        return cls(root, env)

    @property
    def work(self) -> Path:
        return self.root / "work"

    def run(self, *args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SCRIPT), *args],
            cwd=self.work,
            env={**self.env, **env},
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def ledger(self) -> list[str]:
        path = self.work / "ledger.txt"
        return path.read_text(encoding="utf-8").splitlines() if path.exists() else []

    def temporary_files(self) -> list[str]:
        return sorted(str(p.relative_to(self.root / "tmp")) for p in (self.root / "tmp").rglob("*"))
