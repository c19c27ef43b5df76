"""Ed25519 signatures (RFC 8032), in pure Python, for descent certificates.

milpa-chat takes no cryptography dependency for one verification, so this is the RFC's reference
algorithm (section 5.1) on Python integers. Verification handles only public data. Signing is here
so that tests and tooling can produce certificates; it is not constant-time, so sign certificates
that matter with a vetted library (libsodium, ``cryptography``) — the signatures are the same.
"""

from __future__ import annotations

import hashlib

__all__ = ["public_key", "sign", "verify"]

_P = 2**255 - 19
_L = 2**252 + 27742317777372353535851937790883648493
_D = -121665 * pow(121666, -1, _P) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)

Point = tuple[int, int, int, int]  # extended coordinates (X, Y, Z, T)


def _recover_x(y: int, sign: int) -> int | None:
    if y >= _P:
        return None
    x2 = (y * y - 1) * pow(_D * y * y + 1, -1, _P) % _P
    if x2 == 0:
        return None if sign else 0
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P != 0:
        x = x * _SQRT_M1 % _P
    if (x * x - x2) % _P != 0:
        return None
    return _P - x if (x & 1) != sign else x


_GY = 4 * pow(5, -1, _P) % _P
_GX = _recover_x(_GY, 0) or 0
_G: Point = (_GX, _GY, 1, _GX * _GY % _P)
_IDENTITY: Point = (0, 1, 1, 0)


def _add(p: Point, q: Point) -> Point:
    a = (p[1] - p[0]) * (q[1] - q[0]) % _P
    b = (p[1] + p[0]) * (q[1] + q[0]) % _P
    c = 2 * p[3] * q[3] * _D % _P
    d = 2 * p[2] * q[2] % _P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def _mul(scalar: int, point: Point) -> Point:
    result = _IDENTITY
    while scalar > 0:
        if scalar & 1:
            result = _add(result, point)
        point = _add(point, point)
        scalar >>= 1
    return result


def _same(p: Point, q: Point) -> bool:
    return (p[0] * q[2] - q[0] * p[2]) % _P == 0 and (p[1] * q[2] - q[1] * p[2]) % _P == 0


def _compress(point: Point) -> bytes:
    z_inv = pow(point[2], -1, _P)
    x, y = point[0] * z_inv % _P, point[1] * z_inv % _P
    return int.to_bytes(y | ((x & 1) << 255), 32, "little")


def _decompress(data: bytes) -> Point | None:
    y = int.from_bytes(data, "little")
    sign, y = y >> 255, y & ((1 << 255) - 1)
    x = _recover_x(y, sign)
    return None if x is None else (x, y, 1, x * y % _P)


def _hash(data: bytes) -> int:
    return int.from_bytes(hashlib.sha512(data).digest(), "little")


def _expand(secret: bytes) -> tuple[int, bytes]:
    seed = secret[:32]
    if len(seed) != 32:
        raise ValueError("an Ed25519 secret key is a 32-byte seed (or the 64-byte seed + public key of libsodium)")
    digest = hashlib.sha512(seed).digest()
    scalar = int.from_bytes(digest[:32], "little")
    scalar &= (1 << 254) - 8
    scalar |= 1 << 254
    return scalar, digest[32:]


def public_key(secret: bytes) -> bytes:
    """The 32-byte public key of a 32-byte seed (or a 64-byte libsodium secret key)."""
    scalar, _ = _expand(secret)
    return _compress(_mul(scalar, _G))


def sign(secret: bytes, message: bytes) -> bytes:
    """The 64-byte detached signature of ``message``."""
    scalar, prefix = _expand(secret)
    public = _compress(_mul(scalar, _G))
    r = _hash(prefix + message) % _L
    big_r = _compress(_mul(r, _G))
    h = _hash(big_r + public + message) % _L
    return big_r + int.to_bytes((r + h * scalar) % _L, 32, "little")


def verify(public: bytes, message: bytes, signature: bytes) -> bool:
    """Whether ``signature`` is ``public``'s signature of ``message``. Never raises."""
    if len(public) != 32 or len(signature) != 64:
        return False
    a = _decompress(public)
    r = _decompress(signature[:32])
    s = int.from_bytes(signature[32:], "little")
    if a is None or r is None or s >= _L:
        return False
    h = _hash(signature[:32] + public + message) % _L
    return _same(_mul(s, _G), _add(r, _mul(h, a)))
