"""``@tool``: naming, options, declaration errors, context injection, sync/async, scanning."""

import asyncio
import functools
import inspect
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from milpa_chat.errors import DeclarationError
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.declare import Param, ToolDeclaration, definitions_from, tool
from milpa_chat.runtime.definition import ToolDefinition, VerifyPolicy
from milpa_chat.runtime.result import ToolResult


def declaration(fn: Any) -> ToolDeclaration:
    found = fn.__milpa_tool__
    assert isinstance(found, ToolDeclaration)
    return found


def only(obj: object) -> ToolDefinition:
    (definition,) = definitions_from(obj)
    return definition


def run(definition: ToolDefinition, args: dict[str, Any], ctx: ToolContext | None = None) -> Any:
    validated = definition.validator(args)
    out = definition.invoke(validated.call, ctx or ToolContext.cli())
    return asyncio.run(out) if definition.is_async else out


# ------------------------------------------------------------------------------ naming, options
def test_bare_decorator_takes_name_and_first_docstring_paragraph() -> None:
    def add(a: int, b: int) -> int:
        """Add two
        whole numbers.

        Longer text that is not part of the description.
        """
        return a + b

    decorated = tool(add)
    assert decorated is add and add(2, 3) == 5  # returned unchanged
    d = only(add)
    assert d.name == "add" and d.description == "Add two whole numbers."
    assert d.input_schema == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    assert d.output_schema == {"type": "integer"}
    assert run(d, {"a": 2, "b": 3}) == 5


def test_called_decorator_sets_every_option() -> None:
    policy = VerifyPolicy(approver_scopes=("ops",))

    @tool(
        "delete_note",
        "Delete a note",
        scopes=["notes:write"],
        mutating=True,
        confirm=True,
        timeout=5,
        version="2.1",
        verify=policy,
        tags=("notes", "danger"),
    )
    def delete(note_id: int) -> None:
        return None

    d = only(delete)
    assert (d.name, d.description, d.scopes, d.mutating, d.confirm) == (
        "delete_note",
        "Delete a note",
        ("notes:write",),
        True,
        True,
    )
    assert (d.timeout, d.version, d.verify, d.tags) == (5.0, "2.1", policy, ("notes", "danger"))
    assert d.output_schema is None and d.is_async is False
    assert d.extra["qualname"].endswith("delete")


def test_keyword_name_and_empty_parentheses() -> None:
    @tool(name="shout", mutating=False)
    def speak(text: str) -> str:
        """Say it loud."""
        return text.upper()

    @tool(mutating=False)
    def whisper(text: str) -> str:
        """Say it softly."""
        return text.lower()

    assert only(speak).name == "shout" and only(whisper).name == "whisper"


def test_parameter_descriptions_from_param_and_docstrings() -> None:
    @tool(mutating=False)
    def google(query: str, page: Annotated[int, Param("Page number")] = 1, size: int = 10) -> None:
        """Search.

        Args:
            query: Text to look for,
                anywhere in the note.
            page (int): Ignored, Param wins.
            size: How many per page.

        Returns:
            query: not a parameter description.

        Raises:
            ValueError: never.
        """

    @tool(mutating=False)
    def numpy_style(query: str) -> None:
        """Search.

        Parameters
        ----------
        query : str
            Text to look for.
        """

    props = only(google).input_schema["properties"]
    assert props["query"]["description"] == "Text to look for, anywhere in the note."
    assert props["page"]["description"] == "Page number"
    assert props["size"]["description"] == "How many per page." and only(google).description == "Search."
    assert only(numpy_style).input_schema["properties"]["query"]["description"] == "Text to look for."


def test_examples_and_string_annotations() -> None:
    @tool("t", "d", mutating=False)
    def f(city: "Annotated[str, Param('City', examples=['Lima', 'Quito'])]", n: "int" = 2) -> "list[str]":
        return [city] * n

    d = only(f)
    assert d.input_schema["properties"]["city"] == {
        "type": "string",
        "description": "City",
        "examples": ["Lima", "Quito"],
    }
    assert d.output_schema == {"type": "array", "items": {"type": "string"}}


