"""Declared operations: the declaration is the contract."""

from __future__ import annotations

import dataclasses
import re
from typing import Annotated, Any

import pytest

from milpa_chat.command import (
    Because,
    EffectProfile,
    Externality,
    InvalidEffectProfile,
    InvalidInput,
    InvalidOperation,
    InvocationContext,
    Mutates,
    Mutation,
    Needs,
    Operation,
    OperationDeclarationError,
    Reads,
    Reversibility,
    Subject,
    Target,
    declared_operation,
    is_declared,
    operation,
)
from milpa_chat.errors import DeclarationError, MilpaError
from tests.command import fixtures as f


def refused(match: str) -> Any:
    return pytest.raises(OperationDeclarationError, match=match)


# ------------------------------------------------------------------ same as hand-written
def test_derives_the_same_operation_the_hand_written_form_built() -> None:
    greetings = f.Greetings()
    hand_written = Operation(
        "hola:greet",
        f.GREET_DESCRIPTION,
        lambda values: {},
        input_schema={
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string", "description": "who to greet"}},
        },
        mutating=True,
        named_target="name",
        effects=EffectProfile(
            Mutation.PERSISTENT, Externality.NONE, Reversibility.GUARANTEED, subject=Subject.DATA,
            rollback_contract="hola:ungreet",
        ),
    )  # fmt: skip
    derived = declared_operation(f.Greet, lambda kind: greetings)
    for field in dataclasses.fields(Operation):
        if field.name != "handler":
            assert getattr(derived, field.name) == getattr(hand_written, field.name), field.name


def test_the_derived_handler_does_what_the_hand_written_one_did() -> None:
    greetings = f.Greetings()
    op = declared_operation(f.Greet, lambda kind: greetings)
    assert op.handler({"name": "Rod"}) == {"ok": True, "greeted": "Rod", "file": "var/greetings.txt"}
    assert greetings.written == ["Rod"]


def test_operation_from_class_is_the_same_derivation() -> None:
    assert Operation.from_class(f.Publish).input_schema == declared_operation(f.Publish).input_schema


# ------------------------------------------------------------------------ input schema
def test_an_enum_parameter_carries_its_admissible_values_and_its_default() -> None:
    assert declared_operation(f.Publish).input_schema == {
        "type": "object",
        "required": ["id"],
        "properties": {
            "id": {"type": "string"},
            "status": {"type": "string", "enum": ["draft", "published"], "default": "draft"},
            "revision": {"type": "integer", "default": 1},
        },
    }


def test_the_handler_turns_an_admissible_value_into_its_member_and_refuses_anything_else() -> None:
    op = declared_operation(f.Publish)
    assert op.handler({"id": "doc-1", "status": "published", "revision": 2}) == {
        "id": "doc-1", "status": "published", "revision": 2,
    }  # fmt: skip
    with pytest.raises(InvalidInput, match="'status' is not one of Status's cases"):
        op.handler({"id": "doc-1", "status": "deleted"})


def test_an_omitted_optional_keeps_the_python_default() -> None:
    assert declared_operation(f.Publish).handler({"id": "doc-1"}) == {"id": "doc-1", "status": "draft", "revision": 1}


def test_every_coercible_type_is_derived_and_a_pure_enum_offers_its_member_names() -> None:
    op = declared_operation(f.Measure)
    assert op.input_schema == {
        "type": "object",
        "required": ["ratio", "dry", "tags"],
        "properties": {
            "ratio": {"type": "number"},
            "dry": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "priority": {"type": "string", "enum": ["Low", "High"], "default": "Low"},
        },
    }


def test_a_pure_enum_member_arrives_by_name_and_anything_else_is_refused() -> None:
    op = declared_operation(f.Measure)
    values = {"ratio": 0.5, "dry": True, "tags": ["a"], "priority": "High"}
    assert op.handler(values) == values
    with pytest.raises(InvalidInput, match="'priority' is not one of Priority's cases"):
        op.handler({**values, "priority": "Urgent"})


def test_a_literal_is_an_enum_a_nullable_accepts_null_and_a_tuple_default_is_a_list() -> None:
    op = declared_operation(f.Choose)
    assert op.input_schema == {
        "type": "object",
        "required": ["colour"],
        "properties": {
            "colour": {"type": "string", "enum": ["red", "green"]},
            "size": {"type": ["integer", "null"], "default": None},
            "tags": {"type": "array", "items": {"type": "string"}, "default": ["a"]},
        },
    }
    assert op.handler({"colour": "red", "size": None}) == {"colour": "red", "size": None, "tags": ["a"]}
    with pytest.raises(InvalidInput, match="'colour' must be one of"):
        op.handler({"colour": "blue"})


