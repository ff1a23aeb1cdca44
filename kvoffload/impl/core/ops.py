"""The compiled core's entry points: one per manager operation, one type signature each.

Every entry point takes ``(table, keys, a64, a32, a8, pf, addr, n, q, io)`` (``layout``
and ``state`` say what they hold), checks what it needs before it changes anything, and
returns a count ``>= 0`` or a ``layout`` result code after changing nothing (details in
``io``'s ``info``). A process compiles (or loads from numba's cache) only the entry
points it calls; ``runtime`` does that in the background while the plain-Python twin of
this module answers.
"""

from __future__ import annotations

import numpy as np

from .ghosts import g_append, g_unlink
from .heap import heap_push, heap_remove
from .jit import kernel
from .layout import (
    B1,
    B2,
    BLOCK_BAD,
    CAP,
    CLOCK,
    ELIG,
    FPMASK,
    GHOST_SIZE,
    IN_LIST,
    LIST_T1,
    LIST_T2,
    MISS,
    N1,
    NFREE,
    PARKED,
    POLICY,
    POLICY_ARC,
    POLICY_S3FIFO,
    POLICY_SIEVE,
    RANKED,
    MAX_POSITION,
    POSITION_BAD,
    HAND,
    SHIFT,
    T1,
    T2,
    FREE,
    GATHER_WIDE,
    RANK_SET,
)
from .ghosts import gslot
from .lists import l_append, l_unlink
from .marks import touch_marks
from .order import minors_of
from .ranks import rerank_all
from .state import find_all, find_into, load, unpack, unpack_io
from .store import prepare_store
from .table import find, fingerprint, table_delete, tag_of, unready

__all__ = [
    "arc_finish",
    "arc_store_misses",
    "complete_load",
    "lookup",
    "prepare_load",
    "prepare_store",
    "rerank",
    "rerank_blocks",
    "store_fail",
    "store_ok",
    "touch",
]


@kernel()
def lookup(table, keys, a64, a32, a8, pf, addr, n, q, io):  # type: ignore[no-untyped-def]
    """M1: the number of leading hashes that are present and ready."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = unpack(a64, a32, a8)
    info, lens, out_a, out_b, out_c = unpack_io(io)
    w = load(addr, n, q, io, meta)
    if w < 0:
        return w
    return find_into(table, keys, meta, lst, ref, q, io, n, True)


@kernel()
def _first_unloadable(nodes, lst, ref, n, info):  # type: ignore[no-untyped-def]
    """M2, M3: index of the first absent (info[1] = 0) or pending (1) hash, or -1."""
    for i in range(n):
        nd = nodes[i]
        if unready(nd, lst, ref):
            info[0] = i
            info[1] = 0 if nd < 0 or lst[nd] > T2 else 1
            return i
    return -1


@kernel()
def prepare_load(table, keys, a64, a32, a8, pf, addr, n, q, io):  # type: ignore[no-untyped-def]
    """M2: block ids in ``out_a``; ``MISS`` (info: index, 1 if pending) and no change on a miss."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = unpack(a64, a32, a8)
    info, lens, out_a, out_b, out_c = unpack_io(io)
    w = load(addr, n, q, io, meta)
    if w < 0:
        return w
    tags, nodes, slots = find_all(table, keys, meta, lst, ref, q, n, io)
    if _first_unloadable(nodes, lst, ref, n, info) >= 0:
        return MISS
    for i in range(n):
        nd = nodes[i]
        if ref[nd] == 0:
            meta[ELIG] -= 1
            if hpos[nd] >= 0:
                heap_remove(hts, hnode, hpos, meta, lst[nd] - T1, nd, minors_of(a32, meta), keys)
                hpos[nd] = PARKED
        ref[nd] += 1
        out_a[i] = nd
    return n


@kernel()
def _release(nodes, lst, ref, n, step):  # type: ignore[no-untyped-def]
    """Add ``step`` to the ref count of every present block of the batch, per occurrence;
    the number of blocks that end at 0 (counted once each, as counts only fall)."""
    ended_idle = 0
    for i in range(n):
        nd = nodes[i]
        if nd >= 0 and lst[nd] <= T2:
            ref[nd] += step
            if ref[nd] == 0:
                ended_idle += 1
    return ended_idle


