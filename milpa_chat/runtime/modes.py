"""A per-conversation approval mode: what a person sets in one chat for their own calls there.

* ``confirm every write`` — every call with effects asks them to confirm first, even where the policy
  would let it run;
* ``confirm writes over N`` — a call with effects asks when one of its numeric arguments exceeds ``N``;
* ``no confirmation for reads for 1 hour`` — a read-only tool that asks for confirmation runs without
  asking, until the time is up.

The first two only *tighten* (anyone may set them). The third *loosens*: it is refused — never silently
downgraded — to someone without a waive scope. For someone with one:

* with standing grants installed (``registry.grants``, a :class:`~milpa_chat.grants.GrantDesk`), it drafts
  time-boxed standing grants for that person's seat over the read-only operations the desk offers grants
  for (``GrantDesk.draft_loosening``); each is signed on its own card by a person who may sign grants (the
  desk's signing rule, four-eyes included), then the pipeline's standing step lends matching calls until
  it expires — and the tighter mode applies again;
* without, it is a time-boxed waiver that names who set it, until when, and carries the signature of the
  audit trail's key (when one is configured); when it runs out the tighter mode stays.

Every change is an entry in the audit trail (``mode_set``, ``mode_loosened``, ``mode_grant_drafted``,
``mode_refused``). A model never sets a mode nor signs its grant (``ToolContext.by_model``).

:class:`ModeDesk` keeps the modes (collection ``approval_modes``, one record per channel, chat and person)
and adds the pipeline step that applies them (:meth:`ModeDesk.install`), before the confirm gate.

The step runs on every tool call of a conversation, so the desk keeps each conversation's record in memory
for ``cache_seconds`` (store clock, 2 by default): an agent's turn of twenty tool calls reads the store
once. A change made through this desk drops the conversation's copy at once (the next call reads the
store); a change made by another process (or another desk over the same store) applies to this process's
calls at the latest ``cache_seconds`` later. A loosening's end is checked on every call, never cached.
``cache_seconds=0`` reads the store on every call.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from milpa_chat.runtime.approval import ApprovalRefused
from milpa_chat.runtime.approval_actions import refuse_model
from milpa_chat.runtime.result import ToolResult

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.pipeline import Outcome
    from milpa_chat.runtime.registry import ToolRegistry
    from milpa_chat.runtime.services import Call, StandingGate

__all__ = ["MODES", "Mode", "ModeChange", "ModeDesk", "parse_mode"]

MODES = "approval_modes"
#: Seconds (store clock) a conversation's mode is kept in memory between reads of the store.
CACHE_SECONDS = 2.0
#: The most conversations whose mode one desk keeps in memory (the least recently used are dropped).
CACHED = 4096
#: Longest a loosening may last (seconds).
MAX_LOOSEN = 86400.0
_UNITS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600, "d": 86400}
HOW = (
    "Say one of: 'confirm every write', 'confirm writes over <number>', 'no confirmation for reads for <n> "
    "minutes|hours', or 'off' (back to the policy's default)."
)


@dataclass(frozen=True, slots=True)
class Mode:
    """A parsed mode: ``writes`` / ``over`` (tighten), ``reads_free`` (loosen, for ``seconds``) or ``off``."""

    kind: str
    limit: float | None = None
    seconds: float | None = None

    @property
    def loosens(self) -> bool:
        return self.kind == "reads_free"


def parse_mode(text: str) -> Mode:
    """The mode a person wrote (see the module's docstring); ``ApprovalRefused`` saying how to write it."""
    t = " ".join(str(text).lower().split())
    if t in ("off", "default", "normal"):
        return Mode("off")
    if re.fullmatch(r"confirm (every|all) writes?", t):
        return Mode("writes")
    over = re.fullmatch(r"confirm writes? over (\d+(?:\.\d+)?)", t)
    if over:
        return Mode("over", limit=float(over.group(1)))
    loose = re.fullmatch(r"no confirmation for reads for (\d+|an?|one) ?([a-z]+?)s?", t)
    if loose and loose.group(2) in _UNITS:
        n = 1.0 if loose.group(1) in ("a", "an", "one") else float(loose.group(1))
        seconds = n * _UNITS[loose.group(2)]
        if not 0 < seconds <= MAX_LOOSEN:
            raise ApprovalRefused(
                f"A loosening lasts at most {MAX_LOOSEN / 3600:.0f} hours; ask for less.", code="VALIDATION_ERROR"
            )
        return Mode("reads_free", seconds=seconds)
    raise ApprovalRefused(f"{str(text)[:80]!r} is not an approval mode. {HOW}", code="VALIDATION_ERROR")


@dataclass(frozen=True, slots=True)
class ModeChange:
    """What setting a mode did: ``told`` (for the person) and ``approvals`` to deliver (a loosening's
    standing-grant signatures, each sent to the approvers like any card)."""

    told: str
    approvals: tuple[Any, ...] = ()


def _numbers(value: Any) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list | tuple):
        return [n for v in value for n in _numbers(v)]
    return []


