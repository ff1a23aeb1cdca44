"""The compiled core of :class:`kvoffload.impl.CPUOffloadingManager` (numba, nopython).

One entry point, :func:`run_op`, serves every manager call, so a cold start compiles
one function (and its helpers) and a warm start loads one cache entry.

State (all numpy arrays, created by :func:`new_state`; ``C`` = capacity, ``N`` = nodes):

* nodes ``0 … C-1`` are blocks (node id == block id); for ARC, nodes ``C … 3C-1`` are
  ghost entries of B1/B2 (a ghost list never holds more than ``C``, A5).
* ``table`` — open addressing, linear probing, backward-shift deletion (no tombstones).
  A slot is ``tag << 32 | (node + 1)`` (0 = empty), where ``tag`` folds the 64-bit
  fingerprint of the hash to 32 bits; the home bucket is derived from the tag alone so
  that deletion can move entries without touching the nodes. A tag match is only a
  candidate: the full hash (length + every byte, ``keys``) is always compared (I8).
* ``keys[node] = [length, word0, word1, …]`` — the full hash, zero padded, as uint64.
* ``lst[node]`` — 0 free, 1 LRU / T1, 2 T2, 3 B1, 4 B2.
* ``ref``, ``ts`` (monotonic recency stamp), ``hpos`` per block.
* Eviction candidates (present, ready, ``ref_cnt == 0``) live in a 4-ary min-heap keyed
  by ``ts``: one for LRU, one per list for ARC (T1 and T2 share one array, T2's heap
  grows from the far end). Pending and in-use blocks are not in a heap, so a victim is
  found without walking past them, and a block that becomes evictable again re-enters
  at the position its ``ts`` gives it. Every touch/insert/remove/victim is O(log C).
* B1/B2 are intrusive doubly-linked lists over the ghost nodes (``gprev``/``gnext``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# meta slots
CLOCK = 0
NFREE = 1
HS0 = 2  # heap sizes: HS0 + heap id
N1 = 4  # |LRU| or |T1| (N1 + 1 = |T2|), pending and in-use included
HEAD0 = 6  # ghost list g: head (LRU end) 6 + 3g, tail (MRU end) 7 + 3g, size 8 + 3g
NGFREE = 12
CAP = 13
ARC = 14
SHIFT = 15
META_SIZE = 16

# op codes
OP_LOOKUP = 0
OP_PREPARE_LOAD = 1
OP_COMPLETE_LOAD = 2
OP_TOUCH = 3
OP_PREPARE_STORE = 4
OP_STORE_OK = 5
OP_STORE_FAIL = 6
OP_PACK_CHECK = 7

_P1 = np.uint64(0x9E3779B97F4A7C15)
_P2 = np.uint64(0xBF58476D1CE4E5B9)
_P3 = np.uint64(0x94D049BB133111EB)
_LO32 = np.uint64(0xFFFFFFFF)
_U32 = np.uint64(32)


# --------------------------------------------------------------------------- hashing
@njit(cache=True)
def _pack(buf, lens):  # type: ignore[no-untyped-def]
    """The batch as a zero-padded uint64 matrix, one row per hash (words only)."""
    n = lens.shape[0]
    maxlen = 0
    for i in range(n):
        if lens[i] > maxlen:
            maxlen = lens[i]
    qw = (maxlen + 7) // 8
    if qw == 0:
        qw = 1
    q = np.zeros((n, qw), np.uint64)
    off = 0
    for i in range(n):
        length = lens[i]
        full = length // 8
        for j in range(full):
            b = off + 8 * j
            q[i, j] = (
                np.uint64(buf[b])
                | (np.uint64(buf[b + 1]) << np.uint64(8))
                | (np.uint64(buf[b + 2]) << np.uint64(16))
                | (np.uint64(buf[b + 3]) << np.uint64(24))
                | (np.uint64(buf[b + 4]) << np.uint64(32))
                | (np.uint64(buf[b + 5]) << np.uint64(40))
                | (np.uint64(buf[b + 6]) << np.uint64(48))
                | (np.uint64(buf[b + 7]) << np.uint64(56))
            )
        rest = length - 8 * full
        if rest:
            w = np.uint64(0)
            b = off + 8 * full
            for k in range(rest):
                w |= np.uint64(buf[b + k]) << np.uint64(8 * k)
            q[i, full] = w
        off += length
    return q


@njit(cache=True)
def _fingerprint(words, row, col0, length, mask):  # type: ignore[no-untyped-def]
    """64-bit fingerprint of one hash (``words[row, col0:]``, ``length`` bytes)."""
    acc = np.uint64(length) * _P1
    nw = (length + 7) // 8
    for j in range(nw):
        m = (words[row, col0 + j] + np.uint64(j + 1) * _P3) * _P2
        acc ^= m ^ (m >> _U32)
    acc ^= acc >> np.uint64(30)
    acc *= _P2
    acc ^= acc >> np.uint64(27)
    acc *= _P3
    acc ^= acc >> np.uint64(31)
    return acc & mask


@njit(cache=True)
def _tag(fp):  # type: ignore[no-untyped-def]
    return ((fp >> _U32) ^ fp) & _LO32


@njit(cache=True)
def _home(tag, shift, tmask):  # type: ignore[no-untyped-def]
    return np.int64(((tag * _P1) >> shift) & tmask)


@njit(cache=True)
def _same_key(keys, nd, q, i, length):  # type: ignore[no-untyped-def]
    """Full comparison of stored hash ``nd`` and batch hash ``i`` (I8)."""
    if keys[nd, 0] != np.uint64(length):
        return False
    for j in range((length + 7) // 8):
        if keys[nd, 1 + j] != q[i, j]:
            return False
    return True


@njit(cache=True)
def _find(table, keys, shift, q, i, length, tag):  # type: ignore[no-untyped-def]
    """(slot, node) of batch hash ``i``; node -1 and the empty slot ending the probe if absent."""
    m = table.shape[0] - 1
    s = _home(tag, shift, np.uint64(m))
    while True:
        v = table[s]
        if v == 0:
            return s, -1
        if (v >> _U32) == tag:
            nd = np.int64(v & _LO32) - 1
            if _same_key(keys, nd, q, i, length):
                return s, nd
        s = (s + 1) & m


@njit(cache=True)
def _node_tag(keys, nd, mask):  # type: ignore[no-untyped-def]
    length = np.int64(keys[nd, 0])
    return _tag(_fingerprint(keys, nd, 1, length, mask))


@njit(cache=True)
def _slot_of(table, shift, tag, nd):  # type: ignore[no-untyped-def]
    m = table.shape[0] - 1
    s = _home(tag, shift, np.uint64(m))
    want = np.uint64(nd + 1)
    while (table[s] & _LO32) != want:
        s = (s + 1) & m
    return s


@njit(cache=True)
def _table_delete(table, shift, s):  # type: ignore[no-untyped-def]
    """Remove slot ``s``, shifting later entries of its cluster back (no tombstones)."""
    m = table.shape[0] - 1
    tm = np.uint64(m)
    i = s
    j = s
    while True:
        j = (j + 1) & m
        v = table[j]
        if v == 0:
            break
        k = _home(v >> _U32, shift, tm)
        if i <= j:
            if i < k and k <= j:
                continue
        elif i < k or k <= j:
            continue
        table[i] = v
        i = j
    table[i] = 0


# --------------------------------------------------------------------------- heaps
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
def _heap_increased(hts, hnode, hpos, ts, meta, h, nd):  # type: ignore[no-untyped-def]
    """``ts[nd]`` grew: move ``nd`` down to its place."""
    _sift_down(hts, hnode, hpos, h, np.int64(hpos[nd]), meta[HS0 + h], meta[CAP], ts[nd], nd)


# --------------------------------------------------------------------------- ghosts
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


@njit(cache=True)
def _g_drop(st, nd, slot):  # type: ignore[no-untyped-def]
    """Forget ghost ``nd`` (at table slot ``slot``, or -1 to find it)."""
    table, keys, lst, ref, ts, hpos, hts, hnode, free, prot, gprev, gnext, gfree, meta, pf, fpm = st
    _g_unlink(gprev, gnext, meta, lst[nd] - 3, nd)
    if slot < 0:
        slot = _slot_of(table, np.uint64(meta[SHIFT]), _node_tag(keys, nd, fpm[0]), nd)
    _table_delete(table, np.uint64(meta[SHIFT]), slot)
    lst[nd] = 0
    gfree[meta[NGFREE]] = nd
    meta[NGFREE] += 1


# --------------------------------------------------------------------------- operations
@njit(cache=True)
def _tags(q, lens, mask):  # type: ignore[no-untyped-def]
    n = lens.shape[0]
    tags = np.empty(n, np.uint64)
    for i in range(n):
        tags[i] = _tag(_fingerprint(q, i, 0, lens[i], mask))
    return tags


@njit(cache=True)
def _lookup(st, q, lens, tags):  # type: ignore[no-untyped-def]
    table, keys, lst, ref, ts, hpos, hts, hnode, free, prot, gprev, gnext, gfree, meta, pf, fpm = st
    shift = np.uint64(meta[SHIFT])
    n = lens.shape[0]
    for i in range(n):
        s, nd = _find(table, keys, shift, q, i, lens[i], tags[i])
        if nd < 0 or lst[nd] > 2 or ref[nd] < 0:
            return i
    return n


@njit(cache=True)
def _find_all(st, q, lens, tags):  # type: ignore[no-untyped-def]
    table, keys, lst, ref, ts, hpos, hts, hnode, free, prot, gprev, gnext, gfree, meta, pf, fpm = st
    shift = np.uint64(meta[SHIFT])
    n = lens.shape[0]
    nodes = np.empty(n, np.int64)
    for i in range(n):
        s, nd = _find(table, keys, shift, q, i, lens[i], tags[i])
        nodes[i] = nd
    return nodes


@njit(cache=True)
def _prepare_load(st, nodes, out_ids, info):  # type: ignore[no-untyped-def]
    table, keys, lst, ref, ts, hpos, hts, hnode, free, prot, gprev, gnext, gfree, meta, pf, fpm = st
    n = nodes.shape[0]
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
            _heap_remove(hts, hnode, hpos, meta, lst[nd] - 1, nd)
        ref[nd] += 1
        out_ids[i] = nd
    return n


@njit(cache=True)
def _complete_load(st, nodes, info):  # type: ignore[no-untyped-def]
    table, keys, lst, ref, ts, hpos, hts, hnode, free, prot, gprev, gnext, gfree, meta, pf, fpm = st
    n = nodes.shape[0]
    for i in range(n):
        nd = nodes[i]
        if nd >= 0 and lst[nd] <= 2:
            ref[nd] -= 1
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
    for i in range(n):
        nd = nodes[i]
        if ref[nd] == 0 and hpos[nd] < 0:
            _heap_push(hts, hnode, hpos, ts, meta, lst[nd] - 1, nd)
    return n


@njit(cache=True)
def _touch(st, nodes):  # type: ignore[no-untyped-def]
    table, keys, lst, ref, ts, hpos, hts, hnode, free, prot, gprev, gnext, gfree, meta, pf, fpm = st
    arc = meta[ARC] != 0
    cap = meta[CAP]
    for i in range(nodes.shape[0] - 1, -1, -1):  # P4: last to first
        nd = nodes[i]
        if nd < 0:
            continue
        kind = lst[nd]
        if kind == 1:
            meta[CLOCK] += 1
            if arc and ref[nd] >= 0:  # A3: ready T1 -> T2
                if hpos[nd] >= 0:
                    _heap_remove(hts, hnode, hpos, meta, 0, nd)
                lst[nd] = 2
                meta[N1] -= 1
                meta[N1 + 1] += 1
                ts[nd] = meta[CLOCK]
                if ref[nd] == 0:
                    _heap_push(hts, hnode, hpos, ts, meta, 1, nd)
            else:  # L2, or A3 pending T1 -> T1's most-recent end
                ts[nd] = meta[CLOCK]
                if hpos[nd] >= 0:
                    _heap_increased(hts, hnode, hpos, ts, meta, 0, nd)
        elif kind == 2:
            meta[CLOCK] += 1
            ts[nd] = meta[CLOCK]
            if hpos[nd] >= 0:
                _heap_increased(hts, hnode, hpos, ts, meta, 1, nd)
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
def _evict(st, nodes, n, out_vic):  # type: ignore[no-untyped-def]
    """Choose and apply ``n`` victims (P5, L3, A4, A5); -1 and no change if impossible."""
    table, keys, lst, ref, ts, hpos, hts, hnode, free, prot, gprev, gnext, gfree, meta, pf, fpm = st
    cap = meta[CAP]
    arc = meta[ARC] != 0
    shift = np.uint64(meta[SHIFT])
    nprot = 0
    for i in range(nodes.shape[0]):
        nd = nodes[i]
        if nd >= 0 and nd < cap and lst[nd] != 0 and prot[nd] == 0:
            prot[nd] = 1
            if hpos[nd] >= 0:
                nprot += 1
    if meta[HS0] + meta[HS0 + 1] - nprot < n:
        for i in range(nodes.shape[0]):
            nd = nodes[i]
            if nd >= 0 and nd < cap:
                prot[nd] = 0
        return -1
    side = np.empty(nprot, np.int64)
    ns = 0
    from_t1 = np.empty(n, np.bool_)
    t1_victims = 0
    target = np.floor(pf[0])
    for k in range(n):
        e1, ns = _next_eligible(hts, hnode, hpos, prot, meta, 0, side, ns)
        take_t1 = False
        if not arc:
            take_t1 = True
        elif e1 >= 0:
            if meta[N1] - t1_victims >= target:
                take_t1 = True
            else:
                e2, ns = _next_eligible(hts, hnode, hpos, prot, meta, 1, side, ns)
                take_t1 = e2 < 0
        if take_t1:
            victim = e1
            t1_victims += 1
        else:
            victim, ns = _next_eligible(hts, hnode, hpos, prot, meta, 1, side, ns)
        _heap_remove(hts, hnode, hpos, meta, lst[victim] - 1, victim)
        out_vic[k] = victim
        from_t1[k] = take_t1
    for j in range(ns):
        nd = side[j]
        _heap_push(hts, hnode, hpos, ts, meta, lst[nd] - 1, nd)
    for i in range(nodes.shape[0]):
        nd = nodes[i]
        if nd >= 0 and nd < cap:
            prot[nd] = 0
    # apply (A5: ghosts appended in victim order, each list trimmed to the capacity)
    kw = keys.shape[1]
    for k in range(n):
        nd = out_vic[k]
        tag = _node_tag(keys, nd, fpm[0])
        s = _slot_of(table, shift, tag, nd)
        g = 0 if from_t1[k] else 1
        meta[N1 + g] -= 1
        if arc:
            if meta[HEAD0 + 3 * g + 2] >= cap:
                _g_drop(st, meta[HEAD0 + 3 * g], -1)
                s = _slot_of(table, shift, tag, nd)  # the drop may have shifted our slot
            meta[NGFREE] -= 1
            gn = gfree[meta[NGFREE]]
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
def _prepare_store(st, q, lens, tags, nodes, out_idx, out_ids, out_vic, info):  # type: ignore[no-untyped-def]
    table, keys, lst, ref, ts, hpos, hts, hnode, free, prot, gprev, gnext, gfree, meta, pf, fpm = st
    n = lens.shape[0]
    shift = np.uint64(meta[SHIFT])
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
                for w in range((lens[i] + 7) // 8):
                    if q[i, w] != q[j, w]:
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
        nv = _evict(st, nodes, need, out_vic)
        if nv < 0:
            return -1
    kw = keys.shape[1]
    for k in range(m):
        i = out_idx[k]
        length = lens[i]
        if nodes[i] >= 0:  # a ghost at lookup time (A1: forget it), unless trimmed since
            s, g = _find(table, keys, shift, q, i, length, tags[i])
            if g >= 0:
                _g_drop(st, g, s)
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
        meta[N1] += 1
        s, g = _find(table, keys, shift, q, i, length, tags[i])
        table[s] = (tags[i] << _U32) | np.uint64(b + 1)
        out_ids[k] = b
    info[0] = nv
    return m


@njit(cache=True)
def _store_ok(st, nodes, out_idx):  # type: ignore[no-untyped-def]
    table, keys, lst, ref, ts, hpos, hts, hnode, free, prot, gprev, gnext, gfree, meta, pf, fpm = st
    m = 0
    for i in range(nodes.shape[0]):
        nd = nodes[i]
        if nd >= 0 and lst[nd] <= 2 and ref[nd] == -1:
            ref[nd] = 0
            _heap_push(hts, hnode, hpos, ts, meta, lst[nd] - 1, nd)
            out_idx[m] = i
            m += 1
    return m


@njit(cache=True)
def _store_fail(st, q, lens, tags):  # type: ignore[no-untyped-def]
    table, keys, lst, ref, ts, hpos, hts, hnode, free, prot, gprev, gnext, gfree, meta, pf, fpm = st
    shift = np.uint64(meta[SHIFT])
    m = 0
    for i in range(lens.shape[0]):
        s, nd = _find(table, keys, shift, q, i, lens[i], tags[i])
        if nd >= 0 and lst[nd] <= 2 and ref[nd] == -1:
            meta[N1 + lst[nd] - 1] -= 1
            _table_delete(table, shift, s)
            lst[nd] = 0
            ref[nd] = 0
            free[meta[NFREE]] = nd
            meta[NFREE] += 1
            m += 1
    return m


@njit(cache=True)
def run_op(code, st, buf, lens, out_a, out_b, out_c, info):  # type: ignore[no-untyped-def]
    """The single compiled entry point: run manager operation ``code`` on one batch.

    ``buf`` holds the batch's hashes back to back, ``lens`` their lengths (validated
    by the caller: non-negative, summing to ``len(buf)``). Output arrays hold at least
    ``len(lens)`` entries. Returns an op-specific count, or -1 (error / refusal, with
    details in ``info``) after changing nothing.
    """
    q = _pack(buf, lens)
    tags = _tags(q, lens, st[15][0])
    if code == OP_LOOKUP:
        return _lookup(st, q, lens, tags)
    if code == OP_STORE_FAIL:
        return _store_fail(st, q, lens, tags)
    nodes = _find_all(st, q, lens, tags)
    if code == OP_PREPARE_LOAD:
        return _prepare_load(st, nodes, out_a, info)
    if code == OP_COMPLETE_LOAD:
        return _complete_load(st, nodes, info)
    if code == OP_TOUCH:
        _touch(st, nodes)
        return 0
    if code == OP_PREPARE_STORE:
        return _prepare_store(st, q, lens, tags, nodes, out_a, out_b, out_c, info)
    if code == OP_STORE_OK:
        return _store_ok(st, nodes, out_a)
    return -2


def table_size(nodes: int) -> int:
    """Slots for ``nodes`` entries: a power of two, load factor at most 2/3."""
    size = 8
    while size * 2 < nodes * 3:
        size *= 2
    return size
