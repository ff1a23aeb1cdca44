"""The reference ARC policy (P1–P6, A1–A6): vLLM's variant of Megiddo & Modha's ARC.

T1 holds hashes seen once, T2 hashes seen again; B1 and B2 remember, by full hash (I8),
what was evicted from T1 and T2. ``p`` is the adaptive target size of T1, a float in
``[0, capacity]``: a touch of a B1 ghost says T1 was too small (p grows), of a B2 ghost
that T2 was (p shrinks). Each ghost list is bounded by the capacity on its own (A5).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Iterator

from .clauses import implements
from .errors import ContractViolation
from .hashes import describe_hash, read_hashes
from .interfaces import CachePolicy
from .offloading_spec import positive_int
from .types import BlockHash, BlockStatus

__all__ = ["ReferenceARCPolicy"]


@implements("P6")
class ReferenceARCPolicy(CachePolicy):
    """Every list is ordered least → most recent (state section of ARC in the contract)."""

    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = positive_int("cache_capacity", cache_capacity)
        self.t1: OrderedDict[BlockHash, BlockStatus] = OrderedDict()
        self.t2: OrderedDict[BlockHash, BlockStatus] = OrderedDict()
        self.b1: OrderedDict[BlockHash, None] = OrderedDict()
        self.b2: OrderedDict[BlockHash, None] = OrderedDict()
        self.p: float = 0.0

    @implements("P1", "A2")
    def get(self, block_hash: BlockHash) -> BlockStatus | None:
        """P1, A2: T1 and T2 only; ghosts are never returned."""
        block = self.t1.get(block_hash)
        return block if block is not None else self.t2.get(block_hash)

    @implements("P2", "A1")
    def insert(self, block_hash: BlockHash, block: BlockStatus) -> None:
        """P2, A1: append to T1's most-recent end and forget any ghost of the hash."""
        if block_hash in self.t1 or block_hash in self.t2:
            raise ContractViolation("P2", f"insert of present hash {describe_hash(block_hash)}")
        self.t1[block_hash] = block
        self.b1.pop(block_hash, None)
        self.b2.pop(block_hash, None)

    @implements("P3", "A6")
    def remove(self, block_hash: BlockHash) -> None:
        """P3, A6: delete from T1 or T2; ghost lists are untouched."""
        if block_hash in self.t1:
            del self.t1[block_hash]
        elif block_hash in self.t2:
            del self.t2[block_hash]
        else:
            raise ContractViolation("P3", f"remove of absent hash {describe_hash(block_hash)}")

    @implements("P4", "A3")
    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        """P4, A3: walk last to first; promote, refresh, or adapt ``p`` on a ghost hit."""
        for block_hash in reversed(read_hashes(block_hashes)):
            if block_hash in self.t1:
                block = self.t1.pop(block_hash)
                if block.is_ready:
                    self.t2[block_hash] = block  # seen again
                else:
                    self.t1[block_hash] = block  # a store in flight is not a second use
            elif block_hash in self.t2:
                self.t2.move_to_end(block_hash)
            elif block_hash in self.b1:
                self.p = min(self.p + max(1.0, len(self.b2) / len(self.b1)), float(self.cache_capacity))
                self.b1.move_to_end(block_hash)
            elif block_hash in self.b2:
                self.p = max(self.p - max(1.0, len(self.b1) / len(self.b2)), 0.0)
                self.b2.move_to_end(block_hash)

    @implements("P5", "A4", "A5", "I3", "I6", "I7")
    def evict(
        self, n: int, protected: set[BlockHash]
    ) -> list[tuple[BlockHash, BlockStatus]] | None:
        """P5, A4, A5: choose all victims first, then apply; ``None`` changes nothing."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"P5: n={n!r} must be a non-negative integer")
        if n == 0:
            return []

        def eligible(entries: OrderedDict[BlockHash, BlockStatus]) -> Iterator[BlockHash]:
            return (h for h, block in entries.items() if block.ref_cnt == 0 and h not in protected)

        t1_candidates, t2_candidates = eligible(self.t1), eligible(self.t2)
        next_t1, next_t2 = next(t1_candidates, None), next(t2_candidates, None)
        target = math.floor(self.p)
        victims: list[tuple[BlockHash, bool]] = []  # (hash, came from T1)
        t1_victims = 0
        for _ in range(n):
            t1 = len(self.t1) - t1_victims
            if next_t1 is not None and (t1 >= target or next_t2 is None):
                # A4: T1 when it is at or above target, and as the I6 fallback.
                victims.append((next_t1, True))
                t1_victims += 1
                next_t1 = next(t1_candidates, None)
            elif next_t2 is not None:
                victims.append((next_t2, False))
                next_t2 = next(t2_candidates, None)
            else:
                return None  # P5, I7: not enough eligible blocks; nothing changed

        evicted: list[tuple[BlockHash, BlockStatus]] = []
        for block_hash, from_t1 in victims:  # A5: ghosts appended in victim order
            if from_t1:
                evicted.append((block_hash, self.t1.pop(block_hash)))
                self.b1[block_hash] = None
            else:
                evicted.append((block_hash, self.t2.pop(block_hash)))
                self.b2[block_hash] = None
        for ghosts in (self.b1, self.b2):  # A5: trim from the least-recent end
            while len(ghosts) > self.cache_capacity:
                ghosts.popitem(last=False)
        return evicted

    def items(self) -> Iterator[tuple[BlockHash, BlockStatus]]:
        """Present hashes and their blocks (T1 then T2, least recent first)."""
        return iter(list(self.t1.items()) + list(self.t2.items()))

    def check_invariants(self) -> None:
        """The ARC state is well formed: disjoint lists, bounded ghosts, ``p`` in range."""
        lists = {"T1": self.t1.keys(), "T2": self.t2.keys(), "B1": self.b1.keys(), "B2": self.b2.keys()}
        names = list(lists)
        for i, first in enumerate(names):
            for second in names[i + 1 :]:
                shared = lists[first] & lists[second]
                if shared:
                    clash = describe_hash(next(iter(shared)))
                    raise ContractViolation("A1", f"hash {clash} is in both list {first} and list {second}")
        for name in ("B1", "B2"):
            if len(lists[name]) > self.cache_capacity:
                raise ContractViolation("A5", f"ghost list {name} holds more than {self.cache_capacity}")
        if not 0.0 <= self.p <= self.cache_capacity:
            raise ContractViolation("A3", f"p={self.p} outside [0, {self.cache_capacity}]")
        for block_hash, block in self.items():
            if block.ref_cnt < -1:
                raise ContractViolation("I2", f"{describe_hash(block_hash)} has ref_cnt {block.ref_cnt}")
