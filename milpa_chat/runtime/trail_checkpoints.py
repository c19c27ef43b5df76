"""Signed checkpoints of the audit trail: "entry ``seq`` had hash ``hash`` at time ``at``", signed with Ed25519.

A checkpoint is stored in the store (it is signed: a writer of the store can delete it, never forge it)
and exported as one JSON line: ``{"seq", "hash", "at", "key", "signature"}`` (``at`` in Unix seconds,
``key`` the signing key's id, ``signature`` in base64). Whoever holds an exported checkpoint and the
public key can prove that the chain up to ``seq`` was not rewritten since: rewriting any entry before
it changes the hash at ``seq``, and the signature pins that hash.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from milpa_chat.errors import MilpaError
from milpa_chat.runtime.trail_chain import Break, Pin
from milpa_chat.runtime.trail_keys import PublicKey, SigningKey

if TYPE_CHECKING:
    from milpa_chat.store.base import Store

__all__ = ["CHECKPOINTS", "Checkpoint", "CheckpointError", "parse_checkpoints", "parse_expected_head", "stored_pins"]

CHECKPOINTS = "audit_trail_checkpoints"
_DOMAIN = b"milpa-chat audit checkpoint v1\n"
_FIELDS = ("seq", "hash", "at", "key", "signature")
_EXPORT_AGAIN = "export them again with: milpa-chat audit checkpoint --out FILE"


class CheckpointError(MilpaError, ValueError):
    """A checkpoint (or an expected head) that cannot be used; the message names it and the fix."""


def _when(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    seq: int
    hash: str
    at: float
    key: str
    signature: str
    #: The heads of the lanes it signs too: lane -> (seq, hash) (empty: the main chain only).
    lanes: Mapping[str, tuple[int, str]] = field(default_factory=dict)

    @staticmethod
    def message(
        seq: int, digest: str, at: float, key: str, lanes: Mapping[str, tuple[int, str]] | None = None
    ) -> bytes:
        signed: dict[str, Any] = {"at": at, "hash": digest, "key": key, "seq": seq}
        if lanes:
            signed["lanes"] = {name: [int(n), str(h)] for name, (n, h) in lanes.items()}
        body = json.dumps(signed, sort_keys=True, separators=(",", ":"))
        return _DOMAIN + body.encode()

    @classmethod
    def sign(
        cls, key: SigningKey, seq: int, digest: str, at: float, lanes: Mapping[str, tuple[int, str]] | None = None
    ) -> Checkpoint:
        lanes = dict(lanes or {})
        signature = key.sign(cls.message(seq, digest, at, key.id, lanes))
        return cls(seq, digest, at, key.id, base64.b64encode(signature).decode(), lanes)

    def valid(self, public: PublicKey) -> bool:
        """Signed by ``public`` over exactly these fields."""
        try:
            signature = base64.b64decode(self.signature, validate=True)
        except (binascii.Error, ValueError):
            return False
        message = self.message(self.seq, self.hash, self.at, self.key, self.lanes)
        return self.key == public.id and public.verify(message, signature)

    def pin(self) -> Pin:
        return Pin(self.seq, self.hash, f"the checkpoint signed {_when(self.at)}")

    def pins(self) -> list[Pin]:
        """The main chain's entry it signs and each lane head it signs."""
        what = f"the checkpoint signed {_when(self.at)}"
        return [self.pin()] + [Pin(n, h, what, lane) for lane, (n, h) in self.lanes.items()]

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "seq": self.seq,
            "hash": self.hash,
            "at": self.at,
            "key": self.key,
            "signature": self.signature,
        }
        if self.lanes:
            found["lanes"] = {name: [n, h] for name, (n, h) in self.lanes.items()}
        return found

    def to_line(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, v: Mapping[str, Any]) -> Checkpoint:
        """Raises ``KeyError``/``TypeError``/``ValueError`` for anything that is not a checkpoint."""
        seq, digest, at, key, signature = (v[f] for f in _FIELDS)
        if not (
            isinstance(seq, int)
            and isinstance(at, int | float)
            and all(isinstance(x, str) for x in (digest, key, signature))
        ) or isinstance(seq, bool):
            raise TypeError("seq must be a number, hash, key and signature text")
        if seq < 1 or len(digest) != 64:
            raise ValueError("seq must be 1 or more and hash 64 hex digits")
        lanes: dict[str, tuple[int, str]] = {}
        for name, pair in dict(v.get("lanes") or {}).items():
            n, h = pair
            if not isinstance(n, int) or isinstance(n, bool) or not isinstance(h, str) or len(h) != 64 or n < 1:
                raise ValueError(f"lane {name}: each lane head must be [seq, hash]")
            lanes[str(name)] = (n, h)
        return cls(seq, digest, float(at), key, signature, lanes)


