"""The scripted tour: the story a newcomer should see, played through the page's own HTTP endpoints.

A read, a validation error, a denial naming who you are and the missing scope, a confirm round trip, a payment
a manager approves in Slack while the Telegram copies are edited, a forged tap refused, an expiry. Each step acts as a
persona (``POST /api/telegram/send`` ...) and then waits for what the page would show (``GET /api/feed``):
the tour checks the records of the local platform servers, never a second rendering. It runs against the
example tools of ``bots/`` and the built-in personas.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["STEPS", "TourError", "run_tour"]

T = TypeVar("T")
Printer = Callable[[str], None]
ALICE, GUS, MARIA = 1001, 1003, 2001
GROUP = -500
SLACK_APPROVERS = "C0APPROVALS"
STEP_TIMEOUT = 20.0


class TourError(AssertionError):
    """A step did not show what it should; the message says what was missing."""


class TourClient:
    """Acts through the page's endpoints and mirrors the feed (the latest event of every message)."""

    def __init__(self, session: Any, base: str) -> None:
        self.session = session
        self.base = base.rstrip("/")
        self.seq = 0
        self.tg: dict[tuple[int, int], dict[str, Any]] = {}
        self.slack: dict[tuple[str, str, str | None], dict[str, Any]] = {}
        self.answers: list[dict[str, Any]] = []

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        async with self.session.post(self.base + path, json=body) as resp:
            data: dict[str, Any] = await resp.json()
        if resp.status != 200 or not data.get("ok"):
            raise TourError(f"POST {path} {body} was refused: {data.get('error') or data}")
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
    reply = await c.until(lambda: c.bot_after(GUS, mark, "notes:write", f"telegram:{GUS}"),
                          "denial naming the scope notes:write and who is asking")
    line = next((ln for ln in reply["text"].splitlines() if "notes:write" in ln), "")
    return f"Gus (read-only guest) may not delete: {line}"


async def step_confirm(c: TourClient, memo: dict[str, Any]) -> str:
    note = memo.get("note", 1)
    mark = c.last_tg(ALICE)
    await c.post("/api/telegram/send", {"persona": "alice", "chat": ALICE, "text": f"/delete_note {note}"})
    card = await c.until(lambda: c.bot_after(ALICE, mark, "Confirm"), "confirmation card")
    confirm = _button(card, "Confirm")
    answers = len(c.answers)
    await c.post("/api/telegram/tap", {"persona": "alice", "chat": ALICE, "id": card["id"],
                                       "data": confirm["callback_data"]})
    done = await c.until(lambda: (e := c.current(card)) and e["version"] > card["version"]
                         and "Done" in (e["text"] or "") and _no_buttons(e) and e, "card edited to Done")
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
    await c.post("/api/slack/click", {"persona": "maria", "channel": SLACK_APPROVERS, "ts": slack["ts"],
                                      "action_id": approve["action_id"]})
    decided = "via Slack"

    def agreed() -> bool:
        copies = [c.current(group)["text"] or "", c.current(mine)["text"] or ""]
        slack_now = c.slack[(slack["channel"], slack["ts"], None)]
        return (all("Done" in t and decided in t for t in copies) and _no_buttons(c.current(group))
                and _no_buttons(c.current(mine)) and "Done" in _slack_text(slack_now)
                and decided in _slack_text(slack_now) and _slack_no_buttons(slack_now))

    await c.until(agreed, "Telegram and Slack copies agreeing on the decision")
    paid = await c.until(lambda: c.bot_after(ALICE, mine["id"], "Paid 120.00 EUR"), "payment result for Alice")
    line = next(ln for ln in c.current(group)["text"].splitlines() if decided in ln)
    told = paid["text"].splitlines()[0]
    return f"Maria approves in Slack; both Telegram copies and the Slack card say: {line} Alice is told: {told}"


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


async def step_expiry(c: TourClient, memo: dict[str, Any]) -> str:
    group = memo.get("pending")
    if group is None:
        raise TourError("no pending approval to let expire (the forged-tap step failed)")
    await c.post("/api/clock", {"advance": 3700})
    def edited() -> dict[str, Any] | None:
        event = c.current(group)
        return event if "Expired" in (event["text"] or "") and _no_buttons(event) else None

    expired = await c.until(edited, "card edited to Expired")
    slack = await c.until(lambda: c.slack_after(SLACK_APPROVERS, "0", "Expired", "Bob"), "Slack card saying Expired")
    lines = expired["text"].splitlines()
    line = next((ln for ln in lines if "Nothing was done" in ln), lines[0])
    return f"an hour passes (the clock moves forward): {line} (Slack: {slack['text']!r})"


Step = Callable[[TourClient, dict[str, Any]], Awaitable[str]]
STEPS: tuple[tuple[str, Step], ...] = (
    ("A read", step_read),
    ("A validation error", step_validation),
    ("A denial names who you are and the missing scope", step_denial),
    ("A confirm round trip", step_confirm),
    ("A payment approved in Slack, the Telegram copies edited", step_payment),
    ("A forged tap refused", step_forged),
    ("An expiry", step_expiry),
)


async def run_tour(base: str, out: Printer = print) -> bool:
    """Play every step against the playground at ``base``; print a line per step; ``True`` when all passed."""
    import aiohttp

    passed = 0
    memo: dict[str, Any] = {}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        client = TourClient(session, base)
        await client.sync()
        for number, (title, step) in enumerate(STEPS, 1):
            started = time.monotonic()
            try:
                detail = await step(client, memo)
            except (TourError, aiohttp.ClientError, KeyError, ValueError) as exc:
                out(f"FAIL {number}. {title}: {exc}")
                continue
            passed += 1
            out(f"ok   {number}. {title} ({time.monotonic() - started:.1f} s): {detail}")
    out(f"{passed} of {len(STEPS)} steps passed")
    return passed == len(STEPS)
