"""The scripted tour: the story a newcomer should see, played through the page's own HTTP endpoints.

A read, a validation error, a denial naming who you are and the missing scope, the agent turning a plain
request into tool calls on the scripted model (a list, a search, a delete Alice confirms), a confirm round trip,
a payment a manager approves in Slack with a typed reason (payments are high-risk) while the Telegram copies
are edited, an edit before approve answered in a Telegram reply prompt (the editor may not approve their own
version), an edit in the Slack modal then approved in Telegram with a typed reason, a forged tap refused, a
reminder and an escalation as the clock skips ahead, the approvers' figures, an expiry. Each step acts as a
persona (``POST /api/telegram/send`` ...) and then waits for what the page would show (``GET /api/feed``): the
tour checks the records of the local platform servers, never a second rendering. It runs against the example
tools of :mod:`milpa_chat.examples` and the built-in personas.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["STEPS", "Pace", "TourError", "TourSkip", "run_tour"]

T = TypeVar("T")
Printer = Callable[[str], None]
ALICE, GUS, MARIA, MATEO = 1001, 1003, 2001, 2002
GROUP = -500
SLACK_APPROVERS = "C0APPROVALS"
MARIA_SLACK, MATEO_SLACK = "U2001", "U2002"
STEP_TIMEOUT = 20.0


class TourError(AssertionError):
    """A step did not show what it should; the message says what was missing."""


class TourSkip(Exception):
    """A step that does not apply to this playground (the message says why); it is neither passed nor failed."""


class Pace:
    """The tour played for a person: a beat before each action, then each step held long enough to read (``least``
    to ``most`` seconds, longer for a longer result). :meth:`skip` ends the current step's waiting at once (the
    page's "Next step"). Without a pace (``--check``) the tour runs as fast as the servers answer."""

    def __init__(
        self, *, beat: float = 0.5, least: float = 2.0, most: float = 4.0, chars_per_second: float = 60.0
    ) -> None:
        self.beat, self.least, self.most, self.chars_per_second = beat, least, most, chars_per_second
        self._skip = asyncio.Event()

    def skip(self) -> None:
        self._skip.set()

    def next_step(self) -> None:
        self._skip.clear()

    def reading_time(self, text: str) -> float:
        """Seconds a step showing ``text`` is held: ``least`` plus reading time, at most ``most``."""
        return min(self.most, self.least + len(text) / self.chars_per_second)

    async def wait(self, seconds: float) -> None:
        if seconds > 0 and not self._skip.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._skip.wait(), seconds)


class TourClient:
    """Acts through the page's endpoints and mirrors the feed (the latest event of every message)."""

    def __init__(self, session: Any, base: str, pace: Pace | None = None) -> None:
        self.session = session
        self.pace = pace
        self.base = base.rstrip("/")
        self.seq = 0
        self.tg: dict[tuple[int, int], dict[str, Any]] = {}
        self.slack: dict[tuple[str, str, str | None], dict[str, Any]] = {}
        self.answers: list[dict[str, Any]] = []
        self.views: dict[str, dict[str, Any]] = {}

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.pace is not None:
            await self.pace.wait(self.pace.beat)  # what the last action showed stays on screen a moment
        async with self.session.post(self.base + path, json=body) as resp:
            data: dict[str, Any] = await resp.json()
        if resp.status != 200 or not data.get("ok"):
            raise TourError(f"POST {path} {body} was refused: {data.get('error') or data}")
        return data

    async def state(self) -> dict[str, Any]:
        async with self.session.get(f"{self.base}/api/state") as resp:
            data: dict[str, Any] = await resp.json()
        return data

    async def sync(self, wait: float = 0.0) -> None:
        async with self.session.get(f"{self.base}/api/feed", params={"since": self.seq, "wait": wait}) as resp:
            data = await resp.json()
        for event in data["events"]:
            kind = event["type"]
            if kind == "tg.message":
                self.tg[(event["chat"], event["id"])] = event
            elif kind == "slack.message":
                self.slack[(event["channel"], event["ts"], event["ephemeral_to"])] = event
            elif kind == "tg.answer":
                self.answers.append(event)
            elif kind == "slack.view":
                self.views[event["id"]] = event
        self.seq = data["next"]

    async def until(self, check: Callable[[], T | None], what: str, timeout: float = STEP_TIMEOUT) -> T:  # noqa: ASYNC109
        deadline = time.monotonic() + timeout
        while True:
            await self.sync()
            found = check()
            if found:
                return found
            if time.monotonic() > deadline:
                raise TourError(f"no {what} within {timeout:.0f} s")
            await self.sync(wait=0.5)

    # -- reading the mirror -----------------------------------------------------------------------
    def last_tg(self, chat: int) -> int:
        return max((mid for (cid, mid) in self.tg if cid == chat), default=0)

    def bot_after(self, chat: int, after: int, *words: str) -> dict[str, Any] | None:
        for (cid, mid), event in sorted(self.tg.items()):
            if cid == chat and mid > after and event["from"]["bot"] and all(w in (event["text"] or "") for w in words):
                return event
        return None

    def current(self, event: dict[str, Any]) -> dict[str, Any]:
        return self.tg[(event["chat"], event["id"])]

    def slack_after(self, channel: str, after: str, *words: str) -> dict[str, Any] | None:
        for (ch, ts, _to), event in sorted(self.slack.items()):
            if ch == channel and ts > after and event["bot"] and all(w in _slack_text(event) for w in words):
                return event
        return None

    def prompt_after(self, chat: int, after: int, *words: str) -> dict[str, Any] | None:
        """A ForceReply prompt of the bot (the app opens a reply to it) showing ``words``."""
        event = self.bot_after(chat, after, *words)
        return event if event is not None and event["force_reply"] else None

    def view_for(self, user: str, title: str, seen: set[str]) -> dict[str, Any] | None:
        """An open modal of ``user``'s titled ``title``, other than those in ``seen``."""
        for view_id, event in self.views.items():
            if (
                view_id not in seen
                and event["user"] == user
                and not event["closed"]
                and event["view"]["title"]["text"] == title
            ):
                return event
        return None

    def last_slack(self, channel: str) -> str:
        return max((ts for (ch, ts, _to) in self.slack if ch == channel), default="0")


