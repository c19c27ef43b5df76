"""The call pipeline as data: an ordered list of steps with one signature over one :class:`Call`.

Every step is ``step(call: Call) -> Outcome``: ``None`` hands the call to the next step, a
:class:`ToolResult` ends it (a denial, a confirmation request, the tool's own result), and a step
that must wait (the store, a rule provider, the tool) returns an awaitable of either.
The order lives in one place, :data:`STEPS`::

    resolve -> limits -> replay lookup -> validate -> authorize -> rate limit -> plan
            -> replay run | verify gate -> confirm gate -> execute

A :class:`~milpa_chat.standing.GrantDesk` adds :func:`standing` to ``registry.steps`` just
before the verify gate: standing grants are judged before any approval is opened.

A step sees the call and its frozen :class:`~milpa_chat.runtime.services.Services` (``call.services``:
policy, audit, events, limits, rate limiter, grants, approvals, confirmations), never the registry.
Steps read what earlier steps left on the call (``tool``, ``replay``, ``validated``). A
:class:`~milpa_chat.runtime.ToolRegistry` runs ``registry.steps`` (a copy of :data:`STEPS` that
a host may extend, e.g. with a step of its own before ``execute``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from milpa_chat._failpoints import failpoint
from milpa_chat.errors import StoreError
from milpa_chat.runtime import gates
from milpa_chat.runtime.definition import InvalidArguments, VerifyPolicy
from milpa_chat.runtime.execute import execute
from milpa_chat.runtime.limits import check_payload
from milpa_chat.runtime.result import ErrorCode, ToolResult
from milpa_chat.runtime.services import Call, Replay, Services

if TYPE_CHECKING:
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.runtime.policy import Verdict

__all__ = ["CONFIRM_BY", "RESERVED_ARGS", "STEPS", "Call", "Outcome", "Step", "run_steps"]

log = logging.getLogger("milpa_chat.registry")


#: What a step gives back: ``None`` (go on), a result (stop), or an awaitable of either when the step
#: has to wait (the store, a rule provider, the tool). A step that decides at once returns at once,
#: so the common call awaits nothing but the tool.
Outcome = ToolResult | Awaitable[ToolResult | None] | None
Step = Callable[[Call], Outcome]


async def run_steps(steps: Sequence[Step], call: Call) -> ToolResult:
    for step in steps:
        out = step(call)
        if out is None:
            continue
        if type(out) is ToolResult:
            return out
        done: ToolResult | None = await out  # type: ignore[misc]
        if done is not None:
            return done
    return no_answer(call)


def no_answer(call: Call) -> ToolResult:
    return call.fail(ErrorCode.INTERNAL_ERROR, f"No step answered the call of '{call.tool.name}'; nothing was run.")


# ------------------------------------------------------------------------------------ the steps
def resolve(call: Call) -> Outcome:
    """The tool by name; an unknown name is ``TOOL_NOT_FOUND`` with close matches."""
    name = call.name
    tool = call.services.tools.get(name) if type(name) is str else None
    if tool is None:
        return gates.not_found(call.name, call.services.tools, call.ctx)
    call.tool = tool
    return None


def limits(call: Call) -> Outcome:
    """The arguments are an object within ``registry.limits`` (depth, items, sizes, JSON values)."""
    args = call.args
    if args is None:
        call.args = {}
        return None
    if type(args) is not dict and not isinstance(args, Mapping):
        return call.fail(
            ErrorCode.VALIDATION_ERROR,
            f"Arguments for '{call.tool.name}' must be a JSON object (a dict), got {type(args).__name__}.",
        )
    try:
        check_payload(args, call.services.limits)
    except InvalidArguments as exc:
        return gates.invalid(call.services.audit, call.tool.name, call.ctx, call.t0, exc)
    return None


#: Argument names that redeem or run an approval: a person's, never in a model-made call's arguments.
RESERVED_ARGS = ("confirm_token", "verification_id")


def replay_lookup(call: Call) -> Outcome:
    """A ``confirm_token`` / ``verification_id`` replay runs the arguments that were approved.

    A model-made call (``ctx.by_model``) carrying either name is refused here, before anything
    reads them: deciding is for people, and an approval id that leaked into a conversation must not
    become a way around the card."""
    args = call.args
    if "confirm_token" not in args and "verification_id" not in args:
        return None
    if call.ctx.by_model:
        return model_replay(call)
    return _load_replay(call)


def model_replay(call: Call) -> ToolResult:
    names = " and ".join(n for n in RESERVED_ARGS if n in call.args)
    reason = (
        f"'{call.tool.name}' was called by a model with {names}: only a person confirms or runs an approval "
        "(the card's buttons, the notebook inbox or the milpa-chat command). Call the tool without it; "
        "nothing was run."
    )
    call.services.audit.denied(call.ctx, call.tool.name, reason)
    return call.fail(ErrorCode.FORBIDDEN, reason, reserved=[n for n in RESERVED_ARGS if n in call.args])


async def _load_replay(call: Call) -> ToolResult | None:
    loaded = await gates.load_replay(call.services, call.tool, call.args, call.ctx)
    if isinstance(loaded, ToolResult):
        return gates.finish_meta(loaded, call.tool.name, call.ctx, call.t0)
    call.replay = loaded
    call.args = loaded.args
    return None


def validate(call: Call) -> Outcome:
    """JSON Schema, then clamps: the tool's compiled validator."""
    try:
        call.validated = call.tool.validator(call.args)
    except InvalidArguments as exc:
        return gates.invalid(call.services.audit, call.tool.name, call.ctx, call.t0, exc)
    return None


