"""Schema derivation and validation: every supported type, JSON semantics, clamps, errors, raw schemas."""

import asyncio
import json
from dataclasses import dataclass
from enum import Enum, IntEnum, StrEnum
from types import MappingProxyType
from typing import Annotated, Any, Literal, NotRequired

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator
from typing_extensions import TypedDict

from milpa_chat.errors import DeclarationError
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.declare import Param, definition_from_schema, definitions_from, tool
from milpa_chat.runtime.definition import InvalidArguments, ToolDefinition, ValidatedArgs


class Color(StrEnum):
    RED = "red"
    BLUE = "blue"


class Level(IntEnum):
    LOW = 1
    HIGH = 2


class Shape(Enum):
    SQUARE = "square"
    CIRCLE = "circle"


class Point(TypedDict):
    x: int
    y: NotRequired[float]


class Tag(BaseModel):
    name: str
    weight: float = 1.0


class Filters(BaseModel):
    tags: list[str] = []
    color: Color | None = None
    items: list[Tag] = []


class Tree(BaseModel):
    value: int
    children: list["Tree"] = []


def derive(annotation: Any, default: Any = ...) -> ToolDefinition:
    """A one-parameter tool ``x: annotation`` (with ``default`` when given)."""

    def f(**kwargs: Any) -> None:
        """Doc."""

    import inspect

    kind = inspect.Parameter.KEYWORD_ONLY
    param = inspect.Parameter(
        "x", kind, annotation=annotation, default=inspect.Parameter.empty if default is ... else default
    )
    f.__signature__ = inspect.Signature([param])  # type: ignore[attr-defined]
    f.__annotations__ = {"x": annotation}
    (definition,) = definitions_from(tool("t", "T")(f))
    Draft202012Validator.check_schema(definition.input_schema)
    return definition


def prop(annotation: Any, default: Any = ...) -> dict[str, Any]:
    schema: dict[str, Any] = derive(annotation, default).input_schema["properties"]["x"]
    return schema


def ok(definition: ToolDefinition, args: dict[str, Any]) -> ValidatedArgs:
    result = definition.validator(args)
    assert definition.validator(result.wire) == result, "wire must validate to the same result"
    Draft202012Validator(definition.input_schema).validate(result.wire)
    json.dumps(result.wire, allow_nan=False)
    return result


def errors(definition: ToolDefinition, args: Any) -> list[str]:
    with pytest.raises(InvalidArguments) as caught:
        definition.validator(args)
    return [str(e) for e in caught.value.errors]


def accepts(annotation: Any, value: Any) -> Any:
    return ok(derive(annotation), {"x": value}).call["x"]


def rejects(annotation: Any, value: Any) -> list[str]:
    return errors(derive(annotation), {"x": value})


# ------------------------------------------------------------------------------- schema per type
@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (str, {"type": "string"}),
        (bool, {"type": "boolean"}),
        (None, {"type": "null"}),
        (int | None, {"type": ["integer", "null"]}),
        (Literal["a", "b"], {"enum": ["a", "b"], "type": "string"}),
        (Literal[1, "a"], {"enum": [1, "a"]}),
        (Color, {"enum": ["red", "blue"], "title": "Color", "type": "string"}),
        (Level, {"enum": [1, 2], "title": "Level", "type": "integer"}),
        (Color | None, {"enum": ["red", "blue", None], "title": "Color", "type": ["string", "null"]}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (list[str] | None, {"type": ["array", "null"], "items": {"type": "string"}}),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (dict, {"type": "object", "additionalProperties": True}),
        (
            tuple[int, str],
            {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2, "maxItems": 2},
        ),
        (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
        (Any, {}),
        (Annotated[int, Field(ge=1, le=10)], {"type": "integer", "minimum": 1, "maximum": 10}),
        (Annotated[str, Field(min_length=2, pattern="^a")], {"type": "string", "minLength": 2, "pattern": "^a"}),
        (Annotated[int, Field(description="Count")], {"type": "integer", "description": "Count"}),
        (
            Point,
            {
                "type": "object",
                "title": "Point",
                "properties": {"x": {"type": "integer"}, "y": {"type": "number"}},
                "required": ["x"],
                "additionalProperties": False,
            },
        ),
        (
            Tag,
            {
                "type": "object",
                "title": "Tag",
                "properties": {"name": {"type": "string"}, "weight": {"type": "number", "default": 1.0}},
                "required": ["name"],
                "additionalProperties": False,
            },
        ),
    ],
)
def test_schema_of_each_supported_type(annotation: Any, expected: dict[str, Any]) -> None:
    assert prop(annotation) == expected


