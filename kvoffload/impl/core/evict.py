"""Eviction for ``prepare_store`` (P5, L3, A4, A5, F5, F6, V5; M5.4, I6, I7), in the contract's steps.

1. :func:`protect` the batch's own present blocks (a store never evicts them) and refuse
   before anything moves if fewer than the needed blocks are evictable (M5.4, I7);
2. :func:`choose_victims`: the policy's victim, one at a time (:func:`pick_victim`, the
   one place a new policy plugs in), taken out of its list or heap; S3-FIFO and SIEVE
   choose in their own modules (``s3fifo``, ``sieve``);
3. :func:`apply_victims`: free each victim's block; a list whose ghost bound
   (``meta[GBOUND + g]``) is 0 forgets its victims' hashes (LRU, SIEVE, S3-FIFO's M),
   otherwise they become ghosts of B1 / B2, trimmed to that bound (A5, F6).

Each present block is in one of three places, told by ``hpos``: ``IN_LIST`` (its recency
list, in stamp order), ``PARKED`` (out of every structure: met at a list's head while
pending or in use, or taken out of the heap by ``prepare_load``), or ``>= 0`` (its list's
*reactivated heap*, keyed by its own stamp: a parked block that became evictable again).
The oldest eligible block of a list is the older of the list's head (after parking the
non-evictable blocks met there; each block is parked at most once per non-evictable
episode, so the walk is amortised O(1)) and the heap's top. Ready idle blocks are never
parked, so the order of the eligible blocks is exactly the stamp order (L1–L3).
"""

from __future__ import annotations

import numpy as np

from .ghosts import g_append, g_drop, gslot
from .heap import heap_order, heap_push, heap_remove, heap_top, pool_newer
from .jit import kernel
from .layout import (
    B1,
    CAP,
    ELIG,
    FREE,
    GBOUND,
    GHOST_HEAD,
    GHOST_SIZE,
    INFO_GHOST_CURSORS,
    INFO_OBJECTS,
    LIST_HEAD,
    LIST_T1,
    LIST_T2,
    N1,
    NFREE,
    NGFREE,
    NODES,
    PARKED,
    POLICY,
    POLICY_ARC,
    POLICY_S3FIFO,
    POLICY_SIEVE,
    SHIFT,
    T1,
)
from .lists import l_prepend, l_unlink, lslot
from .order import minors_of, rank_lt
from .state import scratch, unpack, unpack_io
from .pyobj import peek
from .table import _LO32, _U32, home, node_tag, prefetch, prefetch_at, prefetch_cluster, slot_of, table_delete

__all__ = ["evict"]


# --------------------------------------------------------------------------- 1. protect
@kernel()
def protect(nodes, cap, lst, ref, prot):  # type: ignore[no-untyped-def]
    """Mark the batch's present blocks unevictable (M5.4); the number of them that are idle."""
    idle = 0
    for i in range(nodes.shape[0]):
        nd = nodes[i]
        if nd >= 0 and nd < cap and lst[nd] != FREE and prot[nd] == 0:
            prot[nd] = 1
            if ref[nd] == 0:
                idle += 1
    return idle


@kernel()
def unprotect(nodes, cap, prot):  # type: ignore[no-untyped-def]
    """Undo :func:`protect`."""
    for i in range(nodes.shape[0]):
        nd = nodes[i]
        if nd >= 0 and nd < cap:
            prot[nd] = 0


# --------------------------------------------------------------------------- 2. choose
@kernel()
def _heap_candidate(hts, hnode, hpos, prot, meta, h, side, ns, minor, keys):  # type: ignore[no-untyped-def]
    """Least-recent unprotected block of heap ``h`` (protected tops are set aside in ``side``)."""
    heap_order(hts, hnode, hpos, meta, h, minor, keys)
    while True:
        nd = heap_top(hnode, meta, h)
        if nd < 0 or prot[nd] == 0:
            return nd, ns
        heap_remove(hts, hnode, hpos, meta, h, nd, minor, keys)
        side[ns] = nd
        ns += 1