def parse_checkpoints(lines: Iterable[str], source: str, public: PublicKey) -> list[Checkpoint]:
    """The checkpoints of an export, each signed by ``public``; anything else is a one-line error."""
    found: list[Checkpoint] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            checkpoint = Checkpoint.from_dict(json.loads(line))
        except json.JSONDecodeError:
            raise CheckpointError(
                f"{source} line {number} is not JSON; each line must be one checkpoint "
                f"({', '.join(_FIELDS)}): {_EXPORT_AGAIN}"
            ) from None
        except KeyError as exc:
            raise CheckpointError(
                f"{source} line {number} is not a checkpoint (no {exc.args[0]!r}; each line needs "
                f"{', '.join(_FIELDS)}): {_EXPORT_AGAIN}"
            ) from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise CheckpointError(f"{source} line {number} is not a checkpoint ({exc}): {_EXPORT_AGAIN}") from None
        if checkpoint.key != public.id:
            raise CheckpointError(
                f"{source} line {number} was signed by key {checkpoint.key}, not by the public key "
                f"given ({public.id}): pass the public key it was signed with (--public-key or "
                "MILPA_AUDIT_PUBLIC_KEY)"
            )
        if not checkpoint.valid(public):
            raise CheckpointError(
                f"{source} line {number}: its signature does not verify with key {public.id}, so "
                "the line was altered after signing; use an untouched export"
            )
        found.append(checkpoint)
    return found


def parse_expected_head(text: str) -> Pin:
    """``SEQ:HASH`` (as ``milpa-chat audit verify`` prints the head) or ``HASH``."""
    seq_text, _, digest = text.strip().rpartition(":")
    digest = digest.lower()
    if (
        len(digest) != 64
        or any(c not in "0123456789abcdef" for c in digest)
        or (seq_text and not (seq_text.isdigit() and int(seq_text) >= 1))
    ):
        raise CheckpointError(
            f"--expect-head {text!r}: write SEQ:HASH or HASH (64 hex digits), as "
            'milpa-chat audit verify prints the head ("head 412:9f2c...")'
        )
    return Pin(int(seq_text) if seq_text else None, digest, "the expected head")


async def stored_pins(store: Store, public_key: PublicKey | None) -> tuple[list[Pin], Break | None]:
    """The checkpoints stored in ``store`` signed by ``public_key``, as pins, and the first forged one (none
    without a key: nothing to check them with)."""
    if public_key is None:
        return [], None
    pins: list[Pin] = []
    for record in await store.scan(CHECKPOINTS):
        try:
            checkpoint = Checkpoint.from_dict(record.value)
        except (KeyError, TypeError, ValueError):
            return pins, (None, f"the stored checkpoint {record.key} is not a checkpoint: it was overwritten")
        if checkpoint.key != public_key.id:
            continue  # signed with another key (an earlier one): not ours to judge
        if not checkpoint.valid(public_key):
            return pins, (
                checkpoint.seq,
                f"the checkpoint stored for entry {checkpoint.seq} does not carry a "
                "valid signature: it was forged or altered",
            )
        pins.extend(checkpoint.pins())
    return pins, None
