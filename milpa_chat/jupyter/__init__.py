"""Jupyter widgets: explore tools and decide approvals in a notebook (extra ``jupyter``).

* :class:`ToolExplorer` — pick a tool, fill a form generated from its schema, Run or Dry run it;
* :class:`ApprovalInbox` — the approvals a notebook user may decide, from every surface;
* :func:`confirm` — an inline Confirm/Cancel prompt for a result that asks for confirmation.

Nothing here blocks the kernel: a click schedules work on the notebook's event loop, and waiting
for a decision is always ``await``-ed (a blocked cell never sees a click). ipywidgets is imported
when one of these names is first used, not when this package is imported.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from milpa_chat.errors import MissingExtraError

if TYPE_CHECKING:
    from milpa_chat.jupyter.confirm import ConfirmPrompt, confirm
    from milpa_chat.jupyter.explorer import ToolExplorer
    from milpa_chat.jupyter.inbox import ApprovalInbox, InboxItem

__all__ = ["ApprovalInbox", "ConfirmPrompt", "InboxItem", "ToolExplorer", "confirm"]

_FEATURE = "milpa_chat.jupyter (the notebook widgets)"
try:  # the install hint at import, without importing ipywidgets
    _found = importlib.util.find_spec("ipywidgets") is not None
except (ImportError, ValueError):
    _found = False
if not _found:
    raise MissingExtraError(_FEATURE, "jupyter", "ipywidgets")

_EXPORTS = {
    "ApprovalInbox": "milpa_chat.jupyter.inbox",
    "ConfirmPrompt": "milpa_chat.jupyter.confirm",
    "InboxItem": "milpa_chat.jupyter.inbox",
    "ToolExplorer": "milpa_chat.jupyter.explorer",
    "confirm": "milpa_chat.jupyter.confirm",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'milpa_chat.jupyter' has no attribute {name!r}")
    # all at once: importing the submodule ``confirm`` binds it here, and the function must win
    for export, module in _EXPORTS.items():
        globals()[export] = getattr(importlib.import_module(module), export)
    return globals()[name]


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
