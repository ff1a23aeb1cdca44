"""The compiled core of :class:`kvoffload.impl.CPUOffloadingManager` (numba, nopython).

One small entry point per manager operation (``lookup``, ``prepare_load``, …), each
``@njit(cache=True)`` and always called with one type signature, sharing the helpers of
``_table`` (hash table), ``_heap`` (eviction heaps, ghost lists) and ``_batch`` (reading
the batch). A cold start compiles only the entry points it calls.

State: ``table`` (uint64 slots, see ``_table``), ``keys`` (uint64 rows ``[length, words…]``)
and three arenas, sliced into views by :func:`_split` (``C`` = capacity, ``G`` = ghost
nodes = ``2C`` for ARC, 0 for LRU, ``N = C + G`` nodes):

* ``a64`` (int64): ``meta`` (``_layout``) | ``ts[C]`` recency stamps | ``hts[C]`` heap keys
* ``a32`` (int32): ``ref[C]`` | ``hpos[C]`` | ``hnode[C]`` | ``free[C]`` (stack) |
  ``bprev[C]`` | ``bnext[C]`` (recency lists) | ``gprev[G]`` | ``gnext[G]`` | ``gfree[G]`` |
  ``gtag[G]`` (a ghost's 32-bit table tag, so trimming it needs no rehash; ``_gtag``)
* ``a8`` (int8): ``lst[N]`` (0 free, 1 LRU/T1, 2 T2, 3 B1, 4 B2) | ``prot[C]``
* ``pf`` (float64[1]): ARC's target ``p``.

Per call: ``q`` (uint64 rows, the batch's words) and ``io`` (int64): ``info[8]`` |
``lens[B]`` | ``out_a[B]`` | ``out_b[B]`` | ``out_c[B]`` for batches of up to ``B`` hashes.
With ``addr != 0`` the entry point first reads the caller's list at ``addr`` into
``q``/``lens`` (``_batch.gather``); with ``addr == 0`` the caller packed them.

Nodes ``0 … C-1`` are blocks (node id == block id); ghosts are nodes ``C … N-1``.

Eviction order (L3, A4) without a per-victim heap pop: each present block is in one of
three places, told by ``hpos``:

* ``-1`` — its recency list (``_lists``: LRU, or T1/T2), in stamp order;
* ``PARKED`` (-2) — out of every structure: it was met at a list's head while pending or
  in use (not evictable), or left the reactivated heap on ``prepare_load``;
* ``>= 0`` — its list's *reactivated heap* (``_heap``, keyed by its own stamp): a parked
  block that became evictable again (``complete_store``, ``complete_load``).

The oldest eligible block of a list is the older of the list's head (after parking the
non-evictable blocks met there; each block is parked at most once per non-evictable
episode, so the walk is amortised O(1)) and the heap's top. Ready idle blocks are never
parked, so the order of the eligible blocks is exactly the stamp order (L1–L3). In the
steady state (stores complete before their blocks grow old) nothing is parked and a
victim is a list pop. ``meta[ELIG]`` counts ready idle blocks, so a refused store is
decided before anything moves (M5.4, I7).
Every operation checks what it needs before it changes anything and returns a negative
code (details in ``info``) after changing nothing.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._batch import GATHER_BAD, GATHER_WIDE, gather, pack
from ._heap import (
    _g_append,
    _g_unlink,
    _heap_push,
    _heap_remove,
    _hp,
)
from ._layout import (
    ARC,
    BYTES_TYPE,
    CAP,
    CLOCK,
    ELIG,
    FPMASK,
    HEAD0,
    HS0,
    LHEAD0,
    META_SIZE,
    N1,
    NFREE,
    NGFREE,
    NODES,
    SHIFT,
)
from ._lists import _l_append, _l_prepend, _l_unlink
from ._table import (
    _LO32,
    _P1,
    _U32,
    CHUNK,
    _find,
    _find_chunk,
    _fingerprint,
    _home,
    _node_tag,
    _slot_of,
    _table_delete,
    _tag,
    prefetch,
)

__all__ = [
    "GATHER_BAD",
    "GATHER_WIDE",
    "KEYS_NARROW",
    "IO_INFO",
    "complete_load",
    "lookup",
    "pack",
    "prepare_load",
    "prepare_store",
    "store_fail",
    "store_ok",
    "table_size",
    "touch",
]

KEYS_NARROW = -102  # prepare_store: a hash is longer than ``keys`` rows hold (info[0]: words)
IO_INFO = 8  # io[:IO_INFO] is ``info``
PARKED = -2  # ``hpos`` of a block in neither its list nor its heap


# --------------------------------------------------------------------------- plumbing
@njit(cache=True)
def _split(a64, a32, a8):  # type: ignore[no-untyped-def]
    meta = a64[:META_SIZE]
    cap = meta[CAP]
    nodes = meta[NODES]
    g = nodes - cap
    ts = a64[META_SIZE : META_SIZE + cap]
    hts = a64[META_SIZE + cap : META_SIZE + 2 * cap]
    ref = a32[0:cap]
    hpos = a32[cap : 2 * cap]
    hnode = a32[2 * cap : 3 * cap]
    free = a32[3 * cap : 4 * cap]
    bprev = a32[4 * cap : 5 * cap]
    bnext = a32[5 * cap : 6 * cap]
    gprev = a32[6 * cap : 6 * cap + g]
    gnext = a32[6 * cap + g : 6 * cap + 2 * g]
    gfree = a32[6 * cap + 2 * g : 6 * cap + 3 * g]
    lst = a8[:nodes]
    prot = a8[nodes : nodes + cap]
    return meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext


@njit(cache=True)
def _gtag(a32, meta):  # type: ignore[no-untyped-def]
    """The ghosts' table tags (int32 bits of the uint32 tag, by ``node - C``)."""
    cap = meta[CAP]
    g = meta[NODES] - cap
    return a32[6 * cap + 3 * g : 6 * cap + 4 * g]