def _slack_text(event: dict[str, Any]) -> str:
    found: list[str] = [event.get("text") or ""]

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("text"), str):
                found.append(value["text"])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(event.get("blocks") or [])
    return "\n".join(found)


def _button(event: dict[str, Any], word: str) -> dict[str, Any]:
    for row in event.get("buttons") or []:
        for button in row:
            if word.lower() in str(button.get("text", "")).lower():
                return dict(button)
    raise TourError(f"message {event['id']} has no {word!r} button")


def _slack_button(event: dict[str, Any], word: str) -> dict[str, Any]:
    for block in event.get("blocks") or []:
        for element in block.get("elements", []) if block.get("type") == "actions" else []:
            if word.lower() in str(element.get("text", {}).get("text", "")).lower():
                return dict(element)
    raise TourError(f"the Slack card {event['ts']} has no {word!r} button")


def _inputs(view: dict[str, Any]) -> dict[str, str]:
    """The modal's input blocks: block id -> the value it was opened with."""
    return {
        b["block_id"]: (b.get("element") or {}).get("initial_value", "")
        for b in view["view"]["blocks"]
        if b.get("type") == "input"
    }


def _no_buttons(event: dict[str, Any]) -> bool:
    return not any(row for row in event.get("buttons") or [])


def _slack_no_buttons(event: dict[str, Any]) -> bool:
    return not any(block.get("type") == "actions" for block in event.get("blocks") or [])


# ------------------------------------------------------------------------------------------ steps
async def step_read(c: TourClient, memo: dict[str, Any]) -> str:
    mark = c.last_tg(ALICE)
    await c.post("/api/telegram/send", {"persona": "alice", "chat": ALICE, "text": "/list_notes"})
    reply = await c.until(lambda: c.bot_after(ALICE, mark, "notes"), "list of notes in Alice's chat")
    numbers = re.findall(r"#(\d+)", reply["text"])
    if not numbers:
        raise TourError(f"the list shows no note numbers: {reply['text']!r}")
    memo["note"] = int(numbers[0])
    pages = "with page buttons" if not _no_buttons(reply) else "on one page"
    return f"Alice reads /list_notes: {reply['text'].splitlines()[0]}, {pages}"


async def step_validation(c: TourClient, memo: dict[str, Any]) -> str:
    mark = c.last_tg(ALICE)
    await c.post("/api/telegram/send", {"persona": "alice", "chat": ALICE, "text": "/send_payment ACME lots"})
    reply = await c.until(lambda: c.bot_after(ALICE, mark, "amount"), "answer naming the field 'amount'")
    line = next((ln.strip("• ") for ln in reply["text"].splitlines() if "amount" in ln), "")
    return f"'/send_payment ACME lots' is refused before anything runs: {line}"