def test_a_missing_required_input_is_refused_by_the_handler() -> None:
    with pytest.raises(InvalidInput, match="missing required input 'ratio'"):
        declared_operation(f.Measure).handler({})


def test_extra_input_keys_are_ignored() -> None:
    assert declared_operation(f.Publish).handler({"id": "d", "unrelated": 1})["id"] == "d"


def test_no_constructor_means_no_input_schema() -> None:
    assert declared_operation(f.Bares).input_schema is None


# ----------------------------------------------------------------------- output schema
def test_the_return_type_declares_the_output() -> None:
    assert declared_operation(f.Publish).output_schema == {
        "type": "object",
        "properties": {"id": {"type": "string"}, "status": {"type": "string"}, "revision": {"type": "integer"}},
    }
    assert declared_operation(f.Measure).output_schema == {
        "type": "object",
        "properties": {
            "ratio": {"type": "number"},
            "dry": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "priority": {"type": "string"},
        },
    }


def test_a_result_with_nothing_promoted_declares_no_output_schema() -> None:
    assert declared_operation(f.Bares).output_schema is None
    assert declared_operation(f.Wraps).output_schema is None


def test_an_object_result_is_returned_as_its_public_values() -> None:
    assert declared_operation(f.Bares).handler({}) == {"note": "nothing promoted here"}


# ------------------------------------------------------------------------------ intent
def test_intent_is_carried_through_untouched() -> None:
    op = declared_operation(f.Publish)
    assert op.mutating is True
    assert op.requires_confirmation is True
    assert op.scopes == ("docs:write",)
    assert op.permission is None
    assert op.effects == EffectProfile(Mutation.PERSISTENT)


def test_the_purpose_joins_the_description_so_both_readers_see_one_sentence() -> None:
    op = declared_operation(f.Measure)
    assert op.description == "Measure a thing. so the catalogue explains WHY, not just what."
    assert (op.version, op.path, op.surfaces, op.mutating) == ("2", "/measure", ("cli",), False)


def test_a_declared_read_is_exactly_the_canonical_read_only_profile() -> None:
    assert declared_operation(f.Bares).effects == EffectProfile.read_only()


def test_reads_may_say_how_far_it_reaches_and_whose_authority_it_spends() -> None:
    @operation("lab:peek", "Reads someone else's inbox.")
    @Reads(externality=Externality.THIRD_PARTY, authority="privileged")
    class Peek:
        def run(self) -> dict[str, Any]:
            return {}

    effects = declared_operation(Peek).effects
    assert effects is not None
    assert (effects.mutation, effects.externality, effects.authority) == (
        Mutation.NONE, Externality.THIRD_PARTY, "privileged",
    )  # fmt: skip


def test_the_target_is_the_parameter_marked_target() -> None:
    assert declared_operation(f.Greet, lambda kind: f.Greetings()).named_target == "name"
    assert declared_operation(f.Publish).named_target is None


# ---------------------------------------------------------------- refusals, by name
def test_silence_about_effects_is_refused_by_name() -> None:
    with refused(r"Silent declares neither @Mutates nor @Reads"):
        declared_operation(f.Silent)


def test_declaring_both_effects_is_refused() -> None:
    with refused(r"declares BOTH @Mutates and @Reads"):
        declared_operation(f.Contradictory)


def test_two_named_targets_are_refused_naming_both() -> None:
    with refused(r"marks two parameters with Target \(first and second\)"):
        declared_operation(f.TwoTargets)


def test_an_operation_without_a_run_method_is_refused() -> None:
    with refused(r"has no public run\(\)"):
        declared_operation(f.Handless)


def test_an_input_type_no_schema_describes_is_refused() -> None:
    with refused(r"is typed .*Greetings, which is not a scalar"):
        declared_operation(f.Untypeable)


def test_a_union_typed_input_is_refused() -> None:
    with refused(r"parameter id has no single type"):
        declared_operation(f.Untyped)


def test_input_smuggled_into_run_is_refused() -> None:
    with refused(r"run\(\) takes id, which is not a collaborator"):
        declared_operation(f.ScalarRun)


