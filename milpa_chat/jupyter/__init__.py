"""Jupyter widgets: explore tools and decide approvals in a notebook (extra ``jupyter``).

* :class:`ToolExplorer` — pick a tool, fill a form generated from its schema, Run or Dry run it;
* :class:`ApprovalInbox` — the approvals a notebook user may decide, from every surface;
* :func:`confirm` — an inline Confirm/Cancel prompt for a result that asks for confirmation.

Nothing here blocks the kernel: a click schedules work on the notebook's event loop, and waiting
for a decision is always ``await``-ed (a blocked cell never sees a click).
"""

from __future__ import annotations

from milpa_chat._extras import require

require("ipywidgets", extra="jupyter", feature="milpa_chat.jupyter (the notebook widgets)")

from milpa_chat.jupyter.confirm import ConfirmPrompt, confirm  # noqa: E402
from milpa_chat.jupyter.explorer import ToolExplorer  # noqa: E402
from milpa_chat.jupyter.inbox import ApprovalInbox, InboxItem  # noqa: E402

__all__ = ["ApprovalInbox", "ConfirmPrompt", "InboxItem", "ToolExplorer", "confirm"]
