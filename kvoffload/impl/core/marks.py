"""Per-block marks of S3-FIFO (F4's counter) and SIEVE (V1's visited bit).

Both policies keep one byte per block past the fields of the a8 arena
(``layout.mark_bytes``): the arena's last ``C`` bytes. A block's mark is 0 while it is
free or pending (a store in flight is not a use, F4 / V4), and each policy's eviction
clears its victims' marks, so an insert (M5.5) finds a cleared mark.
"""

from __future__ import annotations

from .jit import kernel
from .layout import CAP, MARK_MAX, T2

__all__ = ["marks_of", "touch_marks"]


@kernel(inline="always")
def marks_of(a8, meta):  # type: ignore[no-untyped-def]
    """The marks: the a8 arena's last ``C`` bytes (only for policies in ``layout.MARKED``)."""
    return a8[a8.shape[0] - meta[CAP] :]


@kernel()
def touch_marks(a8, meta, nodes, lst, ref, n):  # type: ignore[no-untyped-def]
    """F4 / V4: each occurrence of a present, ready hash adds 1 to its mark, up to
    ``meta[MARK_MAX]`` (S3-FIFO: 3; SIEVE: 1, the bit). Pending hashes, ghosts, absent
    hashes: nothing.
    Nothing moves, so P4's last-to-first walk gives the same marks in any order."""
    marks = marks_of(a8, meta)
    most = meta[MARK_MAX]
    for i in range(n):
        nd = nodes[i]
        if nd >= 0 and lst[nd] <= T2 and ref[nd] >= 0 and marks[nd] < most:
            marks[nd] += 1
    return 0