@njit(cache=True)
def _io(io):  # type: ignore[no-untyped-def]
    b = (io.shape[0] - IO_INFO) // 4
    o = IO_INFO
    return io[:IO_INFO], io[o : o + b], io[o + b : o + 2 * b], io[o + 2 * b : o + 3 * b], io[o + 3 * b : o + 4 * b]


@njit(cache=True)
def _load(addr, n, q, lens, meta):  # type: ignore[no-untyped-def]
    """Widest row in words (>= 1), or a GATHER_ code; reads the list at ``addr`` if non-zero."""
    if n > lens.shape[0] or n > q.shape[0] or n <= 0:
        return GATHER_WIDE
    if addr != 0:
        return gather(addr, n, q, lens, meta[BYTES_TYPE])
    widest = 0
    for i in range(n):
        if lens[i] <= 0:
            return GATHER_BAD
        nw = (lens[i] + 7) // 8
        if nw > q.shape[1]:
            return GATHER_WIDE
        if nw > widest:
            widest = nw
    return widest


@njit(cache=True)
def _find_all(table, keys, meta, lst, ref, q, lens, n):  # type: ignore[no-untyped-def]
    """``(tags, nodes, slots)`` of the batch (``_table._find_chunk``, ``CHUNK`` hashes at a time)."""
    shift = np.uint64(meta[SHIFT])
    mask = np.uint64(meta[FPMASK])
    tags = np.empty(n, np.uint64)
    nodes = np.empty(n, np.int64)
    slots = np.empty(n, np.int64)
    for lo in range(0, n, CHUNK):
        _find_chunk(table, keys, shift, mask, q, lens, lo, min(lo + CHUNK, n), tags, nodes, slots, lst, ref)
    return tags, nodes, slots


