"""The console script as a user runs it: --version, tools from the current directory, readable types,
nothing left in the temporary directory, one-line errors with exit status 2."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from tests.cli.support import Shell


def test_version_names_the_installed_package(shell: Shell) -> None:
    done = shell.run("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"milpa-chat {version('milpa-chat')}"


def test_tools_of_a_module_in_the_current_directory_with_readable_types(shell: Shell) -> None:
    listed = shell.run("tools", "shop:Shop")  # a class of a module in the working directory
    assert listed.returncode == 0, listed.stderr
    assert "pay (mutating, needs approval) [scopes: payments:send]" in listed.stdout
    assert "- amount: number — EUR" in listed.stdout
    demo = shell.run("tools")
    assert "- tags: array of string or null (optional) — Only notes with one of these tags" in demo.stdout
    assert "['array', 'null']" not in demo.stdout


def test_no_command_leaves_anything_in_the_temporary_directory(shell: Shell) -> None:
    runs = [
        ("tools",),
        ("tools", "shop:tools"),
        ("call", "list_notes", "--args", '{"page": 2}'),
        ("run", "list_notes", "--page", "1"),
        ("run", "delete_note", "--note-id", "2", "--yes"),
        ("call", "send_payment", "--args", '{"to": "ACME", "amount": 5}'),
        ("approvals",),
        ("approvals", "list", "--all"),
        ("audit", "verify"),
        ("audit", "export"),
        ("call", "--help"),
        ("run", "send_payment", "--help"),
        ("demo",),
    ]
    for args in runs:
        done = shell.run(*args)
        assert done.returncode == 0, (args, done.stderr)
        assert shell.temporary_files() == [], args
    assert (shell.root / "data" / "milpa-chat" / "store.db").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("frob",), "invalid choice: 'frob'"),
        (("tools", "nosuch:thing"), "cannot import 'nosuch'"),
        (("call", "pay", "--tools", "nosuch:thing"), "pass --tools package.module:object"),
        (("tools", "shop:nothing"), "'shop' has no attribute 'nothing'"),
        (("call", "list_notes", "--args", "{page: 1}"), "--args is not valid JSON"),
        (("run", "list_notes", "--page", "x"), "argument --page: invalid integer value: 'x'"),
        (("approvals", "show", "0123"), "no approval '0123' in this store"),
        (("approvals", "approve"), "the following arguments are required: id"),
        (("approvals", "approve", "0123"), "needs the approver: add --as PRINCIPAL"),
        (("--as", "bob", "--identities", "missing.toml", "tools"), "--identities missing.toml: no such file"),
        (("--scopes", "x", "tools"), "need a principal: add --as NAME"),
        (("--store", "nowhere/at/all/x.db", "tools"), "Check that the directory"),
        (("--store", "ftp://x", "tools"), "unknown scheme"),
        (("--as", "two words", "tools"), "a principal is one word"),
    ],
)
def test_errors_are_one_line_with_exit_status_2(shell: Shell, args: tuple[str, ...], says: str) -> None:
    assert shell.run("approvals").returncode == 0  # the default store exists (its creation is announced once)
    done = shell.run(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and says in lines[0] and lines[0].startswith("milpa-chat"), done.stderr
    assert "Traceback" not in done.stderr
    assert shell.temporary_files() == []


def test_the_hint_of_tools_names_the_form_that_command_takes(shell: Shell) -> None:
    hint = shell.run("tools", "nosuch:thing").stderr
    assert "pass milpa-chat tools package.module:object" in hint and "--tools" not in hint


def test_the_playground_is_a_command_of_the_console_script(shell: Shell) -> None:
    done = shell.run("playground", "--help")
    assert done.returncode == 0, done.stderr
    assert "usage: milpa-chat playground" in done.stdout and "--check" in done.stdout


def test_mcp_serves_a_module_of_the_current_directory(shell: Shell) -> None:
    hello = (
        'from milpa_chat import tool\n\n\n@tool("hi", "Say hi", mutating=False)\ndef hi() -> str:\n    return "hi"\n'
    )
    (shell.work / "hello.py").write_text(hello, encoding="utf-8")
    initialize = (
        '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26", '
        '"capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}\n'
    )
    done = shell.run("mcp", "--tools", "hello", stdin=initialize)
    assert done.returncode == 0, done.stderr
    assert '"id":1,"result":{"capabilities"' in done.stdout.replace(" ", "")