def test_a_collaborator_with_nobody_to_resolve_it_fails_at_declaration_not_at_runtime() -> None:
    with refused(r"run\(\) needs Greetings but no resolver was given"):
        declared_operation(f.Greet)


def test_a_class_that_declares_nothing_is_not_an_operation() -> None:
    assert not is_declared(f.Greetings)
    assert is_declared(f.Greet)
    with refused(r"Greetings is not a declared operation: add @operation"):
        declared_operation(f.Greetings)


def test_a_class_that_does_not_exist_is_refused() -> None:
    with refused(r"the class does not exist"):
        declared_operation("tests.command.fixtures:Nope")
    with refused(r"the class does not exist"):
        declared_operation("no.such.module:Thing")


def test_a_class_can_be_named_by_its_import_path() -> None:
    assert declared_operation("tests.command.fixtures:Publish").name == "doc:publish"
    assert declared_operation("tests.command.fixtures.Publish").name == "doc:publish"


def test_an_untyped_input_is_refused_with_the_fix() -> None:
    @operation("lab:untyped-param", "No annotation.")
    @Reads
    class NoHint:
        def __init__(self, id) -> None:
            self.id = id

        def run(self) -> dict[str, Any]:
            return {}

    with refused(r"parameter id has no single type: annotate it"):
        declared_operation(NoHint)


def test_the_refusals_come_in_the_order_of_the_spec() -> None:
    @operation("lab:many-faults", "Several faults at once.")
    class SilentAndHandless:  # neither effect, no run, a union input
        def __init__(self, x: int | str) -> None:
            self.x = x

    with refused("declares neither"):
        declared_operation(SilentAndHandless)

    @operation("lab:faults", "Two faults.")
    @Reads
    class HandlessAndUntyped:
        def __init__(self, x: int | str) -> None:
            self.x = x

    with refused("has no public run"):
        declared_operation(HandlessAndUntyped)

    @operation("lab:faults-2", "Constructor before run().")
    @Reads
    class BadInputAndBadRun:
        def __init__(self, x: int | str) -> None:
            self.x = x

        def run(self, y: str) -> dict[str, Any]:
            return {}

    with refused("parameter x has no single type"):
        declared_operation(BadInputAndBadRun)


def test_errors_say_they_are_developer_mistakes_and_value_errors() -> None:
    with pytest.raises(DeclarationError) as caught:
        declared_operation(f.Silent)
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, MilpaError)


def test_the_operations_own_refusals_apply_last() -> None:
    @operation("lab:none", "Says it mutates nothing.")
    @Mutates(Mutation.NONE)
    class MutatesNothing:
        def run(self) -> dict[str, Any]:
            return {}

    with pytest.raises(InvalidOperation, match="mutating=True and an effect profile with mutation 'none'"):
        declared_operation(MutatesNothing)

    @operation("lab:both", "Scopes and a permission.")
    @Reads
    @Needs(scopes=["a"], permission="x.y:z")
    class Both:
        def run(self) -> dict[str, Any]:
            return {}

    with pytest.raises(InvalidOperation, match="BOTH scopes and a permission"):
        declared_operation(Both)

    @operation("lab:promise", "Promises an undo it cannot name.")
    @Mutates(Mutation.PERSISTENT, reversibility=Reversibility.GUARANTEED, rollback="delete var/x.json")
    class Prose:
        def run(self) -> dict[str, Any]:
            return {}

    with pytest.raises(InvalidEffectProfile, match="describes an inverse instead of naming one"):
        declared_operation(Prose)


def test_a_marker_given_twice_is_refused_where_it_is_written() -> None:
    with pytest.raises(OperationDeclarationError, match="declares @Reads twice"):

        @Reads
        @Reads
        class Twice:
            pass


def test_markers_are_not_inherited() -> None:
    class Child(f.Publish):
        pass

    assert not is_declared(Child)


# ---------------------------------------------------------------------- collaborators
def test_derivation_happens_once_and_an_invocation_pays_nothing_for_it() -> None:
    greetings = f.Greetings()
    resolutions = 0

    def resolve(kind: type) -> object:
        nonlocal resolutions
        resolutions += 1
        assert kind is f.Greetings
        return greetings

    op = declared_operation(f.Greet, resolve)
    assert resolutions == 0, "declaration must not resolve collaborators"
    for _ in range(1000):
        op.handler({"name": "Rod"})
    assert resolutions == 1000
    assert len(greetings.written) == 1000


