"""The order of eviction candidates: ``(stamp, minor)``, then the key's bytes (L3, N9).

Outside N9 every stamp is unique and the stamp alone orders; an LRU ranked by request
(``ranks``) gives equal stamps to one request's keys, told apart by ``minor``
(``-position``) and then by the keys' bytes, as vLLM 0.33's heap of ``(rank, key)`` does.
"""

from __future__ import annotations

import numpy as np

from .jit import kernel
from .layout import CAP, RANKED

__all__ = ["key_lt", "minors_of", "rank_lt"]


@kernel(inline="always")
def minors_of(a32, meta):  # type: ignore[no-untyped-def]
    """The per-block rank minors (the a32 arena's last ``C`` words), or an empty view when
    the manager is not ranked (``layout.minor_words``)."""
    if meta[RANKED] == 0:
        return a32[:0]
    return a32[a32.shape[0] - meta[CAP] :]


@kernel()
def _bswap(w):  # type: ignore[no-untyped-def]
    """The word with its bytes reversed: a key's first byte becomes its most significant."""
    w = ((w & np.uint64(0x00FF00FF00FF00FF)) << np.uint64(8)) | ((w >> np.uint64(8)) & np.uint64(0x00FF00FF00FF00FF))
    w = ((w & np.uint64(0x0000FFFF0000FFFF)) << np.uint64(16)) | ((w >> np.uint64(16)) & np.uint64(0x0000FFFF0000FFFF))
    return (w << np.uint64(32)) | (w >> np.uint64(32))


@kernel()
def key_lt(keys, a, b):  # type: ignore[no-untyped-def]
    """N9's tie-break: whether block ``a``'s key sorts before block ``b``'s as bytes (rows
    are little-endian words, zero-padded: equal words leave the shorter key first)."""
    for j in range(1, keys.shape[1]):
        if keys[a, j] != keys[b, j]:
            return _bswap(keys[a, j]) < _bswap(keys[b, j])
    return (keys[a, 0] & np.uint64(0xFFFFFFFF)) < (keys[b, 0] & np.uint64(0xFFFFFFFF))


@kernel()
def rank_lt(ta, a, tb, b, minor, keys):  # type: ignore[no-untyped-def]
    """L3, N9: whether block ``a`` of stamp ``ta`` ranks below block ``b`` of stamp ``tb``
    (``minor`` empty: stamps are unique, the stamp decides)."""
    if ta != tb or minor.shape[0] == 0:
        return ta < tb
    if minor[a] != minor[b]:
        return minor[a] < minor[b]
    return key_lt(keys, a, b)
