"""The reference LRU policy (P1–P6, L1–L3): one ordered dict, least recent first."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator

from .clauses import implements
from .errors import ContractViolation
from .hashes import describe_hash, read_hashes
from .interfaces import CachePolicy
from .offloading_spec import positive_int
from .types import BlockHash, BlockStatus

__all__ = ["ReferenceLRUPolicy"]


@implements("L1", "P6")
class ReferenceLRUPolicy(CachePolicy):
    """L1: a single order from least to most recently used."""

    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = positive_int("cache_capacity", cache_capacity)
        self.order: OrderedDict[BlockHash, BlockStatus] = OrderedDict()

    @implements("P1")
    def get(self, block_hash: BlockHash) -> BlockStatus | None:
        """P1."""
        return self.order.get(block_hash)

    @implements("P2", "L1")
    def insert(self, block_hash: BlockHash, block: BlockStatus) -> None:
        """P2, L1: append at the most-recent end; the hash must be absent."""
        if block_hash in self.order:
            raise ContractViolation("P2", f"insert of present hash {describe_hash(block_hash)}")
        self.order[block_hash] = block

    @implements("P3")
    def remove(self, block_hash: BlockHash) -> None:
        """P3: drop a present hash."""
        if block_hash not in self.order:
            raise ContractViolation("P3", f"remove of absent hash {describe_hash(block_hash)}")
        del self.order[block_hash]

    @implements("P4", "L2")
    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        """P4, L2: walk last to first, moving each present hash to the most-recent end."""
        for block_hash in reversed(read_hashes(block_hashes)):
            if block_hash in self.order:
                self.order.move_to_end(block_hash)

    @implements("P5", "L3", "I3", "I7")
    def evict(
        self, n: int, protected: set[BlockHash]
    ) -> list[tuple[BlockHash, BlockStatus]] | None:
        """P5, L3: the ``n`` least recent eligible blocks, or ``None`` and no change.

        Eligible: ready and idle (``ref_cnt == 0``) and not protected (M5.3, I3).
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"P5: n={n!r} must be a non-negative integer")
        victims: list[tuple[BlockHash, BlockStatus]] = []
        for block_hash, block in self.order.items():
            if len(victims) == n:
                break
            if block.ref_cnt == 0 and block_hash not in protected:
                victims.append((block_hash, block))
        if len(victims) < n:
            return None  # P5, I7: nothing was changed
        for block_hash, _ in victims:
            del self.order[block_hash]
        return victims

    def items(self) -> Iterator[tuple[BlockHash, BlockStatus]]:
        """Present hashes and their blocks, least recent first (for invariants and tests)."""
        return iter(list(self.order.items()))

    def check_invariants(self) -> None:
        """P6 cannot be seen from state; here: every block's ``ref_cnt`` is at least -1 (I2)."""
        for block_hash, block in self.order.items():
            if block.ref_cnt < -1:
                raise ContractViolation("I2", f"{describe_hash(block_hash)} has ref_cnt {block.ref_cnt}")
