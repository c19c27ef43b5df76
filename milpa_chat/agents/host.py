"""``ApprovalHost``: kit approvals for a tool call an agent of another framework proposes.

One small API over the runtime's one durable :class:`~milpa_chat.runtime.Approval`:

* :meth:`ApprovalHost.request` opens the approval for a proposed call (the requester is the person the
  agent acts for; the call is marked model-made) and delivers its cards on every configured surface — unless
  a standing grant answers it first (lent: the record is approved by the grant, no card; stopped: refused
  with the judge's sentence);
* :meth:`ApprovalHost.wait` awaits the decision durably: it reads the record in the store, so a new process
  re-attaches by approval id after a restart; the decision is always a person's (a tap, the inbox, the CLI);
* :meth:`ApprovalHost.run` runs the approved call exactly once (the caller that moves the record
  ``approved -> executing`` runs it, with the approved arguments; the approval id is the idempotency key,
  :func:`approval_id` inside the tool) and records its result, which is posted where the request came from;
* :meth:`ApprovalHost.save_run` / :meth:`pending_runs` keep a paused framework run in the store.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import secrets
import sys
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from milpa_chat.runtime.approval import FINAL, Approval, ApprovalRefused
from milpa_chat.runtime.approvals import Change
from milpa_chat.runtime.gates import action_summary
from milpa_chat.runtime.result import ToolResult

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import VerifyPolicy
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["ApprovalHost", "Decision", "approval_id", "context_from", "context_record"]

log = logging.getLogger("milpa_chat.agents")

RUNS = "agent_runs"
#: States of a record whose call was allowed (it may have run since).
ALLOWED = frozenset({"approved", "executing", "executed", "failed", "effect_uncertain"})
_current: ContextVar[str | None] = ContextVar("milpa_chat_approval_id", default=None)


def approval_id() -> str | None:
    """Inside a tool run by :meth:`ApprovalHost.run`: the approval id, the same on every attempt of that
    call (an idempotency key for the tool's own side effects); ``None`` elsewhere."""
    return _current.get()


def bind_approval_id(approval: str | None) -> None:
    """For an adapter that learns, inside the framework's own run of one approved call, which approval it is:
    :func:`approval_id` answers ``approval`` in the current context (that call's own task); ``None``: code that
    runs no approved call (a rejected one's) has no approval id."""
    _current.set(approval)


@contextmanager
def approval_id_as(approval: str | None) -> Iterator[None]:
    """:func:`approval_id` answers ``approval`` inside the block (and in the tasks it starts), as before after."""
    token = _current.set(approval)
    try:
        yield
    finally:
        _current.reset(token)


@dataclass(frozen=True, slots=True)
class Decision:
    """What people decided about one approval (read from its record)."""

    approval: Approval

    @property
    def id(self) -> str:
        return self.approval.id

    @property
    def state(self) -> str:
        return self.approval.state

    @property
    def approved(self) -> bool:
        return self.approval.state in ALLOWED

    @property
    def args(self) -> dict[str, Any]:
        """The arguments that run: after an edit, the edited ones."""
        return self.approval.args

    @property
    def digest(self) -> str:
        return str(self.approval.data["digest"])

    @property
    def edited(self) -> bool:
        return self.approval.revision > 0

    @property
    def decided_by(self) -> str | None:
        by = self.approval.data.get("decided_by")
        return None if by is None else str(by)

    @property
    def deciders(self) -> list[str]:
        """Who approved (every vote of a quorum), or who decided otherwise."""
        votes = [str(v["principal"]) for v in self.approval.votes]
        return votes or ([self.decided_by] if self.decided_by else [])

    @property
    def grant(self) -> str | None:
        """The standing grant that lent (or stopped) the call, when one answered it instead of people."""
        standing = self.approval.data.get("standing")
        return None if not standing else standing.get("grant")

    @property
    def note(self) -> str | None:
        note = self.approval.data.get("decision_note")
        return None if note is None else str(note)

    @property
    def reason(self) -> str:
        """Why the call does not run (for the framework's denial), or ``""`` when it was allowed."""
        if self.approved:
            return ""
        d = self.approval.data
        if d.get("standing"):  # a standing grant stopped it: the judge's sentence names the way out
            return str(d["standing"]["sentence"])
        who = d.get("decided_by_name") or d.get("decided_by") or "someone"
        note = f": {d['decision_note']}" if d.get("decision_note") else ""
        if self.state == "rejected":
            return f"Rejected by {who}{note}."
        if self.state == "cancelled":
            verb = "Cancelled" if self.approval.kind == "confirm" else "Withdrawn"
            return f"{verb} by {who}{note}."
        if self.state == "expired":
            return "The request expired before anyone decided it; nothing was done."
        return f"The request is {self.state}."


class ApprovalHost:
    """Kit approvals for agents of other frameworks, on an :class:`~milpa_chat.chat.Assistant` (cards on
    its surfaces) or a bare :class:`~milpa_chat.runtime.registry.ToolRegistry` (the notebook inbox, the CLI).

    ``poll``: seconds between reads of a pending record while waiting for its decision."""

    def __init__(self, target: Any, *, poll: float = 0.25) -> None:
        registry: ToolRegistry = getattr(target, "registry", target)
        if not hasattr(registry, "approvals"):
            raise TypeError(f"ApprovalHost(...) takes an Assistant or a ToolRegistry, got {type(target).__name__}")
        #: The chat layer, when the host was given an Assistant (answers of chat runs are posted through it).
        self.assistant: Any = target if target is not registry else None
        self.registry = registry
        self.desk = registry.approvals
        self.store = registry.store
        self.poll = poll
        self._tasks: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ chat
    def chat_agent(self, answer: Callable[[str, ToolContext], Awaitable[str | None]]) -> Callable[..., Any]:
        """An :class:`~milpa_chat.chat.Assistant` agent (``assistant.agent = ...``): a person's free text starts
        ``answer(text, ctx)`` in the background (it may wait on approvals while the chat goes on) and its
        answer is posted in their chat."""

        async def agent(inbound: Any, ctx: ToolContext) -> None:
            task = asyncio.create_task(self._answer(answer(inbound.text or "", ctx), ctx))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        return agent

    async def _answer(self, run: Awaitable[str | None], ctx: ToolContext) -> None:
        try:
            text = await run
        except Exception:
            log.exception("an agent run for %s failed", ctx.principal)
            text = "Something went wrong while I worked on your request; the error was logged."
        if text:
            await self.tell(ctx, text)

    async def tell(self, ctx: ToolContext, text: str) -> None:
        """Post ``text`` in the chat of ``ctx`` (when the host has an Assistant with that surface attached)."""
        from milpa_chat.chat import cards

        transports = getattr(self.assistant, "transports", {})
        chat = ctx.extra.get("chat_id")
        if ctx.channel in transports and chat is not None:
            await transports[ctx.channel].send(str(chat), cards.text(text))

    # ------------------------------------------------------------------ open
    async def request(
        self,
        tool: str,
        args: Mapping[str, Any],
        ctx: ToolContext,
        *,
        verify: VerifyPolicy | None = None,
        expires_in: float | None = None,
        reason: str | None = None,
        schema: Mapping[str, Any] | None = None,
        editable: bool = True,
    ) -> Approval:
        """Open an approval for ``tool(**args)`` proposed by a model for the person of ``ctx`` and deliver
        its cards. ``verify``: approvers decide (scopes, four-eyes, quorum, expiry); else the person confirms.
        ``schema``: the tool's JSON schema (edited arguments are checked against it). ``editable=False``: the
        framework takes no edited arguments for this call, so people approve or reject it as it is.

        With standing grants installed (``registry.grants``, a :class:`~milpa_chat.grants.GrantDesk` that
        knows the operation named ``tool``), they are asked first: a grant that lends the call gives a record
        already ``approved`` by it (no card; the grant's use counted; the audit log and trail cite it), which
        :meth:`run` runs once as usual; a stop gives a ``rejected`` record whose :attr:`Decision.reason` is the
        judge's sentence; anything else opens the approval as above."""
        if not isinstance(args, Mapping):
            raise TypeError(f"the arguments of {tool!r} must be an object, got {type(args).__name__}")
        wire = json.loads(json.dumps(dict(args), default=str))
        if schema and "jsonschema" not in sys.modules:
            # edits are checked with jsonschema, whose first import may take seconds (its format checkers build
            # grammars): import it now, off the event loop, not inside an edit that Slack wants answered in 3 s
            await asyncio.to_thread(importlib.import_module, "jsonschema")
        ttl = verify.expires_in if verify is not None else (expires_in or self.registry.confirmations.ttl)
        requester = ctx.as_model()
        grants = self.registry.grants
        # standing grants first, as the pipeline's ``standing`` step: a grant in force for this seat that
        # covers the call lends it (no card; its use is counted), a stop refuses it, anything else asks people
        standing = await grants.consult(tool, wire, requester) if grants is not None and ctx.principal else None
        approval = await self.desk.open(
            "verification" if verify is not None else "confirm",
            requester,
            tool=tool,
            args=wire,
            summary=action_summary(tool, wire, self.registry.audit.redact),
            expires_in=ttl,
            policy=verify,
            reason=reason,
            payload={"schema": dict(schema) if schema else None, "editable": editable},
            external=True,
            standing=None if standing is None else standing.to_dict(),
        )
        if standing is None and self.desk.hooks.follower is not None:  # the chat layer sends the cards
            await self.desk.hooks.follower(Change(approval, "requested"))
        return approval

    # ------------------------------------------------------------------ wait
    async def wait(self, approval_id: str) -> Decision:
        """The decision on ``approval_id``, once people took it (or it expired). Reads the store, so it
        works from any process (bound it with ``asyncio.timeout``); raises :class:`ApprovalRefused` for an
        unknown id."""
        while True:
            a = await self.desk.get(approval_id)
            if a is None:
                raise ApprovalRefused(f"Unknown approval {approval_id!r} (it may have been removed).", code="NOT_FOUND")
            if a.state != "pending":
                return Decision(a)
            if a.expires_at <= self.store.clock():
                change = await self.desk.recover(a)
                if change is not None and self.desk.hooks.follower is not None:
                    await self.desk.hooks.follower(change)  # the cards say "Expired", the requester is told
                continue
            await asyncio.sleep(self.poll)

    # ------------------------------------------------------------------- run
    async def run(self, approval_id: str, fn: Callable[[dict[str, Any]], Awaitable[Any]]) -> Any:
        """Run the approved call once: ``fn(approved_args)``, by the one caller that claims the record; its
        value (or exception) is recorded and reported. A caller that does not win the claim (the call ran
        or runs elsewhere) gets the recorded value, or :class:`ApprovalRefused` when there is none. ``fn`` may
        return a :class:`~milpa_chat.runtime.result.ToolResult`, recorded as it is (an error one as a failure)."""
        a = await self.desk.get(approval_id)
        if a is None or a.tool is None:
            raise ApprovalRefused(f"Unknown approval {approval_id!r}.", code="NOT_FOUND")
        try:
            claimed = (await self.desk.claim(approval_id, a.requester_context(), tool=a.tool)).approval
        except ApprovalRefused:
            return await self._recorded(approval_id)
        token = _current.set(claimed.id)
        try:
            async with self.desk.holding(claimed):
                value = await fn(claimed.args)
        except Exception as exc:
            await self.desk.finish(claimed, ToolResult.error(f"{type(exc).__name__}: {exc}"[:500]))
            raise
        finally:
            _current.reset(token)
        await self.desk.finish(claimed, _result(value))
        return value

    async def _recorded(self, approval_id: str) -> Any:
        """The value of a call that ran (or runs) elsewhere, once it settles."""
        while True:
            a = await self.desk.get(approval_id)
            if a is None:
                raise ApprovalRefused(f"Unknown approval {approval_id!r}.", code="NOT_FOUND")
            if a.state == "executed":
                result = a.data.get("result") or {}
                return result.get("data") if result.get("data") is not None else result.get("message")
            if a.state in FINAL or a.state in ("effect_uncertain", "pending"):
                raise ApprovalRefused(
                    f"{a.label} did not run here: {a.data.get('outcome') or a.state}.", code="CONFLICT", approval=a
                )
            await asyncio.sleep(self.poll)

    # ------------------------------------------------------------------ runs
    async def save_run(self, run_id: str | None, value: Mapping[str, Any]) -> str:
        """Keep a paused framework run (what it needs to resume, and the approvals it waits on)."""
        run_id = run_id or secrets.token_hex(12)
        await self.store.put(RUNS, run_id, {**value, "status": "paused"})
        return run_id

    async def load_run(self, run_id: str) -> dict[str, Any] | None:
        rec = await self.store.get(RUNS, run_id)
        return None if rec is None else dict(rec.value)

    async def end_run(self, run_id: str) -> None:
        """The run finished: it is no longer resumed after a restart."""
        await self.store.delete(RUNS, run_id)

    async def pending_runs(self, framework: str) -> list[str]:
        """Ids of the paused runs of ``framework`` kept in the store (to resume after a restart)."""
        return sorted(r.key for r in await self.store.scan(RUNS, where={"framework": framework}))


def context_record(ctx: ToolContext) -> dict[str, Any]:
    """The requester's context as a paused run keeps it in the store (JSON)."""
    extra = {k: v for k, v in ctx.extra.items() if isinstance(v, str | int | float | bool) or v is None}
    return {"principal": ctx.principal, "channel": ctx.channel, "scopes": list(ctx.scopes), "extra": extra}


def context_from(record: Mapping[str, Any]) -> ToolContext:
    """The model-made context of a paused run's requester, from :func:`context_record`."""
    from milpa_chat.runtime.context import ToolContext

    return ToolContext(
        principal=record.get("principal"),
        channel=str(record.get("channel") or "unknown"),
        scopes=tuple(record.get("scopes") or ()),
        extra=dict(record.get("extra") or {}),
        by_model=True,
    )


def _result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):  # the adapter read the outcome itself (a tool that failed in the framework)
        return value
    text = value if isinstance(value, str) else None
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        value, text = None, str(value)
    return ToolResult.success(value, text)
