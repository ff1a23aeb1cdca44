"""The reference model of a further tier (T1–T6): a manager plus the bytes it holds.

``ReferenceTier`` is one client's tier (disk): the manager of M1–M10 decides presence,
pins and evictions; the model adds what a medium adds — writes that fail (T2) and copies
that stop verifying (T1). ``ReferenceSharedTier`` adds several clients and leases over
one state (T4, T5): a pin or a pending block belongs to a client until its lease runs
out. Time is an explicit ``now`` (milliseconds), so every answer is reproducible. One
model instance is one layout's namespace (T3): a record of another layout is, to a
reader, a record that fails T1.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Collection, Iterable, Mapping

from .clauses import implements
from .errors import ContractViolation
from .hashes import describe_hash, read_hashes
from .manager import ReferenceManager
from .types import BlockHash, PrepareStoreOutput

__all__ = ["ReferenceTier", "ReferenceSharedTier", "payload_of"]


def payload_of(block_hash: bytes, size: int) -> bytes:
    """The bytes a check stores under ``block_hash``: a pure function of it (E1 checks against this)."""
    seed = hashlib.blake2b(block_hash, digest_size=32).digest()
    return (seed * (size // 32 + 1))[:size]


@implements("T3")
class ReferenceTier:
    """One tier of ``num_blocks`` blocks with exact LRU or ARC (T1, T2)."""

    def __init__(self, num_blocks: int, policy: str = "lru") -> None:
        self.manager = ReferenceManager(num_blocks, policy)
        self.payloads: dict[BlockHash, bytes] = {}  # what the medium holds, ready blocks only
        self.damaged: set[BlockHash] = set()  # copies that no longer verify (not yet read)
        self.quarantined: set[BlockHash] = set()  # T1: failed a read, never served again

    @implements("T1")
    def lookup(self, block_hashes: Iterable[BlockHash]) -> int:
        """M1, and T1: a quarantined block ends the prefix as a pending block does."""
        hashes = read_hashes(block_hashes)
        hits = self.manager.lookup(hashes)
        for index, block_hash in enumerate(hashes[:hits]):
            if block_hash in self.quarantined:
                return index
        return hits

    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        """M4."""
        self.manager.touch(block_hashes)

    @implements("T2")
    def store(
        self, block_hashes: Iterable[BlockHash], payloads: Mapping[BlockHash, bytes], failed: Collection[BlockHash] = ()
    ) -> PrepareStoreOutput | None:
        """M5 then, per block, M6 if its write landed, else M7 (T2: a failed write is a failed store)."""
        output = self.manager.prepare_store(block_hashes)
        if output is None:
            return None
        self._forget(output.block_hashes_evicted)
        landed = [h for h in output.block_hashes_to_store if h not in failed]
        lost = [h for h in output.block_hashes_to_store if h in failed]
        self.manager.complete_store(landed, success=True)
        self.manager.complete_store(lost, success=False)
        for block_hash in landed:
            self.payloads[block_hash] = payloads[block_hash]
        return output

    def _forget(self, evicted: Iterable[BlockHash]) -> None:
        for block_hash in evicted:
            self.payloads.pop(block_hash, None)
            self.damaged.discard(block_hash)
            self.quarantined.discard(block_hash)

    @implements("T1")
    def damage(self, block_hash: BlockHash) -> None:
        """A torn write or flipped bit: the medium's copy of a ready block stops verifying (T1)."""
        if block_hash not in self.payloads:
            raise ContractViolation("T1", f"damage of a block the tier does not hold: {describe_hash(block_hash)}")
        self.damaged.add(block_hash)

    @implements("T1")
    def load(self, block_hashes: Iterable[BlockHash]) -> dict[BlockHash, bytes]:
        """M2, M3 around the reads; T1: only verified copies are served, a failed one is quarantined."""
        hashes = read_hashes(block_hashes)
        for block_hash in hashes:
            if block_hash in self.quarantined:
                raise ContractViolation("T1", f"prepare_load of quarantined hash {describe_hash(block_hash)}")
        self.manager.prepare_load(hashes)
        served: dict[BlockHash, bytes] = {}
        for block_hash in hashes:
            if block_hash in self.damaged:
                self.damaged.discard(block_hash)
                self.quarantined.add(block_hash)
            else:
                served[block_hash] = self.payloads[block_hash]
        self.manager.complete_load(hashes)
        return served

    @implements("E2")
    def check_leaks(self) -> None:
        """E2 for a tier: with nothing in flight, free + ready blocks = capacity, and only ready blocks have bytes."""
        blocks = self.manager.blocks()
        if any(block.ref_cnt != 0 for block in blocks.values()):
            raise ContractViolation("E2", "a block is pending or pinned with nothing in flight")
        if set(self.payloads) != set(blocks):
            raise ContractViolation("T2", "the medium holds bytes of a block that is not ready")


