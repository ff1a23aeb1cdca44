"""Reactivated-block heaps of the compiled manager.

A block met at its recency list's head while pending or in use is parked (see
``ops``); when it becomes ready and idle again it enters its list's 4-ary min-heap keyed
by its own recency stamp ``ts`` (one heap for LRU, one per list for ARC: T1 and T2 share
one array, T2's heap grows from the far end), so that it competes for eviction at its
own age. In the steady state the heaps stay empty. An LRU ranked by request (N9,
``ranks``) also keeps its open requests' keys here; equal stamps are then ordered by
``order.rank_lt``.
"""

from __future__ import annotations

import numpy as np

from .jit import kernel
from .layout import CAP, HS0, IN_LIST
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
    _sift_up(hts, hnode, hpos, h, size, cap, ts[nd], nd, minor, keys)


@kernel()
def heap_remove(hts, hnode, hpos, meta, h, nd, minor, keys):  # type: ignore[no-untyped-def]
    """Take block ``nd`` out of heap ``h`` (its ``hpos`` becomes ``IN_LIST``; the caller re-files it)."""
    cap = meta[CAP]
    i = np.int64(hpos[nd])
    size = meta[HS0 + h] - 1
    meta[HS0 + h] = size
    hpos[nd] = IN_LIST
    if i == size:
        return
    lp = _hp(h, size, cap)
    t = hts[lp]
    x = hnode[lp]
    pp = _hp(h, (i - 1) >> 2, cap)
    if i > 0 and rank_lt(t, x, hts[pp], hnode[pp], minor, keys):
        _sift_up(hts, hnode, hpos, h, i, cap, t, x, minor, keys)
    else:
        _sift_down(hts, hnode, hpos, h, i, size, cap, t, x, minor, keys)


@kernel()
def heap_top(hnode, meta, h):  # type: ignore[no-untyped-def]
    """The least recent block of heap ``h`` (-1 if empty)."""
    if meta[HS0 + h] == 0:
        return -1
    return np.int64(hnode[_hp(h, 0, meta[CAP])])
