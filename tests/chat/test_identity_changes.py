"""A change of the identities' configuration takes effect on the next call: the scopes a person's taps reuse are
never older than the configuration, whichever way it changes (an entry set, removed, a section replaced)."""

from __future__ import annotations

from milpa_chat.chat import ChatUser, Identities

ALICE = ChatUser("1001", "Alice")


def make() -> Identities:
    return Identities(
        roles={"writer": ["notes:write"], "manager": ["payments:approve"]},
        users={"telegram:1001": ["writer"]},
        chats={"telegram:-5": ["help"]},
        default_scopes=["guest"],
    )


def test_scopes_follow_every_change_of_the_sections() -> None:
    ids = make()
    assert ids.scopes_for("telegram", ALICE, "1001") == ("notes:write",)
    assert ids.scopes_for("telegram", ALICE, "1001") == ("notes:write",)  # again (kept): the same
    ids.users["telegram:1001"] = ("manager",)
    assert ids.scopes_for("telegram", ALICE, "1001") == ("payments:approve",)
    ids.roles["manager"] = ("payments:approve", "notes:read")
    assert ids.scopes_for("telegram", ALICE, "1001") == ("payments:approve", "notes:read")
    ids.roles.update(manager=("x",))
    assert ids.scopes_for("telegram", ALICE, "1001") == ("x",)
    assert ids.scopes_for("telegram", ALICE, "-5") == ("x", "help")
    ids.chats.pop("telegram:-5")
    assert ids.scopes_for("telegram", ALICE, "-5") == ("x",)
    ids.chats.setdefault("telegram:-5", ("y",))
    assert ids.scopes_for("telegram", ALICE, "-5") == ("x", "y")
    del ids.users["telegram:1001"]
    assert ids.scopes_for("telegram", ALICE, "1001") == ("guest",)
    ids.default_scopes = ("nobody",)
    assert ids.scopes_for("telegram", ALICE, "1001") == ("nobody",)
    ids.users |= {"telegram:1001": ("writer",)}
    assert ids.scopes_for("telegram", ALICE, "1001") == ("notes:write",)
    ids.users.clear()
    assert ids.context_for("telegram", ALICE, "1001").scopes == ("nobody",)


def test_a_section_replaced_or_a_list_put_in_is_seen_even_when_changed_later() -> None:
    ids = make()
    assert ids.scopes_for("telegram", ALICE) == ("notes:write",)
    mine: dict[str, tuple[str, ...]] = {"telegram:1001": ("manager",)}
    ids.users = mine  # the caller's own dict: changed later, behind the identities' back
    assert ids.scopes_for("telegram", ALICE) == ("payments:approve",)
    mine["telegram:1001"] = ("writer",)
    assert ids.scopes_for("telegram", ALICE) == ("notes:write",)

    ids = make()
    roles = ["notes:write"]
    ids.users["telegram:1001"] = roles  # type: ignore[assignment]  # a list, changed in place later
    assert ids.scopes_for("telegram", ALICE) == ("notes:write",)
    roles.append("notes:read")
    assert ids.scopes_for("telegram", ALICE) == ("notes:write", "notes:read")
