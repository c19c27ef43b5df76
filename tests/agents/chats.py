"""The agents' chat, on Telegram (real python-telegram-bot against the local Bot API server) and on Slack (real
slack-bolt served over HTTP, signed requests, the local Slack Web API): one small driver per surface, so the same
tests run on both. People are named by role: ``"alice"`` asks, ``"maria"`` and ``"mateo"`` approve."""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from milpa_chat import ToolRegistry
from milpa_chat.agents import ApprovalHost
from milpa_chat.chat import Assistant, Identities
from milpa_chat.chat.inbound import ChatUser
from milpa_chat.runtime.definition import VerifyPolicy
from milpa_chat.runtime.trail import AuditTrail
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer, ManualClock, TelegramMessage, TelegramUser

from .frameworks import APPROVERS, FRAMEWORKS, IDENTITIES, MANAGERS, SLACK_APPROVERS, SLACK_PEOPLE, TEAM, Ledger

WAIT = 15.0
SURFACES = ("telegram", "slack")
TELEGRAM_PEOPLE = {
    "alice": TelegramUser(1001, "Alice", "alice"),
    "maria": TelegramUser(2001, "Maria", "maria"),
    "mateo": TelegramUser(2002, "Mateo", "mateo"),
}
SLACK_TOKEN, SLACK_SECRET = "xoxb-milpa-agents", "milpa-agents-secret"


