"""Identifiers: a prefix plus a time-ordered, random, Crockford base32 body (ULID layout).

Ordering Memories "by id" therefore follows creation order, and ids never collide across threads.
"""

from __future__ import annotations

import os
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"


def _base32(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_id(prefix: str) -> str:
    millis = time.time_ns() // 1_000_000
    entropy = int.from_bytes(os.urandom(10), "big")
    return f"{prefix}_{_base32(millis, 10)}{_base32(entropy, 16)}"
