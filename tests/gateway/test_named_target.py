"""The intent contract (``namedTarget``) where the session is held: an agent call whose target the
person never named becomes a question card, not an execution; answering it runs exactly the named value."""

from __future__ import annotations

from typing import Annotated

from milpa_chat import ToolRegistry
from milpa_chat.chat import Assistant, ChatUser, Identities
from milpa_chat.command import (
    Because,
    Externality,
    Mutates,
    Mutation,
    Needs,
    RegistryProjector,
    Reversibility,
    Target,
    operation,
)
from milpa_chat.gateway import ChatAgent, LlmService
from milpa_chat.gateway.intent import is_named
from milpa_chat.store import MemoryStore
from milpa_chat.testing.llm import FakeOpenAIServer
from milpa_chat.testing.transport import RecordingTransport

ALICE = ChatUser("1001", "Alice", "alice")


class Shelf:
    def __init__(self) -> None:
        self.notes = {"old-plan": "2019 plan", "todo": "buy milk"}


@operation("notes:remove", "Remove a note by its name.")
@Mutates(Mutation.PERSISTENT, Externality.NONE, Reversibility.IRREVERSIBLE)
@Needs(scopes=["notes:write"])
class RemoveNote:
    def __init__(self, name: Annotated[str, Target, Because("the note's name")]) -> None:
        self.name = name

    def run(self, shelf: Shelf) -> dict[str, str]:
        return {"removed": self.name, "text": shelf.notes.pop(self.name)}


def make(llm: LlmService, shelf: Shelf) -> tuple[Assistant, RecordingTransport]:
    registry = ToolRegistry(store=MemoryStore())
    RegistryProjector(registry, resolve=lambda kind: shelf).register(RemoveNote)
    identities = Identities.from_dict({"users": {"telegram:1001": ["notes:write"]}})
    assistant = Assistant(registry, identities, agent=ChatAgent(llm))
    tg = RecordingTransport("telegram")
    assistant.attach(tg)
    return assistant, tg


async def test_an_unnamed_target_becomes_a_question_and_the_answer_runs_exactly_it() -> None:
    shelf = Shelf()
    async with (
        FakeOpenAIServer() as oa,
        LlmService(model="gpt-test", api_key=oa.api_key, base_url=oa.base_url, max_retries=0, timeout=5) as llm,
    ):
        assistant, tg = make(llm, shelf)
        oa.reply_tool_call("notes_remove", {"name": "old-plan"}, id="r").reply_text("Removed the old plan.")
        await tg.say(assistant, ALICE, "remove the old note")
        card = tg.last(ALICE.id)
        assert "did not mention 'old-plan' (the name to act on)" in card.text
        assert {b.action for b in card.buttons} == {"confirm", "cancel"}
        assert shelf.notes == {"old-plan": "2019 plan", "todo": "buy milk"}  # a question, not a deletion
        await tg.tap(assistant, ALICE, card, "Confirm")
        assert shelf.notes == {"todo": "buy milk"} and tg.last(ALICE.id).text == "Removed the old plan."


async def test_a_named_target_asks_no_question_and_a_no_runs_nothing() -> None:
    shelf = Shelf()
    async with (
        FakeOpenAIServer() as oa,
        LlmService(model="gpt-test", api_key=oa.api_key, base_url=oa.base_url, max_retries=0, timeout=5) as llm,
    ):
        assistant, tg = make(llm, shelf)
        oa.reply_tool_call("notes_remove", {"name": "todo"}, id="r").reply_text("Removed todo.")
        await tg.say(assistant, ALICE, "please remove the note TODO")  # named (any case): a confirm card as usual
        card = tg.last(ALICE.id)
        assert "did not mention" not in card.text and "Confirm" in card.text
        await tg.tap(assistant, ALICE, card, "Confirm")
        assert shelf.notes == {"old-plan": "2019 plan"}

        oa.reply_tool_call("notes_remove", {"name": "old-plan"}, id="s").reply_text("Kept it.")
        await tg.say(assistant, ALICE, "and the stale one")
        question = tg.last(ALICE.id)
        assert "did not mention" in question.text
        await tg.tap(assistant, ALICE, question, "Cancel")
        assert shelf.notes == {"old-plan": "2019 plan"} and tg.last(ALICE.id).text == "Kept it."


def test_named_means_the_trimmed_value_occurs_in_the_request_in_any_case() -> None:
    assert is_named(" Old-Plan ", "please drop old-plan now") and is_named(42, "note 42 please")
    assert not is_named("old-plan", "remove the old note") and not is_named("  ", "anything")
