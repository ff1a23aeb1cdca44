"""Stand-alone components: a CPU ``Backend`` and the LRU / ARC ``CachePolicy`` (B1–B4,
P1–P6, L1–L3, A1–A6), for third parties who compose their own manager.

``CPUOffloadingManager`` does not use these: it runs the same rules fused in compiled
code. Here the policies hold ``BlockStatus`` objects that the caller owns and may change
(``ref_cnt``), so ``evict`` reads each candidate's current ``ref_cnt``; they are plain
Python on ordered dicts. The backend's ``BlockStatus`` objects are ctypes views into one
numpy array of C structs (``BlockStatus.from_buffer``).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt

from ..spec.errors import ContractViolation
from ..spec.hashes import describe_hash, read_hashes
from ..spec.interfaces import Backend, CachePolicy
from ..spec.offloading_spec import positive_int
from ..spec.types import BlockHash, BlockStatus, CPULoadStoreSpec

__all__ = ["CPUBackend", "LRUCachePolicy", "ARCCachePolicy"]

#: The C layout of ``BlockStatus`` (int32 ref_cnt, padding, int64 block_id).
BLOCK_DTYPE = np.dtype([("ref_cnt", np.int32), ("block_id", np.int64)], align=True)
assert BLOCK_DTYPE.itemsize == __import__("ctypes").sizeof(BlockStatus)


class CPUBackend(Backend):
    """``num_blocks`` CPU blocks with ids ``0 … num_blocks-1`` (B1–B4)."""

    def __init__(self, num_blocks: int, block_size: int = 16, medium: str = "CPU") -> None:
        super().__init__(block_size=positive_int("block_size", block_size), medium=medium)
        self.num_blocks = positive_int("num_blocks", num_blocks)
        self._blocks: npt.NDArray[np.void] = np.zeros(self.num_blocks, BLOCK_DTYPE)
        self._blocks["block_id"] = np.arange(self.num_blocks)
        self._free: npt.NDArray[np.int64] = np.arange(self.num_blocks - 1, -1, -1, dtype=np.int64)
        self._num_free = self.num_blocks
        self._handed_out: dict[int, BlockStatus] = {}

    def get_num_free_blocks(self) -> int:
        """B1."""
        return self._num_free

    def allocate_blocks(self, block_hashes: list[BlockHash]) -> list[BlockStatus]:
        """B2: one new pending block per hash, or ``ContractViolation`` and no change."""
        count = len(block_hashes)
        if count > self._num_free:
            raise ContractViolation("B2", f"asked for {count} blocks but only {self._num_free} are free")
        blocks: list[BlockStatus] = []
        stride = BLOCK_DTYPE.itemsize
        for _ in range(count):
            self._num_free -= 1
            block_id = int(self._free[self._num_free])
            self._blocks[block_id]["ref_cnt"] = -1
            block = BlockStatus.from_buffer(self._blocks.data, block_id * stride)
            self._handed_out[block_id] = block
            blocks.append(block)
        return blocks

    def free(self, block: BlockStatus) -> None:
        """B3: return one handed-out block; double or foreign frees change nothing."""
        if not isinstance(block, BlockStatus):
            raise TypeError(f"B3: free() takes a BlockStatus, got {type(block).__name__}")
        block_id = block.block_id
        if self._handed_out.get(block_id) is not block:
            raise ContractViolation(
                "B3", f"block {block_id} is not a block this backend handed out (freed twice, or foreign)"
            )
        del self._handed_out[block_id]
        self._free[self._num_free] = block_id
        self._num_free += 1

    def get_load_store_spec(
        self, block_hashes: Iterable[BlockHash], blocks: Iterable[BlockStatus]
    ) -> CPULoadStoreSpec:
        """B4: a CPU spec of exactly ``blocks``, in order."""
        return CPULoadStoreSpec(np.fromiter((b.block_id for b in blocks), np.int64))

    def check_invariants(self) -> None:
        """B1, B3, B4, I1 from the backend's own state."""
        free = set(self._free[: self._num_free].tolist())
        if len(free) != self._num_free or free & self._handed_out.keys():
            raise ContractViolation("B3", "a block id is free twice, or both free and handed out")
        if self._num_free + len(self._handed_out) != self.num_blocks:
            raise ContractViolation("I1", "free + allocated != capacity")
        for block_id, block in self._handed_out.items():
            if not 0 <= block_id < self.num_blocks or block.block_id != block_id:
                raise ContractViolation("B4", f"block id {block_id} outside [0, {self.num_blocks})")


def _check_n(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"P5: n={n!r} must be a non-negative integer")