@kernel()
def complete_load(table, keys, a64, a32, a8, pf, addr, n, q, io):  # type: ignore[no-untyped-def]
    """M3: ``MISS`` (info: index, kind, outstanding loads) and no change if not covered."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = unpack(a64, a32, a8)
    info, lens, out_a, out_b, out_c = unpack_io(io)
    w = load(addr, n, q, io, meta)
    if w < 0:
        return w
    tags, nodes, slots = find_all(table, keys, meta, lst, ref, q, n, io)
    became_idle = _release(nodes, lst, ref, n, -1)
    bad = _first_unloadable(nodes, lst, ref, n, info)  # a count below 0: more releases than loads
    if bad >= 0:
        _release(nodes, lst, ref, n, 1)
        nd = nodes[bad]
        info[2] = ref[nd] if nd >= 0 and lst[nd] <= T2 else 0
        return MISS
    meta[ELIG] += became_idle
    for i in range(n):
        nd = nodes[i]
        if ref[nd] == 0 and hpos[nd] == PARKED:  # evictable again, at its own stamp
            heap_push(hts, hnode, hpos, ts, meta, lst[nd] - T1, nd, minors_of(a32, meta), keys)
    return n


@kernel()
def _touch_ghost(meta, pf, gprev, gnext, nd, g):  # type: ignore[no-untyped-def]
    """A3: a hit on ghost list ``g`` adapts ``p`` (B1 grows it, B2 shrinks it); the ghost
    becomes its list's most recent."""
    b1 = meta[gslot(0, GHOST_SIZE)]
    b2 = meta[gslot(1, GHOST_SIZE)]
    if g == 0:
        pf[0] = min(pf[0] + max(1.0, b2 / b1), float(meta[CAP]))
    else:
        pf[0] = max(pf[0] - max(1.0, b1 / b2), 0.0)
    g_unlink(gprev, gnext, meta, g, nd)
    g_append(gprev, gnext, meta, g, nd)


#: ``_renew_all``'s rule for a block: M4's touch (A3: a ready ARC T1 block moves to T2;
#: a ghost hit adapts ``p``), or K5's end of request (``out_a[i]``: reused, T1 -> T2;
#: ghosts left alone).
RENEW_TOUCH = 0
RENEW_FINISH = 1


@kernel()  # one call per batch: the loop body lives once for touch and arc_finish
def _renew_all(meta, pf, ts, hts, ref, hpos, hnode, gprev, gnext, lst, bprev, bnext,  # type: ignore[no-untyped-def]
               nodes, n, out_a, rule, arc, minor, keys):
    """P4: the batch's blocks last to first; each leaves its place (its list, or the
    heap of idle blocks met at a list's head) for the most recent end of its list (L2),
    or of T2 when promoted (a second use: A3 / K5); a new stamp either way (N9: a fresh
    number, minor 0)."""
    for i in range(n - 1, -1, -1):
        nd = nodes[i]
        if nd < 0:
            continue
        kind = lst[nd]
        if kind == B1 or kind == B2:
            if rule == RENEW_TOUCH:
                _touch_ghost(meta, pf, gprev, gnext, nd, kind - B1)
            continue
        if rule == RENEW_TOUCH:
            promote = arc and kind == T1 and ref[nd] >= 0  # a pending T1 block stays
        else:
            promote = out_a[i] != 0 and kind == T1
        h = kind - T1
        meta[CLOCK] += 1
        if hpos[nd] == IN_LIST:
            l_unlink(bprev, bnext, meta, h, nd)
        elif hpos[nd] >= 0:
            heap_remove(hts, hnode, hpos, meta, h, nd, minor, keys)
        if promote:
            lst[nd] = T2
            meta[N1 + LIST_T1] -= 1
            meta[N1 + LIST_T2] += 1
            h = LIST_T2
        ts[nd] = meta[CLOCK]
        if minor.shape[0] != 0:
            minor[nd] = 0
        hpos[nd] = IN_LIST
        l_append(bprev, bnext, meta, h, nd)