async def step_denial(c: TourClient, memo: dict[str, Any]) -> str:
    mark = c.last_tg(GUS)
    await c.post("/api/telegram/send", {"persona": "gus", "chat": GUS, "text": f"/delete_note {memo.get('note', 1)}"})
    reply = await c.until(
        lambda: c.bot_after(GUS, mark, "notes:write", f"telegram:{GUS}"),
        "denial naming the scope notes:write and who is asking",
    )
    line = next((ln for ln in reply["text"].splitlines() if "notes:write" in ln), "")
    return f"Gus (read-only guest) may not delete: {line}"


async def step_agent(c: TourClient, memo: dict[str, Any]) -> str:
    state = await c.state()
    if not state["agent"]["scripted"]:
        raise TourSkip("the agent runs on a real model here; the tour plays the scripted one (unset the API key)")
    mark = c.last_tg(ALICE)
    await c.post("/api/telegram/send", {"persona": "alice", "chat": ALICE, "text": "list my notes"})
    listed = await c.until(lambda: c.bot_after(ALICE, mark, "notes: #"), "the agent's list of notes")
    notes = re.findall(r"#(\d+) ([^;]+)", listed["text"])
    if len(notes) < 2:
        raise TourError(f"the agent listed too few notes to pick one: {listed['text']!r}")
    number, text = notes[-1]
    word = max(re.findall(r"[A-Za-z]+", text), key=len)
    request = f"delete the note about {word.lower()}"
    mark = c.last_tg(ALICE)
    await c.post("/api/telegram/send", {"persona": "alice", "chat": ALICE, "text": request})
    card = await c.until(
        lambda: c.bot_after(ALICE, mark, "Confirm", "delete_note", number), "the agent's confirmation card"
    )
    confirm = _button(card, "Confirm")
    await c.post(
        "/api/telegram/tap", {"persona": "alice", "chat": ALICE, "id": card["id"], "data": confirm["callback_data"]}
    )
    await c.until(
        lambda: (e := c.current(card)) and "Done" in (e["text"] or "") and _no_buttons(e), "the card edited to Done"
    )
    answer = await c.until(
        lambda: c.bot_after(ALICE, card["id"], f"Done: Deleted note {number}"), "the agent's answer after the decision"
    )
    return (
        f"Alice writes 'list my notes', then {request!r}: the scripted model calls list_notes, then search_notes "
        f"and delete_note (note {number}); Alice confirms on the card; the agent: {answer['text'].splitlines()[-1]}"
    )


async def step_confirm(c: TourClient, memo: dict[str, Any]) -> str:
    note = memo.get("note", 1)
    mark = c.last_tg(ALICE)
    await c.post("/api/telegram/send", {"persona": "alice", "chat": ALICE, "text": f"/delete_note {note}"})
    card = await c.until(lambda: c.bot_after(ALICE, mark, "Confirm"), "confirmation card")
    confirm = _button(card, "Confirm")
    answers = len(c.answers)
    await c.post(
        "/api/telegram/tap", {"persona": "alice", "chat": ALICE, "id": card["id"], "data": confirm["callback_data"]}
    )
    done = await c.until(
        lambda: (
            (e := c.current(card))
            and e["version"] > card["version"]
            and "Done" in (e["text"] or "")
            and _no_buttons(e)
            and e
        ),
        "card edited to Done",
    )
    toast = await c.until(lambda: c.answers[answers:], "answer to the tap")
    title = done["text"].splitlines()[0]
    return f"Alice taps {confirm['text']!r}: toast {toast[0]['text']!r}, card edited in place to {title!r}"