@pytest.mark.parametrize(
    ("returns", "expected"),
    [
        (ToolResult, None),
        (dict, None),
        (dict[str, Any], None),
        (Any, None),
        (None, None),
        (ToolResult | None, None),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (bool | None, {"type": ["boolean", "null"]}),
    ],
)
def test_output_schema_from_return_annotation(returns: Any, expected: Any) -> None:
    def f(x: int) -> None:
        """Doc."""

    f.__annotations__["return"] = returns
    assert only(tool(f)).output_schema == expected


def test_output_schema_of_a_model_is_inlined_and_an_unknown_one_is_skipped() -> None:
    class Note(BaseModel):
        id: int
        text: str

    @tool("get", "Get", mutating=False)
    def get(note_id: int) -> Note:
        return Note(id=note_id, text="x")

    @tool("other", "Other", mutating=False)
    def other() -> "NotDefinedAnywhere":  # type: ignore[name-defined]  # noqa: F821
        return None

    assert only(get).output_schema == {
        "type": "object",
        "title": "Note",
        "properties": {"id": {"type": "integer"}, "text": {"type": "string"}},
        "required": ["id", "text"],
    }
    assert only(other).output_schema is None and only(other).input_schema["properties"] == {}


# --------------------------------------------------------------------------- declaration errors
def declaration_error(build: Callable[[], Any]) -> str:
    with pytest.raises(DeclarationError) as caught:
        build()
    return str(caught.value)


def test_missing_description_names_the_fix() -> None:
    def nodoc(x: int) -> None: ...

    message = declaration_error(lambda: tool(nodoc))
    assert "'nodoc' has no description" in message and "docstring" in message


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"name": "has space"}, "letters, digits"),
        ({"name": "x", "description": ""}, "non-empty string"),
        ({"name": "x", "scopes": "notes:read"}, "scopes=['notes:read']"),
        ({"name": "x", "tags": [1]}, "list of non-empty strings"),
        ({"name": "x", "timeout": 0}, "positive number of seconds"),
        ({"name": "x", "timeout": True}, "positive number of seconds"),
        ({"name": "x", "mutating": "yes"}, "mutating= must be True or False"),
        ({"name": "x", "version": 2}, "version= must be a string"),
        ({"name": "x", "verify": {"quorum": 2}}, "VerifyPolicy"),
    ],
)
def test_bad_options(kwargs: dict[str, Any], needle: str) -> None:
    assert needle in declaration_error(lambda: tool(**kwargs))


class Opaque:
    pass


def _f_varargs(*items: int) -> None:
    """D."""


def _f_kwargs(**options: str) -> None:
    """D."""


def _f_posonly(a: int, /) -> None:
    """D."""


def _f_unannotated(a) -> None:
    """D."""


def _f_class(thing: Opaque) -> None:
    """D."""


def _f_callable(fn: Callable[[int], int]) -> None:
    """D."""


def _f_object_default(x: Any = object()) -> None:  # noqa: B008
    """D."""


def _f_default_mismatch(x: int = "1") -> None:  # type: ignore[assignment]
    """D."""


def _f_none_default(tags: list[str] = None) -> None:  # type: ignore[assignment]  # noqa: RUF013
    """D."""


def _f_unresolvable(x: "Missing") -> None:  # type: ignore[name-defined]  # noqa: F821
    """D."""


def _f_two_params(x: Annotated[int, Param("a"), Param("b")]) -> None:
    """D."""


def _f_inner_param(x: Annotated[int, Param("a")] | None = None) -> None:
    """D."""


def _f_field_default(x: Annotated[int, Field(default=3)]) -> None:
    """D."""


def _f_clamp_str(x: Annotated[str, Param(clamp=(1, 2))]) -> None:
    """D."""


def _f_clamp_fraction(x: Annotated[int, Param(clamp=(0.5, 2))]) -> None:
    """D."""


def _f_object_on_int(x: Annotated[int, Param(type="object")]) -> None:
    """D."""


