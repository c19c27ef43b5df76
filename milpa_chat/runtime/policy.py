"""``PolicyGate``: scopes, channel policies and pluggable rules, with denials that say which check failed."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import ToolDefinition

__all__ = ["ALLOWED", "DEFAULT_POLICIES", "ChannelPolicy", "PolicyGate", "PolicyRule", "RuleProvider", "Verdict"]

log = logging.getLogger("milpa_chat.policy")


@dataclass(frozen=True, slots=True)
class ChannelPolicy:
    """What a channel allows. A missing flag means ``False``.

    ``allow_all`` only skips the final ``block_mutating`` check: it never bypasses
    ``require_auth``, tool scopes or rules.
    """

    allow_all: bool = False
    require_auth: bool = False
    block_mutating: bool = False
    require_confirmation_for_mutating: bool = False


#: Defaults. Unknown channels get ``UNKNOWN_CHANNEL_POLICY``.
DEFAULT_POLICIES: Mapping[str, ChannelPolicy] = {
    "cli": ChannelPolicy(allow_all=True),
    "jupyter": ChannelPolicy(allow_all=True),
    "mcp": ChannelPolicy(require_auth=True),
    "web": ChannelPolicy(require_auth=True),
    "slack": ChannelPolicy(require_auth=True, require_confirmation_for_mutating=True),
    "telegram": ChannelPolicy(require_auth=True, require_confirmation_for_mutating=True),
}
UNKNOWN_CHANNEL_POLICY = ChannelPolicy(require_auth=True)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What :meth:`PolicyGate.judge` decided: ``allowed``, and for a denial the ``reason`` naming the
    failed check; ``check`` says which check decided (``require_auth``, ``scopes``, ``rule``,
    ``rule_scopes``, ``rule_provider``, ``block_mutating``, or ``policy`` when every check passed)."""

    allowed: bool
    reason: str = ""
    check: str = "policy"

    @classmethod
    def deny(cls, check: str, reason: str) -> Verdict:
        return cls(False, reason, check)


#: The verdict of a call every check let through.
ALLOWED = Verdict(True)
_ALLOWED_BY_RULE = Verdict(True, "", "rule")


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """A rule from a :class:`RuleProvider`. ``effect`` ``"allow"`` allows at once; anything else denies."""

    id: str | int | None
    effect: str
    requires_scopes: tuple[str, ...] = ()
    description: str | None = None


@runtime_checkable
class RuleProvider(Protocol):
    """Host-supplied rules (e.g. rows of a database table). May be sync or async."""

    def find_matching_rule(
        self, channel: str, principal: str | None, tool: str, mutating: bool
    ) -> PolicyRule | Awaitable[PolicyRule | None] | None: ...


def _list(scopes: tuple[str, ...] | list[str]) -> str:
    return ", ".join(scopes) if scopes else "(none)"


