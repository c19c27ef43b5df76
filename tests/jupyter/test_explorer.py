"""ToolExplorer, driven as a user would: search, pick, fill, click, read what is shown."""

from __future__ import annotations

import asyncio

import ipywidgets as widgets

from milpa_chat import ToolContext, ToolRegistry
from milpa_chat.jupyter import ToolExplorer
from milpa_chat.jupyter._forms import NOT_SET

from .conftest import Tools


def test_lists_only_the_tools_the_context_may_call_and_searches_them(registry: ToolRegistry) -> None:
    explorer = ToolExplorer(registry, context=ToolContext.jupyter(scopes=["notes:read"]))
    assert list(explorer.picker.options) == ["list_notes", "search_notes", "export_notes"]
    explorer.search.value = "find WORDS"
    assert list(explorer.picker.options) == ["search_notes"]
    assert explorer.picker.value == "search_notes"
    assert "Find notes by words" in explorer.info.value
    explorer.search.value = "notes"  # tags count too
    assert "list_notes" in explorer.picker.options
    explorer.search.value = "nothing like this"
    assert explorer.picker.options == () and explorer.tool is None
    assert "No tool matches" in explorer.info.value


def test_the_form_follows_the_schema(registry: ToolRegistry) -> None:
    explorer = ToolExplorer(registry)
    page = explorer.select("list_notes")["page"]
    assert isinstance(page.widget, widgets.BoundedIntText)
    assert (page.widget.min, page.widget.max, page.widget.value) == (1, 100, 1)
    assert "1 – 100" in page.hint.value
    page.widget.value = 5000  # the clamp range holds in the box too
    assert page.widget.value == 100

    form = explorer.select("search_notes")
    assert form["query"].spec.required and "*" in form["query"].label.value
    assert isinstance(form["limit"].widget, widgets.BoundedIntText)
    assert isinstance(form["order"].widget, widgets.Dropdown)
    assert list(form["order"].widget.options) == ["new", "old"]
    assert isinstance(form["tags"].widget, widgets.TagsInput)
    assert isinstance(form["filters"].widget, widgets.Textarea)  # an object: JSON
    assert list(form["archived"].widget.options) == [NOT_SET, "true", "false"]
    assert isinstance(form["min_score"].widget, widgets.Text)  # no default: typed as text
    assert isinstance(form["api_token"].widget, widgets.Password)


async def test_run_sends_what_was_filled_and_shows_the_result(registry: ToolRegistry, tools: Tools) -> None:
    explorer = ToolExplorer(registry)
    form = explorer.select("search_notes")
    form["query"].widget.value = "milk"
    form["order"].widget.value = "old"
    form["tags"].widget.value = ["home", "food"]
    form["filters"].widget.value = '{"archived": true}'
    form["archived"].widget.value = "false"
    form["min_score"].widget.value = "0.5"
    explorer.run_button.click()
    await explorer.idle()
    assert tools.searches == [
        {
            "query": "milk",
            "limit": 10,
            "order": "old",
            "tags": ["home", "food"],
            "archived": False,
            "filters": {"tags": [], "archived": True},
            "min_score": 0.5,
        }
    ]
    assert "milk" in explorer.output.html.value and "✓" in explorer.status.value
    assert explorer.last_result is not None and explorer.last_result.success


async def test_validation_errors_appear_beside_their_fields(registry: ToolRegistry, tools: Tools) -> None:
    explorer = ToolExplorer(registry)
    form = explorer.select("search_notes")
    form["filters"].widget.value = '{"archived": true, "colour": "red"}'
    explorer.run_button.click()
    await explorer.idle()
    assert form["query"].error_text == "Missing required field"
    assert "Unknown property 'colour'" in form["filters"].error_text
    assert form["order"].error_text == ""
    assert "Invalid" in explorer.output.text or "VALIDATION" in explorer.output.text.upper()
    assert tools.searches == []

    form["query"].widget.value = "milk"
    form["filters"].widget.value = '{"archived": tru'  # the form itself cannot read it
    form["min_score"].widget.value = "high"
    calls_before = explorer.last_result
    explorer.run_button.click()
    await explorer.idle()
    assert form["filters"].error_text.startswith("not valid JSON")
    assert "'high' is not a number" in form["min_score"].error_text
    assert form["query"].error_text == ""
    assert explorer.last_result is calls_before and tools.searches == []
    assert "Fix the marked fields" in explorer.status.value


async def test_pages_through_a_list_with_its_buttons(registry: ToolRegistry) -> None:
    explorer = ToolExplorer(registry)
    explorer.select("list_notes")["page"].widget.value = 2
    explorer.run_button.click()
    await explorer.idle()
    assert "Page 2 of 3" in explorer.output.text
    assert "note 11" in explorer.output.html.value and "note 21" not in explorer.output.html.value
    assert "<table" in explorer.output.html.value
    assert set(explorer.output.buttons) == {"◀ Previous", "Next ▶"}
    explorer.output.buttons["Next ▶"].click()
    await explorer.idle()
    assert "Page 3 of 3" in explorer.output.text and "note 21" in explorer.output.html.value
    assert set(explorer.output.buttons) == {"◀ Previous"}
    assert explorer.form["page"].widget.value == 3


