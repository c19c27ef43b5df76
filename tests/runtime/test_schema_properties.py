"""Property tests: for generated tools, the derived schema and the compiled validator agree with jsonschema.

For random combinations of supported annotations (int, float, str, bool, None, Optional, Literal,
StrEnum/IntEnum, list, dict[str, T], tuple, TypedDict, BaseModel, nested):

(a) the derived input schema is a valid JSON Schema 2020-12 and self-contained;
(b) values generated to fit the annotations validate, ``wire`` is JSON, validates against the
    derived schema with jsonschema too, and validates again to the same result (round trip);
(c) values with one wrong-typed part are rejected by both validators.
"""

import functools
import inspect
import itertools
import json
import math
import types
import typing
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Any, Literal, NotRequired

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import BaseModel, create_model
from typing_extensions import TypedDict, is_typeddict

from milpa_chat.runtime.declare import definitions_from, tool
from milpa_chat.runtime.definition import InvalidArguments, ToolDefinition

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_names = itertools.count()
_Literal: Any = Literal
_NotRequired: Any = NotRequired
_TypedDict: Any = TypedDict
_list: Any = list
_dict: Any = dict
_tuple: Any = tuple


class Color(StrEnum):
    RED = "red"
    GREEN = "green"


class Level(IntEnum):
    LOW = 1
    HIGH = 2


@dataclass(frozen=True)
class Kind:
    """An annotation with strategies for JSON values that fit it and that do not."""

    annotation: Any
    valid: st.SearchStrategy[Any]
    invalid: st.SearchStrategy[Any]
    nullable: bool = False


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: numbers by value, booleans apart from numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


FINITE = st.floats(allow_nan=False, allow_infinity=False)
FRACTIONAL = FINITE.filter(lambda f: not f.is_integer())
SMALL_TEXT = st.text(max_size=8)
ANY_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), FINITE, SMALL_TEXT)
CONTAINERS = st.one_of(st.lists(st.integers(), max_size=2), st.dictionaries(SMALL_TEXT, st.integers(), max_size=2))

INT = Kind(
    int,
    st.one_of(st.integers(), st.integers(-(2**40), 2**40).map(float)),
    st.one_of(SMALL_TEXT, st.booleans(), FRACTIONAL, st.none(), CONTAINERS),
)
FLOAT = Kind(
    float, st.one_of(FINITE, st.integers(-(2**53), 2**53)), st.one_of(SMALL_TEXT, st.booleans(), st.none(), CONTAINERS)
)
STR = Kind(str, SMALL_TEXT, st.one_of(st.integers(), FINITE, st.booleans(), st.none(), CONTAINERS))
BOOL = Kind(bool, st.booleans(), st.one_of(st.integers(), FINITE, SMALL_TEXT, st.none(), CONTAINERS))
NONE = Kind(None, st.none(), st.one_of(st.integers(), SMALL_TEXT, st.booleans(), CONTAINERS), nullable=True)


def choice_kind(annotation: Any, values: list[Any]) -> Kind:
    outside = ANY_SCALAR.filter(lambda v: not any(json_equal(v, c) for c in values))
    return Kind(annotation, st.sampled_from(values), st.one_of(outside, CONTAINERS), nullable=None in values)


COLOR = choice_kind(Color, ["red", "green"])
LEVEL = choice_kind(Level, [1, 2])
LITERAL_VALUES = st.lists(
    st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "1", ""]), st.booleans()),
    min_size=1,
    max_size=4,
    unique_by=lambda v: (type(v), v),
)
LITERAL = LITERAL_VALUES.map(lambda values: choice_kind(_Literal[tuple(values)], values))
LEAVES = st.one_of(st.sampled_from([INT, FLOAT, STR, BOOL, NONE, COLOR, LEVEL]), LITERAL)


def optional(kind: Kind) -> Kind:
    if kind.nullable:
        return kind
    return Kind(
        kind.annotation | None, st.one_of(kind.valid, st.none()), kind.invalid.filter(lambda v: v is not None), True
    )


def list_of(kind: Kind) -> Kind:
    bad_item = st.tuples(st.lists(kind.valid, max_size=3), kind.invalid, st.integers(0, 3))
    with_bad = bad_item.map(lambda t: [*t[0][: t[2]], t[1], *t[0][t[2] :]])
    not_list = st.one_of(SMALL_TEXT, st.integers(), st.dictionaries(SMALL_TEXT, st.integers(), max_size=2))
    return Kind(_list[kind.annotation], st.lists(kind.valid, max_size=4), st.one_of(with_bad, not_list))


