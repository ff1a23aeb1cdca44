"""The reference S3-FIFO policy (P1–P6, F1–F7): Yang et al., SOSP 2023, kept to the contract.

Two FIFO queues of present hashes, S (small, new arrivals) and M (main), and a ghost
FIFO G of hashes only, remembering what left S without a second use. Every present hash
carries a frequency counter in ``0..3``. New hashes enter S (F2) unless G remembers them,
then they enter M. Eviction (F5) demotes quickly from S: a block that was used again
while in S moves to M, one that was not leaves the cache (and enters G); M is a CLOCK
with a 2-bit counter. Blocks that may not be evicted (pending, in use, protected) stay
where they are, unchanged, while the eviction walks past them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator

from .clauses import implements
from .errors import ContractViolation
from .hashes import describe_hash, read_hashes
from .interfaces import CachePolicy
from .offloading_spec import positive_int
from .types import BlockHash, BlockStatus

__all__ = ["ReferenceS3FIFOPolicy", "s3fifo_sizes"]

#: F4: the counter saturates at 3 (two bits).
MAX_FREQUENCY = 3


@implements("F1")
def s3fifo_sizes(cache_capacity: int) -> tuple[int, int]:
    """F1: (target size of S, bound of G) for a cache of ``cache_capacity`` blocks.

    S aims at a tenth of the cache, at least one block; G holds at most what M may hold.
    """
    small = max(1, cache_capacity // 10)
    return small, cache_capacity - small


class _Entry:
    """A present hash's block and its F1 frequency counter."""

    __slots__ = ("block", "freq")

    def __init__(self, block: BlockStatus) -> None:
        self.block = block
        self.freq = 0


#: Whether F5 may take a block: ready, idle and not protected.
_Eligible = Callable[[BlockHash, _Entry], bool]


