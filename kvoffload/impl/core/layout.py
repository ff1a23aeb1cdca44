"""The compiled core's state layout and result ABI, declared once.

Both the compiled code and the Python side (``kvoffload.impl.manager``) read this module;
nothing else spells an offset, a list kind or a result code.

State: ``table`` (uint64 slots, see ``table``), ``keys`` (uint64 rows ``[length, words…]``)
and three arenas by element type, each a back-to-back run of the fields of
:data:`FIELDS` (``C`` = capacity, ``G`` = ghost nodes: ``2C`` for ARC, 0 for LRU;
``N = C + G`` nodes, blocks ``0 … C-1``, ghosts ``C … N-1``; S3-FIFO: ``C - s``), plus
``pf`` (float64[1], ARC's target ``p``). S3-FIFO and SIEVE append ``C`` bytes to the a8
arena, one mark per block (``mark_bytes``: their ``marks`` view is the arena's last ``C``
bytes). A call unboxes these few arrays instead of one per field.
"""

from __future__ import annotations

__all__ = [
    "A8",
    "A32",
    "A64",
    "ARENA_OF",
    "FIELDS",
    "GATHER_BAD",
    "GATHER_WIDE",
    "KEYS_NARROW",
    "MISS",
    "REFUSED",
    "SLOW_PATH",
    "arena_sizes",
    "io_size",
    "span",
    "table_size",
]

# --------------------------------------------------------------------- list kinds (lst)
FREE = 0  # a free block, or a free ghost node
T1 = 1  # LRU's only recency list, or ARC's T1
T2 = 2  # ARC's T2
B1 = 3  # ARC's ghost list B1 (evicted from T1)
B2 = 4  # ARC's ghost list B2 (evicted from T2)
#: Recency list id ``h`` of a live kind (T1 -> 0, T2 -> 1): ``kind - T1``;
#: ghost list id ``g`` of a ghost kind (B1 -> 0, B2 -> 1): ``kind - B1``.
LIST_COUNT = 2
LIST_T1 = T1 - T1  # recency list id of T1 (LRU's list)
LIST_T2 = T2 - T1  # recency list id of T2

# --------------------------------------------------------------------- policies (meta[POLICY])
POLICY_LRU = 0  # one recency list (T1), no ghosts
POLICY_ARC = 1  # T1, T2 and ghost lists B1, B2 of 2C ghost nodes
POLICY_S3FIFO = 2  # S (list T1), M (list T2), ghost queue G (B1) of C - s nodes; a counter per block
POLICY_SIEVE = 3  # one queue (list T1) and a hand; a visited bit per block
#: Policy names (``CPUOffloadingManager(policy=)``) -> code.
POLICIES = {"lru": POLICY_LRU, "arc": POLICY_ARC, "s3fifo": POLICY_S3FIFO, "sieve": POLICY_SIEVE}
#: Policies that keep one byte per block past the a8 arena's fields (``MARKS``).
MARKED = (POLICY_S3FIFO, POLICY_SIEVE)


def ghost_bounds(code: int, cap: int, small: int) -> tuple[int, int]:
    """Most ghosts ghost lists B1 and B2 may hold (0: the list's victims leave no ghost).

    ARC: ``cap`` each (A5); S3-FIFO: G (B1) holds ``cap - small`` (F1, F6), M's victims
    leave none; LRU, SIEVE: no ghosts. The ghost nodes allocated are their sum.
    """
    if code == POLICY_ARC:
        return cap, cap
    if code == POLICY_S3FIFO:
        return cap - small, 0
    return 0, 0


def minor_words(ranked: bool, cap: int) -> int:
    """int32 words of per-block rank minors after the a32 fields (N9's ``-position``;
    only an LRU ranked by request keeps them: ``ranks``)."""
    return cap if ranked else 0


def mark_bytes(code: int, cap: int) -> int:
    """Bytes of per-block marks (S3-FIFO's F4 counter, SIEVE's V1 bit) after the a8 fields."""
    return cap if code in MARKED else 0

