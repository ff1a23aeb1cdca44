"""A compiled 64-bit checksum of a record's bytes (T1), faster than ``zlib.crc32`` here.

zlib's CRC-32 runs at about 1.2 GB/s on this project's machine, below the disk's
sequential write speed, so it would cap the tier. This one keeps four 64-bit lanes, each
``lane = (lane ^ word) * P`` per 8-byte word (an odd multiplier: a bijection, so any
change to one word changes its lane's final state), then mixes the lanes and the length.
It detects torn records and flipped bits; it is not a cryptographic hash (records are
written by us, the threat is damage, not forgery). Compiled ``nogil``: the I/O threads
checksum in parallel.

The compiled build is loaded (or compiled) at import, on the importing thread: an I/O
thread that called it first would wait on numba's process-wide compiler lock, which the
block table's background compile (``impl.core.runtime``) may hold for minutes on a cold
cache; inside vLLM's engine that stalled every tier job of the first requests.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..jitcache import cached_njit

__all__ = ["checksum64"]

_P = np.uint64(0x9E3779B97F4A7C15)
_Q = np.uint64(0xC2B2AE3D27D4EB4F)


@cached_njit(nogil=True)
def _lanes(words: npt.NDArray[np.uint64], tail: npt.NDArray[np.uint8], length: int) -> np.uint64:  # pragma: no cover - compiled
    a = np.uint64(0x243F6A8885A308D3)
    b = np.uint64(0x13198A2E03707344)
    c = np.uint64(0xA4093822299F31D0)
    d = np.uint64(0x082EFA98EC4E6C89)
    n = words.shape[0]
    i = 0
    while i + 4 <= n:
        a = (a ^ words[i]) * _P
        b = (b ^ words[i + 1]) * _P
        c = (c ^ words[i + 2]) * _P
        d = (d ^ words[i + 3]) * _P
        i += 4
    while i < n:
        a = (a ^ words[i]) * _P
        i += 1
    for j in range(tail.shape[0]):
        b = (b ^ np.uint64(tail[j])) * _P
    h = np.uint64(length) * _Q
    for lane in (a, b, c, d):
        h = (h ^ (lane ^ (lane >> np.uint64(29)))) * _Q
    return h ^ (h >> np.uint64(32))


def checksum64(data: memoryview | bytes | bytearray) -> int:
    """The checksum of ``data`` (any bytes-like object, any length)."""
    raw = np.frombuffer(data, dtype=np.uint8)
    whole = raw.shape[0] // 8 * 8
    return int(_lanes(raw[:whole].view(np.uint64), raw[whole:], raw.shape[0]))


def _load_compiled() -> None:
    """Compile (or load from numba's cache) the build every record uses: writable bytes."""
    checksum64(bytearray(16))


_load_compiled()
