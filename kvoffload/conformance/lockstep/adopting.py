"""A policy that evicts what it is told: the model's policy in ``--policy any`` mode.

The model cannot predict another policy's victims, so the manager machine checks the
target's victims against M5.3 and I3 and then hands them to this policy, which makes the
reference manager evict exactly those; model and target stay in lockstep.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ...spec import BlockHash, BlockStatus, CachePolicy, ContractViolation, read_hashes

__all__ = ["AdoptingPolicy"]


class AdoptingPolicy(CachePolicy):
    """P1–P3 kept exactly; ``evict`` returns ``next_victims`` (or refuses when ``None``)."""

    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = cache_capacity
        self.blocks: dict[BlockHash, BlockStatus] = {}
        self.next_victims: list[BlockHash] | None = None

    def get(self, block_hash: BlockHash) -> BlockStatus | None:
        return self.blocks.get(block_hash)

    def insert(self, block_hash: BlockHash, block: BlockStatus) -> None:
        if block_hash in self.blocks:
            raise ContractViolation("P2", "insert of a present hash")
        self.blocks[block_hash] = block

    def remove(self, block_hash: BlockHash) -> None:
        if block_hash not in self.blocks:
            raise ContractViolation("P3", "remove of an absent hash")
        del self.blocks[block_hash]

    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        read_hashes(block_hashes)  # no order to keep

    def evict(self, n: int, protected: set[BlockHash]) -> list[tuple[BlockHash, BlockStatus]] | None:
        victims, self.next_victims = self.next_victims, None
        if victims is None or len(victims) != n:
            return None
        return [(block_hash, self.blocks.pop(block_hash)) for block_hash in victims]

    def items(self) -> Iterator[tuple[BlockHash, BlockStatus]]:
        return iter(list(self.blocks.items()))
