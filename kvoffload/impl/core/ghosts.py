"""ARC's ghost lists B1 and B2 (A1, A5): intrusive doubly-linked lists over ghost nodes.

Ghost list ``g`` (B1 = 0, B2 = 1; ``g = kind - B1``) keeps its head, tail and size in
``meta[ghost_slot(g, …)]``; ``gprev``/``gnext`` are indexed by ``node - C``;
a ghost's table tag is in its key row (``table.row_head``), as a block's.
A ghost is indexed in the hash table like a block (its own node id), so that a store or
touch of its hash finds it.
"""

from __future__ import annotations

import numpy as np

from .jit import kernel
from .layout import B1, CAP, FREE, GHOST_HEAD, GHOST_SIZE, GHOST_TAIL, NGFREE, SHIFT, ghost_slot
from .table import node_tag, slot_of, table_delete

#: ``gslot(g, part)``: ``layout.ghost_slot`` for compiled code.
gslot = kernel(inline="always")(ghost_slot)


@kernel()
def g_unlink(gprev, gnext, meta, g, nd):  # type: ignore[no-untyped-def]
    """Take ghost ``nd`` out of ghost list ``g``."""
    cap = meta[CAP]
    x = nd - cap
    p = gprev[x]
    nx = gnext[x]
    if p >= 0:
        gnext[p - cap] = nx
    else:
        meta[gslot(g, GHOST_HEAD)] = nx
    if nx >= 0:
        gprev[nx - cap] = p
    else:
        meta[gslot(g, GHOST_TAIL)] = p
    meta[gslot(g, GHOST_SIZE)] -= 1


@kernel()
def g_append(gprev, gnext, meta, g, nd):  # type: ignore[no-untyped-def]
    """Link ghost ``nd`` at the most recent end of ghost list ``g``."""
    cap = meta[CAP]
    x = nd - cap
    tail = meta[gslot(g, GHOST_TAIL)]
    gprev[x] = tail
    gnext[x] = -1
    if tail >= 0:
        gnext[tail - cap] = nd
    else:
        meta[gslot(g, GHOST_HEAD)] = nd
    meta[gslot(g, GHOST_TAIL)] = nd
    meta[gslot(g, GHOST_SIZE)] += 1


@kernel()
def g_drop(table, keys, meta, lst, gprev, gnext, gfree, nd, slot):  # type: ignore[no-untyped-def]
    """A1, A5: forget ghost ``nd`` (at table slot ``slot``, or -1 to find it by the tag in
    its key row)."""
    g_unlink(gprev, gnext, meta, lst[nd] - B1, nd)
    shift = np.uint64(meta[SHIFT])
    if slot < 0:
        slot = slot_of(table, shift, node_tag(keys, nd), nd)
    table_delete(table, shift, slot)
    lst[nd] = FREE
    gfree[meta[NGFREE]] = nd
    meta[NGFREE] += 1
