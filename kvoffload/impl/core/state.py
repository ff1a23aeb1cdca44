"""Unpacking the state and the per-call ``io`` array into views (``layout`` says where).

``q`` (uint64 rows, the batch's words) and ``io`` (int64): ``info[IO_INFO]`` |
``lens[B]`` | ``out_a[B]`` | ``out_b[B]`` | ``out_c[B]`` | scratch (``scratch``) for
batches of up to ``B`` hashes (``layout.io_size``). The unpacking functions are inlined
(numba IR) into each entry point, rather than called: a call would return its tuple of
a dozen views through memory.
With ``addr != 0`` an entry point first reads the caller's list at ``addr`` into
``q``/``lens`` (``batch.gather``); with ``addr == 0`` the caller packed them.
"""

from __future__ import annotations

import numpy as np

from .batch import GATHER_BAD, GATHER_WIDE, gather
from .jit import kernel
from .layout import (
    BNEXT,
    BPREV,
    BYTES_TYPE,
    CAP,
    FPMASK,
    FREE_STACK,
    GFREE,
    GNEXT,
    GPREV,
    HNODE,
    HPOS,
    HTS,
    IO_ARRAYS,
    IO_FIXED,
    IO_HINTS,
    IO_INFO,
    IO_PAD,
    IO_PER_HASH,
    IO_SCRATCH,
    LST,
    META_SIZE,
    NODES,
    PROT,
    REF,
    SCRATCH_ADDRESSES,
    SHIFT,
    TS,
    span,
)
from .table import find_batch

#: ``fspan(field, cap, ghosts)``: ``layout.span`` for compiled code.
fspan = kernel(inline="always")(span)


@kernel(inline="always")
def view(arena, field, cap, ghosts):  # type: ignore[no-untyped-def]
    """Field ``field`` (a ``layout`` constant) of ``arena``."""
    start, stop = fspan(field, cap, ghosts)
    return arena[start:stop]


@kernel(inline="always")
def unpack(a64, a32, a8):  # type: ignore[no-untyped-def]
    """Every field of the arenas, as views (layout: ``layout.FIELD_TABLE``)."""
    meta = a64[:META_SIZE]
    c = meta[CAP]
    g = meta[NODES] - c
    return (
        meta,
        view(a64, TS, c, g),
        view(a64, HTS, c, g),
        view(a32, REF, c, g),
        view(a32, HPOS, c, g),
        view(a32, HNODE, c, g),
        view(a32, FREE_STACK, c, g),
        view(a32, GPREV, c, g),
        view(a32, GNEXT, c, g),
        view(a32, GFREE, c, g),
        view(a8, LST, c, g),
        view(a8, PROT, c, g),
        view(a32, BPREV, c, g),
        view(a32, BNEXT, c, g),
    )


@kernel(inline="always")
def batch_of(io):  # type: ignore[no-untyped-def]
    """``B``: the most hashes a batch of ``io`` may hold (``layout.io_size``)."""
    return (io.shape[0] - IO_FIXED) // IO_PER_HASH


@kernel(inline="always")
def unpack_io(io):  # type: ignore[no-untyped-def]
    """``(info, lens, out_a, out_b, out_c)`` of ``io``."""
    b = batch_of(io)
    o = IO_INFO
    return io[:IO_INFO], io[o : o + b], io[o + b : o + 2 * b], io[o + 2 * b : o + 3 * b], io[o + 3 * b : o + 4 * b]


@kernel(inline="always")
def scratch(io):  # type: ignore[no-untyped-def]
    """``(tags, nodes, slots, from_list, side, lside, vtags, seen)``: the scratch of ``io``
    (``tags`` and ``vtags`` as uint64), each per-hash array ``B`` long, ``seen``
    ``4B + IO_SEEN_FIXED``: enough for any batch that ``load`` accepted."""
    b = batch_of(io)
    o = IO_INFO + IO_ARRAYS * b
    s = b + IO_PAD
    return (
        io[o : o + b].view(np.uint64),
        io[o + s : o + s + b],
        io[o + 2 * s : o + 2 * s + b],
        io[o + 3 * s : o + 3 * s + b],
        io[o + 4 * s : o + 4 * s + b],
        io[o + 5 * s : o + 5 * s + b],
        io[o + 6 * s : o + 6 * s + b].view(np.uint64),
        io[o + IO_SCRATCH * s : io.shape[0] - IO_HINTS],
    )


@kernel(inline="always")
def addresses(io):  # type: ignore[no-untyped-def]
    """The batch's hash object addresses (``batch.gather``; 0: packed by the caller)."""
    b = batch_of(io)
    o = IO_INFO + IO_ARRAYS * b + SCRATCH_ADDRESSES * (b + IO_PAD)
    return io[o : o + b]


@kernel(inline="always")
def hints(io):  # type: ignore[no-untyped-def]
    """``layout.HINT_SLOTS`` pairs ``(object address, node)`` (``table.hint_slot``)."""
    return io[io.shape[0] - IO_HINTS :]


@kernel()
def _load(addr, n, q, lens, addrs, meta):  # type: ignore[no-untyped-def]
    """``load`` on the arrays themselves."""
    if n > lens.shape[0] or n > q.shape[0] or n <= 0:
        return GATHER_WIDE
    if addr != 0:
        return gather(addr, n, q, lens, addrs, meta[BYTES_TYPE])
    widest = 0
    for i in range(n):
        addrs[i] = 0
        if lens[i] <= 0:
            return GATHER_BAD
        nw = (lens[i] + 7) // 8
        if nw > q.shape[1]:
            return GATHER_WIDE
        if nw > widest:
            widest = nw
    return widest


@kernel(inline="always")
def load(addr, n, q, io, meta):  # type: ignore[no-untyped-def]
    """Widest row in words (>= 1), or a GATHER_ code; reads the list at ``addr`` if non-zero
    (``q``, ``io``'s lens and object addresses)."""
    return _load(addr, n, q, unpack_io(io)[1], addresses(io), meta)


@kernel(inline="always")
def find_into(table, keys, meta, lst, ref, q, io, n, prefix):  # type: ignore[no-untyped-def]
    """``tags``, ``nodes`` and ``slots`` of the batch in ``io``'s scratch
    (``table.find_batch``); ``n``, or with ``prefix`` (M1) the index of the first hash that
    is not ready, where it stopped."""
    work = scratch(io)
    return find_batch(table, keys, np.uint64(meta[SHIFT]), np.uint64(meta[FPMASK]), q, unpack_io(io)[1], n,
                      work[0], work[1], work[2], lst, ref, prefix, addresses(io), hints(io))


@kernel(inline="always")
def find_all(table, keys, meta, lst, ref, q, n, io):  # type: ignore[no-untyped-def]
    """``(tags, nodes, slots)`` of the batch, in ``io``'s scratch (``find_into``)."""
    find_into(table, keys, meta, lst, ref, q, io, n, False)
    work = scratch(io)
    return work[0], work[1], work[2]
