"""Compiled replay of one trace through one policy: the fast path of ``kvoffload replay``.

The rules are the reference policies' (``kvoffload.spec``: L1–L3, A1–A6, F1–F7, V1–V6)
specialised to replay, where every present block is ready and idle and the only
protected blocks are the current request's (M5.3). Keys are dense integers; each policy
keeps its queues in ``_queues``. ``tests/test_replay.py`` checks every policy here
against a replay through ``ReferenceManager`` (same hits, request by request).

Queue numbers: LRU 1; ARC T1 1, T2 2, B1 3, B2 4; S3-FIFO S 1, M 2, G 3; SIEVE 1.
"""

from __future__ import annotations

import math

import numpy as np
from ..impl.jitcache import cached_njit

from ._queues import HEAD, SIZE, pop_oldest, push, unlink

LRU, ARC, S3FIFO, SIEVE = 0, 1, 2, 3
#: Policy names of the contract → the codes above.
POLICY_CODES = {"lru": LRU, "arc": ARC, "s3fifo": S3FIFO, "sieve": SIEVE}


@cached_njit()
def _resident(policy, where, k):  # type: ignore[no-untyped-def]
    w = where[k]
    if policy == ARC or policy == S3FIFO:
        return w == 1 or w == 2
    return w == 1


@cached_njit()
def _num_resident(policy, ls):  # type: ignore[no-untyped-def]
    if policy == ARC or policy == S3FIFO:
        return ls[SIZE, 1] + ls[SIZE, 2]
    return ls[SIZE, 1]


@cached_njit()
def _eligible_from(nxt, prot, stamp, k):  # type: ignore[no-untyped-def]
    """The first key from ``k`` on (following ``nxt``) that is not protected, or -1."""
    while k >= 0 and prot[k] == stamp:
        k = nxt[k]
    return k


@cached_njit()
def _touch(policy, prev, nxt, where, ls, bits, state, cap, k):  # type: ignore[no-untyped-def]
    """P4 for one key: L2, A3, F4, V4 (every present block is ready in replay)."""
    w = where[k]
    if policy == LRU or (policy == ARC and w == 2):
        if w != 0:
            unlink(prev, nxt, where, ls, k)
            push(prev, nxt, where, ls, w, k)
    elif policy == ARC:
        if w == 1:
            unlink(prev, nxt, where, ls, k)
            push(prev, nxt, where, ls, 2, k)
        elif w == 3:
            state[0] = min(state[0] + max(1.0, ls[SIZE, 4] / ls[SIZE, 3]), float(cap))
            unlink(prev, nxt, where, ls, k)
            push(prev, nxt, where, ls, 3, k)
        elif w == 4:
            state[0] = max(state[0] - max(1.0, ls[SIZE, 3] / ls[SIZE, 4]), 0.0)
            unlink(prev, nxt, where, ls, k)
            push(prev, nxt, where, ls, 4, k)
    elif policy == S3FIFO:
        if w == 1 or w == 2:
            bits[k] = min(bits[k] + 1, 3)
    elif w == 1:  # SIEVE
        bits[k] = 1


@cached_njit()
def _insert(policy, prev, nxt, where, ls, bits, k):  # type: ignore[no-untyped-def]
    """P2: L1, A1, F2, V2."""
    w = where[k]
    if w != 0:  # a ghost (ARC's B1/B2, S3-FIFO's G)
        unlink(prev, nxt, where, ls, k)
    bits[k] = 0
    if policy == S3FIFO and w == 3:
        push(prev, nxt, where, ls, 2, k)
    else:
        push(prev, nxt, where, ls, 1, k)


@cached_njit()
def _evict_lru(prev, nxt, where, ls, prot, stamp, need):  # type: ignore[no-untyped-def]
    """L3: the least recent unprotected keys."""
    cur = ls[HEAD, 1]
    while need > 0:
        after = nxt[cur]
        if prot[cur] != stamp:
            unlink(prev, nxt, where, ls, cur)
            need -= 1
        cur = after


@cached_njit()
def _trim(prev, nxt, where, ls, q, bound):  # type: ignore[no-untyped-def]
    while ls[SIZE, q] > bound:
        pop_oldest(prev, nxt, where, ls, q)


@cached_njit()
def _evict_arc(prev, nxt, where, ls, prot, stamp, need, state, cap):  # type: ignore[no-untyped-def]
    """A4, A5: T1 while it is at or above floor(p) (or T2 has none), else T2."""
    target = math.floor(state[0])
    c1 = _eligible_from(nxt, prot, stamp, ls[HEAD, 1])
    c2 = _eligible_from(nxt, prot, stamp, ls[HEAD, 2])
    while need > 0:
        if c1 >= 0 and (ls[SIZE, 1] >= target or c2 < 0):
            victim, ghosts = c1, 3
            c1 = _eligible_from(nxt, prot, stamp, nxt[c1])
        else:
            victim, ghosts = c2, 4
            c2 = _eligible_from(nxt, prot, stamp, nxt[c2])
        unlink(prev, nxt, where, ls, victim)
        push(prev, nxt, where, ls, ghosts, victim)
        need -= 1
    _trim(prev, nxt, where, ls, 3, cap)
    _trim(prev, nxt, where, ls, 4, cap)