@kernel()
def _list_candidate(hpos, ref, prot, bprev, bnext, meta, h, lside, nl):  # type: ignore[no-untyped-def]
    """Head of list ``h`` after parking its non-evictable head blocks (for good: they come
    back through the heap) and setting its protected idle ones aside in ``lside``."""
    while True:
        nd = meta[lslot(h, LIST_HEAD)]
        if nd < 0:
            return nd, nl
        if ref[nd] != 0:
            l_unlink(bprev, bnext, meta, h, nd)
            hpos[nd] = PARKED
        elif prot[nd] != 0:
            l_unlink(bprev, bnext, meta, h, nd)
            lside[nl] = nd
            nl += 1
        else:
            return nd, nl


@kernel()
def candidate(hts, hnode, hpos, ts, ref, prot, bprev, bnext, meta, h, side, ns, lside, nl, minor, keys):  # type: ignore[no-untyped-def]
    """Oldest unprotected eligible block of list ``h`` (L3, A4; N9: lowest rank), or -1: ``(node, ns, nl)``."""
    m, nl = _list_candidate(hpos, ref, prot, bprev, bnext, meta, h, lside, nl)
    if m >= 0 and pool_newer(ts, meta, h, m):  # the heap cannot hold an older block
        return m, ns, nl
    e, ns = _heap_candidate(hts, hnode, hpos, prot, meta, h, side, ns, minor, keys)
    if m < 0 or (e >= 0 and rank_lt(ts[e], e, ts[m], m, minor, keys)):
        return e, ns, nl
    return m, ns, nl


@kernel()
def pick_victim(hts, hnode, hpos, ts, ref, prot, bprev, bnext, meta, t1_taken, target, side, ns, lside, nl, minor, keys):  # type: ignore[no-untyped-def]
    """P5: the policy's next victim ``(node, list id, ns, nl)``; LRU: the oldest of its list;
    ARC (A4): T1's oldest while |T1| (less victims taken from it) >= floor(p), else T2's."""
    e1 = meta[lslot(LIST_T1, LIST_HEAD)]
    if e1 < 0 or ref[e1] != 0 or prot[e1] != 0 or not pool_newer(ts, meta, LIST_T1, e1):  # not the plain list pop
        e1, ns, nl = candidate(hts, hnode, hpos, ts, ref, prot, bprev, bnext, meta, LIST_T1, side, ns, lside, nl,
                               minor, keys)
    if meta[POLICY] != POLICY_ARC:
        return e1, LIST_T1, ns, nl
    if e1 >= 0 and meta[N1 + LIST_T1] - t1_taken >= target:
        return e1, LIST_T1, ns, nl
    e2, ns, nl = candidate(hts, hnode, hpos, ts, ref, prot, bprev, bnext, meta, LIST_T2, side, ns, lside, nl,
                           minor, keys)
    if e1 >= 0 and e2 < 0:
        return e1, LIST_T1, ns, nl
    return e2, LIST_T2, ns, nl


