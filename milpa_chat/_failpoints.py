"""Named crash points for fault tests, in the manner of failpoints in databases.

``MILPA_FAILPOINTS=card.sent,tool.returned`` (read once, at import) makes the process kill itself
with SIGKILL when it reaches one of those points, so a test can crash a real bot process exactly
between two steps of an approval. Unset, each point costs one set lookup.

Points: ``approval.opened`` (stored, no card sent), ``card.sent`` (a card sent, its id not recorded),
``decision.claimed`` (a run claimed, the tool not started), ``tool.started`` (the tool about to be
invoked), ``tool.returned`` (the tool returned, its result not recorded), ``run.finished`` (the
result recorded, nothing delivered), ``report.sent`` (the result posted, not recorded as posted).
"""

from __future__ import annotations

import os
import signal

__all__ = ["POINTS", "failpoint"]

POINTS = (
    "approval.opened",
    "card.sent",
    "decision.claimed",
    "tool.started",
    "tool.returned",
    "run.finished",
    "report.sent",
)
_ARMED = frozenset(p.strip() for p in os.environ.get("MILPA_FAILPOINTS", "").split(",") if p.strip())


def failpoint(name: str) -> None:
    """Die here (SIGKILL, no cleanup, as a crash would) when ``name`` is armed."""
    if name in _ARMED:
        os.kill(os.getpid(), signal.SIGKILL)