class PolicyGate:
    """Authorizes a call: require_auth -> tool scopes -> rule provider -> channel policy."""

    def __init__(
        self,
        policies: Mapping[str, ChannelPolicy] | None = None,
        rule_provider: RuleProvider | None = None,
    ) -> None:
        self._policies: dict[str, ChannelPolicy] = dict(DEFAULT_POLICIES)
        if policies:
            self._policies.update(policies)
        self.rule_provider = rule_provider

    def set_channel_policy(self, channel: str, policy: ChannelPolicy) -> None:
        """Replace the whole policy of ``channel``."""
        self._policies[channel] = policy

    def channel_policy(self, channel: str) -> ChannelPolicy:
        return self._policies.get(channel, UNKNOWN_CHANNEL_POLICY)

    def requires_confirmation(self, ctx: ToolContext, tool: ToolDefinition) -> bool:
        """Whether the confirm gate applies to this call."""
        if tool.confirm:
            return True
        return tool.mutating and self.channel_policy(ctx.channel).require_confirmation_for_mutating

    async def authorize(self, ctx: ToolContext, tool: ToolDefinition) -> str | None:
        """``None`` when allowed, otherwise the denial reason naming the failed check (see :meth:`judge`)."""
        verdict = await self.judge(ctx, tool)
        return None if verdict.allowed else verdict.reason

    async def judge(self, ctx: ToolContext, tool: ToolDefinition) -> Verdict:
        """require_auth -> tool scopes -> rule provider -> channel policy, as a :class:`Verdict`."""
        policy = self._policy_of(ctx)
        verdict = self._before_rules(policy, ctx, tool)
        if verdict is not None:
            return verdict
        if self.rule_provider is not None:
            verdict = await self._apply_rules(ctx, tool)
            if verdict is not None:
                return verdict
        return self._after_rules(policy, ctx, tool)

    def judge_at_once(self, ctx: ToolContext, tool: ToolDefinition) -> Verdict | None:
        """:meth:`judge` without waiting, or ``None`` when a rule provider has to be asked (then await ``judge``)."""
        if self.rule_provider is not None:
            return None
        policy = self._policy_of(ctx)
        return self._before_rules(policy, ctx, tool) or self._after_rules(policy, ctx, tool)

    def _policy_of(self, ctx: ToolContext) -> ChannelPolicy:
        policy = self._policies.get(ctx.channel)
        if policy is None:
            log.warning(
                "Channel %r has no policy; using the fail-closed default (require_auth). "
                "Register one with PolicyGate.set_channel_policy(%r, ChannelPolicy(...)).",
                ctx.channel,
                ctx.channel,
            )
            policy = UNKNOWN_CHANNEL_POLICY
        return policy

    @staticmethod
    def _before_rules(policy: ChannelPolicy, ctx: ToolContext, tool: ToolDefinition) -> Verdict | None:
        if policy.require_auth and not ctx.principal:
            return Verdict.deny(
                "require_auth",
                f"channel '{ctx.channel}' requires an authenticated principal (require_auth) — none provided.",
            )
        if tool.scopes and not ctx.has_any_scope(tool.scopes):
            return Verdict.deny(
                "scopes",
                f"Missing required scope for tool '{tool.name}'. Need one of: "
                f"{_list(tool.scopes)} — context has: {_list(ctx.scopes)}.",
            )
        return None

    @staticmethod
    def _after_rules(policy: ChannelPolicy, ctx: ToolContext, tool: ToolDefinition) -> Verdict:
        if not policy.allow_all and policy.block_mutating and tool.mutating:
            return Verdict.deny(
                "block_mutating",
                f"Mutating tool '{tool.name}' is blocked on channel '{ctx.channel}' (block_mutating policy).",
            )
        return ALLOWED

    async def _apply_rules(self, ctx: ToolContext, tool: ToolDefinition) -> Verdict | None:
        """``None``: no rule matched, the other checks decide. Otherwise the rule's verdict."""
        provider = self.rule_provider
        assert provider is not None
        try:
            found = provider.find_matching_rule(ctx.channel, ctx.principal, tool.name, tool.mutating)
            rule = await found if inspect.isawaitable(found) else found
        except Exception as exc:  # fail closed
            log.exception("Policy rule provider %s failed for tool %r", type(provider).__name__, tool.name)
            return Verdict.deny(
                "rule_provider",
                f"Policy rule provider {type(provider).__name__} failed "
                f"({type(exc).__name__}) — tool '{tool.name}' denied (fail-closed).",
            )
        if rule is None:
            return None
        rid = "" if rule.id is None else str(rule.id)
        if rule.requires_scopes and not ctx.has_any_scope(rule.requires_scopes):
            return Verdict.deny(
                "rule_scopes",
                f"Policy rule #{rid} for tool '{tool.name}' requires one of these "
                f"scopes: {_list(rule.requires_scopes)} — context has: "
                f"{_list(ctx.scopes)}.",
            )
        if rule.effect == "allow":
            return _ALLOWED_BY_RULE
        return Verdict.deny(
            "rule",
            rule.description
            or (
                f"Denied by policy rule #{rid} for tool '{tool.name}' on channel '{ctx.channel}' "
                f"(principal: {ctx.principal or '(none)'})."
            ),
        )
