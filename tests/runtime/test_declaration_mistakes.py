"""Developer mistakes fail when the tool is declared or registered, with the fix in the message."""

from __future__ import annotations

import math
from typing import Annotated, Any

import pytest

from milpa_chat import Param, ToolRegistry, tool
from milpa_chat.errors import DeclarationError, InvalidOptionError, MilpaError
from milpa_chat.runtime.definition import VerifyPolicy

OBJECT = {"type": "object"}


def gen_handler(args: dict[str, Any], ctx: Any) -> Any:
    yield args


class Methods:
    def handle(self, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        return args

    def wrong(self, x: int) -> int:
        return x


@pytest.mark.parametrize(
    ("handler", "needle"),
    [
        (lambda args: 1, "<lambda>(args) cannot be called as handler(args, ctx)"),
        (lambda *, args, ctx: 1, "cannot be called as handler(args, ctx)"),
        (Methods().wrong, "Methods.wrong(x) cannot be called as handler(args, ctx)"),
        (gen_handler, "generator function"),
        ("not callable", "must be callable as handler(args, ctx)"),
    ],
)
def test_a_handler_that_cannot_take_args_and_ctx_fails_at_registration(handler: Any, needle: str) -> None:
    registry = ToolRegistry()
    with pytest.raises(DeclarationError) as caught:
        registry.register("t", "A tool", OBJECT, handler, mutating=False)
    assert needle in str(caught.value)
    assert "def handler(args, ctx)" in str(caught.value) or "generator" in needle or "callable" in needle
    assert "t" not in registry  # nothing half-registered


@pytest.mark.parametrize(
    "handler",
    [
        lambda args, ctx: args,
        lambda args, ctx=None: args,
        lambda *a: a,
        lambda args, ctx, *, extra=1: args,
        Methods().handle,
        print,  # a builtin: its signature is trusted
    ],
)
def test_handlers_that_can_take_args_and_ctx_register(handler: Any) -> None:
    registry = ToolRegistry()
    registry.register("t", "A tool", OBJECT, handler, mutating=False)
    assert "t" in registry


async def test_a_good_hand_registered_handler_still_runs() -> None:
    registry = ToolRegistry()
    registry.register(
        "echo",
        "Echo",
        {"type": "object", "properties": {"x": {"type": "integer"}}},
        lambda args, ctx: {"x": args["x"], "principal": ctx.principal},
        mutating=False,
    )
    result = await registry.call("echo", {"x": 3})
    assert result.success and result.data == {"x": 3, "principal": "local-shell"}


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"quorum": 0}, InvalidOptionError, "VerifyPolicy(quorum=...) must be at least 1"),
        ({"quorum": -3}, InvalidOptionError, "at least 1"),
        ({"quorum": "2"}, DeclarationError, "must be a whole number such as 2"),
        ({"quorum": True}, DeclarationError, "must be a whole number"),
        ({"quorum": 1.5}, DeclarationError, "must be a whole number"),
        ({"expires_in": 0}, InvalidOptionError, "expires_in=...) must be positive, finite seconds"),
        ({"expires_in": -1.0}, InvalidOptionError, "positive, finite"),
        ({"expires_in": math.inf}, InvalidOptionError, "positive, finite"),
        ({"expires_in": math.nan}, InvalidOptionError, "positive, finite"),
        ({"expires_in": "60"}, DeclarationError, "must be a number of seconds"),
        ({"four_eyes": "no"}, DeclarationError, "four_eyes=...) must be True or False"),
        ({"approver_scopes": None}, DeclarationError, "approver_scopes=...) takes a list of scope names"),
        ({"approver_scopes": [1]}, DeclarationError, "takes a list of scope names"),
        ({"approver_scopes": [""]}, DeclarationError, "takes a list of scope names"),
    ],
)
def test_bad_verify_policy_is_a_declaration_error(kwargs: dict[str, Any], error: type, needle: str) -> None:
    with pytest.raises(error) as caught:
        VerifyPolicy(**kwargs)
    assert needle in str(caught.value)
    assert isinstance(caught.value, DeclarationError) and isinstance(caught.value, MilpaError)
    if error is InvalidOptionError:
        assert isinstance(caught.value, ValueError)  # code written as `except ValueError` still catches it


def test_good_verify_policies() -> None:
    # one scope as a string, and a list: both read as the declared tuple at run time
    assert VerifyPolicy(approver_scopes="ops").approver_scopes == ("ops",)  # type: ignore[arg-type]
    many = VerifyPolicy(approver_scopes=["a", "b"], quorum=2, expires_in=60)  # type: ignore[arg-type]
    assert many.approver_scopes == ("a", "b")


@pytest.mark.parametrize("name", ["confirm_token", "verification_id", "_ctx"])
def test_reserved_names_in_decorated_tools(name: str) -> None:
    with pytest.raises(DeclarationError, match=f"argument name '{name}' is reserved.*rename the parameter"):
        exec(f"@tool('t', 'A tool', mutating=False)\ndef f({name}: str) -> None: ...", {"tool": tool})


@pytest.mark.parametrize("name", ["confirm_token", "verification_id", "_ctx"])
def test_reserved_names_in_hand_written_schemas(name: str) -> None:
    schema = {"type": "object", "properties": {name: {"type": "string"}}}
    with pytest.raises(DeclarationError, match=f"property '{name}'.*reserved"):
        ToolRegistry().register("t", "A tool", schema, lambda args, ctx: None)


def test_required_property_a_closed_schema_cannot_hold() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    with pytest.raises(DeclarationError, match=r"'required' lists \['b'\] but 'properties' does not"):
        ToolRegistry().register("t", "A tool", schema, lambda args, ctx: None)
    open_schema = {**schema, "additionalProperties": True}
    ToolRegistry().register("t", "A tool", open_schema, lambda args, ctx: None)


def test_scopes_with_spaces() -> None:
    with pytest.raises(DeclarationError, match=r"one scope per string.*scopes=\['notes:read', 'notes:write'\]"):
        tool("t", "A tool", scopes=["notes:read notes:write"])


def test_examples_must_match_the_parameter() -> None:
    with pytest.raises(DeclarationError, match=r"parameter 'n': the example 'ten' does not match"):

        @tool("t", "A tool", mutating=False)
        def f(n: Annotated[int, Param("How many", examples=[1, "ten"])]) -> None: ...


def test_a_clamped_default_must_lie_in_the_range() -> None:
    with pytest.raises(DeclarationError, match=r"the default 5000 is outside Param\(clamp=\(1, 1000\)\)"):

        @tool("t", "A tool", mutating=False)
        def f(page: Annotated[int, Param("Page", clamp=(1, 1000))] = 5000) -> None: ...

    @tool("ok", "A tool", mutating=False)
    def g(page: Annotated[int | None, Param("Page", clamp=(1, 1000))] = None) -> None: ...
