"""Hashing and the open-addressing table of the compiled manager (I8: the full hash decides).

``table`` — linear probing, backward-shift deletion (no tombstones). A slot is
``tag << 32 | (node + 1)`` (0 = empty), where ``tag`` folds the 64-bit fingerprint of the
hash to 32 bits; the home bucket is derived from the tag alone so that deletion can move
entries without touching the nodes. A tag match is only a candidate: the full hash
(length + every word, ``keys[node] = [length, word0, word1, …]``) is always compared.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_P1 = np.uint64(0x9E3779B97F4A7C15)
_P2 = np.uint64(0xBF58476D1CE4E5B9)
_P3 = np.uint64(0x94D049BB133111EB)
_LO32 = np.uint64(0xFFFFFFFF)
_U32 = np.uint64(32)


@njit(cache=True)
def _fingerprint(words, row, col0, length, mask):  # type: ignore[no-untyped-def]
    """64-bit fingerprint of one hash (``words[row, col0:]``, ``length`` bytes)."""
    acc = np.uint64(length) * _P1
    nw = (length + 7) // 8
    for j in range(nw):
        m = (words[row, col0 + j] + np.uint64(j + 1) * _P3) * _P2
        acc ^= m ^ (m >> _U32)
    acc ^= acc >> np.uint64(30)
    acc *= _P2
    acc ^= acc >> np.uint64(27)
    acc *= _P3
    acc ^= acc >> np.uint64(31)
    return acc & mask


@njit(cache=True)
def _tag(fp):  # type: ignore[no-untyped-def]
    return ((fp >> _U32) ^ fp) & _LO32


@njit(cache=True)
def _home(tag, shift, tmask):  # type: ignore[no-untyped-def]
    return np.int64(((tag * _P1) >> shift) & tmask)


@njit(cache=True)
def _same_key(keys, nd, q, i, length):  # type: ignore[no-untyped-def]
    """Full comparison of stored hash ``nd`` and batch hash ``i`` (I8)."""
    if keys[nd, 0] != np.uint64(length):
        return False
    for j in range((length + 7) // 8):
        if keys[nd, 1 + j] != q[i, j]:
            return False
    return True


@njit(cache=True)
def _find(table, keys, shift, q, i, length, tag):  # type: ignore[no-untyped-def]
    """(slot, node) of batch hash ``i``; node -1 and the empty slot ending the probe if absent."""
    m = table.shape[0] - 1
    s = _home(tag, shift, np.uint64(m))
    while True:
        v = table[s]
        if v == 0:
            return s, -1
        if (v >> _U32) == tag:
            nd = np.int64(v & _LO32) - 1
            if _same_key(keys, nd, q, i, length):
                return s, nd
        s = (s + 1) & m


@njit(cache=True)
def _node_tag(keys, nd, mask):  # type: ignore[no-untyped-def]
    length = np.int64(keys[nd, 0])
    return _tag(_fingerprint(keys, nd, 1, length, mask))


@njit(cache=True)
def _slot_of(table, shift, tag, nd):  # type: ignore[no-untyped-def]
    m = table.shape[0] - 1
    s = _home(tag, shift, np.uint64(m))
    want = np.uint64(nd + 1)
    while (table[s] & _LO32) != want:
        s = (s + 1) & m
    return s


@njit(cache=True)
def _table_delete(table, shift, s):  # type: ignore[no-untyped-def]
    """Remove slot ``s``, shifting later entries of its cluster back (no tombstones)."""
    m = table.shape[0] - 1
    tm = np.uint64(m)
    i = s
    j = s
    while True:
        j = (j + 1) & m
        v = table[j]
        if v == 0:
            break
        k = _home(v >> _U32, shift, tm)
        if i <= j:
            if i < k and k <= j:
                continue
        elif i < k or k <= j:
            continue
        table[i] = v
        i = j
    table[i] = 0