async def step_payment(c: TourClient, memo: dict[str, Any]) -> str:
    mark_me, mark_group, mark_slack = c.last_tg(ALICE), c.last_tg(GROUP), c.last_slack(SLACK_APPROVERS)
    await c.post("/api/telegram/send", {"persona": "alice", "chat": ALICE, "text": "/send_payment ACME 120"})
    group = await c.until(lambda: c.bot_after(GROUP, mark_group, "ACME"), "approval card in the Telegram group")
    mine = await c.until(lambda: c.bot_after(ALICE, mark_me, "ACME"), "Alice's copy of the card")
    slack = await c.until(lambda: c.slack_after(SLACK_APPROVERS, mark_slack, "ACME"), "approval card in Slack")
    approve = _slack_button(slack, "Approve")
    seen = set(c.views)
    await c.post(
        "/api/slack/click",
        {"persona": "maria", "channel": SLACK_APPROVERS, "ts": slack["ts"], "action_id": approve["action_id"]},
    )
    modal = await c.until(
        lambda: c.view_for(MARIA_SLACK, "Approve with a reason", seen),
        "Slack modal asking Maria why she approves (payments are high-risk)",
    )
    reason = "Invoice 4411, matches the order"
    field = next(iter(_inputs(modal)))
    await c.post("/api/slack/submit", {"persona": "maria", "view": modal["id"], "values": {field: reason}})
    decided = "via Slack"

    def agreed() -> bool:
        copies = [c.current(group)["text"] or "", c.current(mine)["text"] or ""]
        slack_now = c.slack[(slack["channel"], slack["ts"], None)]
        return (
            all("Done" in t and decided in t for t in copies)
            and _no_buttons(c.current(group))
            and _no_buttons(c.current(mine))
            and "Done" in _slack_text(slack_now)
            and decided in _slack_text(slack_now)
            and _slack_no_buttons(slack_now)
        )

    await c.until(agreed, "Telegram and Slack copies agreeing on the decision")
    paid = await c.until(lambda: c.bot_after(ALICE, mine["id"], "Paid 120.00 EUR"), "payment result for Alice")
    line = next(ln for ln in c.current(group)["text"].splitlines() if decided in ln)
    told = paid["text"].splitlines()[0]
    return (
        f"Maria approves in Slack, giving her reason in the modal ({reason!r}); both Telegram copies and the "
        f"Slack card say: {line} Alice is told: {told}"
    )


def _edited(c: TourClient, copies: list[dict[str, Any]], slack: dict[str, Any], diff: str) -> bool:
    slack_now = c.slack[(slack["channel"], slack["ts"], None)]
    return all(diff in (c.current(e)["text"] or "") for e in copies) and diff in _slack_text(slack_now)


async def step_edit_telegram(c: TourClient, memo: dict[str, Any]) -> str:
    mark_me, mark_group, mark_slack = c.last_tg(ALICE), c.last_tg(GROUP), c.last_slack(SLACK_APPROVERS)
    await c.post("/api/telegram/send", {"persona": "alice", "chat": ALICE, "text": "/send_payment ACME 300"})
    group = await c.until(lambda: c.bot_after(GROUP, mark_group, "ACME", "300"), "the card for 300 in the group")
    mine = await c.until(lambda: c.bot_after(ALICE, mark_me, "ACME", "300"), "Alice's copy of the card for 300")
    slack = await c.until(lambda: c.slack_after(SLACK_APPROVERS, mark_slack, "ACME", "300"), "the Slack card")
    mark = c.last_tg(GROUP)
    await c.post(
        "/api/telegram/tap",
        {"persona": "maria", "chat": GROUP, "id": group["id"], "data": _button(group, "Edit")["callback_data"]},
    )
    chooser = await c.until(lambda: c.bot_after(GROUP, mark, "which value"), "the fields to choose from")
    mark = c.last_tg(GROUP)
    await c.post(
        "/api/telegram/tap",
        {"persona": "maria", "chat": GROUP, "id": chooser["id"], "data": _button(chooser, "amount")["callback_data"]},
    )
    prompt = await c.until(
        lambda: c.prompt_after(GROUP, mark, "Maria: New value for amount"),
        "a ForceReply prompt asking Maria for the new amount",
    )
    await c.post("/api/telegram/send", {"persona": "maria", "chat": GROUP, "text": "250", "reply_to": prompt["id"]})
    diff = "amount: 300.0 → 250.0"
    await c.until(lambda: _edited(c, [group, mine], slack, diff), f"every copy of the card showing {diff}")
    answers = len(c.answers)
    await c.post(
        "/api/telegram/tap",
        {
            "persona": "maria",
            "chat": GROUP,
            "id": group["id"],
            "data": _button(c.current(group), "Approve")["callback_data"],
        },
    )
    told = await c.until(lambda: [a for a in c.answers[answers:] if a["user"] == MARIA], "answer to Maria's Approve")
    if "You edited this version" not in (told[0]["text"] or ""):
        raise TourError(f"the editor's own approval was not refused: {told[0]['text']!r}")
    memo["edit"] = {"group": group, "mine": mine, "slack": slack}
    return (
        f"Maria taps Edit, picks amount and answers the reply prompt {prompt['text'].split(': ', 1)[1]!r} "
        f"with 250: all three copies show {diff!r}; her own Approve is refused: {told[0]['text']!r}"
    )