@kernel()
def choose_victims(a64, a32, a8, pf, n, out_vic, from_list, keys, side, lside):  # type: ignore[no-untyped-def]
    """Take ``n`` victims out of their lists / heaps into ``out_vic`` (their list ids in
    ``from_list``); blocks set aside on the way (in ``side``, ``lside``: room for every
    protected block) are put back where they were."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = unpack(a64, a32, a8)
    minor = minors_of(a32, meta)
    ns = 0
    nl = 0
    t1_taken = 0
    target = np.floor(pf[0])
    arc = meta[POLICY] == POLICY_ARC
    for k in range(n):
        e1 = meta[lslot(LIST_T1, LIST_HEAD)]
        # The steady state, without a call: T1's (LRU's) head is idle, unprotected, no heap
        # competes, and (ARC) T1 is at or above its target: tested here, per victim, before
        # the general ``pick_victim``.
        if (e1 >= 0 and ref[e1] == 0 and prot[e1] == 0 and pool_newer(ts, meta, LIST_T1, e1)
                and (not arc or meta[N1 + LIST_T1] - t1_taken >= target)):
            victim, h = e1, LIST_T1
        else:
            victim, h, ns, nl = pick_victim(hts, hnode, hpos, ts, ref, prot, bprev, bnext, meta, t1_taken, target,
                                            side, ns, lside, nl, minor, keys)
        if h == LIST_T1:
            t1_taken += 1
        if hpos[victim] >= 0:
            heap_remove(hts, hnode, hpos, meta, h, victim, minor, keys)
        else:
            l_unlink(bprev, bnext, meta, h, victim)
        out_vic[k] = victim
        from_list[k] = h
        prefetch(keys, victim)  # its key row is rehashed next,
        prefetch(lst, victim)  # its list kind freed,
        prefetch(ts, victim)  # and its stamp renewed when its block is stored again
    for j in range(ns):
        heap_push(hts, hnode, hpos, ts, meta, lst[side[j]] - T1, side[j], minor, keys)
    for j in range(nl - 1, -1, -1):  # protected heads back in front, in their order
        l_prepend(bprev, bnext, meta, lst[lside[j]] - T1, lside[j])
    meta[ELIG] -= n


# --------------------------------------------------------------------------- 3. apply
# A rolling prefetch, ``_AHEAD`` victims before use: the misses of that many overlap and each
# line arrives just in time. (Groups of 32 prefetched at once, before: each group's first
# victims waited for their lines, and no group overlapped the next. At 10^6 blocks this
# step went from 73 to 46 ns per victim for LRU, 170 to 106 for ARC; distances 4, 12, 16
# and 24 were slower than 8.) The tags read ahead wait in a ring of ``_RING`` slots.
_AHEAD = 8
_RING = 2 * _AHEAD


@kernel()
def _prefetch_victim(table, keys, lst, gnext, gprev, meta, shift,  # type: ignore[no-untyped-def]
                     out_vic, from_list, j, vtags, nxt, objects):
    """Victim ``j``'s tag (from its row) into ``vtags[j % _RING]``, prefetching its home slot,
    its hash object's header (``objects``: ``layout.INFO_OBJECTS``; its slot there was
    prefetched ``_AHEAD`` victims earlier) and, for ARC and S3-FIFO, the ghost its trim may
    drop (``nxt``: the next such ghost of B1 / B2)."""
    tm = np.uint64(table.shape[0] - 1)
    t = node_tag(keys, out_vic[j])
    vtags[j % _RING] = t
    prefetch_cluster(table, home(t, shift, tm))
    if objects != 0:
        prefetch_at(peek(objects + 8 * out_vic[j]))
    if meta[NODES] == meta[CAP]:  # no ghosts (LRU, SIEVE)
        return
    g = from_list[j]
    c = nxt[g]
    if c < 0:
        return
    x = c - meta[CAP]
    prefetch_cluster(table, home(node_tag(keys, c), shift, tm))  # B1 runs through its rows in order
    prefetch(lst, c)
    prefetch(gprev, x)
    nxt[g] = gnext[x]


@kernel()
def _copy_row(keys, dst, src):  # type: ignore[no-untyped-def]
    """Row ``dst`` of ``keys`` := row ``src``."""
    for j in range(keys.shape[1]):
        keys[dst, j] = keys[src, j]


@kernel()
def _prefetch_object_slot(objects, out_vic, j):  # type: ignore[no-untyped-def]
    """Victim ``j``'s slot in the manager's array of hash objects (0: none), read ``_AHEAD``
    victims later by ``_prefetch_victim``."""
    if objects != 0:
        prefetch_at(objects + 8 * out_vic[j])


@kernel()
def apply_victims(table, keys, a64, a32, a8, n, out_vic, from_list, vtags, nxt, objects):  # type: ignore[no-untyped-def]
    """Free the ``n`` chosen blocks (LRU: forget their hashes; ARC: keep them as ghosts).
    ``vtags`` (at least ``min(n, _RING)`` long) and ``nxt`` (2) are scratch; ``objects``:
    ``layout.INFO_OBJECTS``."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = unpack(a64, a32, a8)
    shift = np.uint64(meta[SHIFT])
    nxt[0] = meta[gslot(0, GHOST_HEAD)]  # prefetch hints only
    nxt[1] = meta[gslot(1, GHOST_HEAD)]
    for j in range(min(2 * _AHEAD, n)):
        _prefetch_object_slot(objects, out_vic, j)
    for j in range(min(_AHEAD, n)):
        _prefetch_victim(table, keys, lst, gnext, gprev, meta, shift, out_vic, from_list, j, vtags, nxt,
                         objects)
    for k in range(n):
        if k + 2 * _AHEAD < n:
            _prefetch_object_slot(objects, out_vic, k + 2 * _AHEAD)
        if k + _AHEAD < n:
            _prefetch_victim(table, keys, lst, gnext, gprev, meta, shift, out_vic, from_list, k + _AHEAD,
                             vtags, nxt, objects)
        nd = out_vic[k]
        tag = vtags[k % _RING]
        s = slot_of(table, shift, tag, nd)
        g = from_list[k]
        meta[N1 + g] -= 1
        bound = meta[GBOUND + g]
        if bound == 0:  # LRU, SIEVE, S3-FIFO's M: the hash is forgotten
            table_delete(table, shift, s)
        else:  # A5, F6: the newest ghost of list g under its own tag
            if meta[gslot(g, GHOST_SIZE)] >= bound:  # the list is full: its oldest ghost goes
                g_drop(table, keys, meta, lst, gprev, gnext, gfree, meta[gslot(g, GHOST_HEAD)], -1)
                if (table[s] & _LO32) != np.uint64(nd + 1):  # the drop shifted our slot back
                    s = slot_of(table, shift, tag, nd)
            meta[NGFREE] -= 1
            gn = gfree[meta[NGFREE]]
            _copy_row(keys, gn, nd)
            table[s] = (tag << _U32) | np.uint64(gn + 1)
            lst[gn] = B1 + g
            g_append(gprev, gnext, meta, g, gn)
        lst[nd] = FREE
        ref[nd] = 0
        free[meta[NFREE]] = nd
        meta[NFREE] += 1


