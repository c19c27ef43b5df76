"""The audit trail masks secrets at every depth of an entry's fields, with the audit log's rule: a secret-named
key's value in a nested object or a list of headers is ``***REDACTED***`` in the store and in every export,
secrets inside nested strings are masked, and the chain (hashed over what is stored) still verifies."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from milpa_chat import ToolContext, ToolRegistry, tool
from milpa_chat.runtime.audit import AuditLogger
from milpa_chat.runtime.redaction import REDACTED
from milpa_chat.runtime.trail import COLLECTION, AuditTrail
from milpa_chat.store import MemoryStore
from milpa_chat.testing import ManualClock

SECRET = "hunter2-Zq81"  # a secret in no known format: only where it sits tells it is one
TOKEN = "ghp_" + "a1B2c3D4" * 5  # a GitHub token: recognised wherever it is written


async def stored_text(store: MemoryStore) -> str:
    return json.dumps([r.value for r in await store.scan(COLLECTION)])


async def test_nested_secrets_are_masked_and_the_chain_verifies() -> None:
    store = MemoryStore(clock=ManualClock())
    trail = AuditTrail(store)
    fields: dict[str, Any] = {
        "tool": "call_api",
        "args": {"auth": {"user": "ana", "password": SECRET}, "url": f"https://ana:{SECRET}@api.example/v1"},
        "headers": [["Accept", "json"], {"name": "Authorization", "Authorization": f"Bearer {SECRET}"}],
        "pairs": [("X-Api-Key", SECRET), {"name": "Cookie", "value": f"sid={SECRET}"}],
        "steps": [{"note": f"used token {TOKEN}"}, [{"api_key": SECRET, "page": 2}]],
        "password": SECRET,
    }
    entry = await trail.append("call", "call_api", fields)
    assert entry.fields["args"]["auth"] == REDACTED  # a whole object under a secret key is hidden
    assert entry.fields["args"]["url"] == f"https://ana:{REDACTED}@api.example/v1"
    assert entry.fields["headers"][0] == ["Accept", "json"]  # data stays
    assert entry.fields["headers"][1] == {"name": "Authorization", "Authorization": REDACTED}
    assert entry.fields["steps"][1] == [{"api_key": REDACTED, "page": 2}]
    assert entry.fields["pairs"] == [["X-Api-Key", REDACTED], {"name": "Cookie", "value": REDACTED}]
    assert TOKEN not in entry.fields["steps"][0]["note"] and entry.fields["password"] == REDACTED
    text = await stored_text(store) + "".join(trail.export_lines(await trail.entries()))
    assert SECRET not in text and TOKEN not in text
    assert fields["args"]["auth"]["password"] == SECRET  # the caller's fields are left as they were
    verdict = await trail.verify()
    assert verdict.ok and verdict.checked == 1


async def test_an_attached_trail_uses_the_registrys_sensitive_fields() -> None:
    store = MemoryStore(clock=ManualClock())
    registry = ToolRegistry(store=store, audit=AuditLogger(sensitive_fields=["member_number"]))
    trail = AuditTrail(store).attach(registry)
    entry = await trail.append("note", "x", {"who": {"member_number": "4411", "name": "Ana"}})
    assert entry.fields["who"] == {"member_number": REDACTED, "name": "Ana"}
    assert (await trail.verify()).ok


class Api:
    @tool("call_api", "Call an API", mutating=False)
    async def call_api(self, auth: dict[str, Any], headers: list[list[str]]) -> str:
        return "ok"


async def test_a_tools_nested_secret_never_reaches_the_trail_of_its_call() -> None:
    store = MemoryStore(clock=ManualClock())
    registry = ToolRegistry(store=store)
    registry.scan(Api())
    trail = AuditTrail(store).attach(registry)
    args = {"auth": {"password": SECRET}, "headers": [["Authorization", f"Bearer {TOKEN}"]]}
    assert (await registry.call("call_api", args, ToolContext(principal="ana", channel="cli"))).success
    text = await stored_text(store)
    assert SECRET not in text and TOKEN not in text and '"call"' in text
    assert (await trail.verify()).ok


# ------------------------------------------------------------------------- any nested JSON
SECRET_KEYS = st.sampled_from(["password", "api_key", "Authorization", "client_secret", "x-auth-token", "PIN"])
PLAIN_KEYS = st.sampled_from(["name", "page", "url", "items", "note", "author", "sort_key", "public_key"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text("abc xyz", max_size=8))


def planted(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Objects and lists of JSON, some of whose objects hold the secret under a secret key or inside a string."""
    objects = st.dictionaries(PLAIN_KEYS, children, max_size=4)
    with_secret = st.builds(lambda d, k: {**d, k: SECRET}, objects, SECRET_KEYS)
    with_text = st.builds(lambda d: {**d, "note": f"header Authorization: Bearer {SECRET}"}, objects)
    header = st.builds(lambda k: [k, SECRET], SECRET_KEYS)
    return st.one_of(st.lists(children, max_size=4), objects, with_secret, with_text, header)


NESTED = st.recursive(SCALARS, planted, max_leaves=20)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(PLAIN_KEYS, NESTED, min_size=1, max_size=4))
def test_no_planted_secret_survives_at_any_depth_and_masking_is_deterministic(fields: dict[str, Any]) -> None:
    import asyncio

    async def run() -> tuple[str, str, bool]:
        hashes = []
        texts = []
        for _ in range(2):  # the same fields at the same time on two trails: the same entry, the same hash
            store = MemoryStore(clock=ManualClock())
            trail = AuditTrail(store)
            entry = await trail.append("call", "tool", fields)
            hashes.append(entry.hash)
            texts.append(await stored_text(store))
            ok = (await trail.verify()).ok
        assert hashes[0] == hashes[1] and texts[0] == texts[1]
        return texts[0], hashes[0], ok

    text, _, ok = asyncio.run(run())
    assert SECRET not in text and ok
