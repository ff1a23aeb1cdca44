"""Hashing and the open-addressing table of the compiled manager (I8: the full hash decides).

``table`` — linear probing, backward-shift deletion (no tombstones). A slot is
``tag << 32 | (node + 1)`` (0 = empty), where ``tag`` folds the 64-bit fingerprint of the
hash to 32 bits; the home bucket is derived from the tag alone so that deletion can move
entries without touching the nodes. A tag match is only a candidate: the full hash
(length + every word, ``keys[node] = [tag << 32 | length, word0, word1, …]``) is always compared.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .jit import TWIN, kernel
from .layout import FREE, HALF_BITS, HINT_BITS, LOW_HALF, T2

_P1 = np.uint64(0x9E3779B97F4A7C15)
_P2 = np.uint64(0xBF58476D1CE4E5B9)
_P3 = np.uint64(0x94D049BB133111EB)
_LO32 = np.uint64(LOW_HALF)
_U32 = np.uint64(HALF_BITS)


def _compiled_prefetches() -> tuple[Any, Any]:
    """``(prefetch, prefetch_at)`` for compiled code: an LLVM prefetch of the line of element
    ``i`` of an array, or of the line at an address (hints: they never fault)."""
    from llvmlite import ir  # type: ignore[import-untyped]
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    def emit(builder: Any, address: Any) -> None:
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        name = "llvm.prefetch." + ("p0" if str(i8p) == "ptr" else "p0i8")  # opaque or typed pointers
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), name)  # type: ignore[no-untyped-call]
        builder.call(fn, [builder.inttoptr(address, i8p), i32(0), i32(3), i32(1)])

    @intrinsic
    def _prefetch_impl(typingctx, ary, i):  # type: ignore[no-untyped-def]
        """Prefetch the cache line of row/element ``i`` of ``ary``."""
        if not isinstance(ary, types.Array) or not isinstance(i, types.Integer):
            return None
        sig = types.void(ary, i)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            a = context.make_array(signature.args[0])(context, builder, args[0])
            idx = context.cast(builder, args[1], signature.args[1], types.intp)
            stride = builder.extract_value(a.strides, 0)
            emit(builder, builder.add(builder.ptrtoint(a.data, ir.IntType(64)), builder.mul(idx, stride)))
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def _prefetch_at_impl(typingctx, address):  # type: ignore[no-untyped-def]
        """Prefetch the cache line at ``address`` (another object's memory: any address)."""
        if not isinstance(address, types.Integer):
            return None
        sig = types.void(address)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            emit(builder, context.cast(builder, args[0], signature.args[0], types.int64))
            return context.get_dummy_value()

        return sig, codegen

    return _prefetch_impl, _prefetch_at_impl


def _twin_prefetch(ary: Any, i: Any) -> None:
    """The twin's ``prefetch``: a hint, so nothing."""


def _twin_prefetch_at(address: Any) -> None:
    """The twin's ``prefetch_at``: a hint, so nothing."""


#: ``prefetch(array, i)`` and ``prefetch_at(address)`` (typed ``Any`` for mypy: numba
#: intrinsics are untyped).
prefetch: Any
prefetch_at: Any
prefetch, prefetch_at = (_twin_prefetch, _twin_prefetch_at) if TWIN else _compiled_prefetches()


@kernel(inline="always")  # numba IR inlining: LLVM left it a call (~4 ns per hash)
def fingerprint(words, row, col0, length, mask):  # type: ignore[no-untyped-def]
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


@kernel()
def tag_of(fp):  # type: ignore[no-untyped-def]
    return ((fp >> _U32) ^ fp) & _LO32


@kernel()
def home(tag, shift, tmask):  # type: ignore[no-untyped-def]
    return np.int64(((tag * _P1) >> shift) & tmask)


@kernel(inline="always")
def row_head(length, tag):  # type: ignore[no-untyped-def]
    """Word 0 of a key row: the hash's length in bytes, its table tag in the high half
    (so that a victim's slot is found without fingerprinting its row again)."""
    return (tag << _U32) | np.uint64(length)


@kernel()
def same_key(keys, nd, q, i, length, tag):  # type: ignore[no-untyped-def]
    """Full comparison of stored hash ``nd`` and batch hash ``i`` of tag ``tag`` (I8)."""
    if keys[nd, 0] != row_head(length, tag):
        return False
    for j in range((length + 7) // 8):
        if keys[nd, 1 + j] != q[i, j]:
            return False
    return True


@kernel()
def probe(table, keys, q, i, length, tag, s):  # type: ignore[no-untyped-def]
    """(slot, node) of batch hash ``i``, probing from slot ``s`` on (its home slot, or a later
    slot of its probe with no match before it); node -1 and the empty slot ending the probe
    if absent. A tag match is only a candidate: the full hash decides (I8)."""
    m = table.shape[0] - 1
    while True:
        v = table[s]
        if v == 0:
            return s, np.int64(-1)
        if (v >> _U32) == tag:
            nd = np.int64(v & _LO32) - 1
            if same_key(keys, nd, q, i, length, tag):
                return s, nd
        s = (s + 1) & m


@kernel()
def find(table, keys, shift, q, i, length, tag):  # type: ignore[no-untyped-def]
    """(slot, node) of batch hash ``i``; node -1 and the empty slot ending the probe if absent."""
    return probe(table, keys, q, i, length, tag, home(tag, shift, np.uint64(table.shape[0] - 1)))


@kernel()
def unready(nd, lst, ref):  # type: ignore[no-untyped-def]
    """M1, M2: node ``nd`` (-1: absent) is no ready block: absent, a ghost, or pending."""
    return nd < 0 or lst[nd] > T2 or ref[nd] < 0


@kernel()
def node_tag(keys, nd):  # type: ignore[no-untyped-def]
    """Table tag of stored hash ``nd`` (kept in its row: ``row_head``)."""
    return keys[nd, 0] >> _U32


@kernel()
def slot_of(table, shift, tag, nd):  # type: ignore[no-untyped-def]
    m = table.shape[0] - 1
    s = home(tag, shift, np.uint64(m))
    want = np.uint64(nd + 1)
    while (table[s] & _LO32) != want:
        s = (s + 1) & m
    return s


@kernel()
def table_delete(table, shift, s):  # type: ignore[no-untyped-def]
    """Remove slot ``s``, shifting later entries of its cluster back (no tombstones).

    An entry at ``j`` moves back to the hole at ``i`` unless its home lies in ``(i, j]``,
    that is unless its distance from home is less than the hole's distance from ``j``.
    Written without a branch per entry (the hole is rewritten either way): the walk runs
    to the cluster's end, and at ARC's load (up to 0.72, ghosts included) each entry's
    move or stay was a misprediction half of the time.
    """
    m = table.shape[0] - 1
    tm = np.uint64(m)
    i = s
    j = s
    while True:
        j = (j + 1) & m
        v = table[j]
        if v == 0:
            break
        move = ((j - home(v >> _U32, shift, tm)) & m) >= ((j - i) & m)
        kept = table[i]
        table[i] = v if move else kept
        i = j if move else i
    table[i] = 0


#: Hashes between two stages of ``find_batch``'s pipeline (a prefetch and the stage that
#: reads its line). At 10^6 blocks, prepare_store's absent hashes: 4 and 8 cost alike (11-13
#: ns per hash, against 20 for the groups of 32 prefetched at once before), 16 more.
STAGE_DISTANCE = 8


#: ``slots[i]`` of a hash whose hint named a node (``_find_home``) until stage 3 judges it.
HINTED = -2
_HINT_SHIFT = np.uint64(64 - HINT_BITS)


@kernel(inline="always")
def hint_slot(address):  # type: ignore[no-untyped-def]
    """Index of the first word of ``address``'s pair in the hints (``layout.HINT_SLOTS``)."""
    return 2 * np.int64((np.uint64(address) * _P1) >> _HINT_SHIFT)


@kernel(inline="always")
def remember(hints, address, nd):  # type: ignore[no-untyped-def]
    """Hint that the hash object at ``address`` (0: none, nothing kept) is at node ``nd``."""
    if address != 0:
        h = hint_slot(address)
        hints[h] = address
        hints[h + 1] = nd


@kernel(inline="always")
def prefetch_cluster(table, s):  # type: ignore[no-untyped-def]
    """Prefetch slot ``s``'s line and the next: a probe or a delete from ``s`` often runs
    into it."""
    prefetch(table, s)
    prefetch(table, (s + 8) & (table.shape[0] - 1))


@kernel(inline="always")
def _hinted_node(hints, addrs, i, nnodes):  # type: ignore[no-untyped-def]
    """The node batch hash ``i``'s object was last found at or stored in, or -1 (no hint, or
    one out of range: never used unchecked)."""
    a = addrs[i]
    if a == 0:
        return -1
    h = hint_slot(a)
    if hints[h] != a or hints[h + 1] < 0 or hints[h + 1] >= nnodes:
        return -1
    return hints[h + 1]


@kernel(inline="always")
def _find_home(table, keys, shift, mask, q, lens, i, tags, slots, nodes, lst, addrs, hints):  # type: ignore[no-untyped-def]
    """Stage 1: a hinted node (prefetch its row and kind), or batch hash ``i``'s tag and
    home slot (prefetch that slot)."""
    g = _hinted_node(hints, addrs, i, lst.shape[0])
    if g >= 0:
        nodes[i] = g
        slots[i] = HINTED
        prefetch(keys, g)
        prefetch(lst, g)
        return
    prefetch(table, _tag_and_home(table, shift, mask, q, lens, i, tags, slots))


@kernel(inline="always")
def _tag_and_home(table, shift, mask, q, lens, i, tags, slots):  # type: ignore[no-untyped-def]
    """Batch hash ``i``'s tag and home slot into ``tags`` and ``slots``; the home slot."""
    t = tag_of(fingerprint(q, i, 0, lens[i], mask))
    tags[i] = t
    s = home(t, shift, np.uint64(table.shape[0] - 1))
    slots[i] = s
    return s


@kernel(inline="always")
def _find_candidate(table, keys, i, tags, slots, lst, ref):  # type: ignore[no-untyped-def]
    """Stage 2: probe to the first tag match or empty slot; prefetch the match's row."""
    m = table.shape[0] - 1
    t = tags[i]
    s = slots[i]
    if s == HINTED:
        return
    while True:
        v = table[s]
        if v == 0 or (v >> _U32) == t:
            break
        s = (s + 1) & m
    slots[i] = s
    if v != 0:
        c = np.int64(v & _LO32) - 1
        prefetch(keys, c)
        prefetch(lst, c)
        prefetch(ref, c)  # a ghost's index lies past ``ref``: a hint only, never read


@kernel(inline="always")
def _find_exact(table, keys, shift, mask, q, lens, i, tags, slots, nodes, lst, addrs, hints):  # type: ignore[no-untyped-def]
    """Stage 3: a hinted node stands if it is live and holds exactly the hash (then the
    table holds it there: I8); otherwise the full comparison, resuming the probe where
    stage 2 stopped (or from the home slot, when a hint failed), and a hint for next time."""
    if slots[i] == HINTED:
        g = nodes[i]
        tag = node_tag(keys, g)  # the row's own tag: only its length and words are compared
        if lst[g] != FREE and same_key(keys, g, q, i, lens[i], tag):
            tags[i] = tag
            slots[i] = -1  # a present hash's slot is never read
            return
        _tag_and_home(table, shift, mask, q, lens, i, tags, slots)
    s, nd = probe(table, keys, q, i, lens[i], tags[i], slots[i])
    slots[i] = s
    nodes[i] = nd
    if nd >= 0:
        remember(hints, addrs[i], nd)


@kernel()
def find_batch(table, keys, shift, mask, q, lens, n,  # type: ignore[no-untyped-def]
               tags, nodes, slots, lst, ref, prefix, addrs, hints):
    """``find`` for batch hashes ``0 … n-1``, overlapping cache misses; returns ``n``, or with
    ``prefix`` (M1's lookup) the index of the first hash that is absent or not ready, there
    to stop: at most ``2 * STAGE_DISTANCE`` hashes past it are read.

    A software pipeline of three stages, ``STAGE_DISTANCE`` hashes apart: fingerprint and
    home slot (prefetching the table), the probe up to the first tag match (prefetching that
    node's key row), then the full comparison, which resumes the probe exactly where it
    stopped. A hash whose object a hint names (``addrs``, ``hints``: ``layout.HINT_SLOTS``,
    a table small enough to stay in the caches) skips the first two: its node's row is
    compared instead. Same answers as ``find``:
    ``tags``, ``nodes`` (-1: absent) and ``slots`` (an absent hash's empty slot ending its
    probe; -1 for a hinted present one). ``lst`` and ``ref`` (per-node arrays the caller
    reads next) are prefetched too.
    """
    d = STAGE_DISTANCE
    for i in range(-2 * d, n):
        if i + 2 * d < n:
            _find_home(table, keys, shift, mask, q, lens, i + 2 * d, tags, slots, nodes, lst, addrs, hints)
        if 0 <= i + d < n:
            _find_candidate(table, keys, i + d, tags, slots, lst, ref)
        if i >= 0:
            _find_exact(table, keys, shift, mask, q, lens, i, tags, slots, nodes, lst, addrs, hints)
            if prefix and unready(nodes[i], lst, ref):
                return i
    return n
