"""Edit before approve, in chat: the Edit button of a card, per-field reply prompts, and form submissions.

Every edit is :meth:`ApprovalDesk.amend` (re-validated and re-authorized as a new call would be), so
the rules live in one place; this module only turns what a person did on a surface into field values:

* a surface with forms (Slack: ``open_edit_form``) gets one form with an input per field;
* any other surface gets a reply prompt per field: "New value for amount (now 120)?" (Telegram sends
  it with ForceReply through ``prompt`` when the transport has one); the person's next message in that
  chat is the value, ``/cancel`` stops.

A prompt waiting for its answer is kept in the assistant's store (collection ``edit_prompts``, keyed by
surface, chat and person, expiring with the request), so a bot restarted, or another worker on the same
store, takes the answer: a Telegram reply to a prompt names the prompt it answers. The answer is taken
once (``take``); a prompt drawn at an older revision of the request is refused, nothing changed.

Who edits is always the platform identity of the tap, the reply or the submission, never button data.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from milpa_chat.chat import cards
from milpa_chat.chat.cards import parse_ref
from milpa_chat.chat.commands import convert_value
from milpa_chat.chat.surface import EditField
from milpa_chat.renderers.model import Actions, Button, Message, Paragraph
from milpa_chat.runtime.approval import ApprovalRefused
from milpa_chat.runtime.approval_rules import Actor, check_approver, may_edit, stale

if TYPE_CHECKING:
    from milpa_chat.chat.inbound import Inbound
    from milpa_chat.chat.surface import Transport
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.runtime.approvals import ApprovalDesk, Change
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["EDIT_ACTIONS", "PROMPTS", "ApprovalEditor", "EditField", "edit_fields", "read_values", "value_text"]

log = logging.getLogger("milpa_chat.chat")

EDIT_ACTIONS = frozenset({"edit", "edit_field"})
CANCEL = "/cancel"
#: How every reply prompt ends: a reply to a message of the bot ending so is an answer to a prompt.
PROMPT_TAIL = f"Reply to this message; {CANCEL} stops."
#: The store's collection of prompts waiting for a reply (key ``surface:chat:user``).
PROMPTS = "edit_prompts"
#: Prompts this process remembers without asking the store (the oldest are dropped beyond this).
MAX_PROMPTS = 1000
#: A prompt waits at most this long (and never past its request's expiry).
PROMPT_TTL = 86400.0
NO_LONGER_OPEN = (
    "That question is no longer open (it was answered, stopped, or its request was decided or "
    "expired); nothing was changed. Tap Edit on the card to start again."
)


def value_text(value: Any) -> str:
    """A value as a person types it: text as is, anything else as JSON (``120``, ``true``, ``["a"]``)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def edit_fields(approval: Approval, schema: Mapping[str, Any]) -> list[EditField]:
    """The fields of ``schema`` with the approval's current values, in the schema's order (secret fields,
    such as ``api_key``, are left out: nobody sees or changes them through an edit)."""
    props: Mapping[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    args = approval.args
    out = []
    from milpa_chat.renderers import is_secret_key

    for name, prop in props.items():
        if is_secret_key(name):  # never shown, never changed here: it keeps the value it was asked with
            continue
        prop = prop if isinstance(prop, Mapping) else {}
        label = str(prop.get("title") or name)[:75]
        out.append(
            EditField(
                name,
                label,
                str(prop.get("description") or "")[:150],
                name not in required,
                value_text(args.get(name)),
                prop,
            )
        )
    return out


def read_values(texts: Mapping[str, str], fields: list[EditField]) -> dict[str, Any]:
    """Typed values from what a person typed per field (by the field's schema type); an empty optional
    field is left out, so the current value stays only when it was empty too."""
    by_name = {f.name: f for f in fields}
    values: dict[str, Any] = {}
    for name, text in texts.items():
        field = by_name.get(name)
        if field is None:
            continue
        if not text.strip() and field.optional:
            values[name] = None
            continue
        values[name] = convert_value(text, dict(field.schema))
    return {k: v for k, v in values.items() if not (v is None and by_name[k].now == "")}


@dataclass(frozen=True, slots=True)
class _Prompt:
    approval_id: str
    revision: int
    field: str  # "" : the reason to approve a high-risk request
    message_id: str = ""  # the prompt's message, when the surface said which
    until: float = 0.0  # the store's clock: when it stops waiting

    def to_dict(self) -> dict[str, Any]:
        return {
            "approval_id": self.approval_id,
            "revision": self.revision,
            "field": self.field,
            "message_id": self.message_id,
            "until": self.until,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> _Prompt:
        return cls(
            str(d["approval_id"]),
            int(d["revision"]),
            str(d.get("field") or ""),
            str(d.get("message_id") or ""),
            float(d.get("until") or 0.0),
        )


Key = tuple[str, str, str]


def _store_key(key: Key) -> str:
    return ":".join(key)


def _replied_to(inbound: Inbound) -> tuple[str, bool, str] | None:
    """``(message id, sent by a bot, text)`` of the message ``inbound`` replies to, if the platform said so
    (a Telegram ``Update`` or its dict form); ``None`` for a message that replies to nothing."""
    raw = inbound.raw
    if raw is None:
        return None
    message = raw.get("message") if isinstance(raw, Mapping) else getattr(raw, "message", None)
    if message is None:
        return None
    replied = (
        message.get("reply_to_message") if isinstance(message, Mapping) else getattr(message, "reply_to_message", None)
    )
    if replied is None:
        return None
    if isinstance(replied, Mapping):
        sender = replied.get("from") or {}
        return (str(replied.get("message_id", "")), bool(sender.get("is_bot")), str(replied.get("text") or ""))
    sender = getattr(replied, "from_user", None)
    return (
        str(getattr(replied, "message_id", "")),
        bool(getattr(sender, "is_bot", False)),
        str(getattr(replied, "text", None) or ""),
    )


class ApprovalEditor:
    """The Edit button, reply prompts and form submissions, each ending in :meth:`ApprovalDesk.amend`."""

    def __init__(
        self,
        desk: ApprovalDesk,
        registry: ToolRegistry,
        *,
        context_for: Callable[[Inbound], ToolContext],
        edits: bool = True,
    ) -> None:
        self.desk = desk
        self.registry = registry
        self.context_for = context_for
        #: Whether arguments may be edited at all (``Assistant(edits=...)``): without it an Edit tap, however
        #: its data was made, and a form submission are refused; reason prompts work either way.
        self.edits = edits
        #: What this process asked and is waiting for (the store holds the same, for every process).
        self._prompts: OrderedDict[Key, _Prompt] = OrderedDict()

    def fields(self, approval: Approval) -> list[EditField]:
        definition = self.registry.get(approval.tool or "")
        if definition is not None:
            return edit_fields(approval, definition.input_schema)
        # a call an agent of another framework proposed: the JSON schema its framework gave the tool
        schema = (approval.data.get("payload") or {}).get("schema") if approval.data.get("external") else None
        return [] if not isinstance(schema, dict) else edit_fields(approval, schema)

    async def check(self, ref: str, ctx: ToolContext, via: str) -> Approval:
        """The approval behind a button's ref, if ``ctx`` may edit it now (else :class:`ApprovalRefused`)."""
        aid, revision = parse_ref(ref)
        approval = await self.desk.get(aid)
        if approval is None:
            raise ApprovalRefused("This button is not valid (unknown or removed request).", code="NOT_FOUND")
        if approval.state == "pending" and approval.expires_at <= self.desk.store.clock():
            raise ApprovalRefused("This request expired; nothing was done.", code="EXPIRED", approval=approval)
        stale(approval, revision)
        may_edit(approval, Actor(ctx, via, None, self.desk.store.clock()))
        return approval

    # ---------------------------------------------------------------- taps
    async def on_tap(self, inbound: Inbound, transport: Transport, action: str, ref: str) -> None:
        """``edit`` (the card's button) or ``edit_field`` (a field chosen): open a form or prompt for a value."""
        if not self.edits:  # no card offers Edit here: the data was made by someone else
            await transport.answer(inbound, "This button is not valid any more.", alert=True)
            return
        ctx = self.context_for(inbound)
        head, _, index = ref.rpartition(".") if action == "edit_field" else (ref, "", "")
        try:
            approval = await self.check(head, ctx, inbound.surface)
        except ApprovalRefused as exc:
            await transport.answer(inbound, str(exc), alert=True)
            return
        fields = self.fields(approval)
        if not fields:
            await transport.answer(inbound, f"{approval.label} has no arguments to edit.", alert=True)
            return
        if action == "edit" and transport.traits.edit_forms:
            await transport.open_edit_form(inbound, approval, fields)
            return
        if action == "edit" and len(fields) > 1:
            await transport.answer(inbound, "Choose the field to change.")
            await transport.send(inbound.chat_id, _chooser(approval, fields))
            return
        field = fields[int(index)] if index.isdigit() and int(index) < len(fields) else fields[0]
        await transport.answer(inbound, f"Reply with the new value for {field.label}.")
        await self._prompt(inbound, transport, approval, field)

    async def _prompt(self, inbound: Inbound, transport: Transport, approval: Approval, field: EditField) -> None:
        now = f" (now {cards._short(field.now, 60)})" if field.now else " (now empty)"
        text = f"New value for {field.label}{now}? {PROMPT_TAIL}"
        await self._ask(inbound, transport, approval, field.name, text)

    async def _ask(self, inbound: Inbound, transport: Transport, approval: Approval, field: str, text: str) -> None:
        """Keep the prompt (in the store first: a crash after sending it loses nothing), send it, then note
        the message it went out as (a reply to an older prompt is then told so)."""
        key: Key = (inbound.surface, inbound.chat_id, inbound.user.id)
        store = self.desk.store
        now = store.clock()
        ttl = max(1.0, min(PROMPT_TTL, approval.expires_at - now))
        record = _Prompt(approval.id, approval.revision, field, "", now + ttl)
        held = await store.put(PROMPTS, _store_key(key), record.to_dict(), ttl=ttl)
        self._remember(key, record)
        sent = (
            await transport.prompt(inbound, text)
            if transport.traits.prompts
            else await transport.send(inbound.chat_id, cards.text(text))
        )
        message_id = sent.message_id if sent is not None else ""
        if message_id:  # unless it was answered already (a compare-and-set on the version just written)
            record = _Prompt(approval.id, approval.revision, field, message_id, now + ttl)
            if await store.update(PROMPTS, _store_key(key), record.to_dict(), expected_version=held.version):
                self._remember(key, record)

    # ---------------------------------------------------------- typed reasons
    async def wants_reason(self, ref: str, ctx: ToolContext, transport: Transport) -> Approval | None:
        """The approval behind an Approve tap without a reason when it is high-risk, this person may approve
        it, and the surface can ask for a reason (a reply prompt or a form); else ``None`` (decide as usual)."""
        if not (transport.traits.prompts or transport.traits.reason_forms):
            return None
        aid, revision = parse_ref(ref)
        approval = await self.desk.get(aid)
        if (
            approval is None
            or approval.state != "pending"
            or revision != approval.revision
            or (approval.data.get("risk") or {}).get("level") != "high"
        ):
            return None
        try:
            check_approver(approval, ctx)
        except ApprovalRefused:
            return None
        return approval

    async def ask_reason(self, inbound: Inbound, transport: Transport, approval: Approval) -> None:
        """Ask the approver why (a form where the surface has one, else a reply prompt)."""
        why = (approval.data.get("risk") or {}).get("why") or "high risk"
        if transport.traits.reason_forms:
            await transport.open_reason_form(inbound, approval, why)
            return
        await transport.answer(inbound, "This request is high-risk: reply with your reason to approve it.")
        text = f"Why do you approve {approval.label}? It is high-risk ({why}). Give your reason. {PROMPT_TAIL}"
        await self._ask(inbound, transport, approval, "", text)

    async def approve_with_reason(
        self, ctx: ToolContext, ref: str, reason: str, *, via: str, follow: bool = True
    ) -> Change:
        """Approve the version ``ref`` names, as ``ctx``, with the typed ``reason`` (the one decision path)."""
        aid, revision = parse_ref(ref)
        return await self.desk.decide(
            aid, "approve", ctx, via=via, note=reason.strip() or None, follow=follow, revision=revision
        )

    def _remember(self, key: Key, prompt: _Prompt) -> None:
        self._prompts[key] = prompt
        self._prompts.move_to_end(key)
        while len(self._prompts) > MAX_PROMPTS:
            self._prompts.popitem(last=False)

    # --------------------------------------------------------------- replies
    def waiting(self, inbound: Inbound) -> bool:
        """Whether this person's message in this chat answers a prompt of theirs: one this process asked
        (and still waiting), or a reply to a prompt of the bot addressed to them (asked by this process
        before a restart, or by another worker; the store has it, see :meth:`on_reply`)."""
        key: Key = (inbound.surface, inbound.chat_id, inbound.user.id)
        known = self._prompts.get(key)
        if known is not None:
            if known.until > self.desk.store.clock():
                return True
            self._prompts.pop(key, None)
        replied = _replied_to(inbound)
        if replied is None or not replied[1] or PROMPT_TAIL not in replied[2]:
            return False
        # in a group the prompt is addressed to its person by name; a reply to someone else's is not an answer
        return inbound.chat_type == "private" or replied[2].startswith(f"{inbound.user.display}: ")

    async def awaiting(self, inbound: Inbound) -> bool:
        """:meth:`waiting`, and also any prompt the store holds for this person in this chat (a surface
        whose answers do not say what they reply to, asked before a restart or by another worker)."""
        if self.waiting(inbound):
            return True
        key: Key = (inbound.surface, inbound.chat_id, inbound.user.id)
        return await self.desk.store.get(PROMPTS, _store_key(key)) is not None

    async def on_reply(self, inbound: Inbound, transport: Transport) -> None:
        """The value for the prompted field (or ``/cancel``), from the person the prompt was for."""
        key: Key = (inbound.surface, inbound.chat_id, inbound.user.id)
        self._prompts.pop(key, None)
        store = self.desk.store
        replied = _replied_to(inbound)
        held = await store.get(PROMPTS, _store_key(key))
        if (
            held is not None
            and replied is not None
            and PROMPT_TAIL in replied[2]
            and held.value.get("message_id")
            and replied[0] != str(held.value["message_id"])
        ):  # a reply to another (older) prompt
            self._remember(key, _Prompt.from_dict(held.value))  # the latest one still waits
            await transport.send(
                inbound.chat_id,
                cards.text(
                    f"You replied to an earlier question; nothing was changed. Reply to the latest one, or {CANCEL}.",
                    tone="error",
                ),
            )
            return
        taken = await store.take(PROMPTS, _store_key(key)) if held is not None else None
        if taken is None:  # answered meanwhile (another worker, a double delivery), stopped, or expired
            await transport.send(inbound.chat_id, cards.text(NO_LONGER_OPEN, tone="error"))
            return
        prompt = _Prompt.from_dict(taken.value)
        text = (inbound.text or "").strip()
        if text.split("@", 1)[0] == CANCEL:
            await transport.send(inbound.chat_id, cards.text("Editing stopped; nothing was changed."))
            return
        approval = await self.desk.get(prompt.approval_id)
        if approval is not None and approval.state == "pending" and approval.revision != prompt.revision:
            last = approval.revisions[-1] if approval.revisions else {}
            who, what = last.get("by_name") or "someone", ", ".join(last.get("changes", {})) or "its arguments"
            await transport.send(
                inbound.chat_id,
                cards.text(
                    f"The request changed since you were asked: {who} edited {what}. Nothing was changed; decide "
                    "on the updated card (tap Edit there to change it again).",
                    tone="error",
                ),
            )
            return
        ctx = self.context_for(inbound)
        ref = f"{prompt.approval_id}.{prompt.revision}"
        try:
            if prompt.field:
                change = await self.submit(ctx, ref, {prompt.field: text}, via=inbound.surface)
            else:
                change = await self.approve_with_reason(ctx, ref, text, via=inbound.surface)
        except ApprovalRefused as exc:
            retry = exc.code == "VALIDATION_ERROR" and bool(exc.errors)
            if retry:  # the same question again, for the same person
                ttl = max(1.0, prompt.until - store.clock())
                await store.put(PROMPTS, _store_key(key), prompt.to_dict(), ttl=ttl)
                self._remember(key, prompt)
            tail = f" Reply with another value, or {CANCEL}." if retry else ""
            await transport.send(inbound.chat_id, cards.text(f"{exc}{tail}", tone="error"))
            return
        await transport.send(inbound.chat_id, cards.text(change.message))

    # ------------------------------------------------------------- submissions
    async def submit(
        self, ctx: ToolContext, ref: str, texts: Mapping[str, str], *, via: str, follow: bool = True
    ) -> Change:
        """Amend the approval behind ``ref`` (``<id>.<revision>`` the person edited) with the typed values.

        Raises :class:`ApprovalRefused`; ``errors`` names each field whose value is not valid."""
        if not self.edits:
            raise ApprovalRefused("Editing is not offered here: decide on the request as it is.")
        approval = await self.check(ref, ctx, via)
        values = read_values(texts, self.fields(approval))
        return await self.desk.amend(approval.id, values, ctx, via=via, follow=follow)


def _chooser(approval: Approval, fields: list[EditField]) -> Message:
    ref = cards.button_ref(approval)
    buttons = [Button(_label(f), "edit_field", f"{ref}.{i}") for i, f in enumerate(fields[:20])]
    rows = tuple(tuple(buttons[i : i + 2]) for i in range(0, len(buttons), 2))
    body = f"Edit {approval.label}: which value do you want to change?"
    return Message((Paragraph.of(body), Actions(rows)), body)


def _label(field: EditField) -> str:
    now = cards._short(field.now, 30) if field.now else "empty"
    return f"{field.label} ({now})"[:75]