# --------------------------------------------------------------------- meta (a64 head)
CLOCK = 0  # monotonic recency stamp
NFREE = 1  # free blocks (top of the free stack)
HS0 = 2  # reactivated-heap sizes: HS0 + h
N1 = 4  # live blocks in list h: N1 + h (pending and in-use included)
GHOST0 = 6  # ghost list g: meta[GHOST0 + GHOST_STRIDE * g + GHOST_HEAD / _TAIL / _SIZE]
GHOST_STRIDE = 3
GHOST_HEAD = 0  # least recent ghost node (-1: empty)
GHOST_TAIL = 1  # most recent ghost node (-1: empty)
GHOST_SIZE = 2  # ghosts in the list
NGFREE = 12  # free ghost nodes
CAP = 13  # capacity (blocks)
POLICY = 14  # POLICY_LRU, _ARC, _S3FIFO or _SIEVE: which victim selection and which lists
SHIFT = 15  # 64 - log2(table size)
NODES = 16  # blocks + ghost nodes
FPMASK = 17  # fingerprint mask (test seam), uint64 bits
BYTES_TYPE = 18  # id(bytes): what ``batch.gather`` accepts as an element type
LIST0 = 19  # recency list h: meta[LIST0 + LIST_STRIDE * h + LIST_HEAD / LIST_TAIL]
LIST_STRIDE = 2
LIST_HEAD = 0  # least recent block (-1: empty)
LIST_TAIL = 1  # most recent block
ELIG = 23  # ready idle blocks (ref_cnt == 0), both lists: eviction candidates
HAND = 24  # SIEVE's hand (V1): the block it rests on, -1: none (the oldest); -1 for others
GBOUND = 25  # ghost list g keeps at most meta[GBOUND + g] ghosts (``ghost_bounds``)
SMALL = 27  # S3-FIFO's target size s of S (F1); 0 for others
MARK_MAX = 28  # the largest mark: S3-FIFO's counter saturates at 3 (F4), SIEVE's bit is 1 (V4)
RANKED = 29  # 1: LRU ranked by request (N9; ``ranks``): the a32 arena ends in a minor per block
HEAPED = 30  # heap h is in heap order (HEAPED + h = 1), or an unordered pool (0: ``heap``)
POOL_MIN = 32  # the least stamp pushed into pool h since it was last empty (POOL_MIN + h)
META_SIZE = 34


def ghost_slot(g: int, part: int) -> int:
    """``meta`` index of ``part`` (GHOST_HEAD / _TAIL / _SIZE) of ghost list ``g``."""
    return GHOST0 + GHOST_STRIDE * g + part


def list_slot(h: int, part: int) -> int:
    """``meta`` index of ``part`` (LIST_HEAD / LIST_TAIL) of recency list ``h``."""
    return LIST0 + LIST_STRIDE * h + part


# --------------------------------------------------------------------- arenas
A64 = 0
A32 = 1
A8 = 2

#: The arenas' fields in order: ``(arena, name, fixed length, per block, per ghost)``.
FIELD_TABLE = (
    (A64, "meta", META_SIZE, 0, 0),
    (A64, "ts", 0, 1, 0),  # recency stamps
    (A64, "hts", 0, 1, 0),  # heap keys (stamps, in heap order)
    (A32, "ref", 0, 1, 0),  # ref_cnt (-1: pending)
    (A32, "hpos", 0, 1, 0),  # -1 in its list, PARKED, or its heap position
    (A32, "hnode", 0, 1, 0),  # heap slots -> node
    (A32, "free", 0, 1, 0),  # free-block stack
    (A32, "bprev", 0, 1, 0),  # recency-list links
    (A32, "bnext", 0, 1, 0),
    (A32, "gprev", 0, 0, 1),  # ghost-list links (by node - C)
    (A32, "gnext", 0, 0, 1),
    (A32, "gfree", 0, 0, 1),  # free ghost nodes (stack)
    (A8, "lst", 0, 1, 1),  # list kind of every node
    (A8, "prot", 0, 1, 0),  # protected from eviction during one prepare_store
)