def dict_of(kind: Kind) -> Kind:
    good = st.dictionaries(SMALL_TEXT, kind.valid, max_size=3)
    with_bad = st.tuples(good, SMALL_TEXT, kind.invalid).map(lambda t: {**t[0], t[1]: t[2]})
    not_dict = st.one_of(SMALL_TEXT, st.integers(), st.lists(st.integers(), max_size=2))
    return Kind(_dict[str, kind.annotation], good, st.one_of(with_bad, not_dict))


def pair_of(first: Kind, second: Kind) -> Kind:
    good = st.tuples(first.valid, second.valid).map(list)
    wrong_length = st.one_of(
        first.valid.map(lambda v: [v]), st.tuples(first.valid, second.valid, st.integers()).map(list)
    )
    wrong_item = st.one_of(
        st.tuples(first.invalid, second.valid).map(list), st.tuples(first.valid, second.invalid).map(list)
    )
    not_list = st.one_of(SMALL_TEXT, st.integers(), st.dictionaries(SMALL_TEXT, st.integers(), max_size=2))
    return Kind(_tuple[first.annotation, second.annotation], good, st.one_of(wrong_length, wrong_item, not_list))


FIELD_NAMES = ["a", "b", "c", "d"]


def _replaced(name: str, pair: tuple[dict[str, Any], Any]) -> dict[str, Any]:
    return {**pair[0], name: pair[1]}


def _without(name: str, value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k != name}


def object_kind(annotation: Any, fields: dict[str, tuple[Kind, bool]]) -> Kind:
    required = {n: k.valid for n, (k, req) in fields.items() if req}
    optional_ = {n: k.valid for n, (k, req) in fields.items() if not req}
    good = st.fixed_dictionaries(required, optional=optional_)
    wrong: list[st.SearchStrategy[Any]] = [
        good.map(lambda d: {**d, "zz_unknown": 1}),
        st.one_of(SMALL_TEXT, st.integers(), st.lists(st.integers(), max_size=2)),
    ]
    for name, (kind, _) in fields.items():
        wrong.append(st.tuples(good, kind.invalid).map(functools.partial(_replaced, name)))
    for name in required:
        wrong.append(good.map(functools.partial(_without, name)))
    return Kind(annotation, good, st.one_of(wrong))


@st.composite
def typed_dict_of(draw: st.DrawFn, children: st.SearchStrategy[Kind]) -> Kind:
    names = draw(st.lists(st.sampled_from(FIELD_NAMES), min_size=1, max_size=3, unique=True))
    fields = {name: (draw(children), draw(st.booleans())) for name in names}
    annotations = {n: k.annotation if req else _NotRequired[k.annotation] for n, (k, req) in fields.items()}
    return object_kind(_TypedDict(f"TD{next(_names)}", annotations), fields)


@st.composite
def model_of(draw: st.DrawFn, children: st.SearchStrategy[Kind]) -> Kind:
    names = draw(st.lists(st.sampled_from(FIELD_NAMES), min_size=1, max_size=3, unique=True))
    fields: dict[str, tuple[Kind, bool]] = {}
    spec: dict[str, Any] = {}
    for name in names:
        kind = draw(children)
        required = not kind.nullable or draw(st.booleans())
        fields[name] = (kind, required)
        spec[name] = (kind.annotation, ... if required else None)
    model: Any = create_model(f"M{next(_names)}", **spec)
    return object_kind(model, fields)


def extend(children: st.SearchStrategy[Kind]) -> st.SearchStrategy[Kind]:
    return st.one_of(
        children.map(optional),
        children.map(list_of),
        children.map(dict_of),
        st.tuples(children, children).map(lambda pair: pair_of(*pair)),
        typed_dict_of(children),
        model_of(children),
    )


KINDS = st.recursive(LEAVES, extend, max_leaves=5)


@dataclass(frozen=True)
class Case:
    definition: ToolDefinition
    kinds: dict[str, Kind]
    optional: frozenset[str]

    @property
    def jsonschema(self) -> Draft202012Validator:
        return Draft202012Validator(self.definition.input_schema)


