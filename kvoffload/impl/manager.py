"""``CPUOffloadingManager``: the production manager (M0–M10, I1–I8) over the compiled core.

Python does what only Python can (reading the argument once, type checks, building the
result lists and events); every lookup, ref-count change, eviction decision and list
update happens in one compiled call per method (``_core.run_op``), a whole batch at a
time. Behaviour is identical to ``kvoffload.spec.ReferenceManager`` of the same policy,
block ids aside.
"""

from __future__ import annotations

from collections.abc import Iterable
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
from .fingerprint import fingerprint_mask

__all__ = ["CPUOffloadingManager", "MANAGER_POLICIES"]

MANAGER_POLICIES = ("lru", "arc")
_MAX_NODES = 2**31 - 2
_NOT_BYTES = (bytes, bytearray, memoryview, str)

I64 = npt.NDArray[np.int64]


def _pick(hashes: list[BlockHash], idx: I64, count: int) -> list[BlockHash]:
    """``[hashes[i] for i in idx[:count]]``, fast for the common all/none cases."""
    if count == len(hashes):
        return list(hashes)
    if count == 0:
        return []
    return [hashes[i] for i in idx[:count].tolist()]


class CPUOffloadingManager(OffloadingManager):
    """An ``OffloadingManager`` for ``num_blocks`` CPU blocks, LRU or ARC (exact).

    ``fingerprint`` is a test seam (``"default"``, ``"constant"``, ``"low_bits:K"``,
    see :mod:`kvoffload.impl.fingerprint`): it makes fingerprints collide on purpose;
    answers never change (I8). ``medium`` is ``"CPU"``; block ids lie in
    ``[0, num_blocks)``.
    """

    medium = "CPU"

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
        self.enable_events = bool(enable_events)
        self._events: list[OffloadingEvent] = []
        cap = self.num_blocks
        ghosts = 2 * cap if arc else 0
        size = _core.table_size(nodes)
        meta = np.zeros(_core.META_SIZE, np.int64)
        meta[_core.NFREE] = cap
        meta[_core.CAP] = cap
        meta[_core.ARC] = int(arc)
        meta[_core.SHIFT] = 64 - (size.bit_length() - 1)
        meta[_core.HEAD0 : _core.HEAD0 + 6] = [-1, -1, 0, -1, -1, 0]
        meta[_core.NGFREE] = ghosts
        self._state: tuple[Any, ...] = (
            np.zeros(size, np.uint64),  # table
            np.zeros((nodes, 5), np.uint64),  # keys: [length, 4 words] until longer hashes come
            np.zeros(nodes, np.int8),  # lst
            np.zeros(cap, np.int32),  # ref
            np.zeros(cap, np.int64),  # ts
            np.full(cap, -1, np.int32),  # hpos
            np.zeros(cap, np.int64),  # heap timestamps (T1 heap from the front, T2 from the back)
            np.zeros(cap, np.int32),  # heap nodes
            np.arange(cap - 1, -1, -1, dtype=np.int32),  # free stack (block 0 on top)
            np.zeros(cap, np.uint8),  # protected marks (cleared after each eviction)
            np.full(ghosts, -1, np.int32),  # gprev
            np.full(ghosts, -1, np.int32),  # gnext
            np.arange(3 * cap - 1, cap - 1, -1, dtype=np.int32) if arc else np.zeros(0, np.int32),
            meta,
            np.zeros(1, np.float64),  # p (ARC)
            np.array([fingerprint_mask(fingerprint)], np.uint64),
        )
        # The Python hash objects by block id, to hand back evicted hashes without copies.
        self._objects: npt.NDArray[np.object_] = np.empty(cap, dtype=object)
        self._cap_out = 0
        self._outs: tuple[I64, I64, I64] = (np.empty(0, np.int64),) * 3
        self._info = np.zeros(4, np.int64)

    # -- batches ----------------------------------------------------------------------
    @staticmethod
    def _read(block_hashes: Iterable[bytes]) -> list[BlockHash]:
        """M0, M9: read once; every element plain ``bytes`` of non-zero length."""
        if type(block_hashes) is list:
            hashes: list[Any] = block_hashes
        elif isinstance(block_hashes, _NOT_BYTES):
            return read_hashes(block_hashes)  # raises the contract's TypeError
        else:
            try:
                iterator = iter(block_hashes)
            except TypeError:
                return read_hashes(block_hashes)  # raises
            hashes = list(iterator)
        if hashes and (len(set(map(type, hashes))) != 1 or type(hashes[0]) is not bytes):
            return read_hashes(hashes)  # TypeError, or subclasses turned into plain bytes
        return hashes

    def _run(
        self, code: int, hashes: list[BlockHash], grow_keys: bool = False
    ) -> tuple[int, I64, I64, I64]:
        n = len(hashes)
        lens_list = list(map(len, hashes))
        first = lens_list[0]
        if lens_list.count(first) == n:
            if first == 0:
                read_hashes(hashes)  # raises the contract's ValueError
            lens = np.full(n, first, np.int64)
            longest = first
        else:
            lens = np.array(lens_list, np.int64)
            if 0 in lens_list:
                read_hashes(hashes)  # raises
            longest = int(lens.max())
        if grow_keys:
            self._grow_keys(longest)
        if n > self._cap_out:
            self._cap_out = max(n, 2 * self._cap_out, 64)
            self._outs = tuple(np.empty(self._cap_out, np.int64) for _ in range(3))  # type: ignore[assignment]
        buf = np.frombuffer(b"".join(hashes), np.uint8)
        a, b, c = self._outs
        result = int(_core.run_op(code, self._state, buf, lens, a, b, c, self._info))
        return result, a, b, c

    def _grow_keys(self, longest: int) -> None:
        keys = self._state[1]
        words = (longest + 7) // 8 + 1
        if words > keys.shape[1]:
            wider = np.zeros((keys.shape[0], words), np.uint64)
            wider[:, : keys.shape[1]] = keys
            self._state = (self._state[0], wider, *self._state[2:])

    # -- M1 ---------------------------------------------------------------------------
    def lookup(self, block_hashes: Iterable[BlockHash]) -> int:
        """M1: length of the longest prefix of present, ready hashes; pure."""
        hashes = self._read(block_hashes)
        if not hashes:
            return 0
        return self._run(_core.OP_LOOKUP, hashes)[0]

    # -- M2, M3 -----------------------------------------------------------------------
    def prepare_load(self, block_hashes: Iterable[BlockHash]) -> CPULoadStoreSpec:
        """M2: pin ready blocks (one ref per occurrence); all or nothing."""
        hashes = self._read(block_hashes)
        if not hashes:
            return CPULoadStoreSpec(np.empty(0, np.int64))
        result, ids, _, _ = self._run(_core.OP_PREPARE_LOAD, hashes)
        if result < 0:
            block_hash = hashes[int(self._info[0])]
            state = "pending" if self._info[1] else "absent"
            raise ContractViolation("M2", f"prepare_load of {state} hash {describe_hash(block_hash)}")
        return CPULoadStoreSpec(ids[:result].copy())

    def complete_load(self, block_hashes: Iterable[BlockHash]) -> None:
        """M3: release one ref per occurrence; all or nothing."""
        hashes = self._read(block_hashes)
        if not hashes:
            return
        result, _, _, _ = self._run(_core.OP_COMPLETE_LOAD, hashes)
        if result < 0:
            block_hash = hashes[int(self._info[0])]
            if self._info[1] == 0:
                raise ContractViolation("M3", f"complete_load of absent hash {describe_hash(block_hash)}")
            count = hashes.count(block_hash)
            raise ContractViolation(
                "M3",
                f"complete_load of {describe_hash(block_hash)} x{count}, but only "
                f"{max(int(self._info[2]), 0)} loads are outstanding",
            )

    # -- M4 ---------------------------------------------------------------------------
    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        """M4, P4: recency hint, last hash first (L2 / A3)."""
        hashes = self._read(block_hashes)
        if hashes:
            self._run(_core.OP_TOUCH, hashes)

    # -- M5 ---------------------------------------------------------------------------
    def prepare_store(self, block_hashes: Iterable[BlockHash]) -> PrepareStoreOutput | None:
        """M5: pending blocks for the absent hashes, evicting atomically, or ``None``."""
        hashes = self._read(block_hashes)
        if not hashes:
            return PrepareStoreOutput([], CPULoadStoreSpec(np.empty(0, np.int64)), [])
        result, idx, ids, victims = self._run(_core.OP_PREPARE_STORE, hashes, grow_keys=True)
        if result < 0:
            return None
        if result == 0:
            return PrepareStoreOutput([], CPULoadStoreSpec(np.empty(0, np.int64)), [])
        victim_count = int(self._info[0])
        evicted: list[BlockHash] = []
        if victim_count:
            evicted = self._objects[victims[:victim_count]].tolist()
        to_store = _pick(hashes, idx, result)
        new_ids = ids[:result].copy()
        self._objects[new_ids] = to_store if result > 1 else to_store[0]
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
        hashes = self._read(block_hashes)
        if not hashes:
            return
        if success:
            count, idx, _, _ = self._run(_core.OP_STORE_OK, hashes)
            if self.enable_events and count:
                self._queue_event(_pick(hashes, idx, count), removed=False)
        else:
            self._run(_core.OP_STORE_FAIL, hashes)

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
        return int(self._state[13][_core.NFREE])

    def blocks(self) -> dict[BlockHash, BlockStatus]:
        """Every present hash and a snapshot of its block (id, ref_cnt)."""
        lst, ref = self._state[2], self._state[3]
        live = np.flatnonzero((lst[: self.num_blocks] == 1) | (lst[: self.num_blocks] == 2))
        out: dict[BlockHash, BlockStatus] = {}
        for block_id in live.tolist():
            block = BlockStatus(block_id)
            block.ref_cnt = int(ref[block_id])
            out[self._objects[block_id]] = block
        return out

    @property
    def arc_target(self) -> float:
        """ARC's adaptive target ``p`` (0.0 for LRU)."""
        return float(self._state[14][0])

    def memory_bytes(self) -> dict[str, int]:
        """Bytes of manager state: ``state`` (tables, lists, heaps) and ``hashes``."""
        names = ("table", "keys", "lst", "ref", "ts", "hpos", "hts", "hnode", "free", "prot",
                 "gprev", "gnext", "gfree", "meta", "p", "mask")
        sizes = {name: int(array.nbytes) for name, array in zip(names, self._state)}
        hashes = sizes.pop("keys") + int(self._objects.nbytes)
        return {"state": sum(sizes.values()), "hashes": hashes}

    def check_invariants(self) -> None:
        """I1–I4 and the core's own bookkeeping; raises ``ContractViolation``."""
        (table, keys, lst, ref, ts, hpos, hts, hnode, free, prot, gprev, gnext, gfree, meta,
         pf, _) = self._state
        cap = self.num_blocks
        blk = lst[:cap]
        present = (blk == 1) | (blk == 2)
        nfree = int(meta[_core.NFREE])
        if nfree + int(present.sum()) != cap:
            raise ContractViolation("I1", f"free {nfree} + allocated {int(present.sum())} != {cap}")
        free_ids = free[:nfree]
        if len(set(free_ids.tolist())) != nfree or present[free_ids].any():
            raise ContractViolation("I4", "a free block is also allocated or listed twice")
        if (ref[present] < -1).any():
            raise ContractViolation("I2", "a ref_cnt is below -1")
        in_heap = hpos >= 0
        if not np.array_equal(in_heap, present & (ref == 0)):
            raise ContractViolation("I3", "eviction candidates are not exactly the ready idle blocks")
        if int(meta[_core.HS0] + meta[_core.HS0 + 1]) != int(in_heap.sum()):
            raise ContractViolation("I3", "heap sizes disagree with the candidates")
        if int(meta[_core.N1]) != int((blk == 1).sum()) or int(meta[_core.N1 + 1]) != int((blk == 2).sum()):
            raise ContractViolation("I1", "list sizes disagree with the blocks")
        ghosts = int((lst[cap:] >= 3).sum())
        if self.policy == "arc":
            for g in (0, 1):
                size = int(meta[_core.HEAD0 + 3 * g + 2])
                if size > cap or size != int((lst[cap:] == 3 + g).sum()):
                    raise ContractViolation("A5", f"ghost list B{g + 1} has a bad size {size}")
            if not 0.0 <= float(pf[0]) <= cap:
                raise ContractViolation("A3", f"p={float(pf[0])} outside [0, {cap}]")
        if int((table != 0).sum()) != int(present.sum()) + ghosts:
            raise ContractViolation("I8", "the table does not index exactly the present hashes and ghosts")