def _spans() -> dict[str, tuple[int, int, int, int, int, int]]:
    """``name -> (start fixed, start per block, start per ghost, length fixed, per block, per ghost)``."""
    out: dict[str, tuple[int, int, int, int, int, int]] = {}
    at = {A64: (0, 0, 0), A32: (0, 0, 0), A8: (0, 0, 0)}
    for arena, name, fixed, per_block, per_ghost in FIELD_TABLE:
        f0, c0, g0 = at[arena]
        out[name] = (f0, c0, g0, fixed, per_block, per_ghost)
        at[arena] = (f0 + fixed, c0 + per_block, g0 + per_ghost)
    return out


FIELDS = _spans()
#: Field name -> its arena (A64, A32, A8).
ARENA_OF = {name: arena for arena, name, _fixed, _per_block, _per_ghost in FIELD_TABLE}
ITEM_BYTES = {A64: 8, A32: 4, A8: 1}
#: Arena bytes per ghost node (ARC's ghost index, beside the table's share).
GHOST_NODE_BYTES = sum(ITEM_BYTES[arena] * per_ghost for arena, _n, _f, _b, per_ghost in FIELD_TABLE)
# One constant per field (compiled code reads module-level tuples as constants).
META = FIELDS["meta"]
TS = FIELDS["ts"]
HTS = FIELDS["hts"]
REF = FIELDS["ref"]
HPOS = FIELDS["hpos"]
HNODE = FIELDS["hnode"]
FREE_STACK = FIELDS["free"]
BPREV = FIELDS["bprev"]
BNEXT = FIELDS["bnext"]
GPREV = FIELDS["gprev"]
GNEXT = FIELDS["gnext"]
GFREE = FIELDS["gfree"]
LST = FIELDS["lst"]
PROT = FIELDS["prot"]


def span(field: tuple[int, int, int, int, int, int], cap: int, ghosts: int) -> tuple[int, int]:
    """``(start, stop)`` of ``field`` in its arena (also compiled: ``state.view``)."""
    start = field[0] + field[1] * cap + field[2] * ghosts
    return start, start + field[3] + field[4] * cap + field[5] * ghosts


def table_size(nodes: int) -> int:
    """Hash-table slots for ``nodes`` entries: a power of two, load factor at most 3/4."""
    size = 8
    while size * 3 < nodes * 4:
        size *= 2
    return size


def arena_sizes(cap: int, ghosts: int) -> tuple[int, int, int]:
    """Lengths of the int64, int32 and int8 arenas."""
    sizes = [0, 0, 0]
    for arena, name, _fixed, _per_block, _per_ghost in FIELD_TABLE:
        sizes[arena] = max(sizes[arena], span(FIELDS[name], cap, ghosts)[1])
    return sizes[A64], sizes[A32], sizes[A8]