@njit(cache=True)
def _g_drop(table, meta, lst, gprev, gnext, gfree, gtag, nd, slot):  # type: ignore[no-untyped-def]
    """Forget ghost ``nd`` (at table slot ``slot``, or -1 to find it by its stored tag)."""
    _g_unlink(gprev, gnext, meta, lst[nd] - 3, nd)
    shift = np.uint64(meta[SHIFT])
    if slot < 0:
        slot = _slot_of(table, shift, np.uint64(gtag[nd - meta[CAP]]) & _LO32, nd)
    _table_delete(table, shift, slot)
    lst[nd] = 0
    gfree[meta[NGFREE]] = nd
    meta[NGFREE] += 1


# --------------------------------------------------------------------------- operations
@njit(cache=True)
def lookup(table, keys, a64, a32, a8, pf, addr, n, q, io):  # type: ignore[no-untyped-def]
    """M1: the number of leading hashes that are present and ready."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = _split(a64, a32, a8)
    info, lens, out_a, out_b, out_c = _io(io)
    w = _load(addr, n, q, lens, meta)
    if w < 0:
        return w
    shift = np.uint64(meta[SHIFT])
    mask = np.uint64(meta[FPMASK])
    k = min(n, CHUNK)
    tags = np.empty(k, np.uint64)
    nodes = np.empty(k, np.int64)
    slots = np.empty(k, np.int64)
    for lo in range(0, n, CHUNK):  # the answer is a prefix: at most one chunk past it is read
        hi = min(lo + CHUNK, n)
        _find_chunk(table, keys, shift, mask, q[lo:hi], lens[lo:hi], 0, hi - lo, tags, nodes, slots, lst, ref)
        for i in range(hi - lo):
            nd = nodes[i]
            if nd < 0 or lst[nd] > 2 or ref[nd] < 0:
                return lo + i
    return n


@njit(cache=True)
def prepare_load(table, keys, a64, a32, a8, pf, addr, n, q, io):  # type: ignore[no-untyped-def]
    """M2: block ids in ``out_a``; -1 (info: index, 1 if pending) and no change on a miss."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = _split(a64, a32, a8)
    info, lens, out_a, out_b, out_c = _io(io)
    w = _load(addr, n, q, lens, meta)
    if w < 0:
        return w
    tags, nodes, slots = _find_all(table, keys, meta, lst, ref, q, lens, n)
    for i in range(n):
        nd = nodes[i]
        if nd < 0 or lst[nd] > 2:
            info[0] = i
            info[1] = 0
            return -1
        if ref[nd] < 0:
            info[0] = i
            info[1] = 1
            return -1
    for i in range(n):
        nd = nodes[i]
        if ref[nd] == 0:
            meta[ELIG] -= 1
            if hpos[nd] >= 0:
                _heap_remove(hts, hnode, hpos, meta, lst[nd] - 1, nd)
                hpos[nd] = PARKED
        ref[nd] += 1
        out_a[i] = nd
    return n