@st.composite
def tools(draw: st.DrawFn) -> Case:
    kinds = {f"p{i}": draw(KINDS) for i in range(draw(st.integers(1, 3)))}
    params, optional_ = [], set()
    for name, kind in kinds.items():
        default: Any = inspect.Parameter.empty
        if kind.nullable and draw(st.booleans()):
            default = None
            optional_.add(name)
        params.append(
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind.annotation, default=default)
        )

    def handler(**kwargs: Any) -> None:
        """A generated tool."""

    handler.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    handler.__annotations__ = {p.name: p.annotation for p in params}
    (definition,) = definitions_from(tool(f"generated_{next(_names)}")(handler))
    return Case(definition, kinds, frozenset(optional_))


def valid_args(case: Case) -> st.SearchStrategy[dict[str, Any]]:
    required = {n: k.valid for n, k in case.kinds.items() if n not in case.optional}
    return st.fixed_dictionaries(required, optional={n: case.kinds[n].valid for n in case.optional})


def assert_json(value: Any) -> None:
    text = json.dumps(value, allow_nan=False)
    assert json.loads(text) == value or any(isinstance(v, float) and math.isnan(v) for v in [value])


@SETTINGS
@given(tools())
def test_derived_schemas_are_valid_and_self_contained(case: Case) -> None:
    schema = case.definition.input_schema
    Draft202012Validator.check_schema(schema)
    assert "$ref" not in json.dumps(schema)
    assert schema["additionalProperties"] is False and schema["type"] == "object"
    assert set(schema["required"]) == set(case.kinds) - case.optional


@SETTINGS
@given(st.data(), tools())
def test_fitting_values_validate_and_wire_round_trips(data: st.DataObject, case: Case) -> None:
    args = data.draw(valid_args(case))
    case.jsonschema.validate(args)
    result = case.definition.validator(args)
    assert_json(result.wire)
    case.jsonschema.validate(result.wire)
    assert case.definition.validator(result.wire) == result
    assert set(result.wire) == set(result.call) == set(case.kinds)


@SETTINGS
@given(st.data(), tools())
def test_wrong_values_are_rejected_by_both(data: st.DataObject, case: Case) -> None:
    args = data.draw(valid_args(case))
    name = data.draw(st.sampled_from(sorted(case.kinds)))
    args[name] = data.draw(case.kinds[name].invalid)
    assert list(case.jsonschema.iter_errors(args)), (
        f"jsonschema accepted {args!r} {json.dumps(case.definition.input_schema)}"
    )
    with pytest.raises(InvalidArguments) as caught:
        case.definition.validator(args)
    assert caught.value.errors and all(e.path.split(".")[0] == name for e in caught.value.errors)


@SETTINGS
@given(st.data(), tools())
def test_unknown_and_missing_properties_are_rejected_by_both(data: st.DataObject, case: Case) -> None:
    args = data.draw(valid_args(case))
    extra = {**args, "not_a_parameter": data.draw(ANY_SCALAR)}
    assert list(case.jsonschema.iter_errors(extra))
    with pytest.raises(InvalidArguments, match="Unknown property 'not_a_parameter'; accepted properties: p0"):
        case.definition.validator(extra)
    required = sorted(set(case.kinds) - case.optional)
    if required:
        missing = {k: v for k, v in args.items() if k != required[0]}
        assert list(case.jsonschema.iter_errors(missing))
        with pytest.raises(InvalidArguments, match=f"{required[0]}: Missing required field"):
            case.definition.validator(missing)


def _kinds_in(annotation: Any) -> set[str]:
    if annotation is None or annotation is type(None):
        return {"None"}
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return {"Literal"}
    if origin is not None:
        name = "Optional" if origin in (types.UnionType, typing.Union) else origin.__name__
        return {name}.union(*(_kinds_in(a) for a in typing.get_args(annotation)))
    if is_typeddict(annotation):
        return {"TypedDict"}.union(*(_kinds_in(a) for a in annotation.__annotations__.values()))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {"BaseModel"}.union(*(_kinds_in(f.annotation) for f in annotation.model_fields.values()))
    return {annotation.__name__}


def test_generators_cover_every_kind() -> None:
    seen: set[str] = set()

    @settings(max_examples=300, deadline=None, database=None)
    @given(KINDS)
    def collect(kind: Kind) -> None:
        seen.update(_kinds_in(kind.annotation))

    collect()
    expected = {"int", "float", "str", "bool", "None", "Literal", "Color", "Level", "Optional", "list", "dict"}
    assert expected | {"tuple", "TypedDict", "BaseModel", "NotRequired"} <= seen, seen