def test_top_level_shape_defaults_and_required() -> None:
    @tool("search_notes", "Search notes", mutating=False)
    def search_notes(
        query: str,
        page: Annotated[int, Param("Page", clamp=(1, 1000))] = 1,
        tags: list[str] | None = None,
        color: Color = Color.RED,
    ) -> None: ...

    (d,) = definitions_from(search_notes)
    assert d.input_schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "page": {"type": "integer", "description": "Page", "default": 1, "minimum": 1, "maximum": 1000},
            "tags": {"type": ["array", "null"], "items": {"type": "string"}, "default": None},
            "color": {"enum": ["red", "blue"], "title": "Color", "type": "string", "default": "red"},
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    result = ok(d, {"query": "milk"})
    assert result.wire == {"query": "milk", "page": 1, "tags": None, "color": "red"}
    assert result.call == {"query": "milk", "page": 1, "tags": None, "color": Color.RED}


def test_nested_models_are_inlined_and_recursive_ones_kept_in_defs() -> None:
    schema = derive(Filters).input_schema
    assert "$defs" not in schema and "$ref" not in json.dumps(schema)
    assert schema["properties"]["x"]["properties"]["items"]["items"]["title"] == "Tag"
    recursive = derive(Tree).input_schema
    assert recursive["properties"]["x"] == {"$ref": "#/$defs/Tree"}
    assert recursive["$defs"]["Tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    result = ok(derive(Tree), {"x": {"value": 1, "children": [{"value": 2}]}})
    assert result.call["x"] == Tree(value=1, children=[Tree(value=2)])
    assert errors(derive(Tree), {"x": {"value": 1, "children": [{"value": "2"}]}}) == [
        "x.children.0.value: Input should be a valid integer"
    ]


def test_wire_names_are_parameter_names_verbatim() -> None:
    @tool("t", "T", mutating=False)
    def f(instanceId: str, instance_id: str) -> None: ...

    (d,) = definitions_from(f)
    assert list(d.input_schema["properties"]) == ["instanceId", "instance_id"]
    assert errors(d, {"instance_id": "a"}) == ["instanceId: Missing required field"]


# ------------------------------------------------------------------------------- JSON semantics
@pytest.mark.parametrize(
    ("annotation", "value", "expected"),
    [
        (int, 5, 5),
        (int, 5.0, 5),  # JSON Schema: 5.0 is an integer; it arrives as 5
        (int, -(2**70), -(2**70)),
        (float, 5, 5.0),
        (float, 2.5, 2.5),
        (str, "", ""),
        (bool, False, False),
        (None, None, None),
        (int | None, None, None),
        (Literal[1, "a"], "a", "a"),
        (Literal[1, "a"], 1.0, 1),
        (Color, "blue", Color.BLUE),
        (Color, Color.BLUE, Color.BLUE),  # Python callers may pass members
        (Level, 2, Level.HIGH),
        (Shape, "circle", Shape.CIRCLE),
        (list[int], [1, 2.0], [1, 2]),
        (tuple[int, str], [1, "a"], (1, "a")),
        (dict[str, float], {"a": 1}, {"a": 1.0}),
        (Point, {"x": 1}, {"x": 1}),
        (Any, {"free": ["form"]}, {"free": ["form"]}),
    ],
)
def test_accepted_values(annotation: Any, value: Any, expected: Any) -> None:
    result = accepts(annotation, value)
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize(
    ("annotation", "value", "message"),
    [
        (int, "5", "x: Input should be a valid integer"),
        (int, True, "x: Input should be a valid integer"),
        (int, 5.5, "x: Input should be a valid integer"),
        (int, None, "x: Input should be a valid integer"),
        (float, "2.5", "x: Input should be a valid number"),
        (float, False, "x: Input should be a valid number"),
        (float, float("nan"), "x: Input should be a finite number"),
        (float, float("inf"), "x: Input should be a finite number"),
        (str, 5, "x: Input should be a valid string"),
        (str, b"abc", "x: Input should be a valid string"),
        (bool, 1, "x: Input should be a valid boolean"),
        (bool, "true", "x: Input should be a valid boolean"),
        (None, 0, "x: Input should be None"),
        (Literal[1, 2], True, "x: Input should be 1 or 2"),
        (Literal[1, 2], "1", "x: Input should be 1 or 2"),
        (Literal[True], 1, "x: Input should be True"),
        (Literal["a", "b"], "c", "x: Input should be 'a' or 'b'"),
        (Color, "green", "x: Input should be 'red' or 'blue'"),
        (Level, "1", "x: Input should be 1 or 2"),
        (Level, True, "x: Input should be 1 or 2"),
        (Level, 3, "x: Input should be 1 or 2"),
        (list[int], (1, 2), "x: Input should be an array"),
        (list[int], "12", "x: Input should be an array"),
        (dict[str, int], [["a", 1]], "x: Input should be an object"),
        (Point, [1], "x: Input should be an object"),
        (Tag, "name", "x: Input should be an object"),
        (tuple[int, str], [1], "x.1: Missing required field"),
        (Annotated[int, Field(ge=1, le=10)], 11, "x: Input should be less than or equal to 10"),
        (Annotated[str, Field(min_length=2)], "a", "x: String should have at least 2 characters (got 1)"),
    ],
)
def test_rejected_values(annotation: Any, value: Any, message: str) -> None:
    assert rejects(annotation, value) == [message]


def test_union_errors_have_no_branch_labels() -> None:
    assert rejects(int | str, [1]) == ["x: Input should be a valid integer", "x: Input should be a valid string"]
    assert accepts(int | str, "5") == "5" and accepts(int | str, 5) == 5
    assert rejects(list[int | str], [1, None]) == [
        "x.1: Input should be a valid integer",
        "x.1: Input should be a valid string",
    ]


def test_mapping_input_is_accepted_and_non_objects_are_rejected() -> None:
    d = derive(int)
    assert d.validator(MappingProxyType({"x": 1})).call == {"x": 1}
    assert errors(d, [("x", 1)]) == ["Input should be an object"]


# -------------------------------------------------------------------- clamps vs rejecting bounds
def test_clamp_moves_values_into_the_range_and_never_rejects() -> None:
    d = derive(Annotated[int, Param("Page", clamp=(1, 1000))], 1)
    assert d.input_schema["properties"]["x"] == {
        "type": "integer",
        "description": "Page",
        "default": 1,
        "minimum": 1,
        "maximum": 1000,
    }
    assert ok(d, {"x": 5000}).wire == {"x": 1000}
    assert ok(d, {"x": -3}).call == {"x": 1}
    assert ok(d, {"x": 7.0}).wire == {"x": 7}
    assert errors(d, {"x": "5000"}) == ["x: Input should be a valid integer"]  # validation still runs first


def test_clamp_on_floats_and_optionals() -> None:
    d = derive(Annotated[float | None, Param(clamp=(0, 1))], None)
    assert ok(d, {"x": 3}).wire == {"x": 1.0}
    assert ok(d, {"x": -0.5}).wire == {"x": 0.0}
    assert ok(d, {}).wire == {"x": None}
    assert d.input_schema["properties"]["x"]["type"] == ["number", "null"]


def test_rejecting_bounds_and_clamps_compose() -> None:
    d = derive(Annotated[int, Field(ge=0), Param(clamp=(10, 20))])
    assert errors(d, {"x": -1}) == ["x: Input should be greater than or equal to 0"]
    assert ok(d, {"x": 3}).wire == {"x": 10}
    assert ok(d, {"x": 99}).wire == {"x": 20}


# ------------------------------------------------------------------------------ object params
def test_open_object_parameter() -> None:
    d = derive(Annotated[dict, Param("Anything", type="object")])
    assert d.input_schema["properties"]["x"] == {
        "type": "object",
        "additionalProperties": True,
        "description": "Anything",
    }
    assert ok(d, {"x": {"post_id": 1, "nested": {"a": [1]}}}).call["x"] == {"post_id": 1, "nested": {"a": [1]}}
    assert errors(d, {"x": [1, 2]}) == ["x: Input should be an object"]


def test_shaped_object_parameter() -> None:
    @tool("update_post", "Update fields on a post", mutating=False)
    def update_post(
        post_id: int,
        updates: Annotated[
            dict[str, Any],
            Param(
                "Fields to update",
                type="object",
                properties={
                    "title": {"type": "string"},
                    "body": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                required_properties=["title"],
            ),
        ],
    ) -> dict[str, Any]:
        return {"post_id": post_id, "updates": updates}

    (d,) = definitions_from(update_post)
    assert d.input_schema["properties"]["updates"] == {
        "type": "object",
        "description": "Fields to update",
        "properties": {
            "title": {"type": "string"},
            "body": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["title"],
        "additionalProperties": False,
    }
    good = ok(d, {"post_id": 1, "updates": {"title": "T", "tags": ["a"]}})
    assert d.invoke(good.call, ToolContext.cli()) == {"post_id": 1, "updates": {"title": "T", "tags": ["a"]}}
    assert errors(d, {"post_id": 1, "updates": {"body": 5, "tags": ["a", 2], "colour": "x"}}) == [
        "updates.body: Input should be a valid string",
        "updates.colour: Unknown property 'colour'; accepted properties: title, body, tags",
        "updates.tags.1: Input should be a valid string",
        "updates.title: Missing required field",
    ]


def test_nullable_object_parameter_and_required_only_shape() -> None:
    d = derive(Annotated[dict | None, Param(type="object", required_properties=["id"])], None)
    assert d.input_schema["properties"]["x"] == {
        "type": ["object", "null"],
        "additionalProperties": True,
        "required": ["id"],
        "default": None,
    }
    assert ok(d, {}).wire == {"x": None}
    assert ok(d, {"x": {"id": 1, "more": True}}).wire == {"x": {"id": 1, "more": True}}
    assert errors(d, {"x": {}}) == ["x.id: Missing required field"]


# ----------------------------------------------------------------------- errors: paths, order
def test_nested_paths_every_error_and_stable_order() -> None:
    @tool("find", "Find", mutating=False)
    def find(query: str, filters: Filters, limit: int = 10) -> None: ...

    (d,) = definitions_from(find)
    bad = {"limit": "ten", "filters": {"tags": ["a", "b", 3], "colour": "red", "items": [{"weight": "x"}]}, "zz": 1}
    expected = [
        "query: Missing required field",
        "filters.tags.2: Input should be a valid string",
        "filters.items.0.name: Missing required field",
        "filters.items.0.weight: Input should be a valid number",
        "filters.colour: Unknown property 'colour'; accepted properties: tags, color, items",
        "limit: Input should be a valid integer",
        "zz: Unknown property 'zz'; accepted properties: query, filters, limit",
    ]
    assert errors(d, bad) == expected
    assert errors(d, dict(reversed(list(bad.items())))) == expected
    with pytest.raises(InvalidArguments) as caught:
        d.validator(bad)
    assert (
        caught.value.errors[1].path == "filters.tags.2"
        and caught.value.errors[1].message == "Input should be a valid string"
    )
    assert str(caught.value).startswith("query: Missing required field; filters.tags.2:")


def test_tool_without_parameters_rejects_every_property() -> None:
    @tool("ping", "Ping", mutating=False)
    def ping() -> str:
        return "pong"

    (d,) = definitions_from(ping)
    assert d.input_schema == {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
    assert errors(d, {"a": 1}) == ["a: Unknown property 'a'; this object takes no properties"]
    assert ok(d, {}).call == {}


# ---------------------------------------------------------------------------- wire and call
def test_scalar_tools_share_one_dict_and_others_get_json_wire() -> None:
    scalar = derive(int).validator({"x": 1})
    assert scalar.wire is scalar.call
    rich = ok(derive(Filters), {"x": {"color": "red", "items": [{"name": "a"}]}})
    assert rich.call["x"] == Filters(color=Color.RED, items=[Tag(name="a")])
    assert rich.wire == {"x": {"tags": [], "color": "red", "items": [{"name": "a", "weight": 1.0}]}}


def test_default_containers_are_not_shared_between_calls() -> None:
    d = derive(list[str], [])
    first = d.validator({})
    first.call["x"].append("changed")
    assert d.validator({}).call == {"x": []}


def test_model_config_is_respected_where_it_says_something() -> None:
    class Open(BaseModel):
        model_config = ConfigDict(extra="allow")
        a: int

    class Strict(BaseModel):
        model_config = ConfigDict(strict=True)
        a: int

    class Aliased(BaseModel):
        model_config = ConfigDict(populate_by_name=True)
        user_id: int = Field(alias="userId")

    open_ = derive(Open)
    assert (
        "additionalProperties" not in open_.input_schema["properties"]["x"]
        or open_.input_schema["properties"]["x"]["additionalProperties"] is True
    )
    assert ok(open_, {"x": {"a": 1, "b": 2}}).call["x"].b == 2
    assert ok(derive(Strict), {"x": {"a": 1}}).call["x"] == Strict(a=1)  # a JSON object is fine
    aliased = derive(Aliased)
    assert aliased.input_schema["properties"]["x"]["properties"] == {"userId": {"type": "integer"}}
    result = ok(aliased, {"x": {"userId": 5}})
    assert result.wire == {"x": {"userId": 5}} and result.call["x"].user_id == 5
    assert errors(aliased, {"x": {"userId": 1, "extra": 1}}) == [
        "x.extra: Unknown property 'extra'; accepted properties: userId"
    ]


def test_model_validators_and_computed_fields_keep_working() -> None:
    class Named(BaseModel):
        name: str

        @field_validator("name")
        @classmethod
        def title_case(cls, value: str) -> str:
            return value.title()

        @computed_field  # type: ignore[prop-decorator]
        @property
        def length(self) -> int:
            return len(self.name)

    result = ok(derive(Named), {"x": {"name": "ada lovelace"}})
    assert result.call["x"].name == "Ada Lovelace" and result.wire == {"x": {"name": "Ada Lovelace"}}
    assert Named.model_validate({"name": "x", "other": 1}).name == "X"  # the class itself is untouched


def test_classes_nested_in_models_are_closed_too() -> None:
    @dataclass
    class Size:
        w: int

    class Holder(BaseModel):
        point: Point
        size: Size

    d = derive(Holder)
    schema = d.input_schema["properties"]["x"]["properties"]
    assert schema["point"]["additionalProperties"] is False and schema["size"]["additionalProperties"] is False
    assert errors(d, {"x": {"point": {"x": 1, "z": 0}, "size": {"w": 1, "h": 2}}}) == [
        "x.point.z: Unknown property 'z'; accepted properties: x, y",
        "x.size.h: Unknown property 'h'; accepted properties: w",
    ]


def test_dataclass_parameters() -> None:
    @dataclass
    class Box:
        width: int
        label: str = ""

    d = derive(Box)
    assert d.input_schema["properties"]["x"]["additionalProperties"] is False
    assert ok(d, {"x": {"width": 2}}).call["x"] == Box(width=2)
    assert errors(d, {"x": {"width": "2", "depth": 1}}) == [
        "x.width: Input should be a valid integer",
        "x.depth: Unknown property 'depth'; accepted properties: width, label",
    ]


# ---------------------------------------------------------------------------- raw-schema tools
NOTE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 1},
        "priority": {"type": ["integer", "null"], "default": None},
        "labels": {"type": "array", "items": {"enum": ["home", "work"]}, "default": []},
        "meta": {
            "type": "object",
            "properties": {"source": {"type": "string", "format": "uri"}, "rank": {"type": "number"}},
            "required": ["source"],
            "additionalProperties": False,
        },
    },
    "required": ["title"],
    "additionalProperties": False,
}


def handler(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return {"args": args, "channel": ctx.channel}


def test_raw_schema_tool_validates_and_fills_defaults() -> None:
    d = definition_from_schema("add_note", "Add a note", NOTE_SCHEMA, handler, scopes=["notes:write"], mutating=True)
    assert d.input_schema == NOTE_SCHEMA and d.input_schema is not NOTE_SCHEMA and d.is_async is False
    result = d.validator({"title": "x", "meta": {"source": "not a uri"}})  # format is not asserted
    assert result.wire == {"title": "x", "meta": {"source": "not a uri"}, "priority": None, "labels": []}
    assert d.validator(result.wire) == result
    assert d.invoke(result.call, ToolContext.cli())["channel"] == "cli"
    assert d.scopes == ("notes:write",) and d.mutating


def test_raw_schema_errors_have_paths_and_plain_messages() -> None:
    d = definition_from_schema("add_note", "Add a note", NOTE_SCHEMA, handler)
    bad = {"priority": "high", "labels": ["home", "gym"], "meta": {"rank": "1", "x": 1}, "zz": 0}
    assert errors(d, bad) == [
        "labels.1: Input should be 'home' or 'work'",
        "meta.rank: Input should be a valid number",
        "meta.source: Missing required field",
        "meta.x: Unknown property 'x'; accepted properties: source, rank",
        "priority: Input should be a valid integer or null",
        "title: Missing required field",
        "zz: Unknown property 'zz'; accepted properties: title, priority, labels, meta",
    ]
    assert errors(d, [1]) == ["Input should be an object"]


def test_raw_schema_without_type_and_async_handlers() -> None:
    async def ahandler(args: dict[str, Any], ctx: ToolContext) -> int:
        return len(args)

    d = definition_from_schema(
        "count", "Count", {"properties": {"a": {"type": "integer"}}}, ahandler, output_schema={"type": "integer"}
    )
    assert d.input_schema["type"] == "object" and d.is_async and d.output_schema == {"type": "integer"}
    assert asyncio.run(d.invoke(d.validator({"a": 1, "b": 2}).call, ToolContext.cli())) == 2  # open object


@pytest.mark.parametrize(
    ("schema", "needle"),
    [
        (
            {"type": "object", "properties": {"a": {"type": "strin"}}},
            "invalid JSON Schema 2020-12 at properties/a/type",
        ),
        ({"type": "object", "required": "a"}, "'a' is not of type 'array'"),
        ({"type": "array"}, 'use "type": "object"'),
        ([], "must be a dict"),
        ({"type": "object", "properties": {"n": {"type": "integer", "default": "one"}}}, "default of property 'n'"),
    ],
)
def test_raw_schema_declaration_errors(schema: Any, needle: str) -> None:
    with pytest.raises(DeclarationError) as caught:
        definition_from_schema("t", "T", schema, handler)
    assert needle in str(caught.value)


def test_raw_schema_checks_output_schema_and_handler() -> None:
    with pytest.raises(DeclarationError, match="output_schema"):
        definition_from_schema("t", "T", {}, handler, output_schema={"type": 5})
    with pytest.raises(DeclarationError, match="handler must be callable"):
        definition_from_schema("t", "T", {}, "nope")  # type: ignore[arg-type]
    with pytest.raises(DeclarationError, match="description must be a non-empty string"):
        definition_from_schema("t", "", {}, handler)
    with pytest.raises(DeclarationError, match="needs a name and a description"):
        definition_from_schema("t", None, {}, handler)  # type: ignore[arg-type]
