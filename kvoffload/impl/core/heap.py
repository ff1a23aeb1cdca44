"""Reactivated-block heaps of the compiled manager.

A block met at its recency list's head while pending or in use is parked (see
``ops``); when it becomes ready and idle again it enters its list's 4-ary min-heap keyed
by its own recency stamp ``ts`` (one heap for LRU, one per list for ARC: T1 and T2 share
one array, T2's heap grows from the far end), so that it competes for eviction at its
own age. In the steady state the heaps stay empty. An LRU ranked by request (N9,
``ranks``) also keeps its open requests' keys here; equal stamps are then ordered by
``order.rank_lt``.

Lazily ordered. A heap starts as an unordered *pool* (``meta[HEAPED + h]`` 0): a push
appends, a removal moves the last entry into the hole, both O(1), and the pool keeps the
least stamp pushed since it was last empty (``meta[POOL_MIN + h]``, a lower bound once
entries leave). Eviction needs the order only when that bound is not newer than its
list's head (``evict.candidate``); then :func:`heap_order` heapifies the pool in O(n) and
the heap stays ordered until it is empty again. Why: under N9 every key of an open
request passes through here (ranked, then renumbered at its end) while the list's head is
almost always older than any open request: sifting each in and out cost ~100 ns per key.
"""

from __future__ import annotations

import numpy as np

from .jit import kernel
from .layout import CAP, HEAPED, HS0, IN_LIST, POOL_MIN
from .order import rank_lt


@kernel()
def _hp(h, i, cap):  # type: ignore[no-untyped-def]
    """Array index of heap ``h``'s position ``i`` (T2's heap grows from the far end)."""
    return i if h == 0 else cap - 1 - i


@kernel()
def _sift_up(hts, hnode, hpos, h, i, cap, t, nd, minor, keys):  # type: ignore[no-untyped-def]
    while i > 0:
        par = (i - 1) >> 2
        pp = _hp(h, par, cap)
        if not rank_lt(t, nd, hts[pp], hnode[pp], minor, keys):
            break
        p = _hp(h, i, cap)
        hts[p] = hts[pp]
        hnode[p] = hnode[pp]
        hpos[hnode[pp]] = i
        i = par
    p = _hp(h, i, cap)
    hts[p] = t
    hnode[p] = nd
    hpos[nd] = i


@kernel()
def _sift_down(hts, hnode, hpos, h, i, size, cap, t, nd, minor, keys):  # type: ignore[no-untyped-def]
    while True:
        c = 4 * i + 1
        if c >= size:
            break
        best = c
        bp = _hp(h, c, cap)
        bt = hts[bp]
        end = min(c + 4, size)
        for k in range(c + 1, end):
            kp = _hp(h, k, cap)
            if rank_lt(hts[kp], hnode[kp], bt, hnode[bp], minor, keys):
                best = k
                bp = kp
                bt = hts[kp]
        if not rank_lt(bt, hnode[bp], t, nd, minor, keys):
            break
        p = _hp(h, i, cap)
        hts[p] = bt
        hnode[p] = hnode[bp]
        hpos[hnode[bp]] = i
        i = best
    p = _hp(h, i, cap)
    hts[p] = t
    hnode[p] = nd
    hpos[nd] = i


@kernel()
def heap_push(hts, hnode, hpos, ts, meta, h, nd, minor, keys):  # type: ignore[no-untyped-def]
    """Add block ``nd`` to heap ``h`` at its own rank (``order``)."""
    cap = meta[CAP]
    size = meta[HS0 + h]
    meta[HS0 + h] = size + 1
    if meta[HEAPED + h] == 0:  # a pool: append, keep the least stamp
        p = _hp(h, size, cap)
        hts[p] = ts[nd]
        hnode[p] = nd
        hpos[nd] = size
        if size == 0 or ts[nd] < meta[POOL_MIN + h]:
            meta[POOL_MIN + h] = ts[nd]
        return
    _sift_up(hts, hnode, hpos, h, size, cap, ts[nd], nd, minor, keys)


@kernel()
def heap_remove(hts, hnode, hpos, meta, h, nd, minor, keys):  # type: ignore[no-untyped-def]
    """Take block ``nd`` out of heap ``h`` (its ``hpos`` becomes ``IN_LIST``; the caller re-files it)."""
    cap = meta[CAP]
    i = np.int64(hpos[nd])
    size = meta[HS0 + h] - 1
    meta[HS0 + h] = size
    hpos[nd] = IN_LIST
    if size == 0:
        meta[HEAPED + h] = 0  # empty: a pool again
    if i == size:
        return
    lp = _hp(h, size, cap)
    t = hts[lp]
    x = hnode[lp]
    if meta[HEAPED + h] == 0:  # a pool: the last entry fills the hole
        p = _hp(h, i, cap)
        hts[p] = t
        hnode[p] = x
        hpos[x] = i
        return
    pp = _hp(h, (i - 1) >> 2, cap)
    if i > 0 and rank_lt(t, x, hts[pp], hnode[pp], minor, keys):
        _sift_up(hts, hnode, hpos, h, i, cap, t, x, minor, keys)
    else:
        _sift_down(hts, hnode, hpos, h, i, size, cap, t, x, minor, keys)


@kernel()
def heap_order(hts, hnode, hpos, meta, h, minor, keys):  # type: ignore[no-untyped-def]
    """Put pool ``h`` in heap order (Floyd's O(n) build), if it is a pool."""
    if meta[HEAPED + h] != 0:
        return
    meta[HEAPED + h] = 1
    cap = meta[CAP]
    size = meta[HS0 + h]
    for i in range((size - 2) // 4, -1, -1):
        p = _hp(h, i, cap)
        _sift_down(hts, hnode, hpos, h, i, size, cap, hts[p], hnode[p], minor, keys)


@kernel()
def pool_newer(ts, meta, h, nd):  # type: ignore[no-untyped-def]
    """Whether every block of heap ``h`` is known to rank above block ``nd`` without
    ordering it: ``h`` is an unordered pool whose least stamp is newer than ``nd``'s."""
    return meta[HS0 + h] == 0 or (meta[HEAPED + h] == 0 and meta[POOL_MIN + h] > ts[nd])


@kernel()
def heap_top(hnode, meta, h):  # type: ignore[no-untyped-def]
    """The least recent block of heap ``h`` (-1 if empty)."""
    if meta[HS0 + h] == 0:
        return -1
    return np.int64(hnode[_hp(h, 0, meta[CAP])])
