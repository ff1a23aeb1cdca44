"""The reference CPU backend (B1–B4): a set of free block ids and a map of handed-out blocks."""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from .clauses import implements
from .errors import ContractViolation
from .interfaces import Backend
from .offloading_spec import positive_int
from .types import BlockHash, BlockStatus, CPULoadStoreSpec

__all__ = ["ReferenceCPUBackend"]


class ReferenceCPUBackend(Backend):
    """Block ids ``0 … num_blocks-1``; the lowest free id is handed out first.

    Which id a block gets is the backend's choice (vocabulary); the lowest-first rule
    only makes the model's ids easy to read in a report.
    """

    def __init__(self, num_blocks: int, block_size: int = 16, medium: str = "CPU") -> None:
        super().__init__(block_size=positive_int("block_size", block_size), medium=medium)
        self.num_blocks = positive_int("num_blocks", num_blocks)
        self._free_ids: list[int] = list(range(num_blocks))  # a heap
        self._handed_out: dict[int, BlockStatus] = {}

    @implements("B1")
    def get_num_free_blocks(self) -> int:
        """B1: always in ``[0, num_blocks]``."""
        return len(self._free_ids)

    @implements("B2")
    def allocate_blocks(self, block_hashes: list[BlockHash]) -> list[BlockStatus]:
        """B2: ``len(block_hashes)`` distinct new pending blocks, or a violation."""
        count = len(block_hashes)
        if count > len(self._free_ids):
            raise ContractViolation(
                "B2",
                f"asked for {count} blocks but only {len(self._free_ids)} are free",
            )
        blocks = []
        for _ in range(count):
            block = BlockStatus(heapq.heappop(self._free_ids))
            self._handed_out[block.block_id] = block
            blocks.append(block)
        return blocks

    @implements("B3")
    def free(self, block: BlockStatus) -> None:
        """B3: return one handed-out block; a double or foreign free is a violation."""
        if not isinstance(block, BlockStatus):
            raise TypeError(f"B3: free() takes a BlockStatus, got {type(block).__name__}")
        if self._handed_out.get(block.block_id) is not block:
            raise ContractViolation(
                "B3",
                f"block {block.block_id} is not a block this backend handed out "
                "(freed twice, or foreign)",
            )
        del self._handed_out[block.block_id]
        heapq.heappush(self._free_ids, block.block_id)

    @implements("B4")
    def get_load_store_spec(
        self, block_hashes: Iterable[BlockHash], blocks: Iterable[BlockStatus]
    ) -> CPULoadStoreSpec:
        """B4: a CPU spec addressing exactly ``blocks``, in order."""
        return CPULoadStoreSpec([block.block_id for block in blocks])

    @implements("B1", "B3", "B4", "I1")
    def check_invariants(self) -> None:
        """B1, B4 and I1 from the backend's own state."""
        free = set(self._free_ids)
        if len(free) != len(self._free_ids):
            raise ContractViolation("B3", "a block id is on the free list twice")
        if free & self._handed_out.keys():
            raise ContractViolation("B3", "a block id is both free and handed out")
        if len(free) + len(self._handed_out) != self.num_blocks:
            raise ContractViolation(
                "I1",
                f"free {len(free)} + allocated {len(self._handed_out)} != capacity {self.num_blocks}",
            )
        for block_id, block in self._handed_out.items():
            if not 0 <= block_id < self.num_blocks or block.block_id != block_id:
                raise ContractViolation("B4", f"block id {block_id} outside [0, {self.num_blocks})")
