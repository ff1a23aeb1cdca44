"""Request-rank order of the compiled LRU (N9: vLLM 0.33's ``LRUCachePolicy``).

A block's rank is ``(ts, minor)``, compared as a pair, equal ranks by the key's bytes:
``ts`` is the number (a fresh stamp of ``meta[CLOCK]``, or the number a request drew at
its first access), ``minor`` is ``-position`` for a key a request ranked by its end-token
position, 0 otherwise. Fresh stamps are unique, so outside N9 the stamp alone orders.

Where the order lives. The recency list holds only blocks of fresh stamps (appends carry
a new maximum: ``lists``), so it stays in rank order without a comparison. A block a
request ranks (``rerank``) leaves the list: it goes to the list's heap (``heap``) at its
rank if it is evictable, else it is parked and enters the heap when it becomes evictable
again, exactly like a block met at the list's head while busy. A request's end, ``touch``
and unpositioned inserts give fresh stamps and bring the block back to the list's tail.
So the heap holds the keys of open requests, and eviction takes the lower of the list's
head and the heap's top (``evict.candidate``), both judged by :func:`rank_lt`.

Why a separate ``minor`` (int32 per block, only in a ranked manager: ``layout.RANKED``)
rather than one int64 ``number << 32 | position``: the counter draws a number per touched
key, so 31 bits of numbers would wrap within hours on a busy server.
"""

from __future__ import annotations

from .heap import heap_push, heap_remove
from .jit import kernel
from .layout import IN_LIST, PARKED, RANK_RAISE, RANK_SET, T1, T2
from .lists import l_unlink

__all__ = ["rerank_all"]


@kernel()
def rerank_all(meta, ts, hts, ref, hpos, hnode, lst, bprev, bnext, minor, keys, nodes, n, modes, numbers, positions):  # type: ignore[no-untyped-def]
    """N9: block ``nodes[i]`` (present) takes rank ``(numbers[i], -positions[i])`` when
    ``modes[i]`` is ``RANK_SET``, or when that raises it and it is ``RANK_RAISE``; it
    leaves its list for the heap (or stays parked while busy). The count re-ranked."""
    m = 0
    for i in range(n):
        nd = nodes[i]
        mode = modes[i]
        if nd < 0 or lst[nd] < T1 or lst[nd] > T2 or (mode != RANK_SET and mode != RANK_RAISE):
            continue
        t = numbers[i]
        mn = -positions[i]
        if mode == RANK_RAISE and (t < ts[nd] or (t == ts[nd] and mn <= minor[nd])):
            continue
        h = lst[nd] - T1
        if hpos[nd] == IN_LIST:
            l_unlink(bprev, bnext, meta, h, nd)
        elif hpos[nd] >= 0:
            heap_remove(hts, hnode, hpos, meta, h, nd, minor, keys)
        ts[nd] = t
        minor[nd] = mn
        hpos[nd] = PARKED
        if ref[nd] == 0:
            heap_push(hts, hnode, hpos, ts, meta, h, nd, minor, keys)
        m += 1
    return m
