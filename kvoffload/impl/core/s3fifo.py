"""S3-FIFO's victim choice in the compiled core (F1–F7; Yang et al., SOSP 2023).

S is recency list ``LIST_T1`` (kind T1), M is ``LIST_T2`` (kind T2), the ghost queue G is
ghost list B1 (at most ``C - s`` ghosts: ``meta[GBOUND]``; M's victims leave none). Each
list is in stamp order, as LRU's: S keeps the stamps of insertion, a block moved to M's
newest end gets a new stamp. So the oldest eligible block of S or M is the list machinery's
:func:`~.evict.candidate` (blocks met while pending or in use are parked and come back at
their own stamp: "not eligible keeps its place", F5), and only the F5 rules are here.
The F4 counter is the block's mark (``marks``). The other F clauses live where the other
policies' do: F2 (a remembered ghost enters M) in ``store.insert_selected``, F4 in
``marks.touch_marks``, F6 in ``evict.apply_victims`` (bounds from ``layout.ghost_bounds``),
F7 in ``ops.store_fail``.
"""

from __future__ import annotations


from .evict import candidate
from .heap import heap_push, heap_remove
from .jit import kernel
from .layout import CLOCK, ELIG, HS0, IN_LIST, LIST_HEAD, LIST_T1, LIST_T2, LIST_TAIL, N1, SMALL, T1, T2
from .lists import l_append, l_prepend, l_unlink, lslot
from .marks import marks_of
from .order import minors_of
from .state import unpack
from .table import prefetch

__all__ = ["s3fifo_choose"]


@kernel()
def _take(hts, hnode, hpos, bprev, bnext, meta, h, nd, minor, keys):  # type: ignore[no-untyped-def]
    """Take block ``nd`` out of list ``h`` or its heap."""
    if hpos[nd] >= 0:
        heap_remove(hts, hnode, hpos, meta, h, nd, minor, keys)
    else:
        l_unlink(bprev, bnext, meta, h, nd)


@kernel()
def _to_main(ts, hpos, lst, bprev, bnext, meta, nd):  # type: ignore[no-untyped-def]
    """Append ``nd`` (taken out of its list) at M's newest end with a new stamp."""
    if lst[nd] == T1:
        lst[nd] = T2
        meta[N1 + LIST_T1] -= 1
        meta[N1 + LIST_T2] += 1
    meta[CLOCK] += 1
    ts[nd] = meta[CLOCK]
    hpos[nd] = IN_LIST
    l_append(bprev, bnext, meta, LIST_T2, nd)


@kernel()
def _move_run(ts, ref, prot, lst, marks, bprev, bnext, meta, h):  # type: ignore[no-untyped-def]
    """F5 for a run of used blocks at the head of list ``h`` (S: promoted, mark cleared; M:
    aged, mark less one), as many ``_take`` + ``_to_main`` steps one block at a time would
    do, but relinked once: the run keeps its order, so only its two ends change links.
    The caller checked that ``h``'s heap is empty and its head is idle, unprotected and used;
    the run ends before the first block that is not."""
    first = meta[lslot(h, LIST_HEAD)]
    last = first
    nd = first
    moved = 0
    clock = meta[CLOCK]
    while nd >= 0 and ref[nd] == 0 and prot[nd] == 0 and marks[nd] != 0:
        marks[nd] = 0 if h == LIST_T1 else marks[nd] - 1
        lst[nd] = T2
        clock += 1
        ts[nd] = clock
        last = nd
        moved += 1
        nd = bnext[nd]
    meta[CLOCK] = clock
    if h == LIST_T2 and nd < 0:  # the whole of M went round: its order is unchanged
        return
    meta[lslot(h, LIST_HEAD)] = nd  # the run out of ``h``'s front ...
    if nd >= 0:
        bprev[nd] = -1
    else:
        meta[lslot(h, LIST_TAIL)] = -1
    tail = meta[lslot(LIST_T2, LIST_TAIL)]  # ... and onto M's newest end
    bprev[first] = tail
    if tail >= 0:
        bnext[tail] = first
    else:
        meta[lslot(LIST_T2, LIST_HEAD)] = first
    bnext[last] = -1
    meta[lslot(LIST_T2, LIST_TAIL)] = last
    meta[N1 + h] -= moved
    meta[N1 + LIST_T2] += moved


