"""The reference manager: the contract's M0–M10 written as plainly as possible.

Each public method (1) reads its ``block_hashes`` argument once into a list and checks
every element (M0, M9), (2) checks every precondition it can check, raising a
``ContractViolation`` that names the clause and the hash, and only then (3) mutates.
So a call that raises or returns ``None`` has changed nothing (M9, I7). Speed does not
matter here; a reader should be able to hold each method against its clause.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from .arc import ReferenceARCPolicy
from .backend import ReferenceCPUBackend
from .clauses import implements
from .errors import ContractViolation
from .hashes import describe_hash, read_hashes
from .interfaces import Backend, CachePolicy, OffloadingManager
from .lru import ReferenceLRUPolicy
from .offloading_spec import positive_int
from .s3fifo import ReferenceS3FIFOPolicy
from .sieve import ReferenceSIEVEPolicy
from .types import (
    BlockHash,
    BlockStatus,
    LoadStoreSpec,
    OffloadingEvent,
    PrepareStoreOutput,
)

__all__ = ["ReferenceManager", "POLICIES", "make_reference_policy"]

#: The exact policies of the contract, by the names vLLM's ``eviction_policy`` uses
#: (``lru``, ``arc``) and ours for the extensions (``s3fifo``: F1–F7, ``sieve``: V1–V6).
POLICIES: dict[
    str,
    type[ReferenceLRUPolicy]
    | type[ReferenceARCPolicy]
    | type[ReferenceS3FIFOPolicy]
    | type[ReferenceSIEVEPolicy],
] = {
    "lru": ReferenceLRUPolicy,
    "arc": ReferenceARCPolicy,
    "s3fifo": ReferenceS3FIFOPolicy,
    "sieve": ReferenceSIEVEPolicy,
}


def make_reference_policy(name: str, cache_capacity: int) -> CachePolicy:
    """The reference policy called ``name`` (a key of ``POLICIES``)."""
    try:
        policy_class = POLICIES[name]
    except (KeyError, TypeError):
        raise ValueError(f"policy={name!r} is not one of {sorted(POLICIES)}") from None
    return policy_class(cache_capacity)


@implements("M10")
class ReferenceManager(OffloadingManager):
    """An ``OffloadingManager`` composed of a backend and a cache policy.

    ``policy`` is a name in ``POLICIES`` (``"lru"``, ``"arc"``, ``"s3fifo"``, ``"sieve"``) or any ``CachePolicy`` object (the conformance
    suite plugs in a policy that replays a target's eviction choices). ``backend``
    defaults to the reference CPU backend of ``num_blocks`` blocks of ``block_size``
    tokens.
    """

    def __init__(
        self,
        num_blocks: int,
        policy: str | CachePolicy = "lru",
        enable_events: bool = False,
        block_size: int = 16,
        backend: Backend | None = None,
    ) -> None:
        self.num_blocks = positive_int("num_blocks", num_blocks)
        self.backend: Backend = (
            backend if backend is not None else ReferenceCPUBackend(num_blocks, block_size)
        )
        self.policy: CachePolicy = (
            make_reference_policy(policy, num_blocks) if isinstance(policy, str) else policy
        )
        self.enable_events = bool(enable_events)
        self._events: list[OffloadingEvent] = []

    # -- M1 ---------------------------------------------------------------------------
    @implements("M1")
    def lookup(self, block_hashes: Iterable[BlockHash]) -> int:
        """M1: length of the longest prefix of present and ready hashes; pure.

        The model reads and type-checks the whole argument (M9) before answering; the
        contract allows an implementation to stop reading at the first miss instead.
        """
        hits = 0
        for block_hash in read_hashes(block_hashes):
            block = self.policy.get(block_hash)
            if block is None or not block.is_ready:  # pending blocks end the prefix
                break
            hits += 1
        return hits

    # -- M2 ---------------------------------------------------------------------------
    @implements("M2", "I2")
    def prepare_load(self, block_hashes: Iterable[BlockHash]) -> LoadStoreSpec:
        """M2: every hash present and ready; each occurrence adds 1 to ``ref_cnt``."""
        hashes = read_hashes(block_hashes)
        blocks: list[BlockStatus] = []
        for block_hash in hashes:
            block = self.policy.get(block_hash)
            if block is None:
                raise ContractViolation("M2", f"prepare_load of absent hash {describe_hash(block_hash)}")
            if not block.is_ready:
                raise ContractViolation("M2", f"prepare_load of pending hash {describe_hash(block_hash)}")
            blocks.append(block)
        for block in blocks:
            block.ref_cnt += 1
        # M10: a load in flight is not a use; the policy is not told.
        return self.backend.get_load_store_spec(hashes, blocks)

    # -- M3 ---------------------------------------------------------------------------
    @implements("M3", "I2")
    def complete_load(self, block_hashes: Iterable[BlockHash]) -> None:
        """M3: each occurrence subtracts 1; all-or-nothing over the batch."""
        occurrences = Counter(read_hashes(block_hashes))
        blocks: list[tuple[BlockStatus, int]] = []
        for block_hash, count in occurrences.items():
            block = self.policy.get(block_hash)
            if block is None:
                raise ContractViolation("M3", f"complete_load of absent hash {describe_hash(block_hash)}")
            if block.ref_cnt < count:
                raise ContractViolation(
                    "M3",
                    f"complete_load of {describe_hash(block_hash)} x{count}, but only "
                    f"{max(block.ref_cnt, 0)} loads are outstanding",
                )
            blocks.append((block, count))
        for block, count in blocks:
            block.ref_cnt -= count

    # -- M4 ---------------------------------------------------------------------------
    @implements("M4")
    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        """M4: a recency hint, delegated to the policy (P4); absent hashes are its business."""
        self.policy.touch(read_hashes(block_hashes))

    # -- M5 ---------------------------------------------------------------------------
    @implements("M5", "I6", "I7")
    def prepare_store(self, block_hashes: Iterable[BlockHash]) -> PrepareStoreOutput | None:
        """M5: allocate pending blocks for the absent hashes, evicting atomically."""
        hashes = read_hashes(block_hashes)

        # M5.1: absent hashes, first occurrence order, no duplicates.
        to_store: list[BlockHash] = []
        already_listed: set[BlockHash] = set()
        for block_hash in hashes:
            if self.policy.get(block_hash) is None and block_hash not in already_listed:
                already_listed.add(block_hash)
                to_store.append(block_hash)

        # M5.2: nothing to store, nothing changes.
        if not to_store:
            return PrepareStoreOutput([], self.backend.get_load_store_spec([], []), [])

        # M5.3 / M5.4: evict exactly `need` ready idle blocks outside the whole input,
        # or refuse with no change at all (the policy's evict is atomic, P5).
        need = len(to_store) - self.backend.get_num_free_blocks()
        victims: list[tuple[BlockHash, BlockStatus]] = []
        if need > 0:
            chosen = self.policy.evict(need, set(hashes))
            if chosen is None:
                return None
            victims = chosen

        # M5.5: free the victims, allocate, insert pending in to_store order.
        for _, block in victims:
            self.backend.free(block)
        blocks = self.backend.allocate_blocks(to_store)
        for block_hash, block in zip(to_store, blocks):
            self.policy.insert(block_hash, block)
        evicted = [block_hash for block_hash, _ in victims]
        if self.enable_events and evicted:
            self._queue_event(evicted, removed=True)
        return PrepareStoreOutput(
            block_hashes_to_store=to_store,
            store_spec=self.backend.get_load_store_spec(to_store, blocks),
            block_hashes_evicted=evicted,
        )

    # -- M6, M7 -----------------------------------------------------------------------
    @implements("M6", "M7", "I2", "I3", "M9")
    def complete_store(self, block_hashes: Iterable[BlockHash], success: bool = True) -> None:
        """M6 (success): pending → ready, one stored event. M7 (failure): drop pending."""
        if not isinstance(success, bool):
            raise TypeError(f"M9: success must be a bool, got {type(success).__name__}")
        hashes = read_hashes(block_hashes)
        if success:
            became_ready: list[BlockHash] = []
            for block_hash in hashes:
                block = self.policy.get(block_hash)
                if block is not None and block.ref_cnt == -1:
                    block.ref_cnt = 0  # I2: -1 → 0, the only way out of pending but M7
                    became_ready.append(block_hash)
            if self.enable_events and became_ready:
                self._queue_event(became_ready, removed=False)
        else:
            for block_hash in hashes:
                block = self.policy.get(block_hash)
                if block is not None and block.ref_cnt == -1:
                    # M7: never announced, so no event; ready blocks stay as they are.
                    self.policy.remove(block_hash)
                    self.backend.free(block)

    # -- M8 ---------------------------------------------------------------------------
    @implements("M8")
    def take_events(self) -> Iterable[OffloadingEvent]:
        """M8: the queued events, oldest first; the queue is left empty."""
        events, self._events = self._events, []
        return events

    @implements("M8", "I5")
    def _queue_event(self, block_hashes: list[BlockHash], removed: bool) -> None:
        self._events.append(
            OffloadingEvent(
                block_hashes=list(block_hashes),
                block_size=self.backend.block_size,
                medium=self.backend.medium,
                removed=removed,
            )
        )

    # -- invariants -------------------------------------------------------------------
    def blocks(self) -> dict[BlockHash, BlockStatus]:
        """Every present hash and its block (needs a policy with ``items()``)."""
        items = getattr(self.policy, "items", None)
        if items is None:
            raise TypeError(f"{type(self.policy).__name__} cannot list its blocks")
        return dict(items())

    @implements("I1", "I2", "I4", "I8")
    def check_invariants(self) -> None:
        """I1–I4 and I8 from the model's own state; raises ``ContractViolation``."""
        present = self.blocks()
        free = self.backend.get_num_free_blocks()
        # I1: capacity.
        if not 0 <= free <= self.num_blocks:
            raise ContractViolation("B1", f"free count {free} outside [0, {self.num_blocks}]")
        if free + len(present) != self.num_blocks:
            raise ContractViolation(
                "I1", f"free {free} + allocated {len(present)} != capacity {self.num_blocks}"
            )
        # I2: ref counts never below -1.
        for block_hash, block in present.items():
            if block.ref_cnt < -1:
                raise ContractViolation("I2", f"{describe_hash(block_hash)} has ref_cnt {block.ref_cnt}")
        # I4 / I8: no two present hashes share a block object or a block id.
        owners: dict[int, BlockHash] = {}
        for block_hash, block in present.items():
            other = owners.setdefault(block.block_id, block_hash)
            if other != block_hash:
                raise ContractViolation(
                    "I4",
                    f"{describe_hash(block_hash)} and {describe_hash(other)} share block {block.block_id}",
                )
        # I3 is a property of transitions, checked where blocks are evicted and freed
        # (the policy only offers ref_cnt == 0 victims; M7 frees pending blocks only).
        for part in (self.backend, self.policy):
            check = getattr(part, "check_invariants", None)
            if check is not None:
                check()