@cached_njit()
def _evict_s3fifo(prev, nxt, where, ls, bits, prot, stamp, need, cap, main_protected):  # type: ignore[no-untyped-def]
    """F5, F6. Keys before either cursor in its queue are protected (never moved)."""
    small_target = max(1, cap // 10)
    s_cur = _eligible_from(nxt, prot, stamp, ls[HEAD, 1])
    m_cur = -1  # -1: start again at M's oldest
    while need > 0:
        victim = -1
        if ls[SIZE, 1] >= small_target or ls[SIZE, 2] - main_protected <= 0:
            while s_cur >= 0 and victim < 0:
                k = s_cur
                s_cur = _eligible_from(nxt, prot, stamp, nxt[k])
                unlink(prev, nxt, where, ls, k)
                if bits[k] == 0:
                    victim = k
                    push(prev, nxt, where, ls, 3, k)  # F6: a ghost
                else:
                    bits[k] = 0
                    push(prev, nxt, where, ls, 2, k)
        while victim < 0:
            if m_cur < 0:
                m_cur = _eligible_from(nxt, prot, stamp, ls[HEAD, 2])
            k = m_cur
            m_cur = _eligible_from(nxt, prot, stamp, nxt[k])
            unlink(prev, nxt, where, ls, k)
            if bits[k] == 0:
                victim = k
            else:
                bits[k] -= 1
                push(prev, nxt, where, ls, 2, k)
        need -= 1
    _trim(prev, nxt, where, ls, 3, cap - small_target)


@cached_njit()
def _evict_sieve(prev, nxt, where, ls, bits, prot, stamp, need, state):  # type: ignore[no-untyped-def]
    """V5: from the hand, newest-wards and round; ``state[1]`` is the hand (-1: oldest)."""
    while need > 0:
        hand = int(state[1])
        cur = hand if hand >= 0 else ls[HEAD, 1]
        while prot[cur] == stamp or bits[cur] != 0:
            if prot[cur] != stamp:
                bits[cur] = 0
            cur = nxt[cur] if nxt[cur] >= 0 else ls[HEAD, 1]
        state[1] = nxt[cur]
        unlink(prev, nxt, where, ls, cur)
        need -= 1


@cached_njit()
def _evict(policy, prev, nxt, where, ls, bits, prot, stamp, need, state, cap, main_protected):  # type: ignore[no-untyped-def]
    if policy == LRU:
        _evict_lru(prev, nxt, where, ls, prot, stamp, need)
    elif policy == ARC:
        _evict_arc(prev, nxt, where, ls, prot, stamp, need, state, cap)
    elif policy == S3FIFO:
        _evict_s3fifo(prev, nxt, where, ls, bits, prot, stamp, need, cap, main_protected)
    else:
        _evict_sieve(prev, nxt, where, ls, bits, prot, stamp, need, state)


@cached_njit()
def _store(policy, keys, start, n, prev, nxt, where, ls, bits, prot, stamp, state, cap):  # type: ignore[no-untyped-def]
    """M5 with all of the request protected, then M6 at once (replay has no failures)."""
    absent = 0
    main_protected = 0
    for i in range(start, start + n):
        k = keys[i]
        prot[k] = stamp
        if not _resident(policy, where, k):
            absent += 1
        elif where[k] == 2:
            main_protected += 1
    need = absent - (cap - _num_resident(policy, ls))
    if need > 0:
        _evict(policy, prev, nxt, where, ls, bits, prot, stamp, need, state, cap, main_protected)
    for i in range(start, start + n):
        k = keys[i]
        if not _resident(policy, where, k):
            _insert(policy, prev, nxt, where, ls, bits, k)


@cached_njit()
def replay_policy(policy, keys, offsets, num_keys, cap, hits):  # type: ignore[no-untyped-def]
    """Replay every request; ``hits[r]`` = request ``r``'s lookup prefix (M1)."""
    prev = np.full(num_keys, -1, np.int64)
    nxt = np.full(num_keys, -1, np.int64)
    where = np.zeros(num_keys, np.int8)
    bits = np.zeros(num_keys, np.int8)
    prot = np.zeros(num_keys, np.int64)
    ls = np.full((3, 5), -1, np.int64)
    ls[SIZE, :] = 0
    state = np.array([0.0, -1.0])  # ARC's p; SIEVE's hand
    for r in range(len(offsets) - 1):
        start = offsets[r]
        n = min(offsets[r + 1] - start, cap)
        h = 0
        while h < n and _resident(policy, where, keys[start + h]):
            h += 1
        hits[r] = h
        for i in range(start + n - 1, start - 1, -1):
            _touch(policy, prev, nxt, where, ls, bits, state, cap, keys[i])
        _store(policy, keys, start, n, prev, nxt, where, ls, bits, prot, r + 1, state, cap)