async def step_edit_slack(c: TourClient, memo: dict[str, Any]) -> str:
    cards = memo.get("edit")
    if cards is None:
        raise TourError("no edited request to go on with (the Telegram edit step failed)")
    group, mine, slack = cards["group"], cards["mine"], cards["slack"]
    slack_now = c.slack[(slack["channel"], slack["ts"], None)]
    seen = set(c.views)
    await c.post(
        "/api/slack/click",
        {
            "persona": "mateo",
            "channel": SLACK_APPROVERS,
            "ts": slack["ts"],
            "action_id": _slack_button(slack_now, "Edit")["action_id"],
        },
    )
    modal = await c.until(lambda: c.view_for(MATEO_SLACK, "Edit request", seen), "Mateo's Slack Edit modal")
    inputs = _inputs(modal)
    amount = next(k for k in inputs if k.endswith("amount"))
    if inputs[amount] != "250.0":
        raise TourError(f"the modal is not prefilled with the current amount: {inputs}")
    bad = await c.post("/api/slack/submit", {"persona": "mateo", "view": modal["id"], "values": {amount: "lots"}})
    if bad["closed"] or amount not in bad["errors"]:
        raise TourError(f"an amount of 'lots' was not refused beside the field: {bad}")
    await c.post("/api/slack/submit", {"persona": "mateo", "view": modal["id"], "values": {amount: "200"}})
    diff = "amount: 250.0 → 200.0"
    await c.until(lambda: _edited(c, [group, mine], slack, diff), f"every copy of the card showing {diff}")
    mark = c.last_tg(GROUP)
    await c.post(
        "/api/telegram/tap",
        {
            "persona": "maria",
            "chat": GROUP,
            "id": group["id"],
            "data": _button(c.current(group), "Approve")["callback_data"],
        },
    )
    prompt = await c.until(
        lambda: c.prompt_after(GROUP, mark, "Maria: Why do you approve"), "a reply prompt asking Maria why she approves"
    )
    await c.post(
        "/api/telegram/send",
        {"persona": "maria", "chat": GROUP, "text": "Agreed with the vendor", "reply_to": prompt["id"]},
    )
    paid = await c.until(lambda: c.bot_after(ALICE, mine["id"], "Paid 200.00 EUR"), "the payment of 200 for Alice")
    await c.until(
        lambda: "Done" in (c.current(group)["text"] or "") and _no_buttons(c.current(group)),
        "the group's card edited to Done",
    )
    return (
        f"Mateo edits in the Slack modal ('lots' is refused beside the field, the modal stays; 200 is "
        f"taken): {diff}; Maria approves in Telegram with a typed reason; Alice: {paid['text'].splitlines()[0]}"
    )


async def step_forged(c: TourClient, memo: dict[str, Any]) -> str:
    mark_me, mark_group = c.last_tg(ALICE), c.last_tg(GROUP)
    await c.post("/api/telegram/send", {"persona": "alice", "chat": ALICE, "text": "/send_payment Bob 5"})
    group = await c.until(lambda: c.bot_after(GROUP, mark_group, "Bob"), "approval card for the second payment")
    mine = await c.until(lambda: c.bot_after(ALICE, mark_me, "Bob"), "Alice's copy of the second card")
    memo["pending"] = group
    forged = _button(group, "Approve")["callback_data"]  # Alice's copy has no Approve: a modified client sends it
    answers = len(c.answers)
    await c.post("/api/telegram/tap", {"persona": "alice", "chat": ALICE, "id": mine["id"], "data": forged})
    told = await c.until(lambda: c.answers[answers:], "answer to the forged tap")
    if "Done" in (c.current(group)["text"] or "") or _no_buttons(c.current(group)):
        raise TourError("the forged tap changed the approval card")
    kind = "alert" if told[0]["alert"] else "toast"
    return f"Alice sends the approvers' Approve from her own chat; refused as an {kind}: {told[0]['text']!r}"


