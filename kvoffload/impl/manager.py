"""``CPUOffloadingManager``: the production manager (M0–M10, I1–I8) over the compiled core.

Python does what only Python can (reading the argument once, type checks, building the
result lists and events); every lookup, ref-count change, eviction decision and list
update happens in one compiled call per method (one entry point of ``_core`` each), a whole batch at a
time. Behaviour is identical to ``kvoffload.spec.ReferenceManager`` of the same policy,
block ids aside.
"""

from __future__ import annotations

import copy

from collections.abc import Callable, Iterable
from operator import itemgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from ..spec.errors import ContractViolation
from ..spec.hashes import describe_hash, read_hashes
from ..spec.interfaces import OffloadingManager
from ..spec.offloading_spec import positive_int
from ..spec.types import (
    BlockHash,
    BlockStatus,
    CPULoadStoreSpec,
    OffloadingEvent,
    PrepareStoreOutput,
)
from . import _core
from ._batch import GATHER_BAD
from ._layout import (
    ARC,
    BYTES_TYPE,
    CAP,
    ELIG,
    FPMASK,
    HEAD0,
    HS0,
    LHEAD0,
    META_SIZE,
    N1,
    NFREE,
    NGFREE,
    NODES,
    SHIFT,
)
from ._pyobj import LAYOUT_OK
from .fingerprint import fingerprint_mask

__all__ = ["CPUOffloadingManager", "MANAGER_POLICIES"]

MANAGER_POLICIES = ("lru", "arc")
_MAX_NODES = 2**31 - 2
_NOT_BYTES = (bytes, bytearray, memoryview, str)
_KEY_WORDS = 5  # [length, 4 words]: 32-byte hashes; rows widen when longer hashes come
_Q_WORDS = 5  # batch rows: up to 40-byte hashes before the scratch widens

I64 = npt.NDArray[np.int64]
Op = Callable[..., int]


def _pick(hashes: list[BlockHash], idx: I64, count: int) -> list[BlockHash]:
    """``[hashes[i] for i in idx[:count]]`` (``idx`` increasing, distinct)."""
    if count == len(hashes):
        return list(hashes)
    if count == 0:
        return []
    if count == 1:
        return [hashes[int(idx[0])]]
    return list(itemgetter(*idx[:count].tolist())(hashes))


