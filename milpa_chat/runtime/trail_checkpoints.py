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
from dataclasses import dataclass
from typing import Any

from milpa_chat.errors import MilpaError
from milpa_chat.runtime.trail_chain import Pin
from milpa_chat.runtime.trail_keys import PublicKey, SigningKey

__all__ = ["CHECKPOINTS", "Checkpoint", "CheckpointError", "parse_checkpoints", "parse_expected_head"]

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

    @staticmethod
    def message(seq: int, digest: str, at: float, key: str) -> bytes:
        body = json.dumps({"at": at, "hash": digest, "key": key, "seq": seq}, sort_keys=True, separators=(",", ":"))
        return _DOMAIN + body.encode()

    @classmethod
    def sign(cls, key: SigningKey, seq: int, digest: str, at: float) -> Checkpoint:
        signature = key.sign(cls.message(seq, digest, at, key.id))
        return cls(seq, digest, at, key.id, base64.b64encode(signature).decode())

    def valid(self, public: PublicKey) -> bool:
        """Signed by ``public`` over exactly these fields."""
        try:
            signature = base64.b64decode(self.signature, validate=True)
        except (binascii.Error, ValueError):
            return False
        return self.key == public.id and public.verify(self.message(self.seq, self.hash, self.at, self.key), signature)

    def pin(self) -> Pin:
        return Pin(self.seq, self.hash, f"the checkpoint signed {_when(self.at)}")

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "hash": self.hash, "at": self.at, "key": self.key, "signature": self.signature}

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
        return cls(seq, digest, float(at), key, signature)


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