@njit(cache=True)
def complete_load(table, keys, a64, a32, a8, pf, addr, n, q, io):  # type: ignore[no-untyped-def]
    """M3: -1 (info: index, kind, outstanding loads) and no change if not covered."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = _split(a64, a32, a8)
    info, lens, out_a, out_b, out_c = _io(io)
    w = _load(addr, n, q, lens, meta)
    if w < 0:
        return w
    tags, nodes, slots = _find_all(table, keys, meta, lst, ref, q, lens, n)
    became_idle = 0
    for i in range(n):
        nd = nodes[i]
        if nd >= 0 and lst[nd] <= 2:
            ref[nd] -= 1
            if ref[nd] == 0:
                became_idle += 1  # once per block that ends at 0 (counts only fall)
    bad = -1
    kind = 0
    for i in range(n):
        nd = nodes[i]
        if nd < 0 or lst[nd] > 2:
            bad = i
            kind = 0
            break
        if ref[nd] < 0:
            bad = i
            kind = 1
            break
    if bad >= 0:
        for i in range(n):
            nd = nodes[i]
            if nd >= 0 and lst[nd] <= 2:
                ref[nd] += 1
        info[0] = bad
        info[1] = kind
        nd = nodes[bad]
        info[2] = ref[nd] if nd >= 0 and lst[nd] <= 2 else 0
        return -1
    meta[ELIG] += became_idle
    for i in range(n):
        nd = nodes[i]
        if ref[nd] == 0 and hpos[nd] == PARKED:  # evictable again, at its own stamp
            _heap_push(hts, hnode, hpos, ts, meta, lst[nd] - 1, nd)
    return n


@njit(cache=True)
def touch(table, keys, a64, a32, a8, pf, addr, n, q, io):  # type: ignore[no-untyped-def]
    """M4, P4, L2, A3: last hash first."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = _split(a64, a32, a8)
    info, lens, out_a, out_b, out_c = _io(io)
    w = _load(addr, n, q, lens, meta)
    if w < 0:
        return w
    tags, nodes, slots = _find_all(table, keys, meta, lst, ref, q, lens, n)
    arc = meta[ARC] != 0
    cap = meta[CAP]
    for i in range(n - 1, -1, -1):  # P4: last to first
        nd = nodes[i]
        if nd < 0:
            continue
        kind = lst[nd]
        if kind == 1 or kind == 2:
            h = kind - 1
            meta[CLOCK] += 1
            where = hpos[nd]
            if where == -1:
                _l_unlink(bprev, bnext, meta, h, nd)
            elif where >= 0:
                _heap_remove(hts, hnode, hpos, meta, h, nd)
            if arc and kind == 1 and ref[nd] >= 0:  # A3: ready T1 -> T2
                lst[nd] = 2
                meta[N1] -= 1
                meta[N1 + 1] += 1
                h = 1
            # L2, A3: the most-recent end of T2 (or of T1 for a pending T1 block)
            ts[nd] = meta[CLOCK]
            hpos[nd] = -1
            _l_append(bprev, bnext, meta, h, nd)
        elif kind == 3:  # B1 ghost: p grows
            b1 = meta[HEAD0 + 2]
            b2 = meta[HEAD0 + 5]
            pf[0] = min(pf[0] + max(1.0, b2 / b1), float(cap))
            _g_unlink(gprev, gnext, meta, 0, nd)
            _g_append(gprev, gnext, meta, 0, nd)
        elif kind == 4:  # B2 ghost: p shrinks
            b1 = meta[HEAD0 + 2]
            b2 = meta[HEAD0 + 5]
            pf[0] = max(pf[0] - max(1.0, b1 / b2), 0.0)
            _g_unlink(gprev, gnext, meta, 1, nd)
            _g_append(gprev, gnext, meta, 1, nd)
    return 0


@njit(cache=True)
def _next_eligible(hts, hnode, hpos, prot, meta, h, side, ns):  # type: ignore[no-untyped-def]
    """Least-recent unprotected candidate of heap ``h`` (protected tops are parked in ``side``)."""
    cap = meta[CAP]
    while meta[HS0 + h] > 0:
        nd = np.int64(hnode[_hp(h, 0, cap)])
        if prot[nd] == 0:
            return nd, ns
        _heap_remove(hts, hnode, hpos, meta, h, nd)
        side[ns] = nd
        ns += 1
    return -1, ns


@njit(cache=True)
def _candidate(hts, hnode, hpos, ts, ref, prot, bprev, bnext, meta, h, side, ns, lside, nl):  # type: ignore[no-untyped-def]
    """Oldest unprotected eligible block of list ``h`` (L3, A4), or -1: ``(node, ns, nl)``.

    Non-evictable blocks met at the list's head are parked (for good: they come back
    through the heap when evictable again); protected eligible ones are set aside in
    ``lside`` (heap tops in ``side``) and put back by the caller.
    """
    m = -1
    while True:
        nd = meta[LHEAD0 + 2 * h]
        if nd < 0:
            break
        if ref[nd] != 0:
            _l_unlink(bprev, bnext, meta, h, nd)
            hpos[nd] = PARKED
            continue
        if prot[nd] != 0:
            _l_unlink(bprev, bnext, meta, h, nd)
            lside[nl] = nd
            nl += 1
            continue
        m = nd
        break
    e, ns = _next_eligible(hts, hnode, hpos, prot, meta, h, side, ns)
    if m < 0 or (e >= 0 and ts[e] < ts[m]):
        return e, ns, nl
    return m, ns, nl


