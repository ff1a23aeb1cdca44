"""Reactivated-block heaps and ARC ghost lists of the compiled manager.

A block met at its recency list's head while pending or in use is parked (see
``_core``); when it becomes ready and idle again it enters its list's 4-ary min-heap keyed
by its own recency stamp ``ts`` (one heap for LRU, one per list for ARC: T1 and T2 share
one array, T2's heap grows from the far end), so that it competes for eviction at its
own age. In the steady state the heaps stay empty. B1/B2 are intrusive doubly-linked
lists over the ghost nodes (``gprev``/``gnext``, indexed by ``node - capacity``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._layout import CAP, HEAD0, HS0

@njit(cache=True)
def _hp(h, i, cap):  # type: ignore[no-untyped-def]
    return i if h == 0 else cap - 1 - i


@njit(cache=True)
def _sift_up(hts, hnode, hpos, h, i, cap, t, nd):  # type: ignore[no-untyped-def]
    while i > 0:
        par = (i - 1) >> 2
        pp = _hp(h, par, cap)
        if hts[pp] <= t:
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


@njit(cache=True)
def _sift_down(hts, hnode, hpos, h, i, size, cap, t, nd):  # type: ignore[no-untyped-def]
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
            if hts[kp] < bt:
                best = k
                bp = kp
                bt = hts[kp]
        if bt >= t:
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


@njit(cache=True)
def _heap_push(hts, hnode, hpos, ts, meta, h, nd):  # type: ignore[no-untyped-def]
    cap = meta[CAP]
    size = meta[HS0 + h]
    meta[HS0 + h] = size + 1
    _sift_up(hts, hnode, hpos, h, size, cap, ts[nd], nd)


@njit(cache=True)
def _heap_remove(hts, hnode, hpos, meta, h, nd):  # type: ignore[no-untyped-def]
    cap = meta[CAP]
    i = np.int64(hpos[nd])
    size = meta[HS0 + h] - 1
    meta[HS0 + h] = size
    hpos[nd] = -1
    if i == size:
        return
    lp = _hp(h, size, cap)
    t = hts[lp]
    x = hnode[lp]
    if i > 0 and hts[_hp(h, (i - 1) >> 2, cap)] > t:
        _sift_up(hts, hnode, hpos, h, i, cap, t, x)
    else:
        _sift_down(hts, hnode, hpos, h, i, size, cap, t, x)


@njit(cache=True)
def _g_unlink(gprev, gnext, meta, g, nd):  # type: ignore[no-untyped-def]
    cap = meta[CAP]
    x = nd - cap
    p = gprev[x]
    nx = gnext[x]
    if p >= 0:
        gnext[p - cap] = nx
    else:
        meta[HEAD0 + 3 * g] = nx
    if nx >= 0:
        gprev[nx - cap] = p
    else:
        meta[HEAD0 + 3 * g + 1] = p
    meta[HEAD0 + 3 * g + 2] -= 1


@njit(cache=True)
def _g_append(gprev, gnext, meta, g, nd):  # type: ignore[no-untyped-def]
    cap = meta[CAP]
    x = nd - cap
    tail = meta[HEAD0 + 3 * g + 1]
    gprev[x] = tail
    gnext[x] = -1
    if tail >= 0:
        gnext[tail - cap] = nd
    else:
        meta[HEAD0 + 3 * g] = nd
    meta[HEAD0 + 3 * g + 1] = nd
    meta[HEAD0 + 3 * g + 2] += 1


