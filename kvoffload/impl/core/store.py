"""``prepare_store`` (M5) in the contract's steps: which hashes to store (M5.1), room for
them (M5.4, ``evict``), then each one indexed as a new pending block (M5.2, A1, F2)."""

from __future__ import annotations

import numpy as np

from .evict import evict
from .ghosts import g_drop
from .jit import kernel
from .layout import CLOCK, IN_LIST, KEYS_NARROW, LIST_T1, LIST_T2, N1, NFREE, POLICY, POLICY_S3FIFO, REFUSED, SHIFT, T1, T2
from .lists import l_append
from .order import minors_of
from .state import addresses, find_all, hints, load, scratch, unpack, unpack_io
from .table import _P1, _U32, find, home, prefetch, remember, row_head

__all__ = ["prepare_store"]


@kernel()
def _same_row(q, lens, i, j):  # type: ignore[no-untyped-def]
    """Batch hashes ``i`` and ``j`` are equal."""
    if lens[j] != lens[i]:
        return False
    for x in range((lens[i] + 7) // 8):
        if q[i, x] != q[j, x]:
            return False
    return True


@kernel()
def select_absent(nodes, lst, tags, q, lens, n, out_idx, seen):  # type: ignore[no-untyped-def]
    """M5.1: batch indices of the absent hashes (ghosts count as absent, A1), first
    occurrence only, into ``out_idx``; their count. ``seen`` (``state.scratch``, at
    least ``4n + 8`` long) holds the batch-local probe set: the batch index + 1 of a
    first occurrence, 0: empty."""
    size = 8
    while size < 2 * n:
        size *= 2
    for k in range(size):
        seen[k] = 0
    dmask = size - 1
    m = 0
    for i in range(n):
        nd = nodes[i]
        if nd >= 0 and lst[nd] <= T2:
            continue
        s = np.int64((tags[i] * _P1) >> np.uint64(40)) & dmask
        while seen[s] != 0:
            j = seen[s] - 1
            if tags[j] == tags[i] and _same_row(q, lens, i, j):
                break
            s = (s + 1) & dmask
        if seen[s] == 0:
            seen[s] = i + 1
            out_idx[m] = i
            m += 1
    return m


@kernel()
def _copy_key(keys, b, q, i, length, tag):  # type: ignore[no-untyped-def]
    """Row ``b`` of ``keys`` := ``[row_head(length, tag), words of batch hash i, zeros]``."""
    keys[b, 0] = row_head(length, tag)
    nw = (length + 7) // 8
    for j in range(nw):
        keys[b, 1 + j] = q[i, j]
    for j in range(1 + nw, keys.shape[1]):
        keys[b, j] = 0


@kernel()
def _index(table, shift, tag, start, b):  # type: ignore[no-untyped-def]
    """Put block ``b`` under ``tag`` in the first empty slot from ``start`` on."""
    tmask = table.shape[0] - 1
    s = start
    while table[s] != 0:
        s = (s + 1) & tmask
    table[s] = (tag << _U32) | np.uint64(b + 1)


@kernel()
def insert_selected(table, keys, a64, a32, a8, q, lens, tags, nodes, slots, m, moved, out_idx, out_ids,  # type: ignore[no-untyped-def]
                    addrs, hints):
    """Index the ``m`` selected hashes as new pending blocks (block ids in ``out_ids``), each
    hinted for its object's next call (``layout.HINT_SLOTS``)."""
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = unpack(a64, a32, a8)
    minor = minors_of(a32, meta)
    shift = np.uint64(meta[SHIFT])
    tm = np.uint64(table.shape[0] - 1)
    if moved:  # every insert probes from its home slot again: fetch them all at once first
        for k in range(m):  # (the evictions since ``find_all`` pushed them out of the caches)
            prefetch(table, home(tags[out_idx[k]], shift, tm))
    for k in range(m):
        i = out_idx[k]
        h = LIST_T1
        if nodes[i] >= 0:  # a ghost at lookup time (A1: forget it), unless trimmed since
            s, g = find(table, keys, shift, q, i, lens[i], tags[i])
            if g >= 0:
                g_drop(table, keys, meta, lst, gprev, gnext, gfree, g, s)
                if meta[POLICY] == POLICY_S3FIFO:  # F2: G remembered it: into M
                    h = LIST_T2
            moved = True
        # M5.2: a pending block at the most recent end of T1 (L1, A2, V2; S3-FIFO's S or M:
        # F2)
        meta[NFREE] -= 1
        b = free[meta[NFREE]]
        _copy_key(keys, b, q, i, lens[i], tags[i])
        lst[b] = T1 + h
        ref[b] = -1
        meta[CLOCK] += 1
        ts[b] = meta[CLOCK]
        if minor.shape[0] != 0:  # N9: a fresh number (the caller may rank it next: ``ops.rerank``)
            minor[b] = 0
        hpos[b] = IN_LIST
        l_append(bprev, bnext, meta, h, b)
        meta[N1 + h] += 1
        # The hash is absent: its slot is the first empty one of its probe. Without deletes
        # since ``find_all``, that is at or after the probe's end found then (inserts only
        # fill slots); otherwise probe again from the home slot.
        _index(table, shift, tags[i], slots[i] if not moved else home(tags[i], shift, tm), b)
        out_ids[k] = b
        remember(hints, addrs[i], b)


@kernel()
def prepare_store(table, keys, a64, a32, a8, pf, addr, n, q, io):  # type: ignore[no-untyped-def]
    """M5: count stored; batch indices in ``out_a``, block ids in ``out_b``, victims in
    ``out_c`` (info[0]: victim count); ``REFUSED``, ``KEYS_NARROW``: no change."""
    info, lens, out_idx, out_ids, out_vic = unpack_io(io)
    meta, ts, hts, ref, hpos, hnode, free, gprev, gnext, gfree, lst, prot, bprev, bnext = unpack(a64, a32, a8)
    w = load(addr, n, q, io, meta)
    if w < 0:
        return w
    if w + 1 > keys.shape[1]:
        info[0] = w
        return KEYS_NARROW
    tags, nodes, slots = find_all(table, keys, meta, lst, ref, q, n, io)
    m = select_absent(nodes, lst, tags, q, lens, n, out_idx, scratch(io)[7])
    info[0] = 0
    if m == 0:
        return 0
    need = m - meta[NFREE]
    nv = 0
    if need > 0:
        nv = evict(table, keys, a64, a32, a8, pf, nodes[:n], need, out_vic, io)
        if nv < 0:
            return REFUSED
    # entries shifted back since ``find_all`` (evictions): its empty slots are stale
    insert_selected(table, keys, a64, a32, a8, q, lens, tags, nodes, slots, m, nv > 0, out_idx, out_ids,
                    addresses(io), hints(io))
    info[0] = nv
    return m
