"""The two bounds of a hit-ratio curve, compiled: an infinite cache and Belady's MIN.

Belady (1966) evicts the block whose next use lies farthest in the future. Next uses
are precomputed in one backward pass (as flat access positions, so that a later block
of the same future request counts as farther: with prefix hits that is the better
one to lose); the candidates sit in a max-heap keyed by next use, with stale entries
skipped when they surface (lazy deletion) and the heap rebuilt from the resident set
when it fills. Replay semantics are the policies' (``_policies``): the request's blocks
are protected and every miss is stored (no bypass), so MIN is the optimum of demand
caching per block; with prefix hits it is a strong reference rather than a proven bound.
"""

from __future__ import annotations

import numpy as np
from ..impl.jitcache import cached_njit

NEVER = np.int64(1) << np.int64(62)


@cached_njit()
def replay_infinite(keys, offsets, num_keys, hits):  # type: ignore[no-untyped-def]
    """``hits[r]`` = request ``r``'s prefix of keys seen in any earlier request."""
    seen = np.zeros(num_keys, np.bool_)
    for r in range(len(offsets) - 1):
        start, end = offsets[r], offsets[r + 1]
        h = 0
        while start + h < end and seen[keys[start + h]]:
            h += 1
        hits[r] = h
        for i in range(start, end):
            seen[keys[i]] = True


@cached_njit()
def _next_uses(keys, offsets, num_keys, cap):  # type: ignore[no-untyped-def]
    nxt_use = np.full(len(keys), NEVER, np.int64)
    last = np.full(num_keys, NEVER, np.int64)
    for r in range(len(offsets) - 2, -1, -1):
        start = offsets[r]
        n = min(offsets[r + 1] - start, cap)
        for i in range(start + n - 1, start - 1, -1):
            nxt_use[i] = last[keys[i]]
            last[keys[i]] = i
    return nxt_use


@cached_njit()
def _heap_push(prio, key, size, p, k):  # type: ignore[no-untyped-def]
    i = size
    while i > 0:
        parent = (i - 1) // 2
        if prio[parent] >= p:
            break
        prio[i], key[i] = prio[parent], key[parent]
        i = parent
    prio[i], key[i] = p, k
    return size + 1


@cached_njit()
def _heap_pop(prio, key, size):  # type: ignore[no-untyped-def]
    """Remove the top entry (the caller read it at index 0); return the new size."""
    size -= 1
    p, k = prio[size], key[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and prio[child + 1] > prio[child]:
            child += 1
        if prio[child] <= p:
            break
        prio[i], key[i] = prio[child], key[child]
        i = child
    if size > 0:
        prio[i], key[i] = p, k
    return size


@cached_njit()
def _evict_farthest(prio, key, size, cur_next, resident, res_list, res_pos, nres, prot, stamp, need):  # type: ignore[no-untyped-def]
    """Evict ``need`` unprotected resident keys of farthest next use; return (size, nres)."""
    kept = np.empty(nres if need > 0 else 0, np.int64)
    nkept = 0
    while need > 0:
        p, k = prio[0], key[0]
        size = _heap_pop(prio, key, size)
        if not resident[k] or cur_next[k] != p:
            continue  # stale
        if prot[k] == stamp:
            kept[nkept] = k
            nkept += 1
            continue
        resident[k] = False
        nres -= 1
        moved = res_list[nres]
        res_list[res_pos[k]] = moved
        res_pos[moved] = res_pos[k]
        need -= 1
    for j in range(nkept):
        size = _heap_push(prio, key, size, cur_next[kept[j]], kept[j])
    return size, nres


@cached_njit()
def replay_belady(keys, offsets, num_keys, cap, hits):  # type: ignore[no-untyped-def]
    """Belady's MIN under the replay semantics; ``hits[r]`` as in ``replay_policy``."""
    nxt_use = _next_uses(keys, offsets, num_keys, cap)
    cur_next = np.full(num_keys, NEVER, np.int64)
    resident = np.zeros(num_keys, np.bool_)
    prot = np.zeros(num_keys, np.int64)
    res_list = np.zeros(cap, np.int64)
    res_pos = np.zeros(num_keys, np.int64)
    heap_cap = 8 * cap + 16
    prio = np.zeros(heap_cap, np.int64)
    key = np.zeros(heap_cap, np.int64)
    size = 0
    nres = 0
    for r in range(len(offsets) - 1):
        start = offsets[r]
        n = min(offsets[r + 1] - start, cap)
        h = 0
        while h < n and resident[keys[start + h]]:
            h += 1
        hits[r] = h
        if size + 3 * n > heap_cap:  # rebuild: one fresh entry per resident key
            size = 0
            for j in range(nres):
                size = _heap_push(prio, key, size, cur_next[res_list[j]], res_list[j])
        absent = 0
        for i in range(start, start + n):
            k = keys[i]
            cur_next[k] = nxt_use[i]
            prot[k] = r + 1
            if resident[k]:
                size = _heap_push(prio, key, size, cur_next[k], k)
            else:
                absent += 1
        size, nres = _evict_farthest(
            prio, key, size, cur_next, resident, res_list, res_pos, nres, prot, r + 1, absent - (cap - nres)
        )
        for i in range(start, start + n):
            k = keys[i]
            if not resident[k]:
                resident[k] = True
                res_list[nres] = k
                res_pos[k] = nres
                nres += 1
                size = _heap_push(prio, key, size, cur_next[k], k)