def _f_bad_property_schema(x: Annotated[dict, Param(type="object", properties={"a": {"type": "strin"}})]) -> None:
    """D."""


def _f_generator(x: int) -> typing.Iterator[int]:
    """D."""
    yield x


def _f_two_contexts(a: ToolContext, b: ToolContext) -> None:
    """D."""


class _PlainTypedDict(typing.TypedDict):
    x: int


def _f_typing_typeddict(p: _PlainTypedDict) -> None:
    """D."""


@pytest.mark.parametrize(
    ("function", "needles"),
    [
        (_f_varargs, ["'*items'", "named, annotated parameter"]),
        (_f_kwargs, ["'**options'", "use a `dict` parameter"]),
        (_f_posonly, ["'a'", "remove the `/`"]),
        (_f_unannotated, ["'a' has no type annotation", "`a: str`"]),
        (_f_class, ["'thing'", "no JSON schema describes the type Opaque", "Use a JSON type"]),
        (_f_callable, ["'fn'", "no JSON schema describes", "Use a JSON type"]),
        (_f_object_default, ["'x'", "is not JSON", "use a JSON default"]),
        (_f_default_mismatch, ["'x'", "does not match the annotation", "Input should be a valid integer"]),
        (_f_none_default, ["'tags'", "default None", "`X | None = None`"]),
        (_f_unresolvable, ["'x'", "cannot resolve the annotation 'Missing'", "define or import"]),
        (_f_two_params, ["'x'", "use one Param"]),
        (_f_inner_param, ["'x'", "on the outside"]),
        (_f_field_default, ["'x'", "give the default in the signature"]),
        (_f_clamp_str, ["'x'", "clamp only int or float parameters"]),
        (_f_clamp_fraction, ["'x'", "use integer bounds"]),
        (_f_object_on_int, ["'x'", "annotate it as `dict`"]),
        (_f_bad_property_schema, ["'x'", "invalid JSON Schema 2020-12", "'strin' is not valid"]),
        (_f_generator, ["generator function", "return it"]),
        (_f_two_contexts, ["'b'", "only one parameter may receive the ToolContext"]),
        (_f_typing_typeddict, ["'p'", "from typing_extensions import TypedDict"]),
    ],
)
def test_declaration_errors_name_the_parameter_and_the_fix(function: Any, needles: list[str]) -> None:
    message = declaration_error(lambda: tool(function))
    for needle in needles:
        assert needle in message, message


@pytest.mark.parametrize(
    ("build", "needle"),
    [
        (lambda: Param(clamp=(5, 1)), "low <= high"),
        (lambda: Param(clamp=(1,)), "pair of finite numbers"),  # type: ignore[arg-type]
        (lambda: Param(clamp=(True, 3)), "pair of finite numbers"),
        (lambda: Param(clamp=(0, float("inf"))), "pair of finite numbers"),
        (lambda: Param(type="array"), "only type='object'"),
        (lambda: Param(properties={"a": "string"}), "map property names to JSON schemas"),
        (lambda: Param(properties={"a": {}}, required_properties=["b"]), "not in properties"),
        (lambda: Param(required_properties="a"), "list of names"),  # type: ignore[arg-type]
        (lambda: Param(examples="x"), "list of example values"),  # type: ignore[arg-type]
        (lambda: Param(3), "Param(description=...) must be a string"),  # type: ignore[arg-type]
    ],
)
def test_param_errors(build: Callable[[], Any], needle: str) -> None:
    assert needle in declaration_error(build)


def test_tool_refuses_classes_and_bound_methods() -> None:
    class Thing:
        def method(self, x: int) -> None:
            """D."""

    assert "not <class" in declaration_error(lambda: tool(Thing))
    assert "where it is defined" in declaration_error(lambda: tool(Thing().method))