class ModeDesk:
    """Modes of ``registry``'s callers, per channel, chat and person. ``waive_scopes``: who may loosen.
    ``cache_seconds``: how long a conversation's mode is kept in memory (see the module's docstring)."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        waive_scopes: tuple[str, ...] = ("approvals:waive",),
        cache_seconds: float = CACHE_SECONDS,
    ) -> None:
        if isinstance(cache_seconds, bool) or not isinstance(cache_seconds, int | float) or not cache_seconds >= 0:
            raise ValueError(
                f"ModeDesk(cache_seconds=...) must be a number of seconds, 0 or more (0: read the store on every "
                f"call), got {cache_seconds!r}"
            )
        self.registry = registry
        self.store = registry.store
        self.waive_scopes = tuple(waive_scopes)
        self.cache_seconds = float(cache_seconds)
        #: conversation -> (when it was read, its record's value or None); see :meth:`_read`
        self._cache: OrderedDict[str, tuple[float, dict[str, Any] | None]] = OrderedDict()
        #: conversation -> how often this desk changed it (a read that started before a change is not kept)
        self._changes: dict[str, int] = {}

    @staticmethod
    def key(ctx: ToolContext) -> str | None:
        chat = ctx.extra.get("chat_id")
        if not ctx.principal or chat is None:
            return None
        return f"{ctx.channel}:{chat}:{ctx.principal}"

    def install(self) -> ModeDesk:
        """Add the step that applies modes to ``registry``'s pipeline, just before the confirm gate."""
        from milpa_chat.runtime.pipeline import confirm_gate

        steps = self.registry.steps
        if self.gate not in steps:
            steps.insert(steps.index(confirm_gate) if confirm_gate in steps else len(steps) - 1, self.gate)
        return self

    async def current(self, ctx: ToolContext, *, fresh: bool = False) -> dict[str, Any]:
        """The mode in force for ``ctx``'s conversation: ``tight`` and ``loose`` (an expired loosening is gone).
        Kept in memory for ``cache_seconds``; ``fresh``: read the store."""
        key = self.key(ctx)
        stored = await self._read(key, fresh=fresh) if key else None
        value = dict(stored) if stored is not None else {}
        loose = value.get("loose")
        if loose and float(loose["until"]) <= self.store.clock():
            value["loose"] = None
        grants = value.get("grants")
        if grants and float(grants["until"]) <= self.store.clock():
            value["grants"] = None
        return value

    async def set(self, ctx: ToolContext, text: str, *, via: str | None = None) -> str:
        """Set the mode ``text`` names for ``ctx``'s conversation; returns what the person is told."""
        return (await self.change(ctx, text, via=via)).told

    async def change(self, ctx: ToolContext, text: str, *, via: str | None = None) -> ModeChange:
        """Set the mode ``text`` names for ``ctx``'s conversation: what the person is told, and the signature
        requests to deliver (a loosening drafted as standing grants)."""
        if ctx.by_model:
            await refuse_model(self.registry.approvals, "mode", "set the approval mode of", ctx)
        key = self.key(ctx)
        if key is None:
            raise ApprovalRefused("A mode is set by an identified person in a chat.", code="FORBIDDEN")
        mode = parse_mode(text)
        now = self.store.clock()
        current = await self.current(ctx, fresh=True)
        value: dict[str, Any] = {
            "tight": current.get("tight"),
            "loose": current.get("loose"),
            "grants": current.get("grants"),
        }
        if mode.loosens:
            if not ctx.has_any_scope(self.waive_scopes):
                await self._trail("mode_refused", key, {"by": ctx.principal, "mode": mode.kind})
                raise ApprovalRefused(
                    "Your approval mode can only get stricter here: loosening it needs one of these scopes: "
                    f"{', '.join(self.waive_scopes)}. Nothing was changed.",
                    code="FORBIDDEN",
                )
            grants = self.registry.grants
            if grants is not None:
                return await self._draft_grants(grants, ctx, key, mode, now, via, value)
            value["loose"] = self._waiver(ctx, key, mode, now, via)
            await self._write(key, value)
            await self._trail(
                "mode_loosened",
                key,
                {"by": ctx.principal, "until": value["loose"]["until"], "sig": value["loose"]["sig"]},
            )
            minutes = (mode.seconds or 0) / 60
            return ModeChange(
                f"For the next {minutes:.0f} minutes, read-only tools run here without asking you to confirm; "
                "then your stricter mode applies again."
            )
        if mode.kind == "off":
            value = {"tight": None, "loose": value["loose"], "grants": value["grants"]}
            told = "Back to the policy's default: it decides what asks for confirmation here."
        else:
            value["tight"] = {"kind": mode.kind, "limit": mode.limit, "by": ctx.principal, "at": now}
            told = (
                "Every call with effects asks you to confirm first here."
                if mode.kind == "writes"
                else f"A call with effects asks you to confirm first here when a number in it exceeds {mode.limit:g}."
            )
        await self._write(key, value)
        await self._trail("mode_set", key, {"by": ctx.principal, "mode": mode.kind, "limit": mode.limit})
        return ModeChange(told)

    async def _draft_grants(
        self,
        grants: StandingGate,
        ctx: ToolContext,
        key: str,
        mode: Mode,
        now: float,
        via: str | None,
        value: dict[str, Any],
    ) -> ModeChange:
        """A loosening as standing grants: drafted for ``ctx``'s seat, lent only once a person signs them."""
        seconds = float(mode.seconds or 0)
        note = f"Approval mode of {ctx.principal} in {key}: no confirmation for reads for {seconds / 60:.0f} minutes."
        try:
            drafted = await grants.draft_loosening(ctx, seconds, via=via or ctx.channel, note=note)
        except ApprovalRefused as exc:
            await self._trail("mode_refused", key, {"by": ctx.principal, "mode": mode.kind, "why": str(exc)[:200]})
            raise
        ids = [record.id for record, _ in drafted]
        value["grants"] = {"ids": ids, "until": now + seconds, "by": ctx.principal}
        await self._write(key, value)
        await self._trail("mode_grant_drafted", key, {"by": ctx.principal, "until": now + seconds, "grants": ids})
        return ModeChange(
            f"Drafted standing grant{'s' if len(ids) != 1 else ''} {', '.join(ids)}: once a person who may sign "
            f"grants signs it on its card, read-only tools run here without asking you to confirm for "
            f"{seconds / 60:.0f} minutes from now; then your stricter mode applies again.",
            tuple(approval for _, approval in drafted),
        )

    def _waiver(self, ctx: ToolContext, key: str, mode: Mode, now: float, via: str | None) -> dict[str, Any]:
        """The time-boxed waiver: who, where, until when, signed with the trail's key when there is one."""
        body = {
            "kind": "reads_free",
            "conversation": key,
            "signed_by": ctx.principal,
            "via": via or ctx.channel,
            "from": now,
            "until": now + float(mode.seconds or 0),
        }
        text = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        trail = self.registry.approvals.trail
        signing = getattr(trail, "key", None)
        sig = signing.sign(text).hex() if signing is not None else None
        return {**body, "digest": hashlib.sha256(text).hexdigest(), "sig": sig}

    async def _read(self, key: str, *, fresh: bool) -> dict[str, Any] | None:
        """The stored value of ``key``'s mode, from memory while younger than ``cache_seconds``."""
        now = self.store.clock()
        kept = self._cache.get(key)
        if not fresh and kept is not None and 0 <= now - kept[0] < self.cache_seconds:
            self._cache.move_to_end(key)
            return kept[1]
        changes = self._changes.get(key, 0)
        record = await self.store.get(MODES, key)
        value = record.value if record is not None else None
        if self.cache_seconds > 0 and self._changes.get(key, 0) == changes:  # no change of ours since the read
            self._cache[key] = (now, value)
            self._cache.move_to_end(key)
            while len(self._cache) > CACHED:
                self._cache.popitem(last=False)
        return value

    async def _write(self, key: str, value: dict[str, Any]) -> None:
        self._changes[key] = self._changes.get(key, 0) + 1
        self._cache.pop(key, None)
        try:
            await self.store.put(MODES, key, value)
        finally:
            self._changes[key] += 1  # a read that overlapped the write is not kept either
            self._cache.pop(key, None)

    async def _trail(self, kind: str, key: str, fields: dict[str, Any]) -> None:
        trail = self.registry.approvals.trail
        if trail is not None:
            await trail.append(kind, key, fields)

    # ------------------------------------------------------------------------------- the step
    def gate(self, call: Call) -> Outcome:
        """The pipeline step: a tightened conversation asks for confirmation where the policy would not; a
        loosened one runs a read-only confirm tool without asking (until the waiver runs out)."""
        ctx, tool = call.ctx, call.tool
        if self.key(ctx) is None or tool.verify is not None or tool.extra.get("self_confirming"):
            return None
        return self._gate(call)

    async def _gate(self, call: Call) -> ToolResult | None:
        from milpa_chat.runtime import gates
        from milpa_chat.runtime.execute import execute

        ctx, tool = call.ctx, call.tool
        mode = await self.current(ctx)
        policy = call.services.policy
        if tool.mutating and mode.get("tight") and not policy.requires_confirmation(ctx, tool):
            tight = mode["tight"]
            wire = call.validated.wire
            if tight["kind"] == "writes" or any(n > float(tight["limit"]) for n in _numbers(dict(wire))):
                return await gates.ask_confirmation(call.services, tool, dict(wire), ctx, call.t0)
        if not tool.mutating and mode.get("loose") and policy.requires_confirmation(ctx, tool):
            return await execute(call)
        return None
