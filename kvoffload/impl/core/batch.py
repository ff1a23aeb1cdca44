"""Compiled readers that turn one batch of hashes into rows of little-endian uint64 words.

``q[i, :(lens[i] + 7) // 8]`` holds hash ``i`` zero padded; ``lens[i]`` its length in
bytes. Two sources: the caller's ``list`` itself (:func:`gather`, see ``_pyobj``) or
the hashes packed by numpy (``rows.pack``, the portable path).
"""

from __future__ import annotations

import numpy as np

from .jit import kernel
from .layout import GATHER_BAD, GATHER_WIDE
from .pyobj import BYTES_DATA, LIST_ITEMS, OB_SIZE, OB_TYPE, peek

__all__ = ["GATHER_BAD", "GATHER_WIDE", "gather"]


@kernel()
def gather(addr, n, q, lens, addrs, bytes_type):  # type: ignore[no-untyped-def]
    """Read ``n`` elements of the list at ``addr`` into ``q``/``lens`` and their addresses
    into ``addrs``; 0 or a GATHER_ code.

    Nothing but ``q``, ``lens`` and ``addrs`` is written, and only rows ``< n`` (the caller
    made ``q`` at least ``n`` rows long). Returns the widest row's word count on success.
    """
    width = q.shape[1]
    if n > q.shape[0] or n > lens.shape[0] or n > addrs.shape[0]:
        return GATHER_WIDE
    items = peek(addr + LIST_ITEMS)
    widest = 0
    for i in range(n):
        obj = peek(items + 8 * i)
        if peek(obj + OB_TYPE) != bytes_type:
            return GATHER_BAD
        length = peek(obj + OB_SIZE)
        if length <= 0:
            return GATHER_BAD
        nw = (length + 7) // 8
        if nw > width:
            return GATHER_WIDE
        if nw > widest:
            widest = nw
        data = obj + BYTES_DATA
        for j in range(nw - 1):
            q[i, j] = np.uint64(peek(data + 8 * j))
        last = np.uint64(peek(data + 8 * (nw - 1)))  # an aligned word: never crosses a page
        rest = length - 8 * (nw - 1)
        if rest < 8:
            last &= (np.uint64(1) << np.uint64(8 * rest)) - np.uint64(1)
        q[i, nw - 1] = last
        lens[i] = length
        addrs[i] = obj
    return widest