# ---------------------------------------------------------------------------- context, async
def test_context_parameter_is_injected_and_not_in_the_schema() -> None:
    @tool("who", "Who calls", mutating=False)
    def who(greeting: str, ctx: ToolContext) -> str:
        return f"{greeting} {ctx.principal}"

    @tool("maybe", "Optional context", mutating=False)
    async def maybe(*, context: ToolContext | None = None, n: int = 1) -> str | None:
        return context.channel if context else None

    d = only(who)
    assert list(d.input_schema["properties"]) == ["greeting"] and d.input_schema["required"] == ["greeting"]
    assert run(d, {"greeting": "hi"}, ToolContext.telegram(1, 2)) == "hi telegram:2"
    assert declaration(who).context_param == "ctx"
    m = only(maybe)
    assert list(m.input_schema["properties"]) == ["n"] and m.is_async
    assert run(m, {}) == "cli"


def test_context_cannot_be_passed_as_an_argument() -> None:
    @tool("who", "Who calls", mutating=False)
    def who(ctx: ToolContext) -> str:
        return str(ctx.principal)

    from milpa_chat.runtime.definition import InvalidArguments

    with pytest.raises(InvalidArguments) as caught:
        only(who).validator({"ctx": {"principal": "root"}})
    assert str(caught.value.errors[0]) == "ctx: Unknown property 'ctx'; this object takes no properties"


