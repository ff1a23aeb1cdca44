"""Where the compiled manager keeps what: slots of ``meta`` (the head of the int64 arena).

The manager's state is six arrays (see ``_core``): ``table`` (uint64 slots), ``keys``
(uint64 rows), and three arenas by element type (int64, int32, int8) holding every
per-block and per-ghost array back to back, plus ``pf`` (ARC's target ``p``). A call
unboxes these few arrays instead of one per field.
"""

from __future__ import annotations

CLOCK = 0  # monotonic recency stamp
NFREE = 1  # free blocks (top of the free stack)
HS0 = 2  # reactivated-heap sizes: HS0 + list id (0: LRU/T1, 1: T2)
N1 = 4  # |LRU| or |T1| (N1 + 1 = |T2|), pending and in-use included
HEAD0 = 6  # ghost list g: head (LRU end) 6 + 3g, tail (MRU end) 7 + 3g, size 8 + 3g
NGFREE = 12  # free ghost nodes
CAP = 13  # capacity (blocks)
ARC = 14  # 1 for ARC
SHIFT = 15  # 64 - log2(table size)
NODES = 16  # blocks + ghost nodes
FPMASK = 17  # fingerprint mask (test seam), uint64 bits
BYTES_TYPE = 18  # id(bytes): what ``gather`` accepts as an element type
LHEAD0 = 19  # recency list h (0: LRU/T1, 1: T2): head (least recent) 19 + 2h, tail 20 + 2h
ELIG = 23  # ready idle blocks (ref_cnt == 0), both lists: eviction candidates
META_SIZE = 24