# --------------------------------------------------------------------- io (per call)
IO_INFO = 8  # io = info[IO_INFO] | lens[B] | out_a[B] | out_b[B] | out_c[B] | scratch (below)
IO_LENS = 0  # ``k`` of the per-hash arrays after ``info``
IO_OUT_A = 1
IO_OUT_B = 2
IO_OUT_C = 3
IO_ARRAYS = 4
#: ``info`` slot 5: the address of the manager's array of hash objects by block id (its
#: ``_objects``' data, set by the manager whenever it binds ``io``; 0: none). Eviction reads
#: a victim's object pointer there, only to prefetch the object's header: the manager then
#: hands the victim's hash object back, and its first touch of each (a reference count)
#: missed the caches, ~20 ns per victim at 10^6 blocks.
INFO_OBJECTS = 5
#: ``info`` slots 6 and 7: ``evict.apply_victims``'s prefetch cursors (one per ghost list).
INFO_GHOST_CURSORS = 6
# Scratch after the per-hash arrays: what an entry point would otherwise allocate on every
# call (a numba allocation and its release cost ~0.1 us each; prepare_store made nine).
# Per hash: tags (uint64 bits), nodes, slots (``state.find_all``), victim lists, heap
# blocks set aside, list blocks set aside (``evict``), victim tags (``apply_victims``),
# the hashes' object addresses (``batch.gather``; 0 where the caller packed the batch);
# then ``store.select_absent``'s probe set: a power of two >= 2n slots, at most 4B + 8;
# then the hints (``HINT_SLOTS``).
# Each scratch array is followed by IO_PAD unused words: arrays a multiple of 4 KiB apart
# (B = 256: 2 KiB each) made the CPU take a store to one for a store to the next (4K
# aliasing: lookup +10% at n = 256).
IO_SCRATCH = 8
SCRATCH_ADDRESSES = 7  # which scratch array holds the object addresses (``state.addresses``)
IO_PAD = 8
IO_SEEN = 4
IO_SEEN_FIXED = 8
#: Hints at the end of ``io``: ``HINT_SLOTS`` pairs (a hash object's address, the node its
#: hash was found at or stored in), slot chosen by the address (``table.hint_slot``). A
#: hint only saves the fingerprint and the table probe of a hash object seen in a recent
#: call (vLLM passes a request's same key objects to every call): it is used only after
#: the node's row holds exactly that hash and the node is live, which is what the table
#: would answer (I8), else the hash is looked up as if there were no hint.
HINT_BITS = 10
HINT_SLOTS = 1 << HINT_BITS
IO_HINTS = 2 * HINT_SLOTS
#: ``len(io) = IO_FIXED + IO_PER_HASH * B``: ``io_size`` builds it, ``state.batch_of`` reads B back.
IO_FIXED = IO_INFO + IO_SCRATCH * IO_PAD + IO_SEEN_FIXED + IO_HINTS
IO_PER_HASH = IO_ARRAYS + IO_SCRATCH + IO_SEEN


def io_size(batch: int) -> int:
    """Length of ``io`` for batches of up to ``batch`` hashes."""
    return IO_FIXED + IO_PER_HASH * batch


# --------------------------------------------------------------------- rank modes (N9)
#: ``ranks.rerank``'s per-key mode (``out_a[i]``): leave the key, give it the rank, or
#: give it the rank only if that raises it.
RANK_SKIP = 0
RANK_SET = 1
RANK_RAISE = 2

# --------------------------------------------------------------------- result codes
# Every entry point returns a count >= 0, or one of these (compared by name only).
MISS = -1  # prepare_load / complete_load: a hash not covered (info says which, why)
REFUSED = -1  # prepare_store: not enough evictable blocks (M5.4)
GATHER_BAD = -100  # an element is not exactly bytes, is empty, or is oddly placed
GATHER_WIDE = -101  # a hash has more words than ``q`` has columns, or the batch too many rows
KEYS_NARROW = -102  # prepare_store: a hash is longer than ``keys`` rows hold (info[0]: words)
POSITION_BAD = -103  # rerank: a position outside [0, MAX_POSITION] (info[0]: its index); no change
BLOCK_BAD = -104  # rerank_blocks: a block id outside [0, capacity) (info[0]: its index); no change
#: N9's largest end-token position (ranks keep ``-position`` as an int32 minor).
MAX_POSITION = 2**31 - 1
#: Codes after which the manager retries the call on its checked, packed slow path.
SLOW_PATH = (GATHER_BAD, GATHER_WIDE, KEYS_NARROW)

# --------------------------------------------------------------------- hpos values
IN_LIST = -1  # ``hpos`` of a block in its recency list
PARKED = -2  # ``hpos`` of a block in neither its list nor its heap

#: A table entry (``tag << 32 | node + 1``) and a key row's word 0 (``table.row_head``:
#: ``tag << 32 | length``) both keep the tag in the high half; the compiled code and the
#: Python side split them with these.
HALF_BITS = 32
LOW_HALF = 0xFFFFFFFF
