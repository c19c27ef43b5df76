"""``InvocationContext``: who a call is attributed to, passed per call, never an argument.

A surface attributes each call it runs: the verified actor behind a signature or a platform identity,
the channel, the process that executed it, the decision that authorised it. A declared operation's
``run()`` that takes ``context: InvocationContext | None`` receives it; it is not part of the input
schema, so no caller can write it. A surface that attributes nothing passes ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["InvocationContext"]


@dataclass(frozen=True, slots=True)
class InvocationContext:
    """Attribution of one call. It carries no scopes on purpose: the policy authorises, this attributes.

    ``actor`` (a person) and ``executor`` (a process or OS user) are distinct and never stand in
    for each other: a terminal brings an executor and no actor.
    """

    actor: str | None = None
    verified: bool = False
    channel: str = "cli"
    executor: str | None = None
    authorization_id: str | None = None
    correlation_id: str | None = None

    @classmethod
    def cli(cls, executor: str | None = None, correlation_id: str | None = None) -> InvocationContext:
        """A terminal: an executor, no actor, unverified."""
        return cls(channel="cli", executor=executor, correlation_id=correlation_id)

    @classmethod
    def web(
        cls, actor: str, authorization_id: str | None, executor: str | None = None, correlation_id: str | None = None
    ) -> InvocationContext:
        """A verified person on the web, and the decision that authorised the call."""
        return cls(actor, True, "web", executor, authorization_id, correlation_id)

    def is_attributable(self) -> bool:
        """Whether a verified actor stands behind the call (an unverified name is a claim, not an identity)."""
        return self.actor is not None and self.verified
