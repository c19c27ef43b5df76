"""The surface-neutral stream: updates coalesced to the latest state, plan steps above the text, the message that
stays, and clear errors for a wrong use."""

from __future__ import annotations

import pytest

from milpa_chat.chat.streaming import EditedStream, plain_text
from milpa_chat.testing import RecordingTransport

WORDS = [f"word{i} " for i in range(200)]


async def test_a_burst_of_text_finished_at_once_is_one_platform_call() -> None:
    surface = RecordingTransport("test")
    stream = EditedStream(surface, "c1", interval=0.05)
    for word in WORDS:  # appends do not wait: the platform is sent the latest state, not 200 edits
        await stream.append(word)
    ref = await stream.finish("".join(WORDS).strip(), feedback="a1")
    message = surface.find("c1", ref.message_id) if ref else None
    assert message is not None and len(surface.in_chat("c1")) == 1
    assert message.text.startswith("".join(WORDS).strip()) and [b.label for b in message.buttons] == ["👍", "👎"]
    assert stream.updates == 1 and message.history == []  # 200 pieces, finished at once: one call in all


async def test_steps_show_while_streaming_and_the_message_that_stays_keeps_waiting_or_failed_ones() -> None:
    surface = RecordingTransport("test")
    stream = EditedStream(surface, "c1", interval=0.0)
    await stream.step("a", "Looking up invoices…", "in_progress")
    await stream.step("a", "Looking up invoices…", "complete")
    await stream.step("b", "Waiting for approval by payments:approve — card in #approvals", "pending")
    await stream.append("Two invoices are open.")
    assert [s.status for s in stream.steps] == ["complete", "pending"]  # a known id moves on in place
    ref = await stream.finish()
    assert ref is not None
    shown = surface.find("c1", ref.message_id).text
    assert shown.splitlines()[0] == "⏳ Waiting for approval by payments:approve — card in #approvals"
    assert "Looking up invoices" not in shown and "Two invoices are open." in shown
    assert plain_text(stream.steps, "x").startswith("✅ Looking up invoices…\n⏳ Waiting")


async def test_an_answer_not_streamed_is_added_and_nothing_is_sent_for_no_answer() -> None:
    surface = RecordingTransport("test")
    stream = EditedStream(surface, "c1", interval=0.0)
    await stream.append("Working on it.")
    await stream.finish("My language model is not answering right now.")
    assert surface.last("c1").text.startswith("Working on it.\n\nMy language model is not answering right now.")

    empty = EditedStream(surface, "c2", interval=0.0)
    assert await empty.finish(None) is None and surface.in_chat("c2") == []


async def test_wrong_uses_are_refused_with_a_clear_error() -> None:
    stream = EditedStream(RecordingTransport("test"), "c1", interval=0.0)
    with pytest.raises(ValueError, match="one of pending, in_progress, complete, error; got 'done'"):
        await stream.step("a", "Title", "done")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs an id and a title"):
        await stream.step("", "Title", "pending")
    with pytest.raises(ValueError, match="seconds >= 0"):
        EditedStream(RecordingTransport("test"), "c1", interval=-1)
    await stream.append("x")
    await stream.finish()
    with pytest.raises(RuntimeError, match="finished; open a new one"):
        await stream.append("more")
