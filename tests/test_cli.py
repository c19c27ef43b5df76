"""The ``milpa-chat`` command: tools, call (with the confirm prompt), demo."""

from __future__ import annotations

import os
import subprocess
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import pytest

from milpa_chat import ToolRegistry
from milpa_chat.cli import main
from milpa_chat.command import (
    Authority,
    Because,
    Confirms,
    Externality,
    Mutates,
    Mutation,
    Reads,
    RegistryProjector,
    Reversibility,
    Subject,
    operation,
)
from milpa_chat.demo import run_demo


@pytest.fixture(autouse=True)
def _own_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test keeps the command's default store in its own data directory, never the user's."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    for name in ("MILPA_STORE", "MILPA_PRINCIPAL", "MILPA_IDENTITIES"):
        monkeypatch.delenv(name, raising=False)


def test_tools_lists_the_demo_tools_with_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools"]) == 0
    out = capsys.readouterr().out
    assert "delete_note (mutating, confirm) [scopes: notes:write]" in out
    assert "send_payment (mutating, needs approval)" in out
    assert "- page: integer (optional) — Page number" in out


def test_call_asks_before_a_confirm_tool_and_runs_on_yes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    assert main(["call", "delete_note", "--args", '{"note_id": 3}']) == 0
    out = capsys.readouterr().out
    assert "Confirmation required" in out and "Renew passport" in out


def test_call_cancelled_at_the_prompt_does_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    assert main(["call", "delete_note", "--args", '{"note_id": 3}']) == 1
    assert "Cancelled — nothing was done." in capsys.readouterr().out


def test_call_errors_are_explained(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "list_notes", "--args", "{page: 1}"]) == 2
    assert "--args is not valid JSON" in capsys.readouterr().err
    assert main(["call", "list_notes", "--args", "[1]"]) == 2
    assert "must be a JSON object" in capsys.readouterr().err
    assert main(["tools", "no_such_module_here:x"]) == 2
    assert "cannot import 'no_such_module_here'" in capsys.readouterr().err
    assert main(["call", "list_notes", "--args", '{"page": "x"}']) == 1
    assert "page" in capsys.readouterr().out


def test_plan_mode_runs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "delete_note", "--plan", "--args", '{"note_id": 1}']) == 0
    assert "Nothing was run" in capsys.readouterr().out


async def test_demo_walks_through_every_step(tmp_path: Path) -> None:
    lines: list[str] = []
    assert await run_demo(tmp_path / "demo.db", lines.append, verbose=True) == 0  # the audit lines too
    text = "\n".join(lines)
    assert "page: Input should be a valid integer" in text
    assert "Missing required scope for tool 'delete_note'" in text
    assert "Call the bank" in text and "Invalid or expired confirmation token" in text
    assert "four-eyes" in text or "Missing required scope for tool 'resolve_verification'" in text
    assert "Verification granted" in text and "state=executed" in text
    assert "audit: [ToolAudit]" in text
    assert (tmp_path / "demo.db").exists()


def test_console_script_runs_the_demo(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "milpa_chat.cli", "demo", "--store", str(tmp_path / "d.db")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "state=executed" in proc.stdout


# --- run NAME --arg value / --help: arguments from the schema ------------------------------------------------


class Color(Enum):
    RED = "red"
    BLUE = "blue"


@operation("notes:tag", "Tag notes with a color.")
@Reads
class TagNotes:
    def __init__(
        self,
        note_ids: Annotated[list[int], Because("the notes to tag")],
        color: Annotated[Color, Because("the tag's color")] = Color.RED,
        pinned: bool = False,
        label: str | None = None,
    ) -> None:
        self.note_ids, self.color, self.pinned, self.label = note_ids, color, pinned, label

    def run(self) -> dict[str, Any]:
        return {"tagged": self.note_ids, "color": self.color.value, "pinned": self.pinned, "label": self.label}


@operation("notes:purge", "Delete every note.")
@Mutates(
    Mutation.PERSISTENT, Externality.NONE, Reversibility.IRREVERSIBLE, Authority.WRITE_AS_USER, subject=Subject.DATA
)
@Confirms
class PurgeNotes:
    def __init__(self, older_than_days: Annotated[int, Because("only notes older than this")] = 30) -> None:
        self.days = older_than_days

    def run(self) -> dict[str, Any]:
        PURGED.append(self.days)
        return {"purged_older_than": self.days}


PURGED: list[int] = []
OPS = "tests.test_cli:operations"


def operations() -> ToolRegistry:
    registry = ToolRegistry()
    RegistryProjector(registry).register(TagNotes, PurgeNotes)
    return registry


def test_run_help_prints_the_arguments_generated_from_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["run", "notes_tag", "--tools", OPS, "--help"])
    assert done.value.code == 0
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps to the terminal's width
    assert "usage: milpa-chat run notes_tag" in out and "Tag notes with a color." in out
    assert "--note-ids [NOTE_IDS ...], --note_ids [NOTE_IDS ...] the notes to tag (array of integer; required)" in out
    assert """--color {red,blue} the tag's color (string; one of red, blue; optional; default: "red")""" in out
    assert "--pinned, --no-pinned (boolean; optional; default: false)" in out
    assert "--label LABEL (string; or null; optional; default: null)" in out

    assert main(["call", "notes:tag", "--tools", OPS, "--help"]) == 0  # the same, for call
    out = " ".join(capsys.readouterr().out.split())
    assert "the notes to tag (array of integer; required)" in out and "milpa-chat call notes:tag --args" in out