class CPUOffloadingManager(OffloadingManager):
    """An ``OffloadingManager`` for ``num_blocks`` CPU blocks, LRU or ARC (exact).

    ``fingerprint`` is a test seam (``"default"``, ``"constant"``, ``"low_bits:K"``,
    see :mod:`kvoffload.impl.fingerprint`): it makes fingerprints collide on purpose;
    answers never change (I8). ``medium`` is ``"CPU"``; block ids lie in
    ``[0, num_blocks)``.

    Each call reads its argument once into a list (M0; a ``list`` argument is used as
    it is), then runs one compiled entry point of ``_core`` that reads the list's
    elements itself (``_pyobj``), checks them, and does the whole batch. Anything
    unusual (an element that is not exactly ``bytes``, an empty or unusually long
    hash, an interpreter without the expected object layout) takes the slow path:
    ``read_hashes`` (the contract's errors; ``bytes`` subclasses copied to plain bytes)
    and a batch packed by ``b"".join``.
    """

    medium = "CPU"
    #: Whether calls read the list directly (tests switch it off to cover the slow path).
    direct: bool = LAYOUT_OK

    def __init__(
        self,
        num_blocks: int,
        policy: str = "lru",
        enable_events: bool = False,
        block_size: int = 16,
        *,
        fingerprint: str = "default",
    ) -> None:
        self.num_blocks = positive_int("num_blocks", num_blocks)
        self.block_size = positive_int("block_size", block_size)
        if not isinstance(policy, str) or policy not in MANAGER_POLICIES:
            raise ValueError(f"policy={policy!r} is not one of {sorted(MANAGER_POLICIES)}")
        self.policy = policy
        arc = policy == "arc"
        nodes = self.num_blocks * (3 if arc else 1)
        if nodes > _MAX_NODES:
            raise ValueError(f"S4: num_blocks={num_blocks!r} is too large for this manager")
        self.fingerprint = fingerprint
        mask = fingerprint_mask(fingerprint)
        self.enable_events = bool(enable_events)
        self._events: list[OffloadingEvent] = []
        cap = self.num_blocks
        ghosts = 2 * cap if arc else 0
        size = _core.table_size(nodes)
        n64, n32, n8 = _core.arena_sizes(cap, ghosts)
        self._table = np.zeros(size, np.uint64)
        self._keys = np.zeros((nodes, _KEY_WORDS), np.uint64)
        self._a64 = np.zeros(n64, np.int64)
        self._a32 = np.zeros(n32, np.int32)
        self._a8 = np.zeros(n8, np.int8)
        self._pf = np.zeros(1, np.float64)
        meta = self._a64[:META_SIZE]
        meta[NFREE] = cap
        meta[CAP] = cap
        meta[NODES] = nodes
        meta[ARC] = int(arc)
        meta[SHIFT] = 64 - (size.bit_length() - 1)
        meta[HEAD0 : HEAD0 + 6] = [-1, -1, 0, -1, -1, 0]
        meta[LHEAD0 : LHEAD0 + 4] = -1  # recency lists LRU/T1 and T2: empty
        meta[NGFREE] = ghosts
        meta[FPMASK] = np.array([mask], np.uint64).view(np.int64)[0]
        meta[BYTES_TYPE] = id(bytes)
        self._bind_views()
        a32, c, g = self._a32, cap, ghosts
        self._hpos[:] = -1
        self._free[:] = np.arange(c - 1, -1, -1, dtype=np.int32)  # block 0 on top
        a32[4 * c : 6 * c + 2 * g] = -1  # bprev, bnext, gprev, gnext
        a32[6 * c + 2 * g : 6 * c + 3 * g] = np.arange(3 * c - 1, c - 1, -1, dtype=np.int32)[:g]
        # The Python hash objects by block id, to hand back evicted hashes without copies.
        self._objects: npt.NDArray[np.object_] = np.empty(cap, dtype=object)
        self._batch = 0
        self._q = np.zeros((0, _Q_WORDS), np.uint64)
        self._io = np.zeros(_core.IO_INFO, np.int64)
        self._grow_batch(64)

    def _bind_views(self) -> None:
        """Named views of the arenas (same memory), for introspection."""
        a32, c = self._a32, self.num_blocks
        self._meta = self._a64[:META_SIZE]
        self._ref = a32[0:c]
        self._hpos = a32[c : 2 * c]
        self._free = a32[3 * c : 4 * c]
        self._bprev = a32[4 * c : 5 * c]
        self._bnext = a32[5 * c : 6 * c]
        self._lst = self._a8[: int(self._meta[NODES])]

    def __deepcopy__(self, memo: dict[int, Any]) -> CPUOffloadingManager:
        """An independent manager in the same state (the model checker snapshots states
        with it): every array copied, the named views bound to the copies."""
        new = copy.copy(self)
        for name in ("_table", "_keys", "_a64", "_a32", "_a8", "_pf", "_objects", "_q", "_io"):
            setattr(new, name, getattr(self, name).copy())
        new._events = list(self._events)
        new._bind_views()
        memo[id(self)] = new
        return new

    @property
    def _state(self) -> tuple[npt.NDArray[Any], ...]:
        """Every array of compiled state (tests compare them before and after a call)."""
        return (self._table, self._keys, self._a64, self._a32, self._a8, self._pf)

    # -- batches ----------------------------------------------------------------------
    def _grow_batch(self, n: int, words: int = 0) -> None:
        batch = max(n, self._batch)
        if n > self._batch:
            batch = max(n, 2 * self._batch)
        words = max(words, self._q.shape[1])
        if batch != self._batch or words != self._q.shape[1]:
            self._batch = batch
            self._q = np.zeros((batch, words), np.uint64)
            self._io = np.zeros(_core.IO_INFO + 4 * batch, np.int64)

    def _out(self, k: int) -> I64:
        """Output array ``k`` (0: lens, 1–3: out_a, out_b, out_c) of the last call."""
        start = _core.IO_INFO + k * self._batch
        return self._io[start : start + self._batch]

    def _run(self, op: Op, block_hashes: Iterable[bytes]) -> tuple[list[BlockHash], int]:
        """M0, M9: read the argument once, run ``op`` on it; ``(hashes, result)``."""
        if type(block_hashes) is list:
            hashes: list[Any] = block_hashes
        elif isinstance(block_hashes, _NOT_BYTES):
            return read_hashes(block_hashes), 0  # raises the contract's TypeError
        else:
            try:
                iterator = iter(block_hashes)
            except TypeError:
                return read_hashes(block_hashes), 0  # raises
            hashes = list(iterator)
        n = len(hashes)
        if n == 0:
            return hashes, 0
        if n > self._batch:
            self._grow_batch(n)
        if self.direct:
            result = op(self._table, self._keys, self._a64, self._a32, self._a8, self._pf,
                        id(hashes), n, self._q, self._io)
            if result > GATHER_BAD:
                return hashes, result
        return self._run_slow(op, hashes)

    def _run_slow(self, op: Op, hashes: list[Any]) -> tuple[list[BlockHash], int]:
        """Checked in Python, packed with ``b"".join``: odd elements, long hashes, no layout."""
        hashes = read_hashes(hashes)  # TypeError / ValueError, or subclasses made plain
        n = len(hashes)
        lens = [len(block_hash) for block_hash in hashes]
        words = (max(lens) + 7) // 8
        self._grow_batch(n, words)
        if op is _core.prepare_store and words + 1 > self._keys.shape[1]:
            wider = np.zeros((self._keys.shape[0], words + 1), np.uint64)
            wider[:, : self._keys.shape[1]] = self._keys
            self._keys = wider
        lens_out = self._out(0)
        lens_out[:n] = lens
        _core.pack(np.frombuffer(b"".join(hashes), np.uint8), lens_out, n, self._q)
        result = op(self._table, self._keys, self._a64, self._a32, self._a8, self._pf,
                    0, n, self._q, self._io)
        if result <= GATHER_BAD:  # pragma: no cover - the batch was made to fit
            raise AssertionError(f"compiled core refused a checked batch ({result})")
        return hashes, result

    # -- M1 ---------------------------------------------------------------------------
    def lookup(self, block_hashes: Iterable[BlockHash]) -> int:
        """M1: length of the longest prefix of present, ready hashes; pure."""
        return self._run(_core.lookup, block_hashes)[1]

    # -- M2, M3 -----------------------------------------------------------------------
    def prepare_load(self, block_hashes: Iterable[BlockHash]) -> CPULoadStoreSpec:
        """M2: pin ready blocks (one ref per occurrence); all or nothing."""
        hashes, result = self._run(_core.prepare_load, block_hashes)
        if result < 0:
            info = self._io
            block_hash = hashes[int(info[0])]
            state = "pending" if info[1] else "absent"
            raise ContractViolation("M2", f"prepare_load of {state} hash {describe_hash(block_hash)}")
        return CPULoadStoreSpec(self._out(1)[:result].copy())

    def complete_load(self, block_hashes: Iterable[BlockHash]) -> None:
        """M3: release one ref per occurrence; all or nothing."""
        hashes, result = self._run(_core.complete_load, block_hashes)
        if result < 0:
            info = self._io
            block_hash = hashes[int(info[0])]
            if info[1] == 0:
                raise ContractViolation("M3", f"complete_load of absent hash {describe_hash(block_hash)}")
            count = hashes.count(block_hash)
            raise ContractViolation(
                "M3",
                f"complete_load of {describe_hash(block_hash)} x{count}, but only "
                f"{max(int(info[2]), 0)} loads are outstanding",
            )

    # -- M4 ---------------------------------------------------------------------------
    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        """M4, P4: recency hint, last hash first (L2 / A3)."""
        self._run(_core.touch, block_hashes)

    # -- M5 ---------------------------------------------------------------------------
    def prepare_store(self, block_hashes: Iterable[BlockHash]) -> PrepareStoreOutput | None:
        """M5: pending blocks for the absent hashes, evicting atomically, or ``None``."""
        hashes, result = self._run(_core.prepare_store, block_hashes)
        if result < 0:
            return None
        if result == 0:
            return PrepareStoreOutput([], CPULoadStoreSpec(np.empty(0, np.int64)), [])
        victim_count = int(self._io[0])
        evicted: list[BlockHash] = []
        if victim_count:
            evicted = self._objects[self._out(3)[:victim_count]].tolist()
        to_store = _pick(hashes, self._out(1), result)
        new_ids = self._out(2)[:result].copy()
        # fromiter: numpy's list-to-object-array conversion is ~10 ns per element slower
        self._objects[new_ids] = np.fromiter(to_store, object, result) if result > 1 else to_store[0]
        if self.enable_events and evicted:
            self._queue_event(evicted, removed=True)
        return PrepareStoreOutput(
            block_hashes_to_store=to_store,
            store_spec=CPULoadStoreSpec(new_ids),
            block_hashes_evicted=evicted,
        )

    # -- M6, M7 -----------------------------------------------------------------------
    def complete_store(self, block_hashes: Iterable[BlockHash], success: bool = True) -> None:
        """M6: pending → ready (one stored event). M7: drop pending blocks, no event."""
        if not isinstance(success, bool):
            raise TypeError(f"M9: success must be a bool, got {type(success).__name__}")
        if success:
            hashes, count = self._run(_core.store_ok, block_hashes)
            if self.enable_events and count:
                self._queue_event(_pick(hashes, self._out(1), count), removed=False)
        else:
            self._run(_core.store_fail, block_hashes)

    # -- M8 ---------------------------------------------------------------------------
    def take_events(self) -> Iterable[OffloadingEvent]:
        """M8: queued events, oldest first; the queue is left empty."""
        events, self._events = self._events, []
        return events

    def _queue_event(self, block_hashes: list[BlockHash], removed: bool) -> None:
        self._events.append(OffloadingEvent(block_hashes, self.block_size, self.medium, removed))

    # -- introspection (tests, benchmarks, the integrator) -----------------------------
    def get_num_free_blocks(self) -> int:
        """Free blocks (B1)."""
        return int(self._meta[NFREE])

    def blocks(self) -> dict[BlockHash, BlockStatus]:
        """Every present hash and a snapshot of its block (id, ref_cnt)."""
        blk = self._lst[: self.num_blocks]
        live = np.flatnonzero((blk == 1) | (blk == 2))
        out: dict[BlockHash, BlockStatus] = {}
        for block_id in live.tolist():
            block = BlockStatus(block_id)
            block.ref_cnt = int(self._ref[block_id])
            out[self._objects[block_id]] = block
        return out

    @property
    def arc_target(self) -> float:
        """ARC's adaptive target ``p`` (0.0 for LRU)."""
        return float(self._pf[0])

    def memory_bytes(self) -> dict[str, int]:
        """Bytes held, by what they are for.

        ``state``: the manager's own structures for its ``num_blocks`` blocks (their
        share of the hash table, per-block arrays, heaps, free stack, meta);
        ``ghosts``: ARC's ghost index (the table's share for ghost nodes, the B1/B2 links
        and free list, their table tags, list tags); ``hashes``: the stored hashes themselves (key rows of
        blocks and ghosts, the Python objects of live blocks); ``scratch``: per-batch
        buffers (grow with the largest batch, not with the capacity).
        """
        cap = self.num_blocks
        nodes = int(self._meta[NODES])
        ghosts = nodes - cap
        table = int(self._table.nbytes)
        table_ghosts = table * ghosts // nodes
        ghost_arrays = ghosts * (4 * 4 + 1)  # gprev, gnext, gfree, gtag (int32) + lst (int8)
        arenas = int(self._a64.nbytes + self._a32.nbytes + self._a8.nbytes + self._pf.nbytes)
        return {
            "state": table - table_ghosts + arenas - ghost_arrays,
            "ghosts": table_ghosts + ghost_arrays,
            "hashes": int(self._keys.nbytes + self._objects.nbytes),
            "scratch": int(self._q.nbytes + self._io.nbytes),
        }

    def check_invariants(self) -> None:
        """I1–I4 and the core's own bookkeeping; raises ``ContractViolation``."""
        cap = self.num_blocks
        meta, ref, hpos, free, lst, table = self._meta, self._ref, self._hpos, self._free, self._lst, self._table
        blk = lst[:cap]
        present = (blk == 1) | (blk == 2)
        nfree = int(meta[NFREE])
        if nfree + int(present.sum()) != cap:
            raise ContractViolation("I1", f"free {nfree} + allocated {int(present.sum())} != {cap}")
        free_ids = free[:nfree]
        if len(set(free_ids.tolist())) != nfree or present[free_ids].any():
            raise ContractViolation("I4", "a free block is also allocated or listed twice")
        if (ref[present] < -1).any():
            raise ContractViolation("I2", "a ref_cnt is below -1")
        idle = present & (ref == 0)
        in_heap = present & (hpos >= 0)
        if (in_heap & ~idle).any() or (idle & (hpos == _core.PARKED)).any():
            raise ContractViolation("I3", "an eviction candidate is parked, or a busy block is in a heap")
        if int(meta[HS0] + meta[HS0 + 1]) != int(in_heap.sum()) or int(meta[ELIG]) != int(idle.sum()):
            raise ContractViolation("I3", "heap sizes or the candidate count disagree with the blocks")
        ts = self._a64[META_SIZE : META_SIZE + cap]
        for h in (0, 1):
            want = present & (blk == h + 1) & (hpos == -1)
            seen = np.zeros(cap, bool)
            nd, prev, last = int(meta[LHEAD0 + 2 * h]), -1, -1
            while nd >= 0:
                if seen[nd] or not want[nd] or int(self._bprev[nd]) != prev or int(ts[nd]) <= last:
                    raise ContractViolation("I3", f"recency list {h} is broken at block {nd}")
                seen[nd] = True
                prev, last, nd = nd, int(ts[nd]), int(self._bnext[nd])
            if int(meta[LHEAD0 + 2 * h + 1]) != prev or not np.array_equal(seen, want):
                raise ContractViolation("I3", f"recency list {h} does not hold exactly its blocks")
        if int(meta[N1]) != int((blk == 1).sum()) or int(meta[N1 + 1]) != int((blk == 2).sum()):
            raise ContractViolation("I1", "list sizes disagree with the blocks")
        ghosts = int((lst[cap:] >= 3).sum())
        if self.policy == "arc":
            for g in (0, 1):
                size = int(meta[HEAD0 + 3 * g + 2])
                if size > cap or size != int((lst[cap:] == 3 + g).sum()):
                    raise ContractViolation("A5", f"ghost list B{g + 1} has a bad size {size}")
            if not 0.0 <= float(self._pf[0]) <= cap:
                raise ContractViolation("A3", f"p={float(self._pf[0])} outside [0, {cap}]")
        if int((table != 0).sum()) != int(present.sum()) + ghosts:
            raise ContractViolation("I8", "the table does not index exactly the present hashes and ghosts")