class LRUCachePolicy(CachePolicy):
    """L1–L3: one order, least recently used first."""

    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = positive_int("cache_capacity", cache_capacity)
        self._order: OrderedDict[BlockHash, BlockStatus] = OrderedDict()

    def get(self, block_hash: BlockHash) -> BlockStatus | None:
        """P1."""
        return self._order.get(block_hash)

    def insert(self, block_hash: BlockHash, block: BlockStatus) -> None:
        """P2, L1."""
        if block_hash in self._order:
            raise ContractViolation("P2", f"insert of present hash {describe_hash(block_hash)}")
        self._order[block_hash] = block

    def remove(self, block_hash: BlockHash) -> None:
        """P3."""
        if self._order.pop(block_hash, None) is None:
            raise ContractViolation("P3", f"remove of absent hash {describe_hash(block_hash)}")

    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        """P4, L2."""
        order = self._order
        for block_hash in reversed(read_hashes(block_hashes)):
            if block_hash in order:
                order.move_to_end(block_hash)

    def evict(self, n: int, protected: set[BlockHash]) -> list[tuple[BlockHash, BlockStatus]] | None:
        """P5, L3: the ``n`` least recent ready, idle, unprotected blocks, or ``None``."""
        _check_n(n)
        victims: list[tuple[BlockHash, BlockStatus]] = []
        if n == 0:
            return victims
        for block_hash, block in self._order.items():
            if block.ref_cnt == 0 and block_hash not in protected:
                victims.append((block_hash, block))
                if len(victims) == n:
                    break
        if len(victims) < n:
            return None
        for block_hash, _ in victims:
            del self._order[block_hash]
        return victims

    def items(self) -> Iterator[tuple[BlockHash, BlockStatus]]:
        """Present hashes, least recent first."""
        return iter(list(self._order.items()))


class ARCCachePolicy(CachePolicy):
    """A1–A6: T1, T2, ghosts B1, B2 (by full hash), adaptive target ``p`` (float64)."""

    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = positive_int("cache_capacity", cache_capacity)
        self.t1: OrderedDict[BlockHash, BlockStatus] = OrderedDict()
        self.t2: OrderedDict[BlockHash, BlockStatus] = OrderedDict()
        self.b1: OrderedDict[BlockHash, None] = OrderedDict()
        self.b2: OrderedDict[BlockHash, None] = OrderedDict()
        self.p = 0.0

    def get(self, block_hash: BlockHash) -> BlockStatus | None:
        """P1, A2."""
        block = self.t1.get(block_hash)
        return block if block is not None else self.t2.get(block_hash)

    def insert(self, block_hash: BlockHash, block: BlockStatus) -> None:
        """P2, A1."""
        if block_hash in self.t1 or block_hash in self.t2:
            raise ContractViolation("P2", f"insert of present hash {describe_hash(block_hash)}")
        self.t1[block_hash] = block
        self.b1.pop(block_hash, None)
        self.b2.pop(block_hash, None)

    def remove(self, block_hash: BlockHash) -> None:
        """P3, A6."""
        if self.t1.pop(block_hash, None) is None and self.t2.pop(block_hash, None) is None:
            raise ContractViolation("P3", f"remove of absent hash {describe_hash(block_hash)}")

    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        """P4, A3."""
        cap = float(self.cache_capacity)
        for block_hash in reversed(read_hashes(block_hashes)):
            if block_hash in self.t1:
                block = self.t1.pop(block_hash)
                (self.t2 if block.ref_cnt >= 0 else self.t1)[block_hash] = block
            elif block_hash in self.t2:
                self.t2.move_to_end(block_hash)
            elif block_hash in self.b1:
                self.p = min(self.p + max(1.0, len(self.b2) / len(self.b1)), cap)
                self.b1.move_to_end(block_hash)
            elif block_hash in self.b2:
                self.p = max(self.p - max(1.0, len(self.b1) / len(self.b2)), 0.0)
                self.b2.move_to_end(block_hash)

    def evict(self, n: int, protected: set[BlockHash]) -> list[tuple[BlockHash, BlockStatus]] | None:
        """P5, A4, A5."""
        _check_n(n)
        if n == 0:
            return []

        def eligible(entries: OrderedDict[BlockHash, BlockStatus]) -> Iterator[BlockHash]:
            return (h for h, b in entries.items() if b.ref_cnt == 0 and h not in protected)

        c1, c2 = eligible(self.t1), eligible(self.t2)
        n1, n2 = next(c1, None), next(c2, None)
        target = math.floor(self.p)
        chosen: list[tuple[BlockHash, bool]] = []
        t1_victims = 0
        for _ in range(n):
            if n1 is not None and (len(self.t1) - t1_victims >= target or n2 is None):
                chosen.append((n1, True))
                t1_victims += 1
                n1 = next(c1, None)
            elif n2 is not None:
                chosen.append((n2, False))
                n2 = next(c2, None)
            else:
                return None
        victims: list[tuple[BlockHash, BlockStatus]] = []
        for block_hash, from_t1 in chosen:
            if from_t1:
                victims.append((block_hash, self.t1.pop(block_hash)))
                self.b1[block_hash] = None
            else:
                victims.append((block_hash, self.t2.pop(block_hash)))
                self.b2[block_hash] = None
        for ghosts in (self.b1, self.b2):
            while len(ghosts) > self.cache_capacity:
                ghosts.popitem(last=False)
        return victims

    def items(self) -> Iterator[tuple[BlockHash, BlockStatus]]:
        """Present hashes (T1 then T2, least recent first)."""
        return iter(list(self.t1.items()) + list(self.t2.items()))