async def test_dry_run_runs_nothing(registry: ToolRegistry, tools: Tools) -> None:
    explorer = ToolExplorer(registry)
    explorer.select("delete_note")["note_id"].widget.value = "4"
    explorer.dry_run_button.click()
    await explorer.idle()
    assert "Dry run: delete_note" in explorer.output.text
    assert "Nothing was run" in explorer.output.text
    assert "dry run" in explorer.status.value
    assert tools.deleted == [] and explorer.output.buttons == {}


async def test_confirm_tool_shows_confirm_and_cancel_inline(registry: ToolRegistry, tools: Tools) -> None:
    explorer = ToolExplorer(registry)
    explorer.select("delete_note")["note_id"].widget.value = "4"
    explorer.run_button.click()
    await explorer.idle()
    assert "Confirmation required" in explorer.output.text and tools.deleted == []
    assert set(explorer.output.buttons) == {"Confirm", "Cancel"}
    confirm = explorer.output.buttons["Confirm"]
    confirm.click()
    confirm.click()  # a double click
    await explorer.idle()
    assert tools.deleted == [4]
    assert confirm.disabled and "Deleted: 4" in explorer.output.text and explorer.output.buttons == {}

    explorer.run_button.click()
    await explorer.idle()
    token = explorer.last_result.confirm_token if explorer.last_result else None
    explorer.output.buttons["Cancel"].click()
    await explorer.idle()
    assert "Cancelled: delete_note" in explorer.output.text and tools.deleted == [4]
    replay = await registry.call("delete_note", {"confirm_token": token}, explorer.context)
    assert not replay.success and "expired confirmation token" in (replay.error or "")


async def test_progress_while_a_tool_runs_and_disabled_buttons_refuse_clicks(
    registry: ToolRegistry, tools: Tools
) -> None:
    explorer = ToolExplorer(registry)
    explorer.select("export_notes")
    explorer.run_button.click()
    await asyncio.sleep(0.3)
    assert explorer.busy and explorer.run_button.disabled and explorer.dry_run_button.disabled
    assert "Running <code>export_notes</code>" in explorer.status.value and "fa-spin" in explorer.status.value
    explorer.run_button.click()  # refused: the button is disabled
    tools.gate.set()
    await explorer.idle()
    assert not explorer.busy and not explorer.run_button.disabled
    assert "Exported: 25" in explorer.output.text and tools.exports == 1
    assert explorer.status.value.startswith("✓") and "answered in" in explorer.status.value


def test_a_tool_out_of_scope_cannot_be_selected(registry: ToolRegistry) -> None:
    explorer = ToolExplorer(registry, context=ToolContext.jupyter(scopes=["notes:read"]))
    assert "admin_wipe" not in explorer.picker.options
    try:
        explorer.select("admin_wipe")
    except KeyError as exc:
        assert "no tool 'admin_wipe'" in str(exc) and "list_notes" in str(exc)
    else:
        raise AssertionError("selecting a tool the context may not call must fail")


def test_clicks_work_without_a_running_loop(registry: ToolRegistry, tools: Tools) -> None:
    explorer = ToolExplorer(registry)
    explorer.select("search_notes")["query"].widget.value = "tea"
    explorer.run_button.click()  # a plain script: the call completes inside click()
    assert tools.searches[-1]["query"] == "tea" and "tea" in explorer.output.html.value


async def test_a_tool_needing_approval_says_it_waits_for_an_approver(registry: ToolRegistry, tools: Tools) -> None:
    explorer = ToolExplorer(registry, context=ToolContext.jupyter("jupyter:ana"))
    explorer.select("pay").fill({"to": "Luis", "amount": 12})
    result = await explorer.run()
    assert result is not None and result.meta.get("requires_verification")
    assert "waits for an approver" in explorer.status.value and explorer.output.buttons == {}
    assert "needs approval (payments:approve)" in explorer.info.value and tools.paid == []


async def test_action_buttons_of_a_detail_run_their_tool(tools: Tools) -> None:
    from milpa_chat import ToolResult, tool

    @tool("show_note", "Show one note", mutating=False)
    def show_note(note_id: int) -> ToolResult:
        return ToolResult.detail(
            {"id": note_id, "title": f"note {note_id}"},
            "Note",
            actions=[{"label": "Delete", "action": "delete_note", "ref": str(note_id)}],
        )

    registry = ToolRegistry()
    registry.scan(tools)
    registry.scan(show_note)
    explorer = ToolExplorer(registry)
    explorer.select("show_note").fill({"note_id": 8})
    await explorer.run()
    assert "note 8" in explorer.output.text and list(explorer.output.buttons) == ["Delete"]
    explorer.output.buttons["Delete"].click()
    await explorer.idle()
    assert "delete_note(note_id=8)" in explorer.output.text  # a confirm tool: it asks first
    explorer.output.buttons["Confirm"].click()
    await explorer.idle()
    assert tools.deleted == [8]
