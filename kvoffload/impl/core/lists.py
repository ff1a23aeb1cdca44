"""Recency lists of the compiled manager: intrusive doubly-linked lists over block nodes.

Every present block that is not *parked* sits in its recency list ``h`` (LRU: 0; ARC:
T1 = 0, T2 = 1; ``h = kind - T1``) in stamp order, least recent at the head
(``meta[list_slot(h, LIST_HEAD)]``), most recent at the tail. Appends always carry a new
maximum stamp and unlinks keep the order, so the head is the list's oldest block.
``bprev``/``bnext`` are int32 node ids (-1: none).
"""

from __future__ import annotations

from .jit import kernel
from .layout import LIST_HEAD, LIST_TAIL, list_slot

#: ``lslot(h, part)``: ``layout.list_slot`` for compiled code.
lslot = kernel(inline="always")(list_slot)


@kernel()
def l_append(bprev, bnext, meta, h, nd):  # type: ignore[no-untyped-def]
    """Link ``nd`` at the most recent end of list ``h``."""
    tail = meta[lslot(h, LIST_TAIL)]
    bprev[nd] = tail
    bnext[nd] = -1
    if tail >= 0:
        bnext[tail] = nd
    else:
        meta[lslot(h, LIST_HEAD)] = nd
    meta[lslot(h, LIST_TAIL)] = nd


@kernel()
def l_prepend(bprev, bnext, meta, h, nd):  # type: ignore[no-untyped-def]
    """Link ``nd`` at the least recent end of list ``h``."""
    head = meta[lslot(h, LIST_HEAD)]
    bnext[nd] = head
    bprev[nd] = -1
    if head >= 0:
        bprev[head] = nd
    else:
        meta[lslot(h, LIST_TAIL)] = nd
    meta[lslot(h, LIST_HEAD)] = nd


@kernel()
def l_unlink(bprev, bnext, meta, h, nd):  # type: ignore[no-untyped-def]
    """Take ``nd`` out of list ``h``."""
    p = bprev[nd]
    nx = bnext[nd]
    if p >= 0:
        bnext[p] = nx
    else:
        meta[lslot(h, LIST_HEAD)] = nx
    if nx >= 0:
        bprev[nx] = p
    else:
        meta[lslot(h, LIST_TAIL)] = p