async def until(condition: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:  # noqa: ASYNC109
    """``condition()``'s first truthy value, polled (it may depend on the agent's own state, not only the server's)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (value := condition()):
        if loop.time() > deadline:
            raise TimeoutError(f"waited {timeout} s for {what}")
        await asyncio.sleep(0.01)
    return value


class _Chat(ABC):
    """What both surfaces share: the kit, the framework's driver, the ledger and the trail."""

    surface = ""
    #: Whether a successful tap's answer is shown to the person ("Confirmed", "1 of 2"): Telegram's callback
    #: answer; on Slack the app is made with ``notices=True`` so it says them too, ephemerally.
    host: ApprovalHost
    ledger: Ledger
    clock: ManualClock
    driver: Any
    trail: AuditTrail
    #: The standing grants' desk, when the chat was made with ``grants=True``.
    grants: Any = None

    async def cards_recorded(self) -> None:
        """People decide once the cards are out (the record knows every copy)."""
        for _ in range(1500):
            approvals = await self.host.desk.listing()
            if approvals and all(c.get("message_id") for c in approvals[0].data["cards"]):
                return
            await asyncio.sleep(0.01)
        raise TimeoutError("the approval's cards were not recorded as sent")

    async def only_approval(self) -> Any:
        (approval,) = await self.host.desk.listing()
        return approval

    async def alice_told(self, words: str) -> None:
        await until(lambda: any(words in t for t in self.alice_says()), f"{words!r} to Alice")

    @abstractmethod
    def alice_says(self) -> list[str]:
        """What the bot said to the requester, oldest first."""

    @abstractmethod
    def context_of(self, who: str) -> Any:
        """The context the assistant gives ``who`` in the approvers' chat."""

    @abstractmethod
    async def approvers_card(self, words: str) -> Any:
        """The newest card with buttons in the approvers' chat that says ``words`` (waited for)."""

    @abstractmethod
    def cards_shown(self) -> int:
        """How many messages with buttons the approvers and the requester were sent so far."""


@dataclass
class TelegramChat(_Chat):
    tg: BotApiServer
    host: ApprovalHost
    ledger: Ledger
    clock: ManualClock
    driver: Any
    trail: AuditTrail
    surface = "telegram"
    confirm_title = "Confirm: send_payment"

    async def ask(self, text: str = "please pay ACME 120 EUR", *, approvers: bool = True) -> TelegramMessage:
        """Alice asks the agent; returns the card shown to the approvers (or to Alice, who confirms)."""
        alice = TELEGRAM_PEOPLE["alice"]
        sent = await self.tg.send_message(alice.id, alice, text)
        card = await self.tg.wait_for_message(APPROVERS if approvers else alice.id, since=sent, timeout=WAIT)
        await self.cards_recorded()
        return card

    async def say(self, text: str = "please pay ACME 120 EUR") -> None:
        """Alice writes to the agent (no card is waited for)."""
        alice = TELEGRAM_PEOPLE["alice"]
        await self.tg.send_message(alice.id, alice, text)

    async def tap(self, card: TelegramMessage, word: str, who: str) -> str:
        now = self.tg.message(card.chat.id, card.message_id)
        label = next(b for b in now.button_labels if word.lower() in b.lower())
        update = await self.tg.tap_button(card, label, TELEGRAM_PEOPLE[who])
        query = self.tg.callback_query(update)
        await self.tg.wait_until(lambda: query.answered, WAIT, what="the tap's answer")
        return query.answer_text or ""

    async def taps(self, card: TelegramMessage, word: str, count: int) -> None:
        label = next(b for b in card.button_labels if word.lower() in b.lower())
        people = TELEGRAM_PEOPLE["maria"], TELEGRAM_PEOPLE["mateo"]
        updates = await asyncio.gather(*(self.tg.tap_button(card, label, people[i % 2]) for i in range(count)))
        await self.tg.wait_until(lambda: all(self.tg.callback_query(u).answered for u in updates), WAIT)

    async def requester_card(self) -> TelegramMessage:
        """Alice's own copy of the pending request (in her chat with the bot)."""
        alice = TELEGRAM_PEOPLE["alice"].id
        return await self.tg.wait_until(
            lambda: next((m for m in self.tg.messages(alice) if m.button_labels), None), WAIT, what="Alice's copy"
        )

    def card_text(self, card: TelegramMessage) -> str:
        return self.tg.message(card.chat.id, card.message_id).text or ""

    def buttons(self, card: TelegramMessage) -> list[str]:
        return list(self.tg.message(card.chat.id, card.message_id).button_labels)

    def alice_says(self) -> list[str]:
        return [m.text or "" for m in self.tg.messages(TELEGRAM_PEOPLE["alice"].id)]

    def alice_said_first(self) -> list[str]:
        """Each of Alice's messages as first posted, oldest first."""
        return [m.versions[0].text or "" for m in self.tg.messages(TELEGRAM_PEOPLE["alice"].id)]

    async def reject(self, approval_id: str, who: str, reason: str) -> None:
        """``who`` rejects with a reason, typed in the approvers' group."""
        typed = await self.tg.send_message(
            APPROVERS, TELEGRAM_PEOPLE[who], f'/resolve_verification {approval_id} reject "{reason}"'
        )
        await self.tg.wait_for_message(APPROVERS, since=typed, timeout=WAIT)

    async def edit(self, card: TelegramMessage, who: str, field: str, bad: str, good: str) -> None:
        """``who`` edits ``field``: ``bad`` is refused (the prompt says why), then ``good`` is taken."""
        person = TELEGRAM_PEOPLE[who]
        tapped = await self.tg.tap_button(card, next(b for b in card.button_labels if "Edit" in b), person)
        chooser = await self.tg.wait_for_message(APPROVERS, since=tapped, timeout=WAIT)
        label = next(b for b in chooser.button_labels if field in b.lower())
        chosen = await self.tg.tap_button(chooser, label, person)
        prompt = await self.tg.wait_for_message(APPROVERS, since=chosen, timeout=WAIT)
        refused = await self.tg.send_message(APPROVERS, person, bad, reply_to=prompt)
        assert "not valid" in ((await self.tg.wait_for_message(APPROVERS, since=refused, timeout=WAIT)).text or "")
        taken = await self.tg.send_message(APPROVERS, person, good, reply_to=prompt)
        await self.tg.wait_for_message(APPROVERS, since=taken, timeout=WAIT)

    def context_of(self, who: str) -> Any:
        user = TELEGRAM_PEOPLE[who]
        return self.host.assistant.identities.context_for(
            "telegram", ChatUser(str(user.id), user.first_name, user.username), str(APPROVERS)
        )

    async def approvers_card(self, words: str) -> TelegramMessage:
        def newest() -> TelegramMessage | None:
            found = [m for m in self.tg.messages(APPROVERS) if m.button_labels and words in (m.text or "")]
            return found[-1] if found else None

        return await self.tg.wait_until(newest, WAIT, what=f"a card saying {words!r}")

    def cards_shown(self) -> int:
        chats = (APPROVERS, TELEGRAM_PEOPLE["alice"].id)
        return sum(
            1
            for chat in chats
            for m in self.tg.messages(chat)
            if (m.versions[0].reply_markup or {}).get("inline_keyboard")
        )


@dataclass
class SlackChat(_Chat):
    api: Any
    bot: Any
    slack: Any
    host: ApprovalHost
    ledger: Ledger
    clock: ManualClock
    driver: Any
    trail: AuditTrail
    surface = "slack"
    confirm_title = "Confirm send_payment?"

    @property
    def dm(self) -> str:
        return "D" + SLACK_PEOPLE["alice"][1:]

    async def ask(self, text: str = "please pay ACME 120 EUR", *, approvers: bool = True) -> Any:
        """Alice writes to the app in its DM; returns the card shown to the approvers (or to Alice)."""
        channel = SLACK_APPROVERS if approvers else self.dm
        await self.slack.direct_message(text, user=SLACK_PEOPLE["alice"])
        card = await self.api.wait_for_message(channel, lambda m: bool(m.buttons()), timeout=WAIT)
        await self.cards_recorded()
        return card

    async def say(self, text: str = "please pay ACME 120 EUR") -> None:
        """Alice writes to the app in its DM (no card is waited for)."""
        await self.slack.direct_message(text, user=SLACK_PEOPLE["alice"])

    def _answers(self, who: str) -> list[str]:
        return [m.text for m in self.api.ephemeral_messages(SLACK_PEOPLE[who])]

    async def tap(self, card: Any, word: str, who: str) -> str:
        """``who`` taps the button showing ``word``; returns what the app showed them alone (if anything)."""
        before = len(self._answers(who))
        action = next(b for b in card.buttons() if word.lower() in str(b["text"]["text"]).lower())
        answer = await self.slack.click(card, action["action_id"], user=SLACK_PEOPLE[who])
        assert answer.status == 200, answer.text
        await self.bot.drain()
        return "\n".join(self._answers(who)[before:])

    async def taps(self, card: Any, word: str, count: int) -> None:
        action = next(b for b in card.buttons() if word.lower() in str(b["text"]["text"]).lower())
        people = SLACK_PEOPLE["maria"], SLACK_PEOPLE["mateo"]
        requests = [self.slack.payloads.click(card, action["action_id"], user=people[i % 2]) for i in range(count)]
        answers = await asyncio.gather(*(self.slack.send(r) for r in requests))
        await self.bot.drain()
        assert {a.status for a in answers} == {200}

    async def requester_card(self) -> Any:
        """Alice's own copy of the pending request (in her DM with the app)."""
        return await self.api.wait_for_message(self.dm, lambda m: bool(m.buttons()), timeout=WAIT)

    def card_text(self, card: Any) -> str:
        return str(card.all_text())

    def buttons(self, card: Any) -> list[str]:
        return [str(b["text"]["text"]) for b in card.buttons()]

    def alice_says(self) -> list[str]:
        return [m.all_text() for m in self.api.messages(self.dm) if m.bot_id]

    def alice_said_first(self) -> list[str]:
        return [
            (m.history[0].text if m.history else m.text) or m.all_text() for m in self.api.messages(self.dm) if m.bot_id
        ]

    async def reject(self, approval_id: str, who: str, reason: str) -> None:
        """``who`` rejects with a reason: ``/milpa resolve_verification <id> reject "<reason>"`` in the approvers'
        channel."""
        answer = await self.slack.command(
            "/milpa",
            f'resolve_verification {approval_id} reject "{reason}"',
            user=SLACK_PEOPLE[who],
            channel=SLACK_APPROVERS,
        )
        assert answer.status == 200, answer.text
        await self.bot.drain()

    async def edit(self, card: Any, who: str, field: str, bad: str, good: str) -> None:
        """``who`` edits ``field`` in the Edit modal: ``bad`` comes back as the field's error, then ``good``."""
        user = SLACK_PEOPLE[who]
        action = next(b for b in card.buttons() if "Edit" in str(b["text"]["text"]))
        await self.slack.click(card, action["action_id"], user=user)
        await self.bot.drain()
        modal = self.api.views()[-1]
        refused = await self.slack.view_submission(modal, {f"f:{field}": bad}, user=user)
        answer = json.loads(refused.text)
        assert answer["response_action"] == "errors" and list(answer["errors"]) == [f"f:{field}"], answer
        taken = await self.slack.view_submission(modal, {f"f:{field}": good}, user=user)
        assert taken.status == 200 and taken.text in ("", "null"), taken.text
        await self.bot.drain()

    def context_of(self, who: str) -> Any:
        user = SLACK_PEOPLE[who]
        return self.host.assistant.identities.context_for(
            "slack", ChatUser(user, who.title(), who, team=TEAM), SLACK_APPROVERS
        )

    async def approvers_card(self, words: str) -> Any:
        def says(m: Any) -> bool:
            return bool(m.buttons()) and words in m.all_text()

        await self.api.wait_for_message(SLACK_APPROVERS, says, timeout=WAIT)
        return [m for m in self.api.messages(SLACK_APPROVERS) if says(m)][-1]

    def cards_shown(self) -> int:
        return sum(1 for chat in (SLACK_APPROVERS, self.dm) for m in self.api.messages(chat) if _had_buttons(m))


def _had_buttons(m: Any) -> bool:
    first = m.history[0] if m.history else m
    return any(b.get("type") == "actions" for b in first.blocks or ())


def new_kit(clock: ManualClock, identities: dict[str, Any] = IDENTITIES) -> tuple[Assistant, ApprovalHost, AuditTrail]:
    registry = ToolRegistry(store=MemoryStore(clock=clock))
    trail = AuditTrail(registry.store).attach(registry)
    assistant = Assistant(registry, Identities.from_dict(identities), edits=True)
    return assistant, ApprovalHost(assistant, poll=0.02), trail


#: The same people; Maria and Mateo may also sign standing grants.
SIGNING = {**IDENTITIES, "roles": {**IDENTITIES["roles"], "manager": [*IDENTITIES["roles"]["manager"], "grants:sign"]}}


@asynccontextmanager
async def chat(
    surface: str, framework: str, tmp_path: Path, verify: VerifyPolicy | None = MANAGERS, *, grants: bool = False
) -> AsyncIterator[Any]:
    """The framework's agent behind the assistant on ``surface``, with Alice, Maria and Mateo. ``grants``:
    with standing grants over the payment (:mod:`tests.agents.payees`; Maria and Mateo may sign them)."""
    clock = ManualClock()
    assistant, host, trail = new_kit(clock, SIGNING if grants else IDENTITIES)
    desk = None
    if grants:
        from milpa_chat.grants import GrantChat

        from .payees import install

        desk = install(assistant.registry)
        GrantChat(assistant, desk)
    ledger, driver = Ledger(), FRAMEWORKS[framework]()
    async with AsyncExitStack() as stack:
        _, assistant.agent = await driver.build(host, ledger, verify, stack, tmp_path)
        try:
            kit = (host, ledger, clock, driver, trail)
            surfaced = _telegram(assistant, *kit) if surface == "telegram" else _slack(assistant, *kit)
            c = await stack.enter_async_context(surfaced)
            c.grants = desk
            yield c
        finally:
            for task in list(host._tasks):
                task.cancel()


@asynccontextmanager
async def _telegram(assistant: Assistant, *kit: Any) -> AsyncIterator[TelegramChat]:
    from milpa_chat.bots.telegram import TelegramBot

    async with BotApiServer() as tg:
        tg.group(APPROVERS, "Approvers", members=[TELEGRAM_PEOPLE["maria"], TELEGRAM_PEOPLE["mateo"]])
        bot = TelegramBot(assistant, tg.token, tg.base_url, sweep_interval=None)
        await bot.start(poll_timeout=1)
        try:
            yield TelegramChat(tg, *kit)
        finally:
            await bot.stop()


@asynccontextmanager
async def slack_api() -> AsyncIterator[Any]:
    """The local Slack Web API with the workspace's people (real names, as the cards and notices show them)."""
    from milpa_chat.testing.slack import SlackApiServer

    async with SlackApiServer(SLACK_TOKEN, team_id=TEAM, channels={SLACK_APPROVERS: "approvers"}) as api:
        for who, user in SLACK_PEOPLE.items():
            api.add_user(user, who, real_name=who.title())
        yield api


@asynccontextmanager
async def _slack(assistant: Assistant, *kit: Any) -> AsyncIterator[SlackChat]:
    from milpa_chat.bots.slack import SlackBot
    from milpa_chat.testing.slack import SlackEvents, serve_bolt_app

    async with slack_api() as api:
        bot = SlackBot(assistant, SLACK_TOKEN, SLACK_SECRET, base_url=api.base_url, notices=True, sweep_interval=1.0)
        async with serve_bolt_app(bot.web_app()) as url, SlackEvents(url, SLACK_SECRET, api=api) as slack:
            yield SlackChat(api, bot, slack, *kit)
