"""Recency lists of the compiled manager: intrusive doubly-linked lists over block nodes.

Every present block that is not *parked* sits in its recency list (LRU: list 0; ARC: T1 =
0, T2 = 1) in stamp order, least recent at the head (``meta[LHEAD0 + 2h]``), most recent
at the tail (``meta[LHEAD0 + 2h + 1]``). Appends always carry a new maximum stamp and
unlinks keep the order, so the head is the list's oldest block. ``bprev``/``bnext`` are
int32 node ids (-1: none).
"""

from __future__ import annotations

from numba import njit

from ._layout import LHEAD0


@njit(cache=True)
def _l_append(bprev, bnext, meta, h, nd):  # type: ignore[no-untyped-def]
    tail = meta[LHEAD0 + 2 * h + 1]
    bprev[nd] = tail
    bnext[nd] = -1
    if tail >= 0:
        bnext[tail] = nd
    else:
        meta[LHEAD0 + 2 * h] = nd
    meta[LHEAD0 + 2 * h + 1] = nd


@njit(cache=True)
def _l_prepend(bprev, bnext, meta, h, nd):  # type: ignore[no-untyped-def]
    head = meta[LHEAD0 + 2 * h]
    bnext[nd] = head
    bprev[nd] = -1
    if head >= 0:
        bprev[head] = nd
    else:
        meta[LHEAD0 + 2 * h + 1] = nd
    meta[LHEAD0 + 2 * h] = nd


@njit(cache=True)
def _l_unlink(bprev, bnext, meta, h, nd):  # type: ignore[no-untyped-def]
    p = bprev[nd]
    nx = bnext[nd]
    if p >= 0:
        bnext[p] = nx
    else:
        meta[LHEAD0 + 2 * h] = nx
    if nx >= 0:
        bprev[nx] = p
    else:
        meta[LHEAD0 + 2 * h + 1] = p
