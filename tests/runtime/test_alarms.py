"""The loop's shared alarm timer: an alarm goes off once, in the order of its time, never once cleared; an
alarm set sooner than the one already waiting still goes off first; a failing callback harms no other."""

from __future__ import annotations

import asyncio

from milpa_chat.runtime._alarms import alarms


async def test_alarms_go_off_in_order_and_cleared_ones_never() -> None:
    clock = alarms()
    assert alarms() is clock  # one per loop
    fired: list[str] = []
    clock.set(0.06, lambda: fired.append("late"))
    cleared = clock.set(0.02, lambda: fired.append("cleared"))
    clock.set(0.01, lambda: fired.append("soon"))  # sooner than every alarm already waiting
    clock.clear(cleared)
    clock.clear(cleared)  # twice: nothing
    done = asyncio.get_running_loop().create_future()
    clock.set(0.08, lambda: done.set_result(None))
    await asyncio.wait_for(done, 5)
    assert fired == ["soon", "late"] and len(clock) == 0


async def test_a_failing_alarm_is_reported_and_the_others_still_go_off() -> None:
    loop = asyncio.get_running_loop()
    reported: list[BaseException] = []
    loop.set_exception_handler(lambda _, context: reported.append(context["exception"]))
    try:
        clock = alarms()
        done = loop.create_future()

        def fail() -> None:
            raise RuntimeError("boom")

        clock.set(0, fail)
        clock.set(0, lambda: done.set_result("ok"))
        assert await asyncio.wait_for(done, 5) == "ok"
        assert [str(e) for e in reported] == ["boom"]
    finally:
        loop.set_exception_handler(None)


async def test_an_alarm_set_from_an_alarm_goes_off_too() -> None:
    clock = alarms()
    done = asyncio.get_running_loop().create_future()
    clock.set(0.01, lambda: clock.set(0.01, lambda: done.set_result("again")))
    assert await asyncio.wait_for(done, 5) == "again"
