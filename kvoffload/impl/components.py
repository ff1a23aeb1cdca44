"""Stand-alone components: a CPU ``Backend`` and the LRU / ARC / S3-FIFO / SIEVE
``CachePolicy`` (B1–B4, P1–P6, L1–L3, A1–A6, F1–F7, V1–V6), for third parties who
compose their own manager.

``CPUOffloadingManager`` does not use these: it runs the same rules fused in compiled
code. The policies hold ``BlockStatus`` objects that the caller owns and may change
(``ref_cnt``), so ``evict`` reads each candidate's current ``ref_cnt``; they are the
reference policies of ``kvoffload.spec`` under production names, so that each policy
is written once for Python. The backend's ``BlockStatus`` objects are ctypes views into
one numpy array of C structs (``BlockStatus.from_buffer``).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from ..spec.arc import ReferenceARCPolicy
from ..spec.errors import ContractViolation
from ..spec.interfaces import Backend
from ..spec.lru import ReferenceLRUPolicy
from ..spec.offloading_spec import positive_int
from ..spec.s3fifo import ReferenceS3FIFOPolicy
from ..spec.sieve import ReferenceSIEVEPolicy
from ..spec.types import BlockHash, BlockStatus, CPULoadStoreSpec

__all__ = ["CPUBackend", "LRUCachePolicy", "ARCCachePolicy", "S3FIFOCachePolicy", "SIEVECachePolicy"]

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


class LRUCachePolicy(ReferenceLRUPolicy):
    """L1–L3: the reference LRU policy itself (each policy is written once, in ``spec``)."""


class ARCCachePolicy(ReferenceARCPolicy):
    """A1–A6: the reference ARC policy itself."""


class S3FIFOCachePolicy(ReferenceS3FIFOPolicy):
    """F1–F7: the reference S3-FIFO policy itself."""


class SIEVECachePolicy(ReferenceSIEVEPolicy):
    """V1–V6: the reference SIEVE policy itself."""
