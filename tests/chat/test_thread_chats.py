"""A thread's chat id ``"<conversation>/<thread>"`` (a Slack thread of the assistant pane) gets the scopes its
conversation has in ``[chats]``; a thread's own entry wins; nothing else reaches into another conversation."""

from __future__ import annotations

from milpa_chat.chat import ChatUser, Identities

USER = ChatUser("U1", team="T1")


def test_a_thread_has_its_conversations_scopes_and_its_own_entry_wins() -> None:
    ids = Identities(
        chats={"slack:D1": ["notes:read"], "slack:D1/1.2": ["payments:send"]},
        default_scopes=["help"],
    )
    assert ids.scopes_for("slack", USER, "D1") == ("help", "notes:read")
    assert ids.scopes_for("slack", USER, "D1/9.9") == ("help", "notes:read")
    assert ids.scopes_for("slack", USER, "D1/1.2") == ("help", "payments:send")
    assert ids.scopes_for("slack", USER, "D2/1.2") == ("help",)  # another conversation's thread: nothing borrowed
    assert ids.scopes_for("telegram", USER, "D1/9.9") == ("help",)  # another surface: nothing borrowed