async def step_reminder(c: TourClient, memo: dict[str, Any]) -> str:
    group = memo.get("pending")
    if group is None:
        raise TourError("no pending approval to be reminded of (the forged-tap step failed)")
    mark_group, mark_mateo = c.last_tg(GROUP), c.last_tg(MATEO)
    await c.post("/api/clock", {"advance": 900})
    fresh = await c.until(
        lambda: c.bot_after(GROUP, mark_group, "Bob", "Approval needed"),
        "a fresh copy of the card in the group after 15 minutes",
    )
    await c.post("/api/clock", {"advance": 900})
    escalated = await c.until(
        lambda: c.bot_after(MATEO, mark_mateo, "Bob", "Approval needed"),
        "the card in Mateo's chat after 30 minutes (escalation)",
    )
    told = await c.until(lambda: c.bot_after(ALICE, 0, "escalation"), "Alice told of the escalation")
    line = next((ln for ln in told["text"].splitlines() if "escalation" in ln), "")
    return (
        f"15 minutes pass: a fresh copy of the card in the group (message {fresh['id']}); 30 minutes: it goes "
        f"to Mateo's own chat (message {escalated['id']}), and Alice is told: {line}"
    )


async def step_stats(c: TourClient, memo: dict[str, Any]) -> str:
    mark = c.last_tg(MARIA)
    await c.post("/api/telegram/send", {"persona": "maria", "chat": MARIA, "text": "/approvals"})
    stats = await c.until(lambda: c.bot_after(MARIA, mark, "Approvals in the last"), "the approvers' figures")
    lines = [ln.strip("• ") for ln in stats["text"].splitlines()[1:] if ln.strip()]
    if not any("Maria" in ln for ln in lines):
        raise TourError(f"/approvals does not show Maria's decisions: {stats['text']!r}")
    return f"Maria sends /approvals: {' | '.join(lines)}"


async def step_expiry(c: TourClient, memo: dict[str, Any]) -> str:
    group = memo.get("pending")
    if group is None:
        raise TourError("no pending approval to let expire (the forged-tap step failed)")
    await c.post("/api/clock", {"advance": 1900})

    def edited() -> dict[str, Any] | None:
        event = c.current(group)
        return event if "Expired" in (event["text"] or "") and _no_buttons(event) else None

    expired = await c.until(edited, "card edited to Expired")
    slack = await c.until(lambda: c.slack_after(SLACK_APPROVERS, "0", "Expired", "Bob"), "Slack card saying Expired")
    lines = expired["text"].splitlines()
    line = next((ln for ln in lines if "Nothing was done" in ln), lines[0])
    return f"the hour runs out (the clock moves forward): {line} (Slack: {slack['text']!r})"


Step = Callable[[TourClient, dict[str, Any]], Awaitable[str]]
STEPS: tuple[tuple[str, Step], ...] = (
    ("A read", step_read),
    ("A validation error", step_validation),
    ("A denial names who you are and the missing scope", step_denial),
    ("The agent turns a plain request into tool calls (scripted model, no key)", step_agent),
    ("A confirm round trip", step_confirm),
    ("A payment approved in Slack with a typed reason, the Telegram copies edited", step_payment),
    ("Edit before approve in a Telegram reply prompt; the editor may not approve", step_edit_telegram),
    ("Edit in the Slack modal, approved in Telegram with a typed reason", step_edit_slack),
    ("A forged tap refused", step_forged),
    ("A reminder, then an escalation", step_reminder),
    ("The approvers' figures", step_stats),
    ("An expiry", step_expiry),
)


async def run_tour(base: str, out: Printer = print, *, pace: Pace | None = None) -> bool:
    """Play every step against the playground at ``base``; print a line per step; ``True`` when all passed.
    ``pace``: hold each step for a person to follow (the page); without it, as fast as it goes (``--check``)."""
    import aiohttp

    passed = skipped = 0
    memo: dict[str, Any] = {}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        client = TourClient(session, base, pace)
        await client.sync()
        for number, (title, step) in enumerate(STEPS, 1):
            started = time.monotonic()
            if pace is not None:
                pace.next_step()
            try:
                detail = await step(client, memo)
            except TourSkip as exc:
                skipped += 1
                out(f"skip {number}. {title}: {exc}")
                continue
            except (TourError, aiohttp.ClientError, KeyError, ValueError) as exc:
                out(f"FAIL {number}. {title}: {exc}")
                continue
            passed += 1
            line = f"{number}. {title}: {detail}"
            if pace is not None:  # the result stays on the page before the step ends (and its alert closes)
                await pace.wait(pace.reading_time(line) - (time.monotonic() - started))
            out(f"ok   {number}. {title} ({time.monotonic() - started:.1f} s): {detail}")
    out(f"{passed} of {len(STEPS)} steps passed" + (f" ({skipped} skipped)" if skipped else ""))
    return passed + skipped == len(STEPS)
