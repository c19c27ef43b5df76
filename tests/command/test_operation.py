"""``Operation``, ``OperationId``, the contracts and ``InvocationContext`` (ports of OperationTest,
AnOperationSaysItAmendsItsNamedTargetTest, OperationSequenceTest, DeclaredConditionTest, OperationIdTest,
ContractsTest, InvocationContextTest, CeilingForCallTest's digest cases)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from milpa_chat.command import (
    CommandProvider,
    DeclaredCondition,
    EffectProfile,
    HttpRouteModel,
    InvalidOperation,
    InvocationContext,
    Mutation,
    Operation,
    OperationId,
    SurfaceModel,
    SurfaceProjector,
)


def pong(values: dict[str, Any]) -> str:
    return "pong"


def ping() -> Operation:
    return Operation("ping", "Ping", pong)


# --------------------------------------------------------------------------- Operation
def test_defaults_are_non_mutating_and_every_surface() -> None:
    op = ping()
    assert (op.name, op.description, op.handler) == ("ping", "Ping", pong)
    assert op.input_schema is None and op.output_schema is None
    assert op.mutating is False and op.requires_confirmation is False
    assert op.scopes == () and op.surfaces is None
    assert op.version is None and op.path is None and op.permission is None
    assert op.named_target is None and op.effects is None


def test_declaring_no_effect_is_unclassified_never_harmless() -> None:
    op = ping()
    ceiling = op.effect_ceiling()
    assert ceiling == EffectProfile.unclassified()
    assert not ceiling.is_fully_classified()
    assert op.may_mutate, "an operation that declared nothing may do anything"
    assert not Operation("ls", "List", pong, effects=EffectProfile.read_only()).may_mutate


def test_supports_every_surface_when_surfaces_is_none() -> None:
    assert all(ping().supports_surface(s) for s in ("cli", "http", "mcp", "tools"))


def test_surfaces_is_an_opt_in_matched_exactly() -> None:
    op = Operation("ping", "Ping", pong, surfaces=["cli", "http"])
    assert op.supports_surface("cli") and op.supports_surface("http")
    assert not op.supports_surface("mcp")
    assert not op.supports_surface("CLI")


def test_carries_policy_and_http_metadata() -> None:
    op = Operation(
        "create_post", "Create a post", lambda values: values, input_schema={"type": "object"},
        mutating=True, requires_confirmation=True, scopes=["posts:write"], path="/posts",
    )  # fmt: skip
    assert op.mutating and op.requires_confirmation
    assert op.scopes == ("posts:write",)
    assert op.path == "/posts"


def test_a_permission_typed_operation() -> None:
    op = Operation("crm.contact.update", "d", pong, permission="crm.contact:update")
    assert op.permission == "crm.contact:update"
    assert op.scopes == ()


def test_scopes_and_permission_together_are_refused() -> None:
    with pytest.raises(InvalidOperation, match="BOTH scopes and a permission"):
        Operation("bad", "d", pong, scopes=["crm.contact:update"], permission="crm.contact:update")


def test_mutating_with_a_profile_that_changes_nothing_is_refused() -> None:
    with pytest.raises(InvalidOperation, match="mutating=True and an effect profile with mutation 'none'"):
        Operation("plugins_lock", "x", pong, mutating=True, effects=EffectProfile(Mutation.NONE))


def test_not_mutating_with_a_mutating_profile_is_allowed_and_the_profile_wins_for_gates() -> None:
    op = Operation("plugins_lock", "x", pong, effects=EffectProfile(Mutation.PERSISTENT))
    assert op.mutating is False
    assert op.may_mutate


@pytest.mark.parametrize(
    ("kwargs", "fix"),
    [
        ({"scopes": "posts:write"}, "write scopes=['posts:write']"),
        ({"surfaces": "cli"}, "write surfaces=['cli']"),
        ({"mutating": "yes"}, "mutating= must be True or False"),
        ({"effects": {"mutation": "none"}}, "effects= must be an EffectProfile"),
        ({"input_schema": "object"}, "input_schema= must be a JSON schema"),
        ({"named_target": 3}, "named_target= must be a string"),
        ({"continues": "session"}, "continues= takes a function"),
        ({"preconditions": ["ready"]}, "DeclaredCondition"),
    ],
)
def test_a_field_of_the_wrong_kind_is_refused_with_the_fix(kwargs: dict[str, Any], fix: str) -> None:
    with pytest.raises(InvalidOperation, match=re_escape(fix)):
        Operation("op", "Does a thing.", pong, **kwargs)


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


def test_a_name_a_description_and_a_callable_handler_are_required() -> None:
    with pytest.raises(InvalidOperation, match="needs a name"):
        Operation("  ", "d", pong)
    with pytest.raises(InvalidOperation, match="needs a description"):
        Operation("op", "", pong)
    with pytest.raises(InvalidOperation, match="handler must be callable"):
        Operation("op", "d", "this string is not callable")  # type: ignore[arg-type]


def test_a_named_target_must_be_an_argument_of_the_input_schema() -> None:
    schema = {"type": "object", "properties": {"id": {"type": "string"}}}
    assert Operation("notes:delete", "d", pong, input_schema=schema, named_target="id").named_target == "id"
    with pytest.raises(InvalidOperation, match="names the target 'note', which is not an argument"):
        Operation("notes:delete", "d", pong, input_schema=schema, named_target="note")


def test_invoke_passes_the_context_only_to_a_handler_that_takes_one() -> None:
    seen: list[Any] = []
    with_context = Operation("a", "d", lambda values, context: seen.append((values, context)))
    ctx = InvocationContext.cli("rod@laptop")
    with_context.invoke({"x": 1}, ctx)
    assert seen == [({"x": 1}, ctx)]
    assert Operation("b", "d", lambda: "no input").invoke({"x": 1}) == "no input"
    assert Operation("c", "d", lambda values: values).invoke({"x": 1}, ctx) == {"x": 1}


# ------------------------------------------------------------------ named target contract
def test_an_operation_does_not_amend_unless_it_says_so() -> None:
    assert Operation("edit", "Edits a class.", pong, named_target="class").amends_named_target is False


def test_an_operation_that_says_so_carries_it() -> None:
    op = Operation("edit", "Edits a class.", pong, named_target="class", amends_named_target=True)
    assert op.amends_named_target and op.named_target == "class"
    assert op.creates_named_target is False


def test_every_declaration_survives_a_copy_of_the_contract() -> None:
    op = Operation(
        "edit", "Edits a class.", pong, named_target="class", amends_named_target=True, continues=lambda a: "seq"
    )
    rebuilt = Operation(**{**{f.name: getattr(op, f.name) for f in dataclasses.fields(op)}, "description": "More."})
    assert rebuilt.amends_named_target
    assert rebuilt.sequence_for({}) == "seq"
    assert dataclasses.replace(op, description="y").amends_named_target


def test_amending_needs_a_target_to_speak_of() -> None:
    message = "Operation 'edit' declares that it amends its named target and names none"
    with pytest.raises(InvalidOperation, match=message):
        Operation("edit", "Edits a class.", pong, amends_named_target=True)


def test_an_operation_cannot_both_create_its_target_and_amend_one_that_exists() -> None:
    with pytest.raises(InvalidOperation, match="declares that it creates its named target AND that it amends it"):
        Operation("edit", "d", pong, named_target="class", creates_named_target=True, amends_named_target=True)


def test_creating_needs_a_target_and_creating_alone_is_what_it_was() -> None:
    with pytest.raises(InvalidOperation, match="creates its named target and names none"):
        Operation("implement", "Fills a class.", pong, creates_named_target=True)
    op = Operation("implement", "Fills a class.", pong, named_target="class", creates_named_target=True)
    assert op.creates_named_target and not op.amends_named_target


# ---------------------------------------------------------------------------- sequences
def test_an_operation_that_declares_nothing_continues_nothing() -> None:
    assert ping().continues is None
    assert ping().sequence_for({"session": "s1"}) is None


def test_the_declaration_names_the_sequence_from_the_arguments_trimmed() -> None:
    op = Operation("agent", "x", pong, continues=lambda a: a["session"] if isinstance(a.get("session"), str) else None)
    assert op.sequence_for({"session": " s1 "}) == "s1"
    assert op.sequence_for({"prompt": "no session"}) is None


def test_a_blank_sequence_id_is_no_sequence() -> None:
    assert Operation("agent", "x", pong, continues=lambda a: "   ").sequence_for({}) is None


# ------------------------------------------------------------------------- conditions
def test_a_declared_condition_names_itself_and_says_what_it_means() -> None:
    condition = DeclaredCondition("tests-green", "every test passes on main")
    assert condition.to_dict() == {"name": "tests-green", "description": "every test passes on main"}
    assert DeclaredCondition.from_dict(condition.to_dict()) == condition
    op = Operation("deploy", "Deploys.", pong, preconditions=[condition])
    assert op.preconditions == (condition,)


@pytest.mark.parametrize(("name", "description"), [("", "x"), ("x", " \t"), (" ", " ")])
def test_a_blank_condition_is_refused(name: str, description: str) -> None:
    with pytest.raises(InvalidOperation):
        DeclaredCondition(name, description)


def test_a_stored_condition_needs_strings() -> None:
    with pytest.raises(InvalidOperation, match="a stored condition needs a string «name»"):
        DeclaredCondition.from_dict({"name": 1, "description": "x"})


# --------------------------------------------------------------------- handler digest
def test_the_digest_is_stable_for_the_same_handler_and_differs_for_another() -> None:
    def rehearse(values: dict[str, Any]) -> str:
        return "the rehearsal prints and returns"

    def install(values: dict[str, Any]) -> str:
        return "the rehearsal installs for real"

    op = Operation("capabilities:enable", "installs a capability", rehearse)
    digest = op.handler_digest()
    assert isinstance(digest, str) and digest.startswith("sha256:") and len(digest) == 7 + 64
    assert op.handler_digest() == digest
    assert Operation("capabilities:enable", "installs", install).handler_digest() != digest


def test_a_builtin_has_no_digest() -> None:
    assert Operation("len", "Counts.", len).handler_digest() is None


# ------------------------------------------------------------------------- OperationId
def test_every_separator_is_the_same_act() -> None:
    op_id = OperationId("config.set")
    assert op_id.same_as("config:set") and op_id.same_as("config_set")
    assert op_id.same_as(OperationId("CONFIG.SET"))
    assert op_id == OperationId("Config_Set")
    assert not op_id.same_as("config.get")


def test_each_surface_projects_its_own_spelling() -> None:
    op_id = OperationId("plugins_register")
    assert op_id.canonical == "plugins.register"
    assert op_id.for_cli() == "plugins:register"
    assert op_id.for_tool() == "plugins_register"
    assert str(op_id) == "plugins.register"


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [("  Config:Set.  ", "config.set"), ("plugins_register", "plugins.register"), ("CONFIG:SET", "config.set"),
     (" _a_ ", "a"), ("a::b", "a..b"), ("plugins.disable-unsafe", "plugins.disable-unsafe"), ("\x00\x0bx\t", "x"),
     ("Ünïcode:X", "Ünïcode.x")],
)  # fmt: skip
def test_stray_separators_and_case_do_not_create_a_second_act(spelling: str, canonical: str) -> None:
    assert OperationId(spelling).canonical == canonical


def test_the_hyphen_is_not_a_separator() -> None:
    assert not OperationId("a-b").same_as("a.b")


names = st.lists(st.from_regex(r"[A-Za-z0-9]+(-[A-Za-z0-9]+)?", fullmatch=True), min_size=1, max_size=4)


@given(names, st.lists(st.sampled_from([".", ":", "_"]), min_size=3, max_size=3), st.sampled_from(["", " ", "\t"]))
def test_any_spelling_of_a_name_is_one_identity(segments: list[str], seps: list[str], pad: str) -> None:
    spelled = pad + segments[0] + "".join(seps[i % 3] + s for i, s in enumerate(segments[1:])) + pad
    expected = ".".join(s.lower() for s in segments)
    assert OperationId(spelled).canonical == expected
    assert OperationId(spelled) == OperationId(expected)
    assert hash(OperationId(spelled)) == hash(OperationId(expected))
    assert OperationId(spelled).is_well_formed


@given(st.text())
def test_canonizing_is_idempotent_and_every_projection_round_trips(text: str) -> None:
    op_id = OperationId(text)
    assert OperationId.canonize(op_id.canonical) == op_id.canonical
    for projected in (op_id.for_cli(), op_id.for_tool(), op_id.canonical, str(op_id)):
        assert OperationId(projected) == op_id
    assert op_id.same_as(text) and OperationId(text).same_as(op_id)


# --------------------------------------------------------------------------- contracts
def test_a_provider_returns_its_operations() -> None:
    class Provider:
        def operations(self) -> Sequence[Operation]:
            return [ping()]

    provider = Provider()
    assert isinstance(provider, CommandProvider)
    assert [op.name for op in provider.operations()] == ["ping"]


@dataclasses.dataclass(frozen=True)
class CliModel:
    name: str
    surface = "cli"

    def to_dict(self) -> dict[str, Any]:
        return {"surface": "cli", "name": self.name}


class CliProjector(SurfaceProjector[CliModel]):
    surface = "cli"

    def project(self, operation: Operation) -> CliModel:
        return CliModel(operation.id.for_cli())


def test_a_projector_reports_its_surface_and_honours_opt_out() -> None:
    projector = CliProjector()
    assert projector.surface == "cli"
    assert projector.supports(Operation("a", "A", pong))
    assert not projector.supports(Operation("b", "B", pong, surfaces=["http"]))
    model = projector.project(Operation("posts_publish", "P", pong))
    assert isinstance(model, SurfaceModel)
    assert model.to_dict() == {"surface": "cli", "name": "posts:publish"}


def test_a_projector_must_project() -> None:
    class Lazy(SurfaceProjector[CliModel]):
        surface = "cli"

    with pytest.raises(TypeError):
        Lazy()  # type: ignore[abstract]


def test_the_contract_demands_a_model_and_the_model_is_serialisable() -> None:
    model = HttpRouteModel("GET", "/x/ping", "ping", ["x:read"])
    assert isinstance(model, SurfaceModel)
    assert model.surface == "http"
    assert model.to_dict() == {
        "surface": "http", "method": "GET", "path": "/x/ping", "name": "ping", "scopes": ["x:read"], "permission": None,
    }  # fmt: skip
    assert list(model.to_dict()) == ["surface", "method", "path", "name", "scopes", "permission"]
    json.dumps(model.to_dict())


def test_a_model_is_inert() -> None:
    model = HttpRouteModel("POST", "/x/crear", "crear")
    assert model.to_dict() == model.to_dict()


# ------------------------------------------------------------------- InvocationContext
def test_a_terminal_brings_an_executor_and_no_actor() -> None:
    ctx = InvocationContext.cli("rod@laptop", "req-1")
    assert ctx.actor is None and ctx.verified is False and ctx.channel == "cli"
    assert ctx.executor == "rod@laptop" and ctx.correlation_id == "req-1"
    assert not ctx.is_attributable()


def test_the_web_brings_a_verified_actor_and_the_decision_that_authorised_it() -> None:
    ctx = InvocationContext.web("actor:member:42", "dec-7", "www-data@host", "req-2")
    assert (ctx.actor, ctx.verified, ctx.channel) == ("actor:member:42", True, "web")
    assert ctx.authorization_id == "dec-7"
    assert ctx.executor == "www-data@host"
    assert ctx.is_attributable()


def test_an_unverified_actor_is_not_attributable_even_with_a_name() -> None:
    assert not InvocationContext(actor="actor:who-says-so", verified=False, channel="web").is_attributable()


def test_a_context_with_nobody_behind_it_is_not_attributable() -> None:
    assert not InvocationContext().is_attributable()
