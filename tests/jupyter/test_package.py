"""Importing: the widgets are an extra, and the core never pulls ipywidgets in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from milpa_chat.jupyter._async import SafeButton

ROOT = Path(__file__).resolve().parents[2]

BLOCK_IPYWIDGETS = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "ipywidgets" or name.startswith("ipywidgets."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Block())
"""


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_without_ipywidgets_the_error_says_what_to_install() -> None:
    done = run(BLOCK_IPYWIDGETS + "import milpa_chat.jupyter")
    assert done.returncode == 1
    assert 'pip install "milpa-chat[jupyter]"' in done.stderr and "'ipywidgets'" in done.stderr


def test_the_core_never_imports_ipywidgets() -> None:
    done = run(
        "import sys, milpa_chat, milpa_chat.chat, milpa_chat.renderers, milpa_chat.runtime\n"
        "print('ipywidgets' in sys.modules)"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_a_disabled_button_refuses_clicks_from_code_and_from_the_front_end() -> None:
    clicks: list[str] = []
    button = SafeButton(description="Approve")
    button.on_click(lambda b: clicks.append(b.description))
    button.click()
    button.disabled = True
    button.click()
    button._handle_button_msg(None, {"event": "click"}, [])  # what a stale browser view sends
    assert clicks == ["Approve"]
