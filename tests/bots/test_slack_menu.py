"""``/milpa help``, ``/milpa`` and ``/milpa tools``: the subcommands a person may call, with usage from the schema."""

from __future__ import annotations

import html
from collections.abc import AsyncIterator
from dataclasses import dataclass
from enum import Enum
from typing import Annotated

import pytest

from milpa_chat.command import Because, Needs, Operation, Reads, RegistryProjector, operation
from milpa_chat.testing import ManualClock

from .conftest_slack import ALICE, EVE, MARIA, WORK, SlackWorld, Tools, memory_assistant, slack_world


class Order(Enum):
    NEWEST = "newest"
    OLDEST = "oldest"


@dataclass
class Found:
    count: int


@operation("notes:find", "Find notes by a word.")
@Reads
@Needs(scopes=["notes:read"])
class FindNotes:
    def __init__(self, word: Annotated[str, Because("the word to look for")], order: Order = Order.NEWEST) -> None:
        self.word, self.order = word, order

    def run(self) -> Found:
        return Found(1 if self.word == "milk" else 0)


VACUUM = Operation("notes:vacuum", "Compact the notes file.", lambda: {"ok": True}, surfaces=["tools", "cli"])


@pytest.fixture
async def world() -> AsyncIterator[SlackWorld]:
    assistant = memory_assistant(Tools(slow_seconds=0.1), ManualClock())
    RegistryProjector(assistant.registry).register(FindNotes, VACUUM)
    async with slack_world(assistant) as w:
        yield w


async def shown(world: SlackWorld, text: str, user: str) -> str:
    await world.command(text, user=user)
    return html.unescape(world.private(user).all_text())  # for that person alone


async def posted(world: SlackWorld, text: str, user: str) -> str:
    await world.command(text, user=user)
    return html.unescape(world.last(WORK).all_text())  # a result or a card, for the channel


async def test_help_lists_the_subcommands_of_the_persons_scopes_with_their_usage(world: SlackWorld) -> None:
    alice = await shown(world, "help", ALICE)
    assert "/milpa delete_note <note_id: integer> — Delete a note" in alice
    assert "/milpa pay <to: string> <amount: number> — Send a payment" in alice
    assert "/milpa list_notes [page: integer = 1] — List notes" in alice
    assert "/milpa notes_find <word: string> [order: newest|oldest = newest] — Find notes by a word." in alice
    assert "/milpa tools" in alice  # how to get the list alone
    assert "resolve_verification" not in alice and "request_verification" not in alice
    assert "notes_vacuum" not in alice  # opted into the registry and the CLI only

    maria = await shown(world, "help", MARIA)
    assert "/milpa list_notes" in maria and "/milpa notes_find" in maria
    assert "delete_note" not in maria and "/milpa pay" not in maria  # not her scopes
    assert await shown(world, "", MARIA) == maria  # /milpa alone is help

    eve = await shown(world, "help", EVE)
    assert "no tools available" in eve and "/milpa list_notes" not in eve


async def test_tools_is_the_same_listing_and_what_it_lists_runs(world: SlackWorld) -> None:
    listing = await shown(world, "tools", ALICE)
    assert listing.startswith("6 tools available")
    assert "/milpa notes_find <word: string> [order: newest|oldest = newest]" in listing
    assert "no tools available" in await shown(world, "tools", EVE)

    assert "1" in await posted(world, "notes_find milk", ALICE)
    # not listed, still callable (and, declaring no effect, confirmed like a mutation)
    assert "Confirm notes_vacuum?" in await posted(world, "notes_vacuum", ALICE)


async def test_slacks_retries_of_a_slow_tools_command_are_answered_once(world: SlackWorld) -> None:
    """Slack delivers a slash command again (``X-Slack-Retry-Num``) when the app was slow to answer: the person
    sees one list, whichever menu command it was, and another command's retry is still a new command."""
    for text in ("tools", "help", ""):
        before = len(world.ephemeral(ALICE))
        first = await world.slack.command("/milpa", text, user=ALICE, channel=WORK)
        assert first.status == 200
        for num, reason in ((1, "http_timeout"), (2, "http_error"), (3, "http_timeout")):
            retried = await world.slack.retry(first, num=num, reason=reason)
            assert retried.status == 200  # acknowledged, so Slack stops retrying
        await world.bot.drain()
        answers = world.ephemeral(ALICE)[before:]
        assert len(answers) == 1, f"/milpa {text} was answered {len(answers)} times"
    assert len(world.ephemeral(ALICE)) == 3
    await world.command("tools", user=ALICE)  # typed again: a new command (a new trigger), a new answer
    assert len(world.ephemeral(ALICE)) == 4
