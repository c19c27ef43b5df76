"""Code written before standing grants moved to ``milpa_chat.grants`` still imports, and gets the same objects."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import milpa_chat.command
import milpa_chat.grants

OLD_MODULES = {
    **{f"milpa_chat.command.grants.{m}": f"milpa_chat.grants.{m}" for m in ("calls", "ceiling", "document")},
    **{f"milpa_chat.command.grants.{m}": f"milpa_chat.grants.{m}" for m in ("errors", "judge", "parts", "reader")},
    **{f"milpa_chat.command.grants.{m}": f"milpa_chat.grants.{m}" for m in ("receipts", "rules", "standing")},
    "milpa_chat.command.grants.canonical": "milpa_chat.command.canonical",
    "milpa_chat.command.grants._unicode16": "milpa_chat.command._unicode16",
    **{f"milpa_chat.standing.{m}": f"milpa_chat.grants.{m}" for m in ("desk", "changes", "records", "chat")},
}


@pytest.mark.parametrize("old", sorted(OLD_MODULES))
def test_an_old_module_path_is_the_moved_module(old: str) -> None:
    assert importlib.import_module(old) is importlib.import_module(OLD_MODULES[old])


@pytest.mark.parametrize("old", ["milpa_chat.command.grants", "milpa_chat.standing"])
def test_an_old_package_names_the_same_objects(old: str) -> None:
    package = importlib.import_module(old)
    for name in package.__all__:
        assert getattr(package, name) is getattr(milpa_chat.grants, name), name


def test_the_command_package_still_answers_the_grant_names_it_exported() -> None:
    for name in ("StandingGrant", "StandingJudge", "InvalidGrant", "Condition", "GrantStanding", "NamedCall"):
        assert getattr(milpa_chat.command, name) is getattr(milpa_chat.grants, name)
    assert milpa_chat.command.Canonical is milpa_chat.grants.Canonical
    with pytest.raises(AttributeError, match="NoSuchName"):
        _ = milpa_chat.command.NoSuchName


@pytest.mark.parametrize(
    "first",
    [
        "milpa_chat.grants",
        "milpa_chat.grants.judge",
        "milpa_chat.grants.calls",
        "milpa_chat.grants.desk",
        "milpa_chat.grants.chat",
        "milpa_chat.command.grants.judge",
        "milpa_chat.standing.chat",
        "milpa_chat.standing",
    ],
)
def test_any_of_them_imports_first_in_a_fresh_interpreter(first: str) -> None:
    """No import order trips over a half-initialised module (grants build on command, which names them)."""
    code = f"import {first}, milpa_chat.command as c, milpa_chat.grants as g; assert c.StandingGrant is g.StandingGrant"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
