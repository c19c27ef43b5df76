"""``Assistant``: routes inbound chat events to tools, approval flows and the agent.

It is channel-neutral: adapters in ``milpa_chat.bots`` turn platform updates into
:class:`~milpa_chat.chat.inbound.Inbound` events and implement the
:class:`~milpa_chat.chat.inbound.Transport` it talks back through.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from milpa_chat.chat import cards
from milpa_chat.chat.approvals import requester_user
from milpa_chat.chat.editing import EDIT_ACTIONS, ApprovalEditor
from milpa_chat.chat.feedback import AnswerFeedback
from milpa_chat.chat.flows import ApprovalFlows
from milpa_chat.chat.identity import Identities
from milpa_chat.chat.inbound import Inbound, MessageRef
from milpa_chat.chat.outbox import ApprovalOutbox
from milpa_chat.chat.replies import privately, refusal
from milpa_chat.chat.routes import (
    APPROVAL_ACTIONS,
    BUILTIN,
    AgentAnswers,
    AgentText,
    ApprovalStats,
    ApprovalTaps,
    BuiltinCommands,
    EditTaps,
    FeedbackTaps,
    ForgedTaps,
    GrantRoutes,
    OtherBots,
    PageTaps,
    PromptReplies,
    Route,
    ShowAllTaps,
    StaleButtons,
    ToolButtons,
    ToolCommands,
)
from milpa_chat.chat.routing import approver_targets, nudge_cards, route
from milpa_chat.chat.streaming import FEEDBACK, waiting_title
from milpa_chat.chat.surface import Transport
from milpa_chat.chat.typing_indicator import typing_while
from milpa_chat.chat.views import PageViews
from milpa_chat.renderers.model import Message
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.result import ToolResult

if TYPE_CHECKING:
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["Agent", "Assistant"]

log = logging.getLogger("milpa_chat.chat")

#: ``agent(inbound, ctx) -> reply``: free text goes here when configured (see ``milpa_chat.gateway``).
Agent = Callable[[Inbound, ToolContext], Awaitable["str | Message | None"]]

#: What a person is told when handling their message failed inside the kit (a store or platform outage).
FAILED_MESSAGE = "Sorry, that could not be handled right now: nothing was run. Please try again in a moment."
FAILED_TAP = "That could not be handled right now (the service is unavailable). Please tap again in a moment."


def _prefix(transport: Transport) -> str:
    """How users type a command on this surface: ``/`` (Telegram) or e.g. ``/milpa `` (a Slack slash command)."""
    return transport.traits.command_prefix


class Assistant:
    """The chat brain: commands, tool calls, approval cards and their buttons, pagination.

    ``edits``: cards carry "✏️ Edit" (the requester of a confirm, approvers of a verification change the
    arguments before deciding; see :class:`~milpa_chat.chat.editing.ApprovalEditor`). ``risk_tiers``: what
    approving asks for follows the tool's declared effect (low: a tap; high: a typed reason, and a second
    approver when someone approves it faster than ``fast_approval`` seconds, by default faster than the
    card can be read). ``feedback``: the agent's answers carry 👍 / 👎 buttons, recorded as events
    (:attr:`answer_feedback`, :mod:`milpa_chat.chat.feedback`). Where a surface streams
    (``traits.streams``), the agent's answer is shown as it is produced, with its plan's steps."""

    def __init__(
        self,
        registry: ToolRegistry,
        identities: Identities | None = None,
        *,
        agent: Agent | None = None,
        approval_ttl: float = 900.0,
        name: str = "Assistant",
        edits: bool = False,
        risk_tiers: bool = False,
        fast_approval: float | None = None,
        feedback: bool = False,
    ) -> None:
        self.registry = registry
        self.identities = identities or Identities()
        self.agent = agent
        #: The standing grants' chat side (``milpa_chat.grants.GrantChat(assistant, desk)`` sets itself here).
        self.grants: Any = None
        #: Features that add commands and buttons of their own (each has ``knows_command`` and ``knows_action``;
        #: e.g. :class:`milpa_chat.chat.batching.Batching`), so the adapters claim them.
        self.extensions: list[Any] = []
        self.name = name
        self.store = registry.store
        #: The runtime's approvals: the one record and its decision function (``approvals.decide``).
        self.approvals = registry.approvals
        self.transports: dict[str, Transport] = {}
        self._recent_taps: OrderedDict[str, None] = OrderedDict()
        #: The requester's context of each run started here, until its result is presented.
        self._run_contexts: dict[str, ToolContext] = {}
        #: Seconds a tool runs before the chat shows "typing…" (refreshed every 4 s): a run that answers
        #: sooner costs no ``sendChatAction``, which its result would have replaced at once anyway.
        self.typing_after = 0.2
        self.approval_ttl = approval_ttl
        registry.confirmations.ttl = max(registry.confirmations.ttl, approval_ttl)
        if "resolve_verification" not in registry:
            from milpa_chat.runtime.verification_tool import VerificationTool

            VerificationTool(
                registry.verifier, request_scopes=["verification:request"], approver_scopes=["verification:approve"]
            ).register(registry)
        self.outbox = ApprovalOutbox(
            self.approvals, self.transports, present=self._present_result, resume=self.resume_agent
        )
        self.flows = ApprovalFlows(self.approvals, self.outbox, run=self._run_approval, context_for=self.context_for)
        self.approvals.install(opener=self._route, reminder=self._nudge_cards, follower=self.flows.follow)
        if self.approvals.hooks.checker in (None, registry.default_checker):  # edits: as a new call by the requester
            from milpa_chat.runtime.approval_rules import registry_check

            self.approvals.install(checker=registry_check(registry, self.requester_context))
        #: Edit before approve: the Edit button, reply prompts per field, form submissions.
        self.editor = ApprovalEditor(self.approvals, registry, context_for=self.context_for, edits=edits)
        self.edits = edits
        self.risk_tiers: dict[str, Any] | None = {"fast_seconds": fast_approval} if risk_tiers else None
        #: Only edits and high-risk reasons prompt for a reply: without either, no message is looked up as one.
        self._may_prompt = edits or risk_tiers
        self.feedback = feedback
        #: The answers with 👍 / 👎 and the taps recorded on them (``await assistant.answer_feedback.read()``).
        self.answer_feedback = AnswerFeedback(registry)
        #: How the agent's answers are shown (streamed, with 👍 / 👎 when ``feedback``): :mod:`.routes.answers`.
        self.answers = AgentAnswers(lambda: self.agent, self.context_for, self.answer_feedback, lambda: self.feedback)
        if edits:  # cards offer Edit to the requester of a confirm and to approvers of a verification
            self.outbox.extras.append(cards.edit_button)
        #: The page views of paginated results (their page buttons' tool, arguments and person).
        self.views = PageViews(registry.store)
        #: What handles an inbound event, asked in order (:mod:`milpa_chat.chat.routes`); see :meth:`add_route`.
        self.routes: list[Route] = self._default_routes()
        bind = getattr(agent, "bind", None)
        if callable(bind):  # an agent that pauses for approvals (milpa_chat.gateway.ChatAgent) needs the assistant
            bind(self)

    # -------------------------------------------------------------- transports
    def attach(self, transport: Transport) -> None:
        """Make a surface reachable (approval cards are posted to every attached surface's approver chats)."""
        self.transports[transport.surface] = transport

    def context_for(self, inbound: Inbound) -> ToolContext:
        return self.identities.context_for(inbound.surface, inbound.user, inbound.chat_id)

    def knows_command(self, name: str) -> bool:
        """Whether ``/name`` is the assistant's: a built-in command or a tool (adapters claim only these)."""
        grants = self.grants is not None and self.grants.knows_command(name)
        grants = grants or any(x.knows_command(name) for x in self.extensions)
        return grants or name in BUILTIN or name == "approvals" or name in self.registry

    def knows_action(self, action: str) -> bool:
        """Whether a button's action is the assistant's: a decision, a page, "Show all", or a tool's detail action."""
        grants = self.grants is not None and self.grants.knows_action(action)
        grants = grants or any(x.knows_action(action) for x in self.extensions)
        return (
            grants
            or action in APPROVAL_ACTIONS
            or action in EDIT_ACTIONS
            or action in ("page", cards.SHOW_ALL, FEEDBACK)
            or action in self.registry
        )

    # ------------------------------------------------------------------ events
    async def handle(self, inbound: Inbound, transport: Transport | None = None) -> None:
        """Process one inbound event. Redeliveries of a ``delivery_id`` already seen do nothing.

        Never raises for what happens while handling: a failing store or plug-in is told to the person
        in one sentence (or, when the surface cannot carry even that, through the transport's
        ``report_failure(inbound, exc)`` if it has one) and logged once with its cause."""
        transport = transport or self.transports.get(inbound.surface)
        if transport is None:
            raise LookupError(f"no transport attached for surface {inbound.surface!r}; call assistant.attach(...)")
        self.transports.setdefault(inbound.surface, transport)
        try:
            await self._dispatch(inbound, transport)
        except Exception as exc:  # a store or a plug-in failed: tell the person in the chat, log once
            told = await self._tell_failure(inbound, transport) or await _last_resort(transport, inbound, exc)
            log.error(
                "Handling a %s %s on %s failed (%s): %s: %s",
                inbound.kind,
                inbound.delivery_id or "-",
                inbound.surface,
                "the person was told" if told else "nobody could be told",
                type(exc).__name__,
                exc,
                exc_info=exc,
            )

    async def _dispatch(self, inbound: Inbound, transport: Transport) -> None:
        if inbound.delivery_id is not None and not await self._first_delivery(inbound):
            log.info("Ignoring redelivered %s update %s", inbound.surface, inbound.delivery_id)
            return
        for handler in self.routes:
            if handler.check(inbound, transport) and await handler.handle(inbound, transport) is not False:
                return

    # ------------------------------------------------------------------ routes
    def _default_routes(self) -> list[Route]:
        """The routes, in the order they are asked (see :mod:`milpa_chat.chat.routes`)."""
        taps: list[Route] = [
            ForgedTaps(self.flows),
            ApprovalTaps(self.flows, self.editor, self.context_for),
            EditTaps(self.editor),
            PageTaps(self.registry, self.views, self.context_for, self._stored_once, self.open_approval, self.present),
            ShowAllTaps(self.approvals, self.outbox, self.context_for),
            FeedbackTaps(self.answer_feedback, self.context_for),
            GrantRoutes(lambda: self.grants),
            ToolButtons(self.registry, self.run_tool, self.context_for),
            StaleButtons(),
        ]
        replies: list[Route] = [PromptReplies(self.editor)] if self._may_prompt else []
        messages: list[Route] = [
            OtherBots(),
            ApprovalStats(self.registry, self.context_for),
            BuiltinCommands(self.registry, self.context_for, lambda: self.name),
            ToolCommands(self.registry, self.run_tool, self.context_for),
            AgentText(lambda: self.agent, self.context_for, self.answers.text),
        ]
        return [*taps, *replies, *messages]

    def add_route(self, route: Route, *, before: type | None = None) -> None:
        """Add a route of your own: asked before the first route of type ``before`` (else after the taps and
        before the text routes end: just before free text)."""
        kinds = [type(r) for r in self.routes]
        where = kinds.index(before) if before is not None and before in kinds else kinds.index(AgentText)
        self.routes.insert(where, route)

    async def _tell_failure(self, inbound: Inbound, transport: Transport) -> bool:
        """One clear sentence to the person; False when the surface could not carry it either."""
        try:
            if inbound.kind == "action":
                await transport.answer(inbound, FAILED_TAP, alert=True)
            else:
                await transport.send(inbound.chat_id, cards.text(FAILED_MESSAGE, tone="error"))
        except Exception as exc:
            log.debug(
                "Could not tell %s chat %s about the failure: %s", inbound.surface, inbound.chat_id, type(exc).__name__
            )
            return False
        return True

    async def _first_delivery(self, inbound: Inbound) -> bool:
        key = f"{inbound.surface}:{inbound.delivery_id}"
        if inbound.kind == "action" and (inbound.action in APPROVAL_ACTIONS or inbound.action == "page"):
            # An approval tap is idempotent by its compare-and-set: a redelivery that reaches another
            # worker is only told "Already ...". A page tap shows the page its button names again (a page
            # of a tool with effects is de-duplicated in the store by ``_on_page``). So they cost no store
            # write; this process drops its own.
            if key in self._recent_taps:
                return False
            self._recent_taps[key] = None
            while len(self._recent_taps) > 10_000:
                self._recent_taps.popitem(last=False)
            return True
        return await self._stored_once(inbound)

    async def _stored_once(self, inbound: Inbound) -> bool:
        """Record ``inbound``'s delivery in the store; False when any worker recorded it already.

        Not durable (no wait for the disk): losing a key to a power cut only lets that one redelivery be
        handled again (a card or a reply twice); a tool with effects still waits for its approval."""
        return (
            await self.store.insert(
                "deliveries",
                f"{inbound.surface}:{inbound.delivery_id}",
                {"chat": inbound.chat_id},
                ttl=7 * 86400,
                durable=False,
            )
            is not None
        )

    # ------------------------------------------------------------------- tools
    async def run_tool(
        self, inbound: Inbound, transport: Transport, name: str, args: dict[str, Any], ctx: ToolContext
    ) -> ToolResult:
        """Call a tool for a chat user and show the outcome: a result, or an approval card."""
        result = await self.call_with_typing(transport, inbound.chat_id, name, args, ctx)
        if await self.open_approval(inbound, name, result):
            return result
        refused = refusal(result, name, self.registry.get(name), ctx, _prefix(transport))
        if refused is not None:  # a denial or arguments that did not validate: for the actor alone
            await privately(transport, inbound, refused)
        else:
            await self.present(transport, inbound.chat_id, name, args, ctx, result)
        return result

    async def open_approval(
        self, inbound: Inbound, name: str, result: ToolResult, *, resume: Mapping[str, Any] | None = None
    ) -> bool:
        """Show the approval ``result`` opened (a confirmation or a verification); ``False`` if it opened none.

        The runtime already stored the approval, with its cards (this assistant's opener added them);
        this delivers them. ``resume`` (an agent's paused run) is kept in the approval and handed back
        to the agent once it is decided.
        """
        approval_id = result.meta.get("approval_id") if result.success else None
        approval = await self.approvals.get(approval_id) if isinstance(approval_id, str) else None
        if approval is None:
            return False
        if resume:
            approval = await self.approvals.set_resume(approval.id, resume)
        await self.outbox.deliver(approval)
        return True

    def _route(self, value: dict[str, Any], ctx: ToolContext) -> None:
        """Opener: where a new approval is shown and where its requester is told (chat users only)."""
        route(value, ctx, self.identities, self.transports, self.registry, tiers=self.risk_tiers)

    def _approver_targets(self, value: dict[str, Any]) -> list[tuple[str, str, str]]:
        return approver_targets(value, self.identities, self.transports)

    def _nudge_cards(self, value: dict[str, Any], kind: str) -> None:
        """Reminder: a fresh copy of the card for the approvers; escalation: cards for the escalation chats."""
        nudge_cards(value, kind, self.identities, self.transports)

    def requester_context(self, approval: Approval) -> ToolContext:
        """The requester's context now (scopes from the current configuration), to run their approved call."""
        route = approval.route
        if route is None or not approval.data["requester"].get("user"):
            return approval.requester_context()
        return self.identities.context_for(route["surface"], requester_user(approval), route["chat_id"])

    async def _run_approval(self, approval: Approval) -> ToolResult:
        route = approval.route
        transport = self.transports.get(route["surface"]) if route else None
        ctx = self.requester_context(approval)
        if len(self._run_contexts) >= 256:  # results never presented here (no route, another worker's sweep)
            self._run_contexts.clear()
        self._run_contexts[approval.id] = ctx  # its result is presented with the context it ran with
        return await typing_while(
            transport,
            route["chat_id"] if route else "",
            self.registry.run_approval(approval, ctx, follow=False),
            after=self.typing_after,
        )

    async def _present_result(self, transport: Transport, chat_id: str, approval: Approval, result: ToolResult) -> None:
        ctx = self._run_contexts.pop(approval.id, None) or self.requester_context(approval)
        await self.present(transport, chat_id, approval.tool or "", approval.args, ctx, result)

    async def resume_agent(self, approval: Approval, result: ToolResult | None) -> None:
        """Hand a decided approval back to the agent run waiting on it, and post the agent's answer.

        ``result`` is the tool's result when it ran, ``None`` when it was cancelled, rejected or expired.
        """
        await self.answers.resume(approval, result, self.transports)

    async def plan_title(self, result: ToolResult) -> str:
        """How the plan step of a call waiting on the approval ``result`` opened reads (who decides, where)."""
        approval_id = result.meta.get("approval_id")
        approval = await self.approvals.get(approval_id) if isinstance(approval_id, str) else None
        return waiting_title(approval) if approval is not None else "Waiting for a decision"

    async def call_with_typing(
        self, transport: Transport | None, chat_id: str, name: str, args: dict[str, Any], ctx: ToolContext
    ) -> ToolResult:
        """Run a tool; once it has run :attr:`typing_after` seconds, the chat shows that work is in progress
        (refreshed every 4 s)."""
        return await typing_while(transport, chat_id, self.registry.call(name, args, ctx), after=self.typing_after)

    async def present(
        self,
        transport: Transport,
        chat_id: str,
        name: str,
        args: dict[str, Any],
        ctx: ToolContext,
        result: ToolResult,
        *,
        edit: MessageRef | None = None,
        view: str | None = None,
    ) -> MessageRef | None:
        """Send (or edit in place) a result; paginated results get page buttons bound to a stored view
        (``view``: the view of the message being paged, whose buttons then stay bound to it)."""
        if result.pagination is not None and view is not None:
            result = result.with_meta(ref=view)  # the same tool, arguments and person: only the page changes
        elif result.pagination is not None:
            view = await self.views.open(name, args, ctx.principal)
            result = result.with_meta(ref=view)
        message = cards.result_message(result)
        if edit is not None:
            await transport.edit(edit, message)
            return edit
        return await transport.send(chat_id, message)

    # --------------------------------------------------------------- sweeping
    async def sweep(self) -> int:
        """Do what is due (read through the store's due index): expire overdue approvals, move runs whose
        lease ended to ``effect_uncertain`` (or retry idempotent tools), start approved runs nobody
        started, deliver undelivered cards, edits and reports. Returns how many approvals it acted on."""
        return await self.flows.sweep()

    async def run_sweeper(self, interval: float = 15.0, *, purge_every: float = 600.0) -> None:
        """Sweep forever every ``interval`` seconds (run it as a task next to the bot), and every
        ``purge_every`` seconds delete what has expired (delivery dedup keys, page views, settled
        approvals past their retention, rate-window entries)."""
        purged_at = self.store.clock()
        while True:
            try:
                await self.sweep()
                if self.grants is not None:  # grant changes another process made (the CLI) reach the cards
                    await self.grants.sweep()
                if self.store.clock() - purged_at >= purge_every:
                    purged_at = self.store.clock()
                    removed = await self.store.purge_expired()
                    log.info("purged %d expired records", removed)
            except Exception:
                log.exception("approval sweep failed")
            await asyncio.sleep(interval)


async def _last_resort(transport: Transport, inbound: Inbound, exc: BaseException) -> bool:
    """A surface's own last way to tell the person (Slack: the request's ``response_url``), if it has one."""
    if not transport.traits.reports_failures:
        return False
    try:
        return bool(await transport.report_failure(inbound, exc))
    except Exception as failed:
        log.debug("report_failure on %s failed too: %s", inbound.surface, type(failed).__name__)
        return False
