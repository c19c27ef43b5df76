"""``ToolRegistry``: registration, the catalogue, and the call pipeline.

Every :meth:`ToolRegistry.call` runs the steps of :mod:`milpa_chat.runtime.pipeline`, in order:
resolve -> limits -> replay lookup -> validate (JSON schema, then clamps) -> authorize (channel
policy, scopes, rules) -> rate limit -> plan mode -> replay run | verify gate -> confirm gate ->
execute (``tool.executing`` -> the tool -> ``tool.executed`` / ``tool.failed`` -> audit). It never
raises: every failure is a :class:`ToolResult` with an :class:`ErrorCode`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from time import perf_counter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from milpa_chat.errors import DeclarationError, StoreError, ToolAlreadyRegisteredError
from milpa_chat.runtime import stamps
from milpa_chat.runtime.approval_rules import registry_check
from milpa_chat.runtime.approvals import ApprovalDesk
from milpa_chat.runtime.audit import AuditLogger
from milpa_chat.runtime.catalogue import TokenEstimator, summary_of
from milpa_chat.runtime.confirm import ConfirmationTokenStore
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.definition import ToolDefinition, VerifyPolicy
from milpa_chat.runtime.events import EventDispatcher
from milpa_chat.runtime.execute import execute
from milpa_chat.runtime.limits import DEFAULT_LIMITS, PayloadLimits
from milpa_chat.runtime.pipeline import STEPS, Call, Step, no_answer, resolve, run_steps, settle, validate
from milpa_chat.runtime.pipeline import authorize as authorize_step
from milpa_chat.runtime.policy import PolicyGate
from milpa_chat.runtime.result import ErrorCode, ToolResult
from milpa_chat.runtime.services import Services, StandingGate
from milpa_chat.runtime.sync import run_sync
from milpa_chat.runtime.verification import HumanVerifier
from milpa_chat.store.memory import MemoryStore

if TYPE_CHECKING:
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.runtime.ratelimit import RateLimiter
    from milpa_chat.runtime.verifier import ToolProvider, Verifier
    from milpa_chat.store.base import Store

__all__ = ["ToolRegistry"]

log = logging.getLogger("milpa_chat.registry")

T = TypeVar("T")


class _Service(Generic[T]):
    """A registry attribute kept on its :class:`Services`: reading it reads them; setting it builds them anew,
    so a service installed after construction (grants, a trail's audit, a rate limiter) reaches the next call."""

    def __init__(self, field: str) -> None:
        self.field = field

    @overload
    def __get__(self, registry: None, owner: type[Any]) -> _Service[T]: ...
    @overload
    def __get__(self, registry: ToolRegistry, owner: type[Any]) -> T: ...
    def __get__(self, registry: ToolRegistry | None, owner: type[Any]) -> T | _Service[T]:
        if registry is None:
            return self
        value: T = getattr(registry.services, self.field)
        return value

    def __set__(self, registry: ToolRegistry, value: T) -> None:
        changed: dict[str, Any] = {self.field: value}
        registry.services = replace(registry.services, **changed)


class _Grants(_Service[StandingGate | None]):
    """``registry.grants``: refused at once, naming what is missing, unless it is a whole
    :class:`~milpa_chat.runtime.grants.StandingGate` (a desk without ``draft_loosening`` would leave a
    per-conversation loosening nothing to draft)."""

    def __set__(self, registry: ToolRegistry, value: StandingGate | None) -> None:
        if value is not None and not isinstance(value, StandingGate):
            missing = [m for m in ("gate", "consult", "draft_loosening") if not callable(getattr(value, m, None))]
            raise TypeError(
                f"registry.grants must be a StandingGate (async gate(call), async consult(tool, args, ctx) and async "
                f"draft_loosening(ctx, seconds, via=..., note=...)), such as milpa_chat.grants.GrantDesk; "
                f"{type(value).__name__} has no {' and no '.join(missing)}"
            )
        super().__set__(registry, value)


#: An approved call is run again through these steps of the pipeline (authorize with today's scopes).
APPROVED_STEPS: tuple[Step, ...] = (resolve, validate, authorize_step, execute)


class ToolRegistry:
    """Holds tools and runs every call through the pipeline.

    ``store`` keeps approvals (confirm tokens and verification requests are both one durable
    :class:`~milpa_chat.runtime.Approval`, kept by :attr:`approvals`) and rate windows (a
    :class:`~milpa_chat.store.MemoryStore` by default: pass a ``SqliteStore`` or ``PostgresStore``
    so nothing pending is lost on restart). ``approval_lease`` is how long a claimed run may take
    before it counts as lost (then ``effect_uncertain``, or retried for idempotent tools);
    ``approval_handoff`` how long the worker that changed an approval has to deliver its cards
    before another worker's sweep delivers them; ``approval_max_pending`` how many pending requests one
    principal may have open at once (``None``: no cap). ``limits`` bound every call's raw arguments
    (nesting depth, items, string and total size) before the validator sees them.
    """

    def __init__(
        self,
        *,
        store: Store | None = None,
        policy: PolicyGate | None = None,
        dispatcher: EventDispatcher | None = None,
        audit: AuditLogger | None = None,
        rate_limiter: RateLimiter | None = None,
        verifier: Verifier | None = None,
        confirm_ttl: float = 60.0,
        approval_lease: float = 30.0,
        approval_handoff: float = 30.0,
        limits: PayloadLimits | None = None,
        approval_max_pending: int | None = 100,
    ) -> None:
        self.store: Store = store if store is not None else MemoryStore()
        dispatcher = dispatcher or EventDispatcher()
        audit = audit or AuditLogger()
        desk = getattr(verifier, "desk", None)
        if isinstance(desk, ApprovalDesk):  # a HumanVerifier: its approvals are this registry's
            approvals = desk
            human: HumanVerifier = verifier  # type: ignore[assignment]
        else:
            approvals = ApprovalDesk(
                self.store,
                dispatcher=dispatcher,
                lease=approval_lease,
                handoff=approval_handoff,
                max_pending_per_principal=approval_max_pending,
            )
            human = HumanVerifier(approvals)
        approvals.install(audit=audit, run=self.run_approval)
        self._tools: dict[str, ToolDefinition] = {}
        self._view = MappingProxyType(self._tools)
        #: What every call's steps see (:class:`~milpa_chat.runtime.services.Services`); built anew whenever a
        #: service is installed or replaced (``registry.grants = ...``, ``registry.rate_limiter = ...``).
        self.services = Services(
            tools=self._view,
            policy=policy or PolicyGate(),
            audit=audit,
            events=dispatcher,
            limits=limits if limits is not None else DEFAULT_LIMITS,
            rate_limiter=rate_limiter,
            grants=None,
            approvals=approvals,
            confirmations=ConfirmationTokenStore(approvals, ttl=confirm_ttl),
            verifier=human,
            tool_verifier=verifier if verifier is not None else human,
        )
        if approvals.hooks.checker is None:  # an edit is re-validated and re-authorized as a new call would be
            approvals.install(checker=registry_check(self))
        #: The registry's own edit check (the requester as they asked); a chat host replaces it with one
        #: that reads the requester's scopes as they are now.
        self.default_checker = approvals.hooks.checker
        #: The pipeline, in order (:data:`milpa_chat.runtime.pipeline.STEPS`); a host may add a step of its own.
        self.steps: list[Step] = list(STEPS)
        self.tokens = TokenEstimator()

    # ------------------------------------------------------------ services
    #: Each reads the registry's :attr:`services`; setting one rebuilds them (``dataclasses.replace``).
    policy: _Service[PolicyGate] = _Service("policy")
    audit: _Service[AuditLogger] = _Service("audit")
    dispatcher: _Service[EventDispatcher] = _Service("events")
    #: Checked on every call's raw arguments before anything reads them (depth, items, sizes).
    limits: _Service[PayloadLimits] = _Service("limits")
    rate_limiter: _Service[RateLimiter | None] = _Service("rate_limiter")
    #: The standing grants judged before an approval is opened (``standing.GrantDesk(registry)`` sets it).
    grants: _Service[StandingGate | None] = _Grants("grants")
    approvals: _Service[ApprovalDesk] = _Service("approvals")
    confirmations: _Service[ConfirmationTokenStore] = _Service("confirmations")

    # ------------------------------------------------------------ registration
    @property
    def verifier(self) -> HumanVerifier:
        """The verifier that keeps approval requests (on this registry's approval desk)."""
        return self.services.verifier

    @property
    def tool_verifier(self) -> Verifier:
        """The :class:`~milpa_chat.runtime.Verifier` the verify gate asks (``ToolRegistry(verifier=...)``;
        by default :attr:`verifier`, the human one)."""
        return self.services.tool_verifier

    @property
    def tool_map(self) -> Mapping[str, ToolDefinition]:
        """The registered tools by name (read-only view)."""
        return self._view

    def add(self, definition: ToolDefinition) -> ToolDefinition:
        """Register a ready :class:`ToolDefinition`."""
        if definition.name in self._tools:
            raise ToolAlreadyRegisteredError(definition.name)
        self._tools[definition.name] = definition
        return definition

    def scan(self, obj: object) -> int:
        """Register every ``@tool`` of a module, an instance, a class or a single function, or every
        definition a :class:`~milpa_chat.runtime.ToolProvider` returns; all or none."""
        from milpa_chat.runtime.declare import definitions_from
        from milpa_chat.runtime.verifier import ToolProvider

        found = provided(obj) if isinstance(obj, ToolProvider) and not isinstance(obj, type) else definitions_from(obj)
        clash = [d.name for d in found if d.name in self._tools]
        if clash:
            raise ToolAlreadyRegisteredError(clash[0])
        for d in found:
            self.add(d)
        return len(found)

    def register(
        self,
        name: str,
        description: str,
        input_schema: dict[str, Any],
        handler: Callable[[dict[str, Any], ToolContext], Any | Awaitable[Any]],
        *,
        scopes: Sequence[str] = (),
        mutating: bool | None = None,
        confirm: bool = False,
        timeout: float = 30.0,
        version: str | None = None,
        output_schema: dict[str, Any] | None = None,
        verify: VerifyPolicy | None = None,
        tags: Sequence[str] = (),
        idempotent: bool = False,
    ) -> ToolDefinition:
        """Register a tool by hand with a JSON schema; ``handler(args, ctx)`` may be sync or async.

        ``idempotent=True`` says running it twice has the effect of running it once: an approved run
        whose lease ended without a result is then retried instead of becoming ``effect_uncertain``.
        """
        from milpa_chat.runtime.declare import definition_from_schema

        definition = definition_from_schema(
            name,
            description,
            input_schema,
            handler,
            scopes=scopes,
            mutating=mutating,
            confirm=confirm,
            timeout=timeout,
            version=version,
            output_schema=output_schema,
            verify=verify,
            tags=tags,
        )
        return self.add(replace(definition, idempotent=idempotent) if idempotent else definition)

    def remove(self, name: str) -> ToolDefinition | None:
        """Take tool ``name`` out of the registry (``None`` when it is not registered). Approvals already
        opened for it stay; running one finds the tool again if it was registered anew, else says it is gone."""
        return self._tools.pop(name, None)

    def has(self, name: str) -> bool:
        return name in self._tools

    __contains__ = has

    def get(self, name: str) -> ToolDefinition | None:
        return self._tools.get(name) if type(name) is str else None

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[ToolDefinition]:
        return iter(list(self._tools.values()))

    # --------------------------------------------------------------- catalogue
    def get_tool_definitions(self) -> list[ToolDefinition]:
        return list(self._tools.values())

    def get_tool_summaries(self, ctx: ToolContext | None = None) -> list[dict[str, Any]]:
        """``[{name, description, inputSchema[, version, outputSchema]}]`` in registration order.

        With ``ctx``, only the tools whose scopes that caller holds.
        """
        return [
            summary_of(t) for t in self._tools.values() if ctx is None or not t.scopes or ctx.has_any_scope(t.scopes)
        ]

    def get_tools_within_budget(
        self, model: str, priority_tools: Sequence[str] | None = None, ctx: ToolContext | None = None
    ) -> dict[str, Any]:
        """The summaries that fit 30 % of ``model``'s context; priority tools are considered first."""
        summaries = self.get_tool_summaries(ctx)
        if priority_tools:
            wanted = set(priority_tools)
            summaries = [s for s in summaries if s["name"] in wanted] + [
                s for s in summaries if s["name"] not in wanted
            ]
        out = self.tokens.select_within_budget(summaries, self.tokens.tool_budget(model))
        if out["excluded"]:
            names = out["excluded"]
            log.warning(
                "Token budget exceeded. Excluded %d tools: %s%s",
                len(names),
                ", ".join(names[:5]),
                "..." if len(names) > 5 else "",
            )
        return out

    # -------------------------------------------------------------------- call
    async def call(
        self, name: str, args: Mapping[str, Any] | None = None, ctx: ToolContext | None = None
    ) -> ToolResult:
        """Run ``name`` with ``args`` for ``ctx`` (``ToolContext.cli()`` by default) through the pipeline.

        Never raises for a runtime outcome: a store that fails becomes an ``INTERNAL_ERROR`` result.
        """
        t0 = perf_counter()
        if ctx is None:
            ctx = ToolContext.cli()
        call = Call(self.services, name, args, ctx, t0)
        try:  # run_steps, inlined: a call that is answered at once (most refusals) awaits nothing
            for step in self.steps:
                out = step(call)
                if out is None:
                    continue
                if type(out) is ToolResult:
                    return out
                done: ToolResult | None = await out  # type: ignore[misc]
                if done is not None:
                    return done
            return no_answer(call)
        except (StoreError, OSError) as exc:
            shown = stamps.tool_name(name)
            log.error(
                "The store failed during %r (request %s): %s: %s",
                shown,
                ctx.request_id,
                type(exc).__name__,
                exc,
                exc_info=exc,
            )
            return stamps.fail(
                shown,
                ctx,
                t0,
                ErrorCode.INTERNAL_ERROR,
                f"'{shown}' could not be completed: the state store is unavailable (request "
                f"{ctx.request_id}). Nothing was run; try again shortly.",
            )
        except Exception as exc:  # a bug or a broken plug-in: still a result, never an exception
            shown = stamps.tool_name(name)
            log.error("Calling %r failed inside the pipeline (request %s)", shown, ctx.request_id, exc_info=exc)
            return stamps.fail(
                shown,
                ctx,
                t0,
                ErrorCode.INTERNAL_ERROR,
                f"'{shown}' could not be completed because of an internal error (request "
                f"{ctx.request_id}); nothing was run. Try again; the details are in the server log.",
            )

    async def run_approval(self, claimed: Approval, ctx: ToolContext, *, follow: bool = True) -> ToolResult:
        """Run an approval this caller claimed (``Change.claimed``) as ``ctx`` (the requester), then settle it.

        The approved arguments are validated and the requester authorized again (scopes may have
        changed since they asked); a refusal settles the approval as ``failed``. Never raises.
        ``follow=False``: the desk's follower does not deliver the settled record's effects (the caller
        does, after the run).
        """
        t0 = perf_counter()
        name = claimed.tool or ""
        call = Call(self.services, name, claimed.args, ctx.with_idempotency_key(claimed.id), t0)
        try:
            result = await run_steps(APPROVED_STEPS, call)
            if result.code == ErrorCode.TOOL_NOT_FOUND:
                result = stamps.fail(
                    name,
                    ctx,
                    t0,
                    ErrorCode.TOOL_NOT_FOUND,
                    f"Tool '{name}' is no longer registered; the approved call was not run.",
                )
            return await settle(self.services, claimed, result, follow=follow)
        except (StoreError, OSError) as exc:
            log.error("The store failed while running approval %s: %s", claimed.id, exc)
            return stamps.fail(
                name,
                ctx,
                t0,
                ErrorCode.INTERNAL_ERROR,
                "The state store is unavailable; the outcome will be recovered when it is back.",
            )

    def call_sync(self, name: str, args: Mapping[str, Any] | None = None, ctx: ToolContext | None = None) -> ToolResult:
        """Blocking facade over :meth:`call`; also works inside a running event loop (Jupyter)."""
        return run_sync(self.call(name, args, ctx))


def provided(provider: ToolProvider) -> list[ToolDefinition]:
    found = list(provider.tool_definitions())
    wrong = [d for d in found if not isinstance(d, ToolDefinition)]
    if wrong:
        raise DeclarationError(
            f"{type(provider).__name__}.tool_definitions() returned {type(wrong[0]).__name__}, not a ToolDefinition; "
            f"return ToolDefinition objects (from @tool via definitions_from(...), or definition_from_schema(...))"
        )
    return found