@njit(cache=True)
def _evict(table, keys, a64, a32, a8, pf, nodes, n, out_vic):  # type: ignore[no-untyped-def]
    """Choose and apply ``n`` victims (P5, L3, A4, A5); -1 and no change if impossible."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = _split(a64, a32, a8)
    cap = meta[CAP]
    arc = meta[ARC] != 0
    shift = np.uint64(meta[SHIFT])
    mask = np.uint64(meta[FPMASK])
    nprot = 0
    for i in range(nodes.shape[0]):
        nd = nodes[i]
        if nd >= 0 and nd < cap and lst[nd] != 0 and prot[nd] == 0:
            prot[nd] = 1
            if ref[nd] == 0:
                nprot += 1
    if meta[ELIG] - nprot < n:  # I6: refuse before anything moves (M5.4, I7)
        for i in range(nodes.shape[0]):
            nd = nodes[i]
            if nd >= 0 and nd < cap:
                prot[nd] = 0
        return -1
    side = np.empty(nprot, np.int64)
    lside = np.empty(nprot, np.int64)
    ns = 0
    nl = 0
    from_t1 = np.empty(n, np.bool_)
    t1_victims = 0
    target = np.floor(pf[0])
    for k in range(n):
        e1 = meta[LHEAD0]
        if e1 < 0 or ref[e1] != 0 or prot[e1] != 0 or meta[HS0] != 0:  # not the plain list pop
            e1, ns, nl = _candidate(hts, hnode, hpos, ts, ref, prot, bprev, bnext, meta, 0, side, ns, lside, nl)
        take_t1 = False
        if not arc:
            take_t1 = True
        elif e1 >= 0:
            if meta[N1] - t1_victims >= target:
                take_t1 = True
            else:
                e2, ns, nl = _candidate(hts, hnode, hpos, ts, ref, prot, bprev, bnext, meta, 1, side, ns, lside, nl)
                take_t1 = e2 < 0
        if take_t1:
            victim = e1
            t1_victims += 1
        else:
            victim, ns, nl = _candidate(hts, hnode, hpos, ts, ref, prot, bprev, bnext, meta, 1, side, ns, lside, nl)
        if hpos[victim] >= 0:
            _heap_remove(hts, hnode, hpos, meta, lst[victim] - 1, victim)
        else:
            _l_unlink(bprev, bnext, meta, lst[victim] - 1, victim)
        out_vic[k] = victim
        from_t1[k] = take_t1
        prefetch(keys, victim)  # its key row is rehashed below
    for j in range(ns):
        nd = side[j]
        _heap_push(hts, hnode, hpos, ts, meta, lst[nd] - 1, nd)
    for j in range(nl - 1, -1, -1):  # protected heads back in front, in their order
        nd = lside[j]
        _l_prepend(bprev, bnext, meta, lst[nd] - 1, nd)
    meta[ELIG] -= n
    for i in range(nodes.shape[0]):
        nd = nodes[i]
        if nd >= 0 and nd < cap:
            prot[nd] = 0
    # apply (A5: ghosts appended in victim order, each list trimmed to the capacity)
    kw = keys.shape[1]
    tm = np.uint64(table.shape[0] - 1)
    gtag = _gtag(a32, meta)
    vtags = np.empty(min(n, CHUNK), np.uint64)
    nxt0 = meta[HEAD0]  # the next ghosts a trim of B1 / B2 may drop (prefetch hints only)
    nxt1 = meta[HEAD0 + 3]
    for k in range(n):
        if k % CHUNK == 0:  # rehash a group of victims first, prefetching their home slots
            for j in range(k, min(k + CHUNK, n)):
                t = _node_tag(keys, out_vic[j], mask)
                vtags[j - k] = t
                prefetch(table, _home(t, shift, tm))
            if arc:  # and the slots, rows and links of the ghosts their trims may drop
                for j in range(k, min(k + CHUNK, n)):
                    c = nxt0 if from_t1[j] else nxt1
                    if c < 0:
                        continue
                    x = c - cap
                    prefetch(table, _home(np.uint64(gtag[x]) & _LO32, shift, tm))
                    prefetch(keys, c)
                    prefetch(lst, c)
                    prefetch(gprev, x)
                    if from_t1[j]:
                        nxt0 = gnext[x]
                    else:
                        nxt1 = gnext[x]
        nd = out_vic[k]
        tag = vtags[k % CHUNK]
        s = _slot_of(table, shift, tag, nd)
        g = 0 if from_t1[k] else 1
        meta[N1 + g] -= 1
        if arc:
            if meta[HEAD0 + 3 * g + 2] >= cap:
                _g_drop(table, meta, lst, gprev, gnext, gfree, gtag, meta[HEAD0 + 3 * g], -1)
                if (table[s] & _LO32) != np.uint64(nd + 1):  # the drop shifted our slot back
                    s = _slot_of(table, shift, tag, nd)
            meta[NGFREE] -= 1
            gn = gfree[meta[NGFREE]]
            gtag[gn - cap] = np.int32(tag)
            for j in range(kw):
                keys[gn, j] = keys[nd, j]
            table[s] = (tag << _U32) | np.uint64(gn + 1)
            lst[gn] = 3 + g
            _g_append(gprev, gnext, meta, g, gn)
        else:
            _table_delete(table, shift, s)
        lst[nd] = 0
        ref[nd] = 0
        free[meta[NFREE]] = nd
        meta[NFREE] += 1
    return n


@njit(cache=True)
def prepare_store(table, keys, a64, a32, a8, pf, addr, n, q, io):  # type: ignore[no-untyped-def]
    """M5: count stored; batch indices in ``out_a``, block ids in ``out_b``, victims in
    ``out_c`` (info[0]: victim count); -1 (refused), ``KEYS_NARROW``: no change."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = _split(a64, a32, a8)
    info, lens, out_idx, out_ids, out_vic = _io(io)
    w = _load(addr, n, q, lens, meta)
    if w < 0:
        return w
    if w + 1 > keys.shape[1]:
        info[0] = w
        return KEYS_NARROW
    shift = np.uint64(meta[SHIFT])
    tags, nodes, slots = _find_all(table, keys, meta, lst, ref, q, lens, n)
    # M5.1: absent hashes, first occurrence, no duplicates (a batch-local probe set).
    size = 8
    while size < 2 * n:
        size *= 2
    dset = np.zeros(size, np.int64)
    dmask = size - 1
    m = 0
    for i in range(n):
        nd = nodes[i]
        if nd >= 0 and lst[nd] <= 2:
            continue
        s = np.int64((tags[i] * _P1) >> np.uint64(40)) & dmask
        while True:
            v = dset[s]
            if v == 0:
                dset[s] = i + 1
                out_idx[m] = i
                m += 1
                break
            j = v - 1
            if tags[j] == tags[i] and lens[j] == lens[i]:
                same = True
                for x in range((lens[i] + 7) // 8):
                    if q[i, x] != q[j, x]:
                        same = False
                        break
                if same:
                    break
            s = (s + 1) & dmask
    info[0] = 0
    if m == 0:
        return 0
    need = m - meta[NFREE]
    nv = 0
    if need > 0:
        nv = _evict(table, keys, a64, a32, a8, pf, nodes, need, out_vic)
        if nv < 0:
            return -1
    kw = keys.shape[1]
    tmask = table.shape[0] - 1
    moved = nv > 0  # entries shifted back since ``_find_all``: its empty slots are stale
    for k in range(m):
        i = out_idx[k]
        length = lens[i]
        if nodes[i] >= 0:  # a ghost at lookup time (A1: forget it), unless trimmed since
            s, g = _find(table, keys, shift, q, i, length, tags[i])
            if g >= 0:
                _g_drop(table, meta, lst, gprev, gnext, gfree, _gtag(a32, meta), g, s)
            moved = True
        meta[NFREE] -= 1
        b = free[meta[NFREE]]
        keys[b, 0] = np.uint64(length)
        nw = (length + 7) // 8
        for j in range(nw):
            keys[b, 1 + j] = q[i, j]
        for j in range(1 + nw, kw):
            keys[b, j] = 0
        lst[b] = 1
        ref[b] = -1
        meta[CLOCK] += 1
        ts[b] = meta[CLOCK]
        hpos[b] = -1
        _l_append(bprev, bnext, meta, 0, b)
        meta[N1] += 1
        # The hash is absent: its slot is the first empty one of its probe. Without deletes
        # since ``_find_all``, that is at or after the probe's end found then (inserts only
        # fill slots); otherwise probe again from the home slot.
        s = slots[i] if not moved else _home(tags[i], shift, np.uint64(tmask))
        while table[s] != 0:
            s = (s + 1) & tmask
        table[s] = (tags[i] << _U32) | np.uint64(b + 1)
        out_ids[k] = b
    info[0] = nv
    return m


@njit(cache=True)
def store_ok(table, keys, a64, a32, a8, pf, addr, n, q, io):  # type: ignore[no-untyped-def]
    """M6: pending -> ready; count, and the batch indices that became ready in ``out_a``."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = _split(a64, a32, a8)
    info, lens, out_a, out_b, out_c = _io(io)
    w = _load(addr, n, q, lens, meta)
    if w < 0:
        return w
    m = 0
    tags, nodes, slots = _find_all(table, keys, meta, lst, ref, q, lens, n)
    for i in range(n):
        nd = nodes[i]
        if nd >= 0 and lst[nd] <= 2 and ref[nd] == -1:
            ref[nd] = 0
            meta[ELIG] += 1
            if hpos[nd] == PARKED:  # met at the head while pending: compete at its stamp
                _heap_push(hts, hnode, hpos, ts, meta, lst[nd] - 1, nd)
            out_a[m] = i
            m += 1
    return m


@njit(cache=True)
def store_fail(table, keys, a64, a32, a8, pf, addr, n, q, io):  # type: ignore[no-untyped-def]
    """M7: drop pending blocks (no event); the count dropped."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = _split(a64, a32, a8)
    info, lens, out_a, out_b, out_c = _io(io)
    w = _load(addr, n, q, lens, meta)
    if w < 0:
        return w
    shift = np.uint64(meta[SHIFT])
    mask = np.uint64(meta[FPMASK])
    m = 0
    for i in range(n):
        tag = _tag(_fingerprint(q, i, 0, lens[i], mask))
        s, nd = _find(table, keys, shift, q, i, lens[i], tag)
        if nd >= 0 and lst[nd] <= 2 and ref[nd] == -1:
            meta[N1 + lst[nd] - 1] -= 1
            if hpos[nd] == -1:
                _l_unlink(bprev, bnext, meta, lst[nd] - 1, nd)
            hpos[nd] = -1
            _table_delete(table, shift, s)
            lst[nd] = 0
            ref[nd] = 0
            free[meta[NFREE]] = nd
            meta[NFREE] += 1
            m += 1
    return m


def table_size(nodes: int) -> int:
    """Slots for ``nodes`` entries: a power of two, load factor at most 3/4."""
    size = 8
    while size * 3 < nodes * 4:
        size *= 2
    return size


def arena_sizes(capacity: int, ghosts: int) -> tuple[int, int, int]:
    """Lengths of the int64, int32 and int8 arenas."""
    return META_SIZE + 2 * capacity, 6 * capacity + 4 * ghosts, capacity + ghosts + capacity
