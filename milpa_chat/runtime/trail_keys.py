"""The Ed25519 keys of audit-trail checkpoints: loaded from configuration, never kept in the store.

The signing key is a file (``MILPA_AUDIT_KEY_FILE``, or a path given to ``AuditTrail`` / ``--key-file``)
holding a PEM private key (``milpa-chat audit keygen`` or ``openssl genpkey -algorithm ed25519`` writes
one) or the 32-byte seed in base64 or hex; ``MILPA_AUDIT_KEY`` may hold that seed inline. The public key
(``MILPA_AUDIT_PUBLIC_KEY`` or ``--public-key``) is 32 bytes in base64 or hex, or a file holding them or a
PEM public key. A key's id is the first 16 hex digits of the SHA-256 of its public key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from milpa_chat.errors import MilpaError
from milpa_chat.runtime import _ed25519

__all__ = [
    "EVERY_ENV",
    "KEY_ENV",
    "KEY_FILE_ENV",
    "MINUTES_ENV",
    "PUBLIC_KEY_ENV",
    "PublicKey",
    "SigningKey",
    "TrailKeyError",
    "generate_pem",
    "setting",
]

KEY_ENV = "MILPA_AUDIT_KEY"
KEY_FILE_ENV = "MILPA_AUDIT_KEY_FILE"
PUBLIC_KEY_ENV = "MILPA_AUDIT_PUBLIC_KEY"
EVERY_ENV, MINUTES_ENV = "MILPA_AUDIT_CHECKPOINT_EVERY", "MILPA_AUDIT_CHECKPOINT_MINUTES"
_MAKE_ONE = "make one with: milpa-chat audit keygen --out FILE"


class TrailKeyError(MilpaError, ValueError):
    """A checkpoint key that cannot be used; the message names where it came from and the fix."""


def key_id(public: bytes) -> str:
    return hashlib.sha256(public).hexdigest()[:16]


def _raw(text: str) -> bytes | None:
    """32 (or 64) bytes written in hex or base64, else ``None``."""
    text = text.strip()
    for decode in (bytes.fromhex, lambda t: base64.b64decode(t, validate=True)):
        try:
            raw = decode(text)
        except (ValueError, binascii.Error):
            continue
        if len(raw) in (32, 64):
            return raw
    return None


def _read(path: Path, where: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise TrailKeyError(
            f"{where}: {path} does not exist; give the path of the Ed25519 key file ({_MAKE_ONE})"
        ) from None
    except OSError as exc:
        raise TrailKeyError(
            f"{where}: cannot read {path} ({exc.strerror}); check the path and its permissions"
        ) from None


@dataclass(frozen=True, slots=True)
class PublicKey:
    """The key that checks checkpoints."""

    raw: bytes

    @property
    def id(self) -> str:
        return key_id(self.raw)

    def verify(self, message: bytes, signature: bytes) -> bool:
        return _ed25519.verify(self.raw, message, signature)

    def text(self) -> str:
        return base64.b64encode(self.raw).decode()

    @classmethod
    def load(cls, value: str, where: str = "--public-key") -> PublicKey:
        """``value``: the key in base64 or hex, or a file holding it or a PEM public key."""
        raw = _raw(value)
        if raw is not None and len(raw) == 32:
            return cls(raw)
        if not Path(value).is_file():
            raise TrailKeyError(
                f"{where}: neither an Ed25519 public key (32 bytes in base64 or hex) nor a file "
                "holding one; pass what milpa-chat audit keygen printed, or the file it is in"
            )
        data = _read(Path(value), where)
        where = f"{where} {value}"
        if b"PRIVATE KEY" in data:
            raise TrailKeyError(
                f"{where} holds a private key, which must stay with the signer; pass its public "
                "key (what milpa-chat audit keygen printed)"
            )
        if data.lstrip().startswith(b"-----BEGIN"):
            from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
            from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_pem_public_key

            try:
                key = load_pem_public_key(data)
            except ValueError:
                key = None
            if isinstance(key, Ed25519PublicKey):
                return cls(key.public_bytes(Encoding.Raw, PublicFormat.Raw))
        raw = _raw(data.decode(errors="replace"))
        if raw is None or len(raw) != 32:
            raise TrailKeyError(
                f"{where}: not an Ed25519 public key (32 bytes in base64 or hex, or a PEM public "
                "key); pass what milpa-chat audit keygen printed"
            )
        return cls(raw)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PublicKey | None:
        value = (os.environ if env is None else env).get(PUBLIC_KEY_ENV, "").strip()
        return cls.load(value, PUBLIC_KEY_ENV) if value else None


@dataclass(frozen=True, slots=True)
class SigningKey:
    """The key that signs checkpoints (its seed never leaves the process)."""

    seed: bytes = field(repr=False)
    public: PublicKey

    @property
    def id(self) -> str:
        return self.public.id

    def sign(self, message: bytes) -> bytes:
        return _ed25519.sign(self.seed, message)

    @classmethod
    def from_seed(cls, seed: bytes) -> SigningKey:
        seed = bytes(seed)[:32]
        return cls(seed, PublicKey(_ed25519.public_key(seed)))

    @classmethod
    def from_text(cls, data: bytes, where: str) -> SigningKey:
        """A PEM private key, or the seed in base64 or hex (raw 32 bytes in a file work too)."""
        if data.lstrip().startswith(b"-----BEGIN"):
            from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
            from cryptography.hazmat.primitives.serialization import (
                Encoding,
                NoEncryption,
                PrivateFormat,
                load_pem_private_key,
            )

            try:
                key = load_pem_private_key(data, password=None)
            except (ValueError, TypeError):
                key = None
            if isinstance(key, Ed25519PrivateKey):
                return cls.from_seed(key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption()))
        raw = data if len(data) == 32 else _raw(data.decode(errors="replace"))
        if raw is None:
            raise TrailKeyError(
                f"{where}: not an Ed25519 private key (an unencrypted PEM key, or the 32-byte "
                f"seed in base64 or hex); {_MAKE_ONE}"
            )
        return cls.from_seed(raw)

    @classmethod
    def from_file(cls, path: str | Path, where: str = "--key-file") -> SigningKey:
        return cls.from_text(_read(Path(path), where), f"{where} {path}")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SigningKey | None:
        """``MILPA_AUDIT_KEY_FILE`` (a path), else ``MILPA_AUDIT_KEY`` (the seed inline), else ``None``."""
        env = os.environ if env is None else env
        path = env.get(KEY_FILE_ENV, "").strip()
        if path:
            return cls.from_file(path, KEY_FILE_ENV)
        inline = env.get(KEY_ENV, "").strip()
        return cls.from_text(inline.encode(), KEY_ENV) if inline else None


def generate_pem() -> tuple[bytes, PublicKey]:
    """A fresh signing key as an unencrypted PEM (PKCS #8), and its public key."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    return pem, SigningKey.from_text(pem, "the new key").public


def setting(given: float | None, env: str, default: float) -> float:
    """``given``, else the number in ``env``, else ``default``; 0 or more."""
    if given is None:
        text = os.environ.get(env, "").strip()
        try:
            given = float(text) if text else default
        except ValueError:
            raise TrailKeyError(f"{env}={text!r} is not a number; set it to a count (0 turns it off)") from None
    if given < 0:
        raise TrailKeyError(f"{env} (or its argument) is {given}: give 0 (off) or more")
    return given