def test_run_parses_the_arguments_by_the_schema_and_runs_through_the_pipeline(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "notes_tag", "--tools", OPS, "--note-ids", "3", "4", "--color", "blue", "--pinned"]) == 0
    out = capsys.readouterr().out
    assert "Tagged: [3, 4]" in out and "Color:  blue" in out and "Pinned: yes" in out
    assert main(["run", "notes:tag", "--tools", OPS, "--note_ids", "5", "--label", "null"]) == 0
    out = capsys.readouterr().out
    assert "Tagged: [5]" in out and "Color:  red" in out and "Pinned: no" in out  # the schema's defaults

    with pytest.raises(SystemExit) as refused:
        main(["run", "notes_tag", "--tools", OPS, "--note-ids", "x"])
    assert refused.value.code == 2 and "invalid integer value: 'x'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "notes_tag", "--tools", OPS, "--color", "green", "--note-ids", "1"])
    assert "choose from red, blue (got 'green')" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "notes_tag", "--tools", OPS])
    assert "the following arguments are required: --note-ids/--note_ids" in capsys.readouterr().err

    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    assert main(["run", "notes_purge", "--tools", OPS, "--older-than-days", "7"]) == 1
    assert PURGED == [] and "Cancelled — nothing was done." in capsys.readouterr().out
    assert main(["run", "notes_purge", "--tools", OPS, "--older-than-days", "7", "--yes"]) == 0
    assert PURGED == [7]


def test_run_without_a_name_lists_what_it_runs_and_refuses_unknown_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--tools", OPS]) == 2
    out = capsys.readouterr().out
    assert "notes_tag" in out and "notes_purge" in out and "Delete every note." in out
    assert main(["run", "notes_tga", "--tools", OPS]) == 2
    assert "no tool 'notes_tga' to run from the command line; did you mean notes_tag" in capsys.readouterr().err
    assert main(["run", "resolve_verification"]) == 2  # decided with milpa-chat decide, never run from here
    assert "no tool 'resolve_verification'" in capsys.readouterr().err


@operation("jobs:schedule", "Schedule a job.")
@Reads
class Schedule:
    def __init__(self, plan: Annotated[str, Because("the job's plan")], yes: bool = False) -> None:
        self.plan, self.yes = plan, yes

    def run(self) -> dict[str, Any]:
        return {"plan": self.plan, "yes": self.yes}


def scheduling() -> ToolRegistry:
    registry = ToolRegistry()
    RegistryProjector(registry).register(Schedule)
    return registry


def test_a_property_named_like_a_call_option_takes_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "jobs_schedule", "--tools", "tests.test_cli:scheduling", "--plan", "nightly", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "Plan: nightly" in out and "Yes:  yes" in out  # ran (not a dry run), with both values


@operation("grants:give", "Give someone scopes in another system.")
@Reads
class Give:
    def __init__(self, scopes: Annotated[list[str], Because("the scopes to give")], store: str = "main") -> None:
        self.scopes, self.store = scopes, store

    def run(self) -> dict[str, Any]:
        return {"given": self.scopes, "in_store": self.store}


def granting() -> ToolRegistry:
    registry = ToolRegistry()
    RegistryProjector(registry).register(Give)
    return registry


def test_a_property_named_like_a_command_option_is_the_tools_not_the_callers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = tmp_path / "not-a-store.db"
    assert (
        main(
            [
                "run",
                "grants_give",
                "--tools",
                "tests.test_cli:granting",
                "--scopes",
                "admin",
                "audit",
                "--store",
                str(elsewhere),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert 'Given:    ["admin", "audit"]' in out and f"In store: {elsewhere}" in out
    assert not elsewhere.exists()  # the command's store stayed the default one
    assert (tmp_path / "data" / "milpa-chat" / "store.db").exists()


SHARED = operations()  # one registry object, built without a store, used by two commands of one process


def test_a_registry_object_is_moved_onto_the_store_of_each_command(capsys: pytest.CaptureFixture[str]) -> None:
    for ids in ("[1]", "[2]"):
        assert main(["call", "notes_tag", "--tools", "tests.test_cli:SHARED", "--args", f'{{"note_ids": {ids}}}']) == 0
    assert main(["audit", "verify"]) == 0
    assert "The audit trail holds: 2 entries" in capsys.readouterr().out  # both calls, in the command's store


def test_the_demo_without_a_store_runs_on_a_temporary_sqlite_file_and_says_so(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run(
        [sys.executable, "-m", "milpa_chat.cli", "demo"], capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith(f"milpa-chat demo — store: SQLite at {tmp_path}") and first.endswith(
        "demo.db (a temporary file, removed at the end; --store FILE keeps one)"
    ), first
    assert "in-memory" not in proc.stdout and "state=executed (stored in SQLite;" in proc.stdout
    assert list(tmp_path.iterdir()) == [], "the temporary file is removed at the end"
