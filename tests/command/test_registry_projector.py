"""Operations projected onto a ToolRegistry run through the whole pipeline (confirmation on chat channels included)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any

import pytest

from milpa_chat import ToolContext, ToolRegistry
from milpa_chat.command import (
    Because,
    EffectProfile,
    Externality,
    InvocationContext,
    Mutates,
    Mutation,
    Needs,
    Operation,
    Reads,
    RegistryProjector,
    Reversibility,
    Subject,
    Target,
    ToolModel,
    attribute_call,
    operation,
)
from milpa_chat.errors import DeclarationError, ToolAlreadyRegisteredError
from milpa_chat.runtime import VerifyPolicy
from tests.command import fixtures as f


class Notes:
    """The collaborator of the note operations: an in-memory notebook that remembers who did what."""

    def __init__(self) -> None:
        self.notes: dict[str, str] = {"n1": "buy milk", "n2": "call mom"}
        self.deleted: list[tuple[str, InvocationContext | None]] = []


@operation("notes:delete", "Delete a note.")
@Mutates(Mutation.PERSISTENT, Externality.NONE, Reversibility.IRREVERSIBLE, subject=Subject.DATA)
@Needs(scopes=["notes:write"])
class DeleteNote:
    def __init__(self, note_id: Annotated[str, Target, Because("which note to delete")]) -> None:
        self.note_id = note_id

    def run(self, notes: Notes, context: InvocationContext | None = None) -> dict[str, Any]:
        notes.notes.pop(self.note_id, None)
        notes.deleted.append((self.note_id, context))
        return {"deleted": self.note_id, "by": context.actor if context else None}


@operation("notes:list", "List the saved notes.")
@Reads
@Needs(scopes=["notes:read"])
class ListNotes:
    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix

    def run(self, notes: Notes) -> dict[str, Any]:
        return {"notes": sorted(k for k in notes.notes if k.startswith(self.prefix))}


@pytest.fixture
def notes() -> Notes:
    return Notes()


@pytest.fixture
def registry(notes: Notes) -> ToolRegistry:
    registry = ToolRegistry()
    RegistryProjector(registry, resolve=lambda kind: notes).register(DeleteNote, ListNotes)
    return registry


def telegram(*scopes: str) -> ToolContext:
    return ToolContext.telegram(chat_id=100, user_id=7, scopes=scopes)


# --------------------------------------------------------------------- end to end
async def test_a_mutating_operation_asks_for_confirmation_on_telegram_and_runs_after_the_replay(
    registry: ToolRegistry, notes: Notes
) -> None:
    ctx = telegram("notes:write")
    first = await registry.call("notes_delete", {"note_id": "n1"}, ctx)
    assert first.success and first.data["requires_confirmation"] is True
    assert "n1" in notes.notes and notes.deleted == [], "nothing ran before the person confirmed"

    done = await registry.call("notes_delete", {"confirm_token": first.data["confirm_token"]}, ctx)
    assert done.success, done.error
    assert done.data == {"deleted": "n1", "by": "telegram:7"}
    assert "n1" not in notes.notes
    [(deleted, context)] = notes.deleted
    assert deleted == "n1"
    assert context == InvocationContext(actor="telegram:7", verified=True, channel="telegram",
                                        correlation_id=ctx.request_id)  # fmt: skip

    again = await registry.call("notes_delete", {"confirm_token": first.data["confirm_token"]}, ctx)
    assert not again.success, "a confirm token runs one time"
    assert len(notes.deleted) == 1


async def test_the_replay_runs_the_snapshotted_arguments(registry: ToolRegistry, notes: Notes) -> None:
    ctx = telegram("notes:write")
    first = await registry.call("notes_delete", {"note_id": "n1"}, ctx)
    done = await registry.call("notes_delete", {"confirm_token": first.data["confirm_token"], "note_id": "n2"}, ctx)
    assert done.data["deleted"] == "n1"
    assert "n2" in notes.notes


async def test_a_reading_operation_runs_at_once_on_telegram(registry: ToolRegistry) -> None:
    result = await registry.call("notes_list", {"prefix": "n"}, telegram("notes:read"))
    assert result.success and result.data == {"notes": ["n1", "n2"]}


async def test_scopes_are_enforced_and_the_denial_names_them(registry: ToolRegistry, notes: Notes) -> None:
    result = await registry.call("notes_delete", {"note_id": "n1"}, telegram("notes:read"))
    assert not result.success
    assert result.meta["code"] == "FORBIDDEN"
    assert "notes:write" in (result.error or "")
    assert notes.deleted == []


async def test_input_is_validated_against_the_derived_schema() -> None:
    registry = ToolRegistry()
    RegistryProjector(registry).register(f.Publish)
    result = await registry.call("doc_publish", {"id": "d1", "status": "deleted"}, ToolContext.cli())
    assert not result.success and result.meta["code"] == "VALIDATION_ERROR"
    assert "status" in (result.error or "")
    missing = await registry.call("doc_publish", {}, ToolContext.cli())
    assert missing.meta["code"] == "VALIDATION_ERROR" and "id" in (missing.error or "")


async def test_defaults_enums_and_dataclass_results_arrive_as_json() -> None:
    registry = ToolRegistry()
    RegistryProjector(registry).register(f.Publish)
    ctx = ToolContext.cli()
    asked = await registry.call("doc_publish", {"id": "d1"}, ctx)  # Publish declares @Confirms
    result = await registry.call("doc_publish", {"confirm_token": asked.data["confirm_token"]}, ctx)
    assert result.success and result.data == {"id": "d1", "status": "draft", "revision": 1}
    json.dumps(result.to_dict())


async def test_an_operation_that_declared_no_effect_is_confirmed_like_a_mutation() -> None:
    ran: list[dict[str, Any]] = []
    registry = ToolRegistry()
    projector = RegistryProjector(registry)

    def drop(values):
        ran.append(values)
        return {"dropped": True}

    projector.register(
        Operation("tables:drop", "Drop a table.", drop),
        Operation("tables:count", "Count tables.", lambda values: {"count": 3}, effects=EffectProfile.read_only()),
    )
    assert registry.get("tables_drop").mutating is True  # type: ignore[union-attr]
    asked = await registry.call("tables_drop", {"name": "users"}, telegram())
    assert asked.data["requires_confirmation"] is True and ran == []
    counted = await registry.call("tables_count", {}, telegram())
    assert counted.data == {"count": 3}


async def test_plan_mode_shows_the_effect_and_runs_nothing(registry: ToolRegistry, notes: Notes) -> None:
    plan = await registry.call("notes_delete", {"note_id": "n1"}, telegram("notes:write").as_plan())
    assert plan.success
    assert plan.data["plan"]["mutating"] is True
    assert plan.data["plan"]["requires_confirmation"] is True
    assert notes.deleted == []


async def test_confirms_asks_even_where_the_channel_would_not(notes: Notes) -> None:
    registry = ToolRegistry()
    RegistryProjector(registry).register(f.Publish)
    asked = await registry.call("doc_publish", {"id": "d1"}, ToolContext.cli())
    assert asked.data["requires_confirmation"] is True


async def test_verify_opens_an_approval_someone_else_decides(notes: Notes) -> None:
    registry = ToolRegistry()
    policy = VerifyPolicy(approver_scopes=("notes:approve",))
    projector = RegistryProjector(registry, resolve=lambda kind: notes, verify={"Notes_Delete": policy})
    [definition] = projector.register(DeleteNote)
    assert definition.verify is not None and definition.verify.approver_scopes == ("notes:approve",)
    pending = await registry.call("notes_delete", {"note_id": "n1"}, telegram("notes:write"))
    assert pending.data["requires_verification"] is True
    assert notes.deleted == []


async def test_a_cli_call_is_attributed_to_an_executor_and_an_anonymous_one_to_nobody() -> None:
    registry = ToolRegistry()
    RegistryProjector(registry).register(f.AttributedAlone)
    cli = await registry.call("lab_whoami", {}, ToolContext.cli())
    assert cli.data == {"attributable": False}
    seen: list[InvocationContext | None] = []

    def remember(values, context):
        seen.append(context)
        return {}

    RegistryProjector(registry).register(
        Operation(
            "lab:seen",
            "Remember the context.",
            remember,
            effects=EffectProfile.read_only(),
        )
    )
    await registry.call("lab_seen", {}, ToolContext.cli())
    await registry.call("lab_seen", {}, ToolContext(principal=None, channel="cli"))
    assert seen[0] == InvocationContext(channel="cli", executor="local-shell", correlation_id=seen[0].correlation_id)  # type: ignore[union-attr]
    assert seen[1] is None, "a surface that attributes nothing passes None"


def test_attribution_by_channel() -> None:
    web = attribute_call(ToolContext.web("member:42", approval_id="apv-1"))
    assert web is not None and web.is_attributable() and web.authorization_id == "apv-1"
    mcp = attribute_call(ToolContext.mcp(principal="client:9"))
    assert mcp is not None and mcp.actor == "client:9" and not mcp.is_attributable()
    notebook = attribute_call(ToolContext.jupyter())
    assert notebook is not None and notebook.actor is None and notebook.executor == "jupyter"
    assert attribute_call(ToolContext()) is None


async def test_an_async_run_runs_on_the_event_loop() -> None:
    registry = ToolRegistry()
    [definition] = RegistryProjector(registry).register(f.SlowEcho)
    assert definition.is_async
    result = await registry.call("lab_slow-echo", {"text": "hi"}, ToolContext.cli())
    assert result.data == {"echo": "hi"}


# -------------------------------------------------------------------- projection
def test_project_is_an_inert_model_of_the_tool(registry: ToolRegistry) -> None:
    projector = RegistryProjector(registry)
    before = len(registry)
    model = projector.project(Operation.from_class(f.Publish))
    assert isinstance(model, ToolModel) and len(registry) == before
    assert model.to_dict() == projector.project(Operation.from_class(f.Publish)).to_dict()
    data = json.loads(json.dumps(model.to_dict()))
    assert data["surface"] == "tools"
    assert (data["name"], data["operation"], data["mutating"], data["confirm"], data["scopes"]) == (
        "doc_publish", "doc.publish", True, True, ["docs:write"],
    )  # fmt: skip
    assert data["effects"]["mutation"] == "persistent"


def test_the_tool_carries_the_operation_for_later_surfaces(registry: ToolRegistry) -> None:
    tool = registry.get("notes_delete")
    assert tool is not None
    assert tool.extra["operation"] == "notes.delete"
    assert tool.extra["named_target"] == "note_id"
    assert tool.extra["effects"]["reversibility"] == "irreversible"
    assert "operation" in tool.tags
    [summary] = [s for s in registry.get_tool_summaries() if s["name"] == "notes_delete"]
    assert summary["inputSchema"]["properties"]["note_id"]["description"] == "which note to delete"


def test_an_operation_that_opts_out_of_the_tools_surface_is_not_registered() -> None:
    registry = ToolRegistry()
    assert RegistryProjector(registry).register(f.Measure) == []
    assert not registry.has("lab_measure")
    op = Operation("x:y", "d", lambda values: {}, surfaces=["tools"], effects=EffectProfile.read_only())
    assert [d.name for d in RegistryProjector(registry).register(op)] == ["x_y"]


def test_a_provider_contributes_its_operations() -> None:
    class Provider:
        def operations(self) -> Sequence[Operation]:
            return [Operation(f"p:{n}", "d", lambda values: {}, effects=EffectProfile.read_only()) for n in "ab"]

    registry = ToolRegistry()
    assert [d.name for d in RegistryProjector(registry).register(Provider())] == ["p_a", "p_b"]


def test_a_permission_is_the_one_scope_the_registry_requires() -> None:
    registry = ToolRegistry()
    op = Operation("crm.contact.update", "d", lambda values: {}, permission="crm.contact:update",
                   effects=EffectProfile.read_only())  # fmt: skip
    [definition] = RegistryProjector(registry).register(op)
    assert definition.scopes == ("crm.contact:update",)


def test_a_clash_registers_nothing() -> None:
    registry = ToolRegistry()
    read = EffectProfile.read_only()
    ops = [Operation("a:b", "d", lambda v: {}, effects=read), Operation("A_B", "d", lambda v: {}, effects=read)]
    with pytest.raises(ToolAlreadyRegisteredError):
        RegistryProjector(registry).register(ops)
    assert len(registry) == 0


def test_a_declared_class_is_refused_at_registration_when_its_collaborators_cannot_be_resolved() -> None:
    with pytest.raises(DeclarationError, match="no resolver was given"):
        RegistryProjector(ToolRegistry()).register(DeleteNote)


def test_something_that_is_not_an_operation_is_refused() -> None:
    with pytest.raises(DeclarationError, match="cannot project"):
        RegistryProjector(ToolRegistry()).register(f.Greetings)