def test_async_detection_through_wrappers_and_partials() -> None:
    async def coro(x: int) -> int:
        return x

    def logged(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        return wrapper

    class Caller:
        async def __call__(self, x: int) -> int:
            return x

    def plain(x: int, y: int) -> int:
        return x + y

    sync_partial = functools.partial(plain, y=1)
    async_partial = functools.partial(coro)
    cases: list[tuple[Any, bool]] = [(coro, True), (logged(coro), True), (logged(plain), False), (plain, False)]
    cases += [(async_partial, True), (sync_partial, False), (Caller(), True)]
    for index, (fn, expected) in enumerate(cases):
        decorated = tool(f"t{index}", "D")(fn)
        assert declaration(decorated).is_async is expected, fn
    wrapped = only(tool("w", "W")(logged(coro)))
    assert wrapped.input_schema["required"] == ["x"] and run(wrapped, {"x": 4}) == 4
    assert run(only(tool("p", "P")(sync_partial)), {"x": 4}) == 5


# ------------------------------------------------------------------------------------ scanning
class NoteTools:
    """Tools over a list of notes; ``self`` is bound when scanned."""

    def __init__(self) -> None:
        self.notes = ["milk"]

    @tool("list_notes", "List notes", scopes=["notes:read"], mutating=False)
    def list_notes(self, page: Annotated[int, Param("Page number", clamp=(1, 1000))] = 1) -> ToolResult:
        return ToolResult.success({"notes": self.notes, "page": page})

    @tool("add_note", "Add a note", mutating=True)
    async def add_note(self, text: str) -> int:
        self.notes.append(text)
        return len(self.notes)

    @staticmethod
    @tool("static_below", "Static, decorator below", mutating=False)
    def static_below(x: int) -> int:
        return x * 2

    @tool("static_above", "Static, decorator above", mutating=False)
    @staticmethod
    def static_above(x: int) -> int:
        return x * 3

    @classmethod
    @tool("class_below", "Class method, decorator below", mutating=False)
    def class_below(cls, x: int) -> str:
        return f"{cls.__name__}:{x}"

    @tool("class_above", "Class method, decorator above", mutating=False)
    @classmethod
    def class_above(cls, x: int) -> str:
        return f"{cls.__name__}:{x}"

    @tool("hidden", "Private, skipped", mutating=False)
    def _hidden(self) -> None: ...

    def helper(self) -> None: ...


ORDER = ["list_notes", "add_note", "static_below", "static_above", "class_below", "class_above"]


def test_scanning_an_instance_binds_self_keeps_order_and_skips_private() -> None:
    tools = NoteTools()
    found = definitions_from(tools)
    assert [d.name for d in found] == ORDER
    by_name = {d.name: d for d in found}
    listed = run(by_name["list_notes"], {"page": 5000})
    assert listed.data == {"notes": ["milk"], "page": 1000}  # clamped, not rejected
    assert run(by_name["add_note"], {"text": "eggs"}) == 2 and tools.notes == ["milk", "eggs"]
    assert by_name["add_note"].is_async and by_name["add_note"].mutating
    assert run(by_name["static_below"], {"x": 2}) == 4 and run(by_name["static_above"], {"x": 2}) == 6
    assert run(by_name["class_below"], {"x": 1}) == run(by_name["class_above"], {"x": 1}) == "NoteTools:1"
    assert "self" not in by_name["list_notes"].input_schema["properties"]
    assert list(by_name["class_above"].input_schema["properties"]) == ["x"]


def test_scanning_a_class_takes_static_and_class_methods_only() -> None:
    class Namespace:
        @staticmethod
        @tool("s", "Static", mutating=False)
        def s(x: int) -> int:
            return x

        @tool("c", "Class", mutating=False)
        @classmethod
        def c(cls, x: int) -> int:
            return x

    assert [d.name for d in definitions_from(Namespace)] == ["s", "c"]
    message = declaration_error(lambda: definitions_from(NoteTools))
    assert "'list_notes'" in message and "pass an instance" in message


def test_inherited_tools_come_first_and_overrides_win() -> None:
    class Base:
        @tool("first", "First", mutating=False)
        def first(self) -> str:
            return "base"

        @tool("second", "Second", mutating=False)
        def second(self) -> str:
            return "base"

    class Child(Base):
        @tool("third", "Third", mutating=False)
        def third(self) -> str:
            return "child"

        @tool("first", "First, overridden", mutating=False)
        def first(self) -> str:
            return "child"

        def second(self) -> str:  # no longer a tool
            return "child"

    found = definitions_from(Child())
    assert [d.name for d in found] == ["first", "third"]
    assert found[0].description == "First, overridden" and run(found[0], {}) == "child"


def test_single_functions_and_bound_methods() -> None:
    tools = NoteTools()
    assert only(tools.list_notes).name == "list_notes"
    assert run(only(tools.list_notes), {}).data["page"] == 1
    assert only(NoteTools.static_above).name == "static_above"
    assert only(NoteTools.class_below).name == "class_below"
    message = declaration_error(lambda: definitions_from(NoteTools.list_notes))
    assert "is a method" in message or "instance method" in message
    assert definitions_from(tools.helper) == []


def test_first_parameter_taken_for_an_argument_is_reported_when_bound() -> None:
    class Odd:
        @tool("odd", "Odd", mutating=False)
        def odd(this: int, x: int) -> int:  # type: ignore[misc]
            return x

    message = declaration_error(lambda: definitions_from(Odd()))
    assert "name the first parameter `self`" in message


def test_duplicate_tool_names_in_one_object() -> None:
    class Twice:
        @tool("same", "One", mutating=False)
        def one(self) -> None: ...

        @tool("same", "Two", mutating=False)
        def two(self) -> None: ...

    message = declaration_error(lambda: definitions_from(Twice()))
    assert "Two tools are named 'same'" in message and "rename one" in message


def test_scanning_a_module_keeps_its_own_tools_in_order() -> None:
    module = types.ModuleType("notes_module")
    module.__dict__["imported"] = NoteTools.static_above  # defined elsewhere: skipped
    source = """
from milpa_chat.runtime.declare import tool

@tool("zeta", "Z", mutating=False)
def zeta(x: int) -> int:
    return x

@tool("alpha", "A", mutating=False)
async def alpha(x: int) -> int:
    return x

@tool("private", "P", mutating=False)
def _private() -> None: ...

def helper() -> None: ...
"""
    exec(compile(source, "notes_module.py", "exec"), module.__dict__)
    found = definitions_from(module)
    assert [d.name for d in found] == ["zeta", "alpha"] and [d.is_async for d in found] == [False, True]


def test_definitions_are_independent_copies() -> None:
    tools = NoteTools()
    one, two = definitions_from(tools)[0], definitions_from(tools)[0]
    one.input_schema["properties"]["page"]["description"] = "changed"
    assert two.input_schema["properties"]["page"]["description"] == "Page number"
    assert inspect.ismethod(NoteTools().list_notes)