@kernel()
def _small_victim(hts, hnode, hpos, ts, ref, prot, lst, marks, bprev, bnext, meta, side, ns, lside, nl, minor, keys):  # type: ignore[no-untyped-def]
    """F5 on S: its oldest eligible block leaves if unused, or moves to M (runs of used
    blocks at S's head at once): ``(victim or -1 if S has no eligible block, ns, nl)``."""
    while True:
        e = meta[lslot(LIST_T1, LIST_HEAD)]
        # The steady state, without a call: S's head is idle, unprotected, and no heap
        # competes (as in ``evict.choose_victims``).
        if e < 0 or ref[e] != 0 or prot[e] != 0 or meta[HS0 + LIST_T1] != 0:
            e, ns, nl = candidate(hts, hnode, hpos, ts, ref, prot, bprev, bnext, meta, LIST_T1, side, ns, lside, nl,
                                  minor, keys)
            if e < 0:
                return -1, ns, nl
        elif marks[e] != 0:
            _move_run(ts, ref, prot, lst, marks, bprev, bnext, meta, LIST_T1)
            continue
        _take(hts, hnode, hpos, bprev, bnext, meta, LIST_T1, e, minor, keys)
        if marks[e] == 0:
            return e, ns, nl
        marks[e] = 0
        _to_main(ts, hpos, lst, bprev, bnext, meta, e)


@kernel()
def _main_victim(hts, hnode, hpos, ts, ref, prot, lst, marks, bprev, bnext, meta, e, side, ns, lside, nl, minor, keys):  # type: ignore[no-untyped-def]
    """F5 on M (CLOCK): a used block loses one count and goes to M's newest end (runs of
    them at M's head at once) until an unused one leaves: ``(victim, ns, nl)``. ``e``: M's
    oldest eligible block if already looked up, else -1."""
    while True:
        if e < 0:
            e, ns, nl = candidate(hts, hnode, hpos, ts, ref, prot, bprev, bnext, meta, LIST_T2, side, ns, lside, nl,
                                  minor, keys)
        if marks[e] != 0 and e == meta[lslot(LIST_T2, LIST_HEAD)] and meta[HS0 + LIST_T2] == 0:
            _move_run(ts, ref, prot, lst, marks, bprev, bnext, meta, LIST_T2)
            e = -1
            continue
        _take(hts, hnode, hpos, bprev, bnext, meta, LIST_T2, e, minor, keys)
        if marks[e] == 0:
            return e, ns, nl
        marks[e] -= 1
        _to_main(ts, hpos, lst, bprev, bnext, meta, e)
        e = -1


@kernel()
def s3fifo_choose(a64, a32, a8, keys, n, out_vic, from_list, side, lside):  # type: ignore[no-untyped-def]
    """F5: take ``n`` victims (their list ids in ``from_list``; the caller checked that
    ``n`` eligible blocks exist), promoting and ageing on the way; marks of victims cleared."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = unpack(a64, a32, a8)
    marks = marks_of(a8, meta)
    minor = minors_of(a32, meta)  # empty: S3-FIFO's stamps are unique (``order``)
    ns = 0
    nl = 0
    s_taken = 0  # victims from S so far: |S| now is meta[N1 + LIST_T1] - s_taken
    for k in range(n):
        victim = -1
        e = -1  # M's oldest eligible block, once looked up
        if meta[N1 + LIST_T1] - s_taken < meta[SMALL]:
            e, ns, nl = candidate(hts, hnode, hpos, ts, ref, prot, bprev, bnext, meta, LIST_T2, side, ns, lside, nl,
                                  minor, keys)
        if e < 0:  # S first: |S| >= s, or M has no eligible block
            victim, ns, nl = _small_victim(hts, hnode, hpos, ts, ref, prot, lst, marks, bprev, bnext, meta, side, ns, lside,
                                           nl, minor, keys)
        if victim >= 0:
            s_taken += 1
            from_list[k] = LIST_T1
        else:
            victim, ns, nl = _main_victim(hts, hnode, hpos, ts, ref, prot, lst, marks, bprev, bnext, meta, e, side, ns,
                                          lside, nl, minor, keys)
            from_list[k] = LIST_T2
        out_vic[k] = victim
        prefetch(keys, victim)  # its key row is rehashed next (``evict.apply_victims``)
    for j in range(ns):
        heap_push(hts, hnode, hpos, ts, meta, lst[side[j]] - T1, side[j], minor, keys)
    for j in range(nl - 1, -1, -1):  # protected heads back in front, in their order
        l_prepend(bprev, bnext, meta, lst[lside[j]] - T1, lside[j])
    meta[ELIG] -= n