@implements("F1", "P6")
class ReferenceS3FIFOPolicy(CachePolicy):
    """F1: queues S and M (present), ghost G (hashes), each ordered oldest → newest."""

    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = positive_int("cache_capacity", cache_capacity)
        self.small_target, self.ghost_bound = s3fifo_sizes(self.cache_capacity)
        self.small: OrderedDict[BlockHash, _Entry] = OrderedDict()
        self.main: OrderedDict[BlockHash, _Entry] = OrderedDict()
        self.ghost: OrderedDict[BlockHash, None] = OrderedDict()

    def _entry(self, block_hash: BlockHash) -> _Entry | None:
        entry = self.small.get(block_hash)
        return entry if entry is not None else self.main.get(block_hash)

    @implements("P1", "F3")
    def get(self, block_hash: BlockHash) -> BlockStatus | None:
        """P1, F3: S and M only; ghosts are never returned."""
        entry = self._entry(block_hash)
        return None if entry is None else entry.block

    def freq(self, block_hash: BlockHash) -> int | None:
        """The F1 counter of a present hash (for tests and the conformance suite)."""
        entry = self._entry(block_hash)
        return None if entry is None else entry.freq

    @implements("P2", "F2")
    def insert(self, block_hash: BlockHash, block: BlockStatus) -> None:
        """P2, F2: into M if G remembers the hash (and G forgets it), else into S; counter 0."""
        if self._entry(block_hash) is not None:
            raise ContractViolation("P2", f"insert of present hash {describe_hash(block_hash)}")
        if block_hash in self.ghost:
            del self.ghost[block_hash]
            self.main[block_hash] = _Entry(block)
        else:
            self.small[block_hash] = _Entry(block)

    @implements("P3", "F7")
    def remove(self, block_hash: BlockHash) -> None:
        """P3, F7: delete from S or M; G is untouched."""
        if self.small.pop(block_hash, None) is None and self.main.pop(block_hash, None) is None:
            raise ContractViolation("P3", f"remove of absent hash {describe_hash(block_hash)}")

    @implements("P4", "F4")
    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        """P4, F4: a present, ready hash counts one more use (saturating at 3).

        A pending hash is not counted (a store in flight is not a use, as in A3); ghosts
        and absent hashes are ignored. The order changes nothing here, but P4's walk is kept.
        """
        for block_hash in reversed(read_hashes(block_hashes)):
            entry = self._entry(block_hash)
            if entry is not None and entry.block.is_ready:
                entry.freq = min(entry.freq + 1, MAX_FREQUENCY)

    @implements("P5", "F5", "F6", "I3", "I7")
    def evict(
        self, n: int, protected: set[BlockHash]
    ) -> list[tuple[BlockHash, BlockStatus]] | None:
        """P5, F5, F6: ``n`` victims, or ``None`` and nothing changed (I7).

        Every eligible block (ready, idle, unprotected) of S or M is eventually a victim
        of F5's walk, so the call succeeds exactly when ``n`` eligible blocks exist; that
        is checked first, and only then are promotions and counters changed.
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"P5: n={n!r} must be a non-negative integer")
        if n == 0:
            return []

        def eligible(block_hash: BlockHash, entry: _Entry) -> bool:
            return entry.block.ref_cnt == 0 and block_hash not in protected

        available = sum(eligible(h, e) for queue in (self.small, self.main) for h, e in queue.items())
        if available < n:
            return None  # P5, I7: nothing was changed
        victims: list[tuple[BlockHash, BlockStatus]] = []
        small_victims: list[BlockHash] = []
        while len(victims) < n:
            victim = None
            if len(self.small) >= self.small_target or not self._has_eligible(self.main, eligible):
                victim = self._evict_small(eligible)
            if victim is None:
                victim = self._evict_main(eligible)
            else:
                small_victims.append(victim[0])
            victims.append(victim)
        for block_hash in small_victims:  # F6: ghosts in victim order, then the bound
            self.ghost[block_hash] = None
        while len(self.ghost) > self.ghost_bound:
            self.ghost.popitem(last=False)
        return victims

    @staticmethod
    def _has_eligible(queue: OrderedDict[BlockHash, _Entry], eligible: _Eligible) -> bool:
        return any(eligible(h, e) for h, e in queue.items())

    @implements("F5")
    def _evict_small(self, eligible: _Eligible) -> tuple[BlockHash, BlockStatus] | None:
        """F5: S's oldest eligible block leaves if unused since it came, else moves to M."""
        while True:
            oldest = next(((h, e) for h, e in self.small.items() if eligible(h, e)), None)
            if oldest is None:
                return None  # S ran out of eligible blocks: the victim comes from M
            block_hash, entry = oldest
            del self.small[block_hash]
            if entry.freq == 0:
                return block_hash, entry.block
            entry.freq = 0  # F5: promoted with a fresh counter
            self.main[block_hash] = entry

    @implements("F5")
    def _evict_main(self, eligible: _Eligible) -> tuple[BlockHash, BlockStatus]:
        """F5: CLOCK over M: a used block loses one count and goes to M's newest end."""
        while True:
            block_hash, entry = next((h, e) for h, e in self.main.items() if eligible(h, e))
            if entry.freq == 0:
                del self.main[block_hash]
                return block_hash, entry.block
            entry.freq -= 1
            self.main.move_to_end(block_hash)

    def items(self) -> Iterator[tuple[BlockHash, BlockStatus]]:
        """Present hashes and their blocks (S then M, oldest first)."""
        return iter([(h, e.block) for queue in (self.small, self.main) for h, e in queue.items()])

    def check_invariants(self) -> None:
        """F1: S, M and G are disjoint, G is bounded, counters lie in ``0..3``; I2."""
        for name, keys in (("S", self.small.keys()), ("M", self.main.keys())):
            shared = keys & self.ghost.keys()
            if shared:
                raise ContractViolation("F1", f"{describe_hash(next(iter(shared)))} is in {name} and G")
        both = self.small.keys() & self.main.keys()
        if both:
            raise ContractViolation("F1", f"{describe_hash(next(iter(both)))} is in S and M")
        if len(self.ghost) > self.ghost_bound:
            raise ContractViolation("F6", f"G holds {len(self.ghost)} > {self.ghost_bound} hashes")
        for queue in (self.small, self.main):
            for block_hash, entry in queue.items():
                if not 0 <= entry.freq <= MAX_FREQUENCY:
                    raise ContractViolation("F4", f"{describe_hash(block_hash)} has counter {entry.freq}")
                if entry.block.ref_cnt < -1:
                    raise ContractViolation("I2", f"{describe_hash(block_hash)} has ref_cnt {entry.block.ref_cnt}")