# --------------------------------------------------------------- attributed, never input
def test_who_ran_it_is_attributed_never_an_argument() -> None:
    greetings = f.Greetings()
    op = declared_operation(f.Attributed, lambda kind: greetings)
    assert op.input_schema is not None and list(op.input_schema["properties"]) == ["note"]
    ctx = InvocationContext(actor="telegram:42", verified=True, channel="telegram")
    assert op.handler({"note": "ship it"}, ctx) == {
        "note": "ship it", "by": "telegram:42", "verified": True, "channel": "telegram", "wrote": "var/greetings.txt",
    }  # fmt: skip
    assert op.handler({"note": "anon"})["by"] is None, "a surface that attributes nothing passes None"


def test_a_context_that_cannot_be_none_is_refused() -> None:
    with refused(r"run\(\) takes context: InvocationContext, which must be nullable"):
        declared_operation(f.AttributedNonNullable)


def test_a_run_that_takes_only_the_context_needs_no_resolver() -> None:
    op = declared_operation(f.AttributedAlone)
    assert op.handler({}) == {"attributable": False}
    assert op.handler({}, InvocationContext.web("actor:member:42", "dec-7")) == {
        "attributable": True, "actor": "actor:member:42",
    }  # fmt: skip


def test_a_context_passed_as_input_is_just_an_ignored_key() -> None:
    op = declared_operation(f.AttributedAlone)
    assert op.handler({"context": {"actor": "forged", "verified": True}}) == {"attributable": False}


async def test_an_async_run_gives_an_async_handler() -> None:
    op = declared_operation(f.SlowEcho)
    assert await op.handler({"text": "hi"}) == {"echo": "hi"}


def test_a_dataclass_with_a_default_factory_advertises_the_produced_default() -> None:
    @operation("lab:paint", "Paint things.")
    @Mutates(Mutation.EPHEMERAL)
    @dataclasses.dataclass
    class Paint:
        what: Annotated[str, Target, Because("what to paint")]
        colours: list[str] = dataclasses.field(default_factory=lambda: ["red"])

        def run(self) -> dict[str, Any]:
            return {"what": self.what, "colours": self.colours}

    op = declared_operation(Paint)
    assert op.input_schema == {
        "type": "object",
        "required": ["what"],
        "properties": {
            "what": {"type": "string", "description": "what to paint"},
            "colours": {"type": "array", "items": {"type": "string"}, "default": ["red"]},
        },
    }
    assert op.named_target == "what"
    assert op.handler({"what": "fence"}) == {"what": "fence", "colours": ["red"]}


def test_messages_name_the_class_and_what_to_declare() -> None:
    with pytest.raises(OperationDeclarationError) as caught:
        declared_operation(f.Silent)
    message = str(caught.value)
    assert "Silent" in message and "@Mutates(" in message and "@Reads" in message
    assert re.search(r"silence would ship as 'does not mutate'", message, re.IGNORECASE)


def test_a_pydantic_model_can_be_the_input_contract() -> None:
    op = declared_operation(f.ModelOp)
    assert op.input_schema == {
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string", "description": "who"}, "count": {"type": "integer", "default": 1}},
    }
    assert op.named_target == "name"
    assert op.handler({"name": "x"}) == {"name": "x", "count": 1}


def test_needs_takes_its_scopes_positionally_or_by_name_and_refuses_a_bare_string() -> None:
    @operation("lab:needs", "Needs two scopes.")
    @Reads
    @Needs(["a:read", "b:read"])
    class Positional:
        def run(self) -> dict[str, Any]:
            return {}

    assert declared_operation(Positional).scopes == ("a:read", "b:read")
    with pytest.raises(OperationDeclarationError, match=r"takes a list, got 'a:read'; write \['a:read'\]"):
        Needs("a:read")
    with pytest.raises(OperationDeclarationError, match="not colour"):
        Needs(scopes=["x"], colour="red")  # type: ignore[call-overload]


def test_a_declared_operations_digest_covers_its_whole_class() -> None:
    import hashlib
    import inspect

    digest = declared_operation(f.Publish).handler_digest()
    lines, _ = inspect.getsourcelines(f.Publish)
    assert digest == "sha256:" + hashlib.sha256("".join(lines).encode()).hexdigest()
    assert declared_operation(f.Measure).handler_digest() != digest, "each declaration has its own digest"