@implements("T6")
class ReferenceSharedTier:
    """One shared state, many clients, leases of ``lease_ms`` (T4, T5, T6).

    Each method is one atomic step (T6). A client's pins and pending blocks carry the
    expiry of its last call; ``expire(now)`` drops what ran out: each expired pin is a
    completed load (M3), each expired pending block a failed store (M7).
    """

    def __init__(self, num_blocks: int, lease_ms: int) -> None:
        self.manager = ReferenceManager(num_blocks, "lru")
        self.lease_ms = lease_ms
        self.pins: dict[tuple[str, BlockHash], tuple[int, int]] = {}  # (client, hash) → (count, expiry)
        self.pending: dict[tuple[str, BlockHash], int] = {}  # (client, hash) → expiry

    @implements("T4")
    def expire(self, now: int) -> list[BlockHash]:
        """T4: reclaim every lease that ran out at ``now``; returns the freed pending hashes."""
        for key, (count, expiry) in list(self.pins.items()):
            if expiry <= now:
                del self.pins[key]
                self.manager.complete_load([key[1]] * count)
        freed = [key[1] for key, expiry in self.pending.items() if expiry <= now]
        self.pending = {key: expiry for key, expiry in self.pending.items() if expiry > now}
        self.manager.complete_store(freed, success=False)
        return freed

    def lookup(self, block_hashes: Iterable[BlockHash], now: int) -> int:
        self.expire(now)
        return self.manager.lookup(block_hashes)

    def prepare_store(self, client: str, block_hashes: Iterable[BlockHash], now: int) -> PrepareStoreOutput | None:
        """M5; T4: the new pending blocks are the client's until ``now + lease_ms``."""
        self.expire(now)
        output = self.manager.prepare_store(block_hashes)
        if output is not None:
            for block_hash in output.block_hashes_to_store:
                self.pending[(client, block_hash)] = now + self.lease_ms
        return output

    @implements("T4")
    def complete_store(self, client: str, block_hashes: Iterable[BlockHash], success: bool, now: int) -> list[BlockHash]:
        """M6/M7 for the client's own live pending blocks only (T4: an expired one was reclaimed); returns them."""
        self.expire(now)
        mine = [h for h in read_hashes(block_hashes) if self.pending.pop((client, h), None) is not None]
        self.manager.complete_store(mine, success=success)
        return mine

    @implements("T5")
    def prepare_load(self, client: str, block_hashes: Iterable[BlockHash], now: int) -> None:
        """M2; T5: the pins keep the blocks from every client's evictions until the lease ends."""
        self.expire(now)
        hashes = read_hashes(block_hashes)
        self.manager.prepare_load(hashes)
        for block_hash, count in Counter(hashes).items():
            held, _ = self.pins.get((client, block_hash), (0, 0))
            self.pins[(client, block_hash)] = (held + count, now + self.lease_ms)

    @implements("T4")
    def complete_load(self, client: str, block_hashes: Iterable[BlockHash], now: int) -> None:
        """M3 for the pins the client still holds (T4: expired pins were already dropped)."""
        self.expire(now)
        release: list[BlockHash] = []
        for block_hash, count in Counter(read_hashes(block_hashes)).items():
            held, expiry = self.pins.get((client, block_hash), (0, 0))
            drop = min(held, count)
            release += [block_hash] * drop
            if held - drop > 0:
                self.pins[(client, block_hash)] = (held - drop, expiry)
            else:
                self.pins.pop((client, block_hash), None)
        self.manager.complete_load(release)

    def touch(self, block_hashes: Iterable[BlockHash], now: int) -> None:
        self.expire(now)
        self.manager.touch(block_hashes)
