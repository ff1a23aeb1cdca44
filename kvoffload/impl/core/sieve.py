"""SIEVE's victim choice in the compiled core (V1–V6; Zhang et al., NSDI 2024).

The queue Q is recency list ``LIST_T1`` in insertion order (nothing ever moves in it, so
no block is parked and the heaps stay empty), the hand is ``meta[HAND]`` (a block, or -1:
none, Q's oldest), the visited bit is the block's mark (``marks``). V5's walk passes blocks
that may not be evicted in place, as the clause says. The other V clauses live where the
other policies' do: V2 in ``store.insert_selected`` (an append), V4 in
``marks.touch_marks``, V6 in ``ops.store_fail`` (a hand resting on a removed block moves on).
"""

from __future__ import annotations

from .jit import kernel
from .layout import ELIG, HAND, LIST_HEAD, LIST_T1
from .lists import l_unlink, lslot
from .marks import marks_of
from .state import unpack

__all__ = ["sieve_choose"]


@kernel()
def sieve_choose(a64, a32, a8, n, out_vic, from_list):  # type: ignore[no-untyped-def]
    """V5: take ``n`` victims, each by a walk from the hand (the caller checked that ``n``
    eligible blocks exist, so every walk ends within two rounds)."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = unpack(a64, a32, a8)
    marks = marks_of(a8, meta)
    for k in range(n):
        nd = meta[HAND]
        if nd < 0:
            nd = meta[lslot(LIST_T1, LIST_HEAD)]
        while ref[nd] != 0 or prot[nd] != 0 or marks[nd] != 0:
            if ref[nd] == 0 and prot[nd] == 0:
                marks[nd] = 0  # V5: an eligible visited block is passed with its bit cleared
            nd = bnext[nd]
            if nd < 0:
                nd = meta[lslot(LIST_T1, LIST_HEAD)]
        meta[HAND] = bnext[nd]  # the next newer block, or none past the newest
        l_unlink(bprev, bnext, meta, LIST_T1, nd)
        out_vic[k] = nd
        from_list[k] = LIST_T1
    meta[ELIG] -= n