@kernel()
def touch(table, keys, a64, a32, a8, pf, addr, n, q, io):  # type: ignore[no-untyped-def]
    """M4, P4, L2, A3: last hash first; F4, V4: ``marks.touch_marks``."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = unpack(a64, a32, a8)
    info, lens, out_a, out_b, out_c = unpack_io(io)
    w = load(addr, n, q, io, meta)
    if w < 0:
        return w
    tags, nodes, slots = find_all(table, keys, meta, lst, ref, q, n, io)
    if meta[POLICY] == POLICY_S3FIFO or meta[POLICY] == POLICY_SIEVE:  # F4, V4: marks only
        return touch_marks(a8, meta, nodes, lst, ref, n)
    _renew_all(meta, pf, ts, hts, ref, hpos, hnode, gprev, gnext, lst, bprev, bnext,
               nodes, n, out_a, RENEW_TOUCH, meta[POLICY] == POLICY_ARC, minors_of(a32, meta), keys)
    return 0


@kernel()
def arc_finish(table, keys, a64, a32, a8, pf, addr, n, q, io):  # type: ignore[no-untyped-def]
    """K5 (ARC): a finished request's keys, last to first; ``out_a[i]`` (set by the caller)
    non-zero when key ``i`` was reused. A reused T1 block moves to T2's most recent end,
    any other T1/T2 block (inserted only) to its own list's most recent end; ghosts and
    absent keys are left alone (no A3 here). Any other policy: nothing changes."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = unpack(a64, a32, a8)
    info, lens, out_a, out_b, out_c = unpack_io(io)
    w = load(addr, n, q, io, meta)
    if w < 0:
        return w
    if meta[POLICY] != POLICY_ARC:
        return 0
    tags, nodes, slots = find_all(table, keys, meta, lst, ref, q, n, io)
    _renew_all(meta, pf, ts, hts, ref, hpos, hnode, gprev, gnext, lst, bprev, bnext,
               nodes, n, out_a, RENEW_FINISH, True, minors_of(a32, meta), keys)
    return 0


@kernel()
def arc_store_misses(table, keys, a64, a32, a8, pf, addr, n, q, io):  # type: ignore[no-untyped-def]
    """K6 (ARC): a store's misses reported to the policy as one ``touch`` (M4, A3), last
    to first, skipping key ``i`` when ``out_a[i]`` (set by the caller) is non-zero (the
    request reported it before). Of a touch of absent keys only the ghosts change
    anything (A3: ``p`` moves, the ghost becomes its list's most recent), and a ghost is
    absent (neither ready nor pending): so this touches the batch's ghosts, and present
    keys, which are no store misses, are left alone. Any other policy: nothing changes."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = unpack(a64, a32, a8)
    info, lens, out_a, out_b, out_c = unpack_io(io)
    w = load(addr, n, q, io, meta)
    if w < 0:
        return w
    if meta[POLICY] != POLICY_ARC:
        return 0
    tags, nodes, slots = find_all(table, keys, meta, lst, ref, q, n, io)
    touched = 0
    for i in range(n - 1, -1, -1):  # P4: last to first
        nd = nodes[i]
        if nd < 0 or out_a[i] != 0:
            continue
        kind = lst[nd]
        if kind == B1 or kind == B2:
            _touch_ghost(meta, pf, gprev, gnext, nd, kind - B1)
            touched += 1
    return touched


@kernel()
def store_ok(table, keys, a64, a32, a8, pf, addr, n, q, io):  # type: ignore[no-untyped-def]
    """M6: pending -> ready; count, and the batch indices that became ready in ``out_a``."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = unpack(a64, a32, a8)
    info, lens, out_a, out_b, out_c = unpack_io(io)
    w = load(addr, n, q, io, meta)
    if w < 0:
        return w
    m = 0
    tags, nodes, slots = find_all(table, keys, meta, lst, ref, q, n, io)
    for i in range(n):
        nd = nodes[i]
        if nd >= 0 and lst[nd] <= T2 and ref[nd] == -1:
            ref[nd] = 0
            meta[ELIG] += 1
            if hpos[nd] == PARKED:  # met at the head while pending (or ranked, N9): compete at its rank
                heap_push(hts, hnode, hpos, ts, meta, lst[nd] - T1, nd, minors_of(a32, meta), keys)
            out_a[m] = i
            m += 1
    return m


