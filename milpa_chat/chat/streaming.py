"""Streamed answers: a :class:`Stream` shows an answer while it is produced, with the steps of its plan.

A surface opens one with :meth:`~milpa_chat.chat.surface.Surface.open_stream` (where its
``traits.streams`` says it can); the agent then calls :meth:`Stream.append` with each piece of text,
:meth:`Stream.step` when a step of its plan starts, waits or ends ("Looking up invoices…", "Waiting for
approval by payments:approve — card in #approvals"), and :meth:`Stream.finish` once with the whole
answer. What the platform is sent is coalesced: at most one update every ``interval`` seconds (the
platform's limit for that kind of update), and always the latest state, so a fast model never floods
the chat and a slow one is shown as it goes.

:class:`EditedStream` is the fallback every surface can offer: a message sent once and edited in place
(Telegram groups, Slack workspaces without streaming). Platform streams (Telegram drafts, Slack's
``chat.startStream``) live in :mod:`milpa_chat.bots`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol, get_args

from milpa_chat.chat import cards
from milpa_chat.chat.inbound import MessageRef
from milpa_chat.gateway.state import StepStatus
from milpa_chat.renderers.model import Actions, Button, Message

if TYPE_CHECKING:
    from milpa_chat.runtime.approval import Approval

__all__ = [
    "FEEDBACK",
    "STATUS_MARKS",
    "EditedStream",
    "PlanStep",
    "Poster",
    "StepStatus",
    "Stream",
    "feedback_buttons",
    "plain_text",
    "waiting_title",
]

log = logging.getLogger("milpa_chat.chat.streaming")

STEP_STATUSES: tuple[str, ...] = get_args(StepStatus)
#: How a step's state is shown where a platform has no plan of its own (drafts, edited messages).
STATUS_MARKS = {"pending": "⏳", "in_progress": "🔄", "complete": "✅", "error": "❌"}
#: The action of the 👍 / 👎 buttons on an agent's answer (ref: ``<answer id>.up`` / ``.down``).
FEEDBACK = "feedback"


class Poster(Protocol):
    """What an edited stream needs of a surface (:class:`~milpa_chat.chat.surface.Surface` is one)."""

    async def send(self, chat_id: str, message: Message) -> MessageRef: ...

    async def edit(self, ref: MessageRef, message: Message) -> None: ...


@dataclass(frozen=True, slots=True)
class PlanStep:
    """One step of the agent's plan as shown: ``id`` (stable across updates, also after a restart),
    ``title``, ``status`` and optional ``details``."""

    id: str
    title: str
    status: StepStatus
    details: str | None = None


def feedback_buttons(answer_id: str) -> tuple[Button, Button]:
    """The 👍 / 👎 buttons of an answer (what :mod:`milpa_chat.chat.feedback` records)."""
    return Button("👍", FEEDBACK, f"{answer_id}.up"), Button("👎", FEEDBACK, f"{answer_id}.down")


def waiting_title(approval: Approval) -> str:
    """The plan step of a call waiting on ``approval``: who decides, and where the card is."""
    if approval.kind != "verification":
        return f"Waiting for your confirmation to run {approval.label} — card in this chat"
    scopes = list(approval.data.get("policy", {}).get("approver_scopes", ()))
    who = ", ".join(scopes) or "an approver"
    route = approval.data.get("route") or {}
    here = (route.get("surface"), str(route.get("chat_id")))
    places = [
        _place(str(c["surface"]), str(c["chat_id"]), (c["surface"], str(c["chat_id"])) == here)
        for c in approval.data.get("cards", [])
        if c.get("role") == "approver"
    ]
    where = ", ".join(dict.fromkeys(places)) or "this chat"
    return f"Waiting for approval by {who} — card in {where}"


def _place(surface: str, chat_id: str, here: bool) -> str:
    if here:
        return "this chat"
    if surface == "slack":
        return "a direct message on Slack" if chat_id.startswith("D") else f"#{chat_id} on Slack"
    if surface == "telegram":
        return "a private chat on Telegram" if not chat_id.startswith("-") else f"chat {chat_id} on Telegram"
    return f"{surface} chat {chat_id}"


def plain_text(steps: list[PlanStep], text: str, *, final: bool = False) -> str:
    """Steps (one line each, marked by state) above the text: how a draft or an edited message shows them.
    ``final``: the message that stays keeps only the steps still waiting or that failed (the answer tells
    what was done)."""
    if final:
        steps = [s for s in steps if s.status in ("pending", "error")]
    lines = [f"{STATUS_MARKS[s.status]} {s.title}" + (f" ({s.details})" if s.details else "") for s in steps]
    head = "\n".join(lines)
    return f"{head}\n\n{text}".strip() if head else text.strip()


class Stream(ABC):
    """An answer being shown while it is produced. Every update is coalesced (see the module's docstring).

    ``interval``: the least time between two updates sent to the platform (seconds). Subclasses send
    with :meth:`_push` (the latest :attr:`text` and :attr:`steps`) and end with :meth:`_close`.
    """

    #: Whether :meth:`finish` waits out ``interval`` before its last update (an edit counts against the
    #: same limit; a new message, such as a draft's final message, does not).
    final_waits = False

    def __init__(self, *, interval: float) -> None:
        if interval < 0:
            raise ValueError(f"a stream's interval is seconds >= 0, got {interval}")
        self.interval = interval
        self.text = ""
        self._steps: dict[str, PlanStep] = {}
        self._changed: list[str] = []  # step ids changed since the last update sent
        self._sent = 0  # how much of ``text`` the platform was sent
        self._last = -float("inf")
        self._task: asyncio.Task[None] | None = None
        self._pushing = False
        self._lock = asyncio.Lock()
        self.finished = False
        #: How many updates reached the platform (the first included).
        self.updates = 0

    @property
    def steps(self) -> list[PlanStep]:
        """The plan's steps, in the order they first appeared."""
        return list(self._steps.values())

    # ------------------------------------------------------------------ what the agent calls
    async def append(self, text: str) -> None:
        """Add ``text`` to the answer."""
        self._check_open()
        if text:
            self.text += text
            self._kick()

    async def step(self, id: str, title: str, status: StepStatus, details: str | None = None) -> None:
        """Show step ``id`` with ``title`` and ``status`` (a known id moves on in place)."""
        self._check_open()
        if status not in STEP_STATUSES:
            raise ValueError(f"a step's status is one of {', '.join(STEP_STATUSES)}; got {status!r}")
        if not id or not title.strip():
            raise ValueError("a step needs an id and a title")
        new = PlanStep(id, title.strip(), status, details)
        if self._steps.get(id) == new:
            return
        self._steps[id] = new
        if id not in self._changed:
            self._changed.append(id)
        self._kick()

    async def finish(self, final: str | None = None, *, feedback: str | None = None) -> MessageRef | None:
        """End the stream. ``final`` is the whole answer: what was not streamed of it is added (a reply
        the model did not stream, such as a notice, is added below). ``feedback``: an answer id whose
        👍 / 👎 buttons the last message carries. Returns where the answer stays, when it is a message
        (``None`` when nothing was shown nor is to be: an agent with no answer to an empty message)."""
        self._check_open()
        if final and final.strip() and final.strip() not in self.text:
            self.text = f"{self.text.rstrip()}\n\n{final}" if self.text.strip() else final
        self.finished = True
        task = self._task
        if task is not None and not task.done():
            if self._pushing:  # an update on its way: let it arrive (what it took is no longer in the rest)
                with contextlib.suppress(Exception):
                    await task
            else:  # waiting out the interval: the final update carries everything instead
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if not self.text.strip() and not self._steps and self.updates == 0:
            return None  # nothing was shown and there is nothing to show
        async with self._lock:
            if self.final_waits:
                await asyncio.sleep(max(0.0, self._last + self.interval - time.monotonic()))
            return await self._close(feedback)

    def _check_open(self) -> None:
        if self.finished:
            raise RuntimeError("this stream is finished; open a new one (surface.open_stream)")

    # ------------------------------------------------------------------ coalescing
    def _kick(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._later())

    async def _later(self) -> None:
        await asyncio.sleep(max(0.0, self._last + self.interval - time.monotonic()))
        async with self._lock:
            if self.finished:
                return
            self._pushing = True
            try:
                await self._push()
                self.updates += 1
            except Exception as exc:  # an update is cosmetic: the answer still ends with finish()
                wait = _retry_after(exc)
                log.warning("a stream update failed (%s: %s)", type(exc).__name__, exc)
                if wait is not None:
                    self._last = time.monotonic() + wait - self.interval
                    self._task = None
                    self._kick()
                    return
            finally:
                self._pushing = False
            self._last = time.monotonic()
        if self._pending() and not self.finished:
            self._task = None
            self._kick()

    def _pending(self) -> bool:
        return bool(self._changed) or self._sent < len(self.text)

    def _take(self) -> tuple[str, list[PlanStep]]:
        """The text not sent yet and the steps changed since the last update; both count as sent now."""
        delta, changed = self.text[self._sent :], [self._steps[i] for i in self._changed]
        self._sent, self._changed = len(self.text), []
        return delta, changed

    @abstractmethod
    async def _push(self) -> None:
        """Send the latest state (:meth:`_take` gives what changed since the last update)."""

    @abstractmethod
    async def _close(self, feedback: str | None) -> MessageRef | None:
        """Send the final state; where the answer stays."""


class EditedStream(Stream):
    """The fallback: one message on ``surface`` in ``chat_id``, sent at the first update and edited in
    place at most once every ``interval`` seconds (the platform's edit limit; see the surfaces)."""

    final_waits = True

    def __init__(self, surface: Poster, chat_id: str, *, interval: float, limit: int = 4000) -> None:
        super().__init__(interval=interval)
        self.surface = surface
        self.chat_id = chat_id
        self.limit = limit
        self.ref: MessageRef | None = None

    def _message(self, *, feedback: str | None = None, whole: bool = False) -> Message:
        shown = plain_text(self.steps, self.text, final=whole)
        if not whole and len(shown) > self.limit:
            shown = shown[: self.limit - 1] + "…"
        message = cards.text(shown or "…")
        if feedback is not None:
            message = replace(message, blocks=(*message.blocks, Actions.row(*feedback_buttons(feedback))))
        return message

    async def _push(self) -> None:
        self._take()
        if self.ref is None:
            self.ref = await self.surface.send(self.chat_id, self._message())
        else:
            await self.surface.edit(self.ref, self._message())

    async def _close(self, feedback: str | None) -> MessageRef | None:
        self._take()
        message = self._message(feedback=feedback, whole=True)
        if self.ref is None:
            self.ref = await self.surface.send(self.chat_id, message)
        else:
            await self.surface.edit(self.ref, message)
        self.updates += 1
        return self.ref


def _retry_after(exc: BaseException) -> float | None:
    """Seconds the platform asked to wait (Telegram ``RetryAfter``, Slack's ``Retry-After``), if any."""
    wait = getattr(exc, "retry_after", None)
    if wait is None:
        headers: Any = getattr(getattr(exc, "response", None), "headers", None)
        wait = headers.get("Retry-After") if hasattr(headers, "get") else None
    if isinstance(wait, timedelta):
        return wait.total_seconds()
    try:
        return float(wait) if wait is not None else None
    except (TypeError, ValueError):
        return None