# --------------------------------------------------------------------------- all steps
# The S3-FIFO and SIEVE victim choices live in their own modules; S3-FIFO's uses
# ``candidate`` above, so they are imported once it is defined.
from .s3fifo import s3fifo_choose  # noqa: E402
from .sieve import sieve_choose  # noqa: E402


@kernel()
def evict(table, keys, a64, a32, a8, pf, nodes, n, out_vic, io):  # type: ignore[no-untyped-def]
    """Choose and apply ``n`` victims (P5, L3, A4, A5); -1 and no change if impossible (M5.4).
    ``nodes``: the batch's (``n`` is at most their count); scratch from ``io``
    (``state.scratch``): every list below is at most a batch long."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = unpack(a64, a32, a8)
    cap = meta[CAP]
    nprot = protect(nodes, cap, lst, ref, prot)
    if meta[ELIG] - nprot < n:  # I6: refuse before anything moves (M5.4, I7)
        unprotect(nodes, cap, prot)
        return -1
    work = scratch(io)
    from_list, side, lside = work[3], work[4], work[5]
    if meta[POLICY] == POLICY_S3FIFO:
        s3fifo_choose(a64, a32, a8, keys, n, out_vic, from_list, side, lside)
    elif meta[POLICY] == POLICY_SIEVE:
        sieve_choose(a64, a32, a8, n, out_vic, from_list)
    else:
        choose_victims(a64, a32, a8, pf, n, out_vic, from_list, keys, side, lside)
    unprotect(nodes, cap, prot)
    info = unpack_io(io)[0]
    apply_victims(table, keys, a64, a32, a8, n, out_vic, from_list, work[6],
                  info[INFO_GHOST_CURSORS : INFO_GHOST_CURSORS + 2], info[INFO_OBJECTS])
    return n