@kernel()
def store_fail(table, keys, a64, a32, a8, pf, addr, n, q, io):  # type: ignore[no-untyped-def]
    """M7, F7, V6: drop pending blocks (no event); the count dropped."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = unpack(a64, a32, a8)
    info, lens, out_a, out_b, out_c = unpack_io(io)
    w = load(addr, n, q, io, meta)
    if w < 0:
        return w
    shift = np.uint64(meta[SHIFT])
    mask = np.uint64(meta[FPMASK])
    m = 0
    for i in range(n):
        s, nd = find(table, keys, shift, q, i, lens[i], tag_of(fingerprint(q, i, 0, lens[i], mask)))
        if nd >= 0 and lst[nd] <= T2 and ref[nd] == -1:
            h = lst[nd] - T1
            meta[N1 + h] -= 1
            if meta[HAND] == nd:  # V6: SIEVE's hand moves to the next newer block (none past the newest)
                meta[HAND] = bnext[nd]
            if hpos[nd] == IN_LIST:
                l_unlink(bprev, bnext, meta, h, nd)
            hpos[nd] = IN_LIST
            table_delete(table, shift, s)
            lst[nd] = FREE
            ref[nd] = 0
            free[meta[NFREE]] = nd
            meta[NFREE] += 1
            m += 1
    return m


@kernel()
def rerank(table, keys, a64, a32, a8, pf, addr, n, q, io):  # type: ignore[no-untyped-def]
    """N9 (an LRU ranked by request): present hash ``i`` takes rank ``(out_c[i], -out_b[i])``
    (a number, an end-token position) by mode ``out_a[i]`` (``layout.RANK_SET`` /
    ``RANK_RAISE`` / ``RANK_SKIP``; all three set by the caller); the count re-ranked.
    ``POSITION_BAD`` (info[0]: the index) and no change for a position outside
    ``[0, MAX_POSITION]``. Any other manager: nothing changes."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = unpack(a64, a32, a8)
    info, lens, out_a, out_b, out_c = unpack_io(io)
    w = load(addr, n, q, io, meta)
    if w < 0:
        return w
    if meta[RANKED] == 0:
        return 0
    for i in range(n):
        if out_b[i] < 0 or out_b[i] > MAX_POSITION:
            info[0] = i
            return POSITION_BAD
    tags, nodes, slots = find_all(table, keys, meta, lst, ref, q, n, io)
    return rerank_all(meta, ts, hts, ref, hpos, hnode, lst, bprev, bnext, minors_of(a32, meta), keys, nodes, n,
                      out_a, out_c, out_b)


@kernel()
def rerank_blocks(table, keys, a64, a32, a8, pf, addr, n, q, io):  # type: ignore[no-untyped-def]
    """N9: ``rerank`` of the blocks a store just inserted, named by block id (``out_a[i]``:
    ``prepare_store``'s answer, no hash to find), each taking rank ``(out_c[0], -out_b[i])``
    (``RANK_SET``); the count re-ranked. ``BLOCK_BAD`` for an id outside ``[0, capacity)``,
    ``POSITION_BAD`` for a position outside ``[0, MAX_POSITION]`` (info[0]: the index) and no
    change. A block no longer present is left alone; any other manager: nothing changes."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = unpack(a64, a32, a8)
    info, lens, out_a, out_b, out_c = unpack_io(io)
    if n < 0 or n > lens.shape[0]:
        return GATHER_WIDE
    if meta[RANKED] == 0:
        return 0
    for i in range(n):
        if out_a[i] < 0 or out_a[i] >= meta[CAP]:
            info[0] = i
            return BLOCK_BAD
        if out_b[i] < 0 or out_b[i] > MAX_POSITION:
            info[0] = i
            return POSITION_BAD
    number = out_c[0]
    for i in range(n):  # ``rerank_all``'s per-block modes and numbers: the same for all
        lens[i] = RANK_SET
        out_c[i] = number
    return rerank_all(meta, ts, hts, ref, hpos, hnode, lst, bprev, bnext, minors_of(a32, meta), keys, out_a, n,
                      lens, out_c, out_b)
