"""Audit lines reach the host's logging as ordinary records: every attribute a format string or a
handler may read, with the time of the call; a host's own record factory still makes them."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from typing import Any

import pytest

from milpa_chat import ToolContext, ToolRegistry, tool
from milpa_chat.store import MemoryStore

FULL_FORMAT = (
    "%(asctime)s %(created)f %(msecs)d %(relativeCreated)d %(levelname)s %(levelno)d %(name)s "
    "%(pathname)s %(filename)s %(module)s %(lineno)d %(funcName)s %(process)d %(processName)s "
    "%(thread)d %(threadName)s %(message)s"
)


class Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter(FULL_FORMAT))

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.lines.append(self.format(record))


def _registry() -> ToolRegistry:
    async def add(a: int, b: int) -> int:
        return a + b

    reg = ToolRegistry(store=MemoryStore())
    reg.scan(tool("add", "Add two numbers", mutating=False)(add))
    return reg


def _listen() -> tuple[Keep, logging.Logger]:
    keep = Keep()
    logger = logging.getLogger("milpa_chat.audit")
    logger.addHandler(keep)
    logger.setLevel(logging.INFO)
    return keep, logger


async def test_an_audit_record_has_every_attribute_a_standard_record_has() -> None:
    keep, logger = _listen()
    try:
        before = time.time()
        await _registry().call("add", {"a": "one", "b": 2}, ToolContext.cli())
        await _registry().call("add", {"a": 1, "b": 2}, ToolContext.cli())
        after = time.time()
    finally:
        logger.removeHandler(keep)
    assert len(keep.records) == 2
    standard = logging.LogRecord("milpa_chat.audit", logging.WARNING, "x", 0, "m", (), None)
    for record in keep.records:
        assert set(standard.__dict__) <= set(record.__dict__)
        assert before <= record.created <= after
        assert record.process == os.getpid()
        assert record.threadName == threading.current_thread().name
        assert record.exc_info is None
    refused, ran = keep.records
    assert (refused.levelname, ran.levelname) == ("WARNING", "INFO")
    assert "VALIDATION_FAILED" in refused.getMessage() and "a: Input should be a valid integer" in keep.lines[0]
    assert "| OK |" in ran.getMessage() and ran.milpa_audit["tool"] == "add"  # type: ignore[attr-defined]
    assert {r.filename for r in keep.records} == {"milpa_chat.audit"}  # not the caller's file: no frame walk


async def test_two_records_are_two_objects_with_their_own_times() -> None:
    keep, logger = _listen()
    try:
        reg = _registry()
        await reg.call("add", {"a": "x", "b": 2}, ToolContext.cli())
        await asyncio.sleep(0.002)
        await reg.call("add", {"a": "y", "b": 2}, ToolContext.cli())
    finally:
        logger.removeHandler(keep)
    first, second = keep.records
    assert first is not second and second.created > first.created
    assert first.getMessage() != second.getMessage()  # each carries its own request id


async def test_a_hosts_record_factory_makes_the_audit_records() -> None:
    saved = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = saved(*args, **kwargs)
        record.deployment = "eu-1"
        return record

    logging.setLogRecordFactory(factory)
    keep, logger = _listen()
    try:
        await _registry().call("add", {"a": "one", "b": 2}, ToolContext.cli())
    finally:
        logger.removeHandler(keep)
        logging.setLogRecordFactory(saved)
    assert [getattr(r, "deployment", None) for r in keep.records] == ["eu-1"]


async def test_a_remembered_message_never_carries_another_calls_value() -> None:
    """Refused calls' messages are remembered; one that had to hide the value it quoted is not."""
    reg = _registry()
    hid = await reg.call("add", {"a": "valid", "b": 2}, ToolContext.cli())  # "valid" is a word of the message
    plain = await reg.call("add", {"a": "zzz", "b": 2}, ToolContext.cli())
    again = await reg.call("add", {"a": "zzz", "b": 2}, ToolContext.cli())
    assert "valid" not in (hid.error or "").replace("Input should be a", "")
    assert plain.error == again.error == "a: Input should be a valid integer"
    assert plain.data == again.data and plain.data is not again.data


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_writes_records_with_its_own_process_id() -> None:
    """The record templates are the process's own: a child made by fork makes them anew."""
    from milpa_chat.runtime import audit

    parent = audit._records.make("milpa_chat.audit", logging.WARNING, "m", (), None)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report the process id its record carries, then leave at once
        try:
            child = audit._records.make("milpa_chat.audit", logging.WARNING, "m", (), None)
            os.write(write, f"{child.process} {os.getpid()}".encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as got:
        seen, actual = got.read().split()
    os.waitpid(pid, 0)
    assert parent.process == os.getpid()
    assert seen == actual != str(os.getpid())
