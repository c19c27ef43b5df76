"""Page buttons: one stored view per result however often it is paged, a redelivered page tap is shown once,
and a page of a tool with effects asks for its decision once even when the tap reaches two workers."""

from __future__ import annotations

from typing import Annotated, Any

from milpa_chat import Param, ToolRegistry, ToolResult, tool
from milpa_chat.chat import Assistant, Identities
from milpa_chat.chat.views import KEEP, PageViews
from milpa_chat.store import MemoryStore
from milpa_chat.testing.transport import RecordingTransport
from tests.chat.conftest import ALICE, BOB

IDENTITIES = {"users": {"telegram:1001": ["notes:read", "notes:write"], "telegram:1002": ["notes:read"]}}


class Pages:
    def __init__(self) -> None:
        self.listed: list[int] = []
        self.archived: list[int] = []

    @tool("list_notes", "List notes", scopes=["notes:read"], mutating=False)
    def list_notes(self, page: Annotated[int, Param("Page", clamp=(1, 100))] = 1) -> ToolResult:
        self.listed.append(page)
        items = [{"id": i, "title": f"note {i}"} for i in range(1, 36)]
        return ToolResult.paginated(items[(page - 1) * 10 : page * 10], page, len(items), 10, "Notes")

    @tool("archive_notes", "Archive notes, a page at a time", scopes=["notes:write"], mutating=True)
    def archive_notes(self, page: Annotated[int, Param("Page", clamp=(1, 100))] = 1) -> ToolResult:
        self.archived.append(page)
        items = [{"id": i, "title": f"archived {i}"} for i in range(1, 36)]
        return ToolResult.paginated(items[(page - 1) * 10 : page * 10], page, len(items), 10, "Archived")


def assistant_on(store: MemoryStore, pages: Pages) -> Assistant:
    registry = ToolRegistry(store=store)
    registry.scan(pages)
    return Assistant(registry, Identities.from_dict(IDENTITIES))


async def test_paging_back_and_forth_keeps_one_view_bound_to_the_person() -> None:
    store, pages, tg = MemoryStore(), Pages(), RecordingTransport("telegram")
    assistant = assistant_on(store, pages)
    await tg.say(assistant, ALICE, "/list_notes")
    card = tg.last(ALICE.id)
    for label, shown in (("Next", "note 11"), ("Next", "note 21"), ("Next", "note 31"), ("Previous", "note 21")):
        await tg.tap(assistant, ALICE, card, label)
        assert shown in card.text
    assert pages.listed == [1, 2, 3, 4, 3] and len(tg.in_chat(ALICE.id)) == 1
    assert len(await store.scan("views")) == 1  # not one more stored view per tap
    await tg.tap(assistant, BOB, card, "Next")  # the kept view still knows whose it is
    assert "Only the person who ran this" in tg.answers_to(BOB)[-1] and pages.listed[-1] == 3


async def test_a_redelivered_page_tap_is_shown_once_and_writes_nothing() -> None:
    store, pages, tg = MemoryStore(), Pages(), RecordingTransport("telegram")
    assistant = assistant_on(store, pages)
    await tg.say(assistant, ALICE, "/list_notes")
    card = tg.last(ALICE.id)
    deliveries = len(await store.scan("deliveries"))
    for _ in range(3):
        await tg.tap(assistant, ALICE, card, "Next", delivery_id="tap-1")
    assert pages.listed == [1, 2] and "note 11" in card.text
    assert len(await store.scan("deliveries")) == deliveries


async def test_a_page_of_a_tool_with_effects_asks_once_when_the_tap_reaches_two_workers() -> None:
    store, pages, tg = MemoryStore(), Pages(), RecordingTransport("telegram")
    first, second = assistant_on(store, pages), assistant_on(store, pages)
    first.attach(tg)
    second.attach(tg)
    await tg.say(first, ALICE, "/archive_notes")
    await tg.tap(first, ALICE, tg.last(ALICE.id), "Confirm")
    result = tg.last(ALICE.id)
    assert "archived 1" in result.text and pages.archived == [1]
    cards_before = len(tg.in_chat(ALICE.id))
    await tg.tap(first, ALICE, result, "Next", delivery_id="tap-7")
    await tg.tap(second, ALICE, result, "Next", delivery_id="tap-7")  # the platform redelivers to another worker
    asking = tg.in_chat(ALICE.id)[cards_before:]
    assert len(asking) == 1 and any(b.label.endswith("Confirm") or "Confirm" in b.label for b in asking[0].buttons)
    assert pages.archived == [1]  # nothing ran without its decision
    await tg.tap(first, ALICE, asking[0], "Confirm")
    assert pages.archived == [1, 2]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_a_page_view_stops_working_after_its_week_also_on_the_worker_that_showed_it() -> None:
    clock = Clock()
    store, pages, tg = MemoryStore(clock=clock), Pages(), RecordingTransport("telegram")
    assistant = assistant_on(store, pages)
    await tg.say(assistant, ALICE, "/list_notes")
    card = tg.last(ALICE.id)
    await tg.tap(assistant, ALICE, card, "Next")
    assert "note 11" in card.text
    clock.now += KEEP + 1  # a week later: the view has expired, in memory as in the store
    await tg.tap(assistant, ALICE, card, "Next")
    assert "no longer available" in tg.answers_to(ALICE)[-1] and pages.listed == [1, 2]


async def test_a_view_shown_by_one_worker_pages_on_another_and_keeps_its_person() -> None:
    store, pages, tg = MemoryStore(), Pages(), RecordingTransport("telegram")
    first, second = assistant_on(store, pages), assistant_on(store, pages)
    await tg.say(first, ALICE, "/list_notes")
    card = tg.last(ALICE.id)
    await tg.tap(second, BOB, card, "Next")  # the other worker reads the view from the store: still Alice's
    assert "Only the person who ran this" in tg.answers_to(BOB)[-1]
    await tg.tap(second, ALICE, card, "Next")
    await tg.tap(first, ALICE, card, "Next")
    assert pages.listed == [1, 2, 3] and "note 21" in card.text


async def test_views_beyond_the_ones_kept_in_memory_page_from_the_store() -> None:
    store, pages, tg = MemoryStore(), Pages(), RecordingTransport("telegram")
    assistant = assistant_on(store, pages)
    assistant.views.size = 2
    cards = []
    for _ in range(4):  # four results: the first two views are no longer kept in memory
        await tg.say(assistant, ALICE, "/list_notes")
        cards.append(tg.last(ALICE.id))
    for card in cards:
        await tg.tap(assistant, ALICE, card, "Next")
        assert "note 11" in card.text
    assert pages.listed == [1, 1, 1, 1, 2, 2, 2, 2] and len(await store.scan("views")) == 4


async def test_a_view_keeps_the_arguments_it_was_shown_with() -> None:
    store = MemoryStore()
    views = PageViews(store)
    args: dict[str, Any] = {"query": "milk", "tags": ["a"]}
    view = await views.open("search_notes", args, "telegram:1001")
    args["tags"].append("b")  # the caller's dict changes afterwards: the view does not
    args["query"] = "eggs"
    assert (await views.find(view)) == {
        "tool": "search_notes",
        "args": {"query": "milk", "tags": ["a"]},
        "principal": "telegram:1001",
    }
    assert (await PageViews(store).find(view)) == await views.find(view)  # as stored, for any other worker
    assert await views.find("no-such-view") is None
