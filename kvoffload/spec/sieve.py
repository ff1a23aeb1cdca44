"""The reference SIEVE policy (P1–P6, V1–V6): Zhang et al., NSDI 2024, kept to the contract.

One FIFO queue of present hashes with a visited bit each, and a hand that remembers
where the last eviction stopped. A use sets the bit (V4); eviction (V5) walks from the
hand towards the newest end, wrapping round to the oldest, clears set bits as it passes
and takes the first eligible block whose bit is clear. New hashes enter at the newest
end and nothing ever moves, so the queue keeps arrival order. Blocks that may not be
evicted (pending, in use, protected) are passed over unchanged, bit included.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator

from .clauses import implements
from .errors import ContractViolation
from .hashes import describe_hash, read_hashes
from .interfaces import CachePolicy
from .offloading_spec import positive_int
from .types import BlockHash, BlockStatus

__all__ = ["ReferenceSIEVEPolicy"]


class _Entry:
    """A present hash's block and its V1 visited bit."""

    __slots__ = ("block", "visited")

    def __init__(self, block: BlockStatus) -> None:
        self.block = block
        self.visited = False


@implements("V1", "P6")
class ReferenceSIEVEPolicy(CachePolicy):
    """V1: one queue, oldest → newest; ``hand`` is a present hash or ``None`` (the oldest)."""

    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = positive_int("cache_capacity", cache_capacity)
        self.queue: OrderedDict[BlockHash, _Entry] = OrderedDict()
        self.hand: BlockHash | None = None

    @implements("P1", "V3")
    def get(self, block_hash: BlockHash) -> BlockStatus | None:
        """P1, V3."""
        entry = self.queue.get(block_hash)
        return None if entry is None else entry.block

    def visited(self, block_hash: BlockHash) -> bool | None:
        """The V1 bit of a present hash (for tests and the conformance suite)."""
        entry = self.queue.get(block_hash)
        return None if entry is None else entry.visited

    @implements("P2", "V2")
    def insert(self, block_hash: BlockHash, block: BlockStatus) -> None:
        """P2, V2: append at the newest end, bit clear; the hand does not move."""
        if block_hash in self.queue:
            raise ContractViolation("P2", f"insert of present hash {describe_hash(block_hash)}")
        self.queue[block_hash] = _Entry(block)

    def _newer(self, block_hash: BlockHash) -> BlockHash | None:
        """The hash after ``block_hash`` towards the newest end (``None`` past the newest)."""
        keys = list(self.queue)
        index = keys.index(block_hash) + 1
        return keys[index] if index < len(keys) else None

    @implements("P3", "V6")
    def remove(self, block_hash: BlockHash) -> None:
        """P3, V6: delete; a hand resting on it moves to the next newer hash."""
        if block_hash not in self.queue:
            raise ContractViolation("P3", f"remove of absent hash {describe_hash(block_hash)}")
        if self.hand == block_hash:
            self.hand = self._newer(block_hash)
        del self.queue[block_hash]

    @implements("P4", "V4")
    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        """P4, V4: a present, ready hash gets its bit set; pending ones do not (as A3)."""
        for block_hash in reversed(read_hashes(block_hashes)):
            entry = self.queue.get(block_hash)
            if entry is not None and entry.block.is_ready:
                entry.visited = True

    @implements("P5", "V5", "I3", "I7")
    def evict(
        self, n: int, protected: set[BlockHash]
    ) -> list[tuple[BlockHash, BlockStatus]] | None:
        """P5, V5: ``n`` victims, or ``None`` and nothing changed, bits and hand included (I7).

        Each eligible block is taken at the latest on the walk's second pass (its bit is
        clear by then), so the call succeeds exactly when ``n`` eligible blocks exist.
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"P5: n={n!r} must be a non-negative integer")
        if n == 0:
            return []
        available = sum(
            1 for h, e in self.queue.items() if e.block.ref_cnt == 0 and h not in protected
        )
        if available < n:
            return None  # P5, I7: nothing was changed
        return [self._evict_one(protected) for _ in range(n)]

    @implements("V5")
    def _evict_one(self, protected: set[BlockHash]) -> tuple[BlockHash, BlockStatus]:
        """V5: walk from the hand, newest-wards and round, to the first eligible clear bit."""
        keys = list(self.queue)
        index = 0 if self.hand is None else keys.index(self.hand)
        while True:
            block_hash = keys[index]
            entry = self.queue[block_hash]
            if entry.block.ref_cnt == 0 and block_hash not in protected:
                if not entry.visited:
                    self.hand = keys[index + 1] if index + 1 < len(keys) else None
                    del self.queue[block_hash]
                    return block_hash, entry.block
                entry.visited = False
            index = (index + 1) % len(keys)

    def items(self) -> Iterator[tuple[BlockHash, BlockStatus]]:
        """Present hashes and their blocks, oldest first."""
        return iter([(h, e.block) for h, e in self.queue.items()])

    def check_invariants(self) -> None:
        """V1: the hand rests on a present hash or nowhere; I2."""
        if self.hand is not None and self.hand not in self.queue:
            raise ContractViolation("V1", f"the hand rests on absent hash {describe_hash(self.hand)}")
        for block_hash, entry in self.queue.items():
            if entry.block.ref_cnt < -1:
                raise ContractViolation("I2", f"{describe_hash(block_hash)} has ref_cnt {entry.block.ref_cnt}")