def authorize(call: Call) -> Outcome:
    """Channel policy, scopes and rules (:meth:`PolicyGate.judge`); a denial names the failed check."""
    policy = call.services.policy
    verdict = policy.judge_at_once(call.ctx, call.tool)
    if verdict is None:  # a rule provider decides
        return _judged(call)
    return None if verdict.allowed else _denied(call, verdict)


async def _judged(call: Call) -> ToolResult | None:
    verdict = await call.services.policy.judge(call.ctx, call.tool)
    return None if verdict.allowed else _denied(call, verdict)


def _denied(call: Call, verdict: Verdict) -> ToolResult:
    call.services.audit.denied(call.ctx, call.tool.name, verdict.reason)
    return call.fail(ErrorCode.FORBIDDEN, verdict.reason)


def rate_limit(call: Call) -> Outcome:
    if call.services.rate_limiter is None:
        return None
    return gates.rate_limit(call.services, call.tool, call.validated.wire, call.ctx, call.t0)


def plan(call: Call) -> Outcome:
    """Plan mode stops here: everything up to authorize ran; nothing runs."""
    if call.ctx.mode != "plan":
        return None
    return gates.plan(call.services, call.tool, call.validated.wire, call.ctx, call.t0)


def replay_run(call: Call) -> Outcome:
    """Redeem the token / claim the approved request atomically; only the winner runs, then settles."""
    if call.replay is None:
        return None
    return _run_replay(call, call.replay)


async def _run_replay(call: Call, replay: Replay) -> ToolResult:
    claimed = await gates.claim_replay(call.services, call.tool, replay, call.ctx, call.t0)
    if isinstance(claimed, ToolResult):
        return claimed
    call.ctx = replace(call.ctx, idempotency_key=claimed.id)  # the approval id keys the run
    result = await execute(call)
    try:
        return await settle(call.services, claimed, result)
    except (StoreError, OSError) as exc:  # the tool ran: its result stands; the record is recovered later
        log.error(
            "The store failed while settling approval %s after '%s' ran: %s: %s",
            claimed.id,
            call.tool.name,
            type(exc).__name__,
            exc,
        )
        return result.with_meta(approval_settled=False)


def standing(call: Call) -> Outcome:
    """Before a gate would open an approval, the standing grants (``registry.grants``) are judged: a
    grant that lends runs the call without a card (citing it), a stop refuses it, anything else goes on."""
    grants = call.services.grants
    if grants is None or call.ctx.principal is None or not _gated(call):
        return None
    return grants.gate(call)


def _gated(call: Call) -> bool:
    tool = call.tool
    if tool.verify is not None:
        return True
    if not (tool.confirm or tool.mutating) or tool.extra.get("self_confirming"):
        return False
    return call.services.policy.requires_confirmation(call.ctx, tool)


def verify_gate(call: Call) -> Outcome:
    """A ``verify=`` tool asks the registry's :class:`~milpa_chat.runtime.Verifier`: pending stops the
    call with the request to decide, failed denies it, passed lets it go on."""
    if call.tool.verify is None:
        return None
    return gates.verify(call.services, call.tool, call.validated.wire, call.ctx, call.t0)


def confirm_gate(call: Call) -> Outcome:
    """Confirm tools (and mutating tools on channels that say so) return a one-time confirm token."""
    tool = call.tool
    if not (tool.confirm or tool.mutating) or tool.extra.get("self_confirming"):
        return None
    if not call.services.policy.requires_confirmation(call.ctx, tool):
        return None
    approvers = call.ctx.extra.get(CONFIRM_BY) if call.ctx.by_model else None
    if approvers:  # nobody can ask the person behind this model: approvers decide instead
        instead = replace(tool, verify=VerifyPolicy(approver_scopes=tuple(approvers)))
        return gates.verify(call.services, instead, call.validated.wire, call.ctx, call.t0)
    return gates.ask_confirmation(call.services, tool, call.validated.wire, call.ctx, call.t0)


#: ``ctx.extra`` key a surface sets on a model-made context whose person it cannot ask (an MCP client without
#: elicitation or a chat): the approver scopes that decide its confirm requests, as a verification.
CONFIRM_BY = "confirm_by"


#: The pipeline, in order. ``ToolRegistry.steps`` starts as a copy of this list.
STEPS: tuple[Step, ...] = (
    resolve,
    limits,
    replay_lookup,
    validate,
    authorize,
    rate_limit,
    plan,
    replay_run,
    verify_gate,
    confirm_gate,
    execute,
)


# ------------------------------------------------------------------------------------ helpers
async def settle(services: Services, claimed: Approval, result: ToolResult, *, follow: bool = True) -> ToolResult:
    failpoint("tool.returned")
    await services.approvals.finish(claimed, result, follow=follow)
    return result
