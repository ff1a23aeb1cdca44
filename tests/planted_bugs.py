"""Small broken managers, backends and policies: one planted bug each.

The conformance self-tests (tests/test_conformance_bugs.py) assert that the suite
catches every one, deterministically, within its default budget, and names the clause.
Each factory has the suite's keyword signature.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable

from kvoffload.spec import (
    BlockStatus,
    ContractViolation,
    ReferenceARCPolicy,
    ReferenceCPUBackend,
    ReferenceLRUPolicy,
    ReferenceManager,
    read_hashes,
)
from kvoffload.spec.types import CPULoadStoreSpec, PrepareStoreOutput

# ---------------------------------------------------------------- policies (used by managers too)


class LRUIgnoresRefCnt(ReferenceLRUPolicy):
    """I3: evicts blocks that loads are reading (ref_cnt > 0)."""

    def evict(self, n, protected):
        saved = {h: b.ref_cnt for h, b in self.order.items() if b.ref_cnt > 0}
        for h in saved:
            self.order[h].ref_cnt = 0
        try:
            victims = super().evict(n, protected)
        finally:
            for h, count in saved.items():
                block = self.order.get(h)
                if block is not None:
                    block.ref_cnt = count
        if victims:
            victims = [(h, b) for h, b in victims]
            for h, b in victims:
                if h in saved:
                    b.ref_cnt = saved[h]
        return victims


class LRUEvictsPending(ReferenceLRUPolicy):
    """I3: a pending block (store in flight) counts as evictable."""

    def evict(self, n, protected):
        victims = []
        for h, block in self.order.items():
            if len(victims) == n:
                break
            if block.ref_cnt <= 0 and h not in protected:
                victims.append((h, block))
        if len(victims) < n:
            return None
        for h, _ in victims:
            del self.order[h]
        return victims


class LRUIgnoresProtected(ReferenceLRUPolicy):
    """M5.3: evicts hashes of the store's own input."""

    def evict(self, n, protected):
        return super().evict(n, set())


class LRUPartialEvict(ReferenceLRUPolicy):
    """I7: a refused eviction still drops the eligible blocks it found."""

    def evict(self, n, protected):
        victims = [(h, b) for h, b in self.order.items() if b.ref_cnt == 0 and h not in protected][:n]
        if len(victims) < n:
            for h, _ in victims:
                del self.order[h]
            return None
        return super().evict(n, protected)


class LRUTouchForward(ReferenceLRUPolicy):
    """P4/L2: touch walks first to last, so the last hash ends most recent."""

    def touch(self, block_hashes):
        for h in read_hashes(block_hashes):
            if h in self.order:
                self.order.move_to_end(h)


class LRUTouchReadyOnly(ReferenceLRUPolicy):
    """L2: touch skips pending hashes."""

    def touch(self, block_hashes):
        for h in reversed(read_hashes(block_hashes)):
            if h in self.order and self.order[h].ref_cnt >= 0:
                self.order.move_to_end(h)


class LRUShortEvict(ReferenceLRUPolicy):
    """P5: returns fewer victims than asked instead of None."""

    def evict(self, n, protected):
        victims = [(h, b) for h, b in self.order.items() if b.ref_cnt == 0 and h not in protected][:n]
        for h, _ in victims:
            del self.order[h]
        return victims


class LRUTouchMarksReady(ReferenceLRUPolicy):
    """P6: touch sets a pending block's ref_cnt to 0."""

    def touch(self, block_hashes):
        hashes = read_hashes(block_hashes)
        for h in hashes:
            block = self.order.get(h)
            if block is not None and block.ref_cnt < 0:
                block.ref_cnt = 0
        super().touch(hashes)


class LRUInsertOverwrites(ReferenceLRUPolicy):
    """P2: inserting a present hash silently replaces it."""

    def insert(self, block_hash, block):
        self.order[block_hash] = block


class LRURemoveAbsentSilently(ReferenceLRUPolicy):
    """P3: removing an absent hash is ignored."""

    def remove(self, block_hash):
        self.order.pop(block_hash, None)


class ARCFloatTarget(ReferenceARCPolicy):
    """A4: compares |T1| with p instead of floor(p)."""

    def evict(self, n, protected):
        if n == 0:
            return []
        eligible = lambda d: [h for h, b in d.items() if b.ref_cnt == 0 and h not in protected]  # noqa: E731
        c1, c2 = eligible(self.t1), eligible(self.t2)
        victims, t1_taken = [], 0
        for _ in range(n):
            t1 = len(self.t1) - t1_taken
            if c1 and (t1 >= self.p or not c2):  # bug: self.p, not floor(self.p)
                victims.append((c1.pop(0), True))
                t1_taken += 1
            elif c2:
                victims.append((c2.pop(0), False))
            else:
                return None
        return self._apply(victims)

    def _apply(self, victims):
        out = []
        for h, from_t1 in victims:
            if from_t1:
                out.append((h, self.t1.pop(h)))
                self.b1[h] = None
            else:
                out.append((h, self.t2.pop(h)))
                self.b2[h] = None
        for ghosts in (self.b1, self.b2):
            while len(ghosts) > self.cache_capacity:
                ghosts.popitem(last=False)
        return out


class ARCIntegerRatio(ReferenceARCPolicy):
    """A3: the ghost-hit step uses |B2| // |B1| (integer division)."""

    def touch(self, block_hashes):
        for h in reversed(read_hashes(block_hashes)):
            if h in self.b1:
                self.p = min(self.p + max(1, len(self.b2) // len(self.b1)), float(self.cache_capacity))
                self.b1.move_to_end(h)
            elif h in self.b2:
                self.p = max(self.p - max(1, len(self.b1) // len(self.b2)), 0.0)
                self.b2.move_to_end(h)
            else:
                super().touch([h])


class ARCUntrimmedGhosts(ReferenceARCPolicy):
    """A5: ghost lists are never trimmed."""

    def evict(self, n, protected):
        capacity = self.cache_capacity
        self.cache_capacity = 10**9
        try:
            return super().evict(n, protected)
        finally:
            self.cache_capacity = capacity

    def check_invariants(self):
        pass


class ARCNoT1Fallback(ReferenceARCPolicy):
    """A4/I6: refuses when t1 < floor(p) and T2 has no eligible block (vLLM issue 55461)."""

    def evict(self, n, protected):
        if n == 0:
            return []
        eligible = lambda d: [h for h, b in d.items() if b.ref_cnt == 0 and h not in protected]  # noqa: E731
        c1, c2 = eligible(self.t1), eligible(self.t2)
        victims, t1_taken = [], 0
        for _ in range(n):
            t1 = len(self.t1) - t1_taken
            if c1 and t1 >= math.floor(self.p):
                victims.append((c1.pop(0), True))
                t1_taken += 1
            elif c2:
                victims.append((c2.pop(0), False))
            else:
                return None
        return ARCFloatTarget._apply(self, victims)


class ARCPromotesPending(ReferenceARCPolicy):
    """A3: a touch of a pending T1 block promotes it to T2."""

    def touch(self, block_hashes):
        for h in reversed(read_hashes(block_hashes)):
            if h in self.t1:
                self.t2[h] = self.t1.pop(h)
            else:
                super().touch([h])


class LRUSizeByIdentity(ReferenceLRUPolicy):
    """M5.3 above 256 victims: stops collecting victims when ``len(victims) is n``, which
    CPython's shared small ints make true only up to 256; beyond, it evicts every eligible
    block (a mutant of vLLM 0.19's LRU that survived a suite without large examples)."""

    def evict(self, n, protected):
        victims = []
        for block_hash, block in self.order.items():
            if len(victims) is n:
                break
            if block.ref_cnt == 0 and block_hash not in protected:
                victims.append((block_hash, block))
        if len(victims) < n:
            return None
        for block_hash, _ in victims:
            del self.order[block_hash]
        return victims


def policy_factory(cls):
    return lambda cache_capacity: cls(cache_capacity)


# ---------------------------------------------------------------- managers


def _manager_with(policy_class):
    def factory(num_blocks, enable_events=False):
        return ReferenceManager(num_blocks, policy=policy_class(num_blocks), enable_events=enable_events)

    factory.__name__ = factory.__qualname__ = f"manager_with_{policy_class.__name__}"
    return factory


manager_evicts_in_use = _manager_with(LRUIgnoresRefCnt)
manager_evicts_pending = _manager_with(LRUEvictsPending)
manager_ignores_protected = _manager_with(LRUIgnoresProtected)
manager_partial_evict = _manager_with(LRUPartialEvict)
manager_touch_forward = _manager_with(LRUTouchForward)
manager_arc_float_target = _manager_with(ARCFloatTarget)
manager_arc_no_fallback = _manager_with(ARCNoT1Fallback)
manager_arc_integer_ratio = _manager_with(ARCIntegerRatio)
manager_arc_untrimmed_ghosts = _manager_with(ARCUntrimmedGhosts)
manager_arc_promotes_pending = _manager_with(ARCPromotesPending)
manager_size_by_identity = _manager_with(LRUSizeByIdentity)


class FailedStoreBecomesReady(ReferenceManager):
    """M7: a failed store is treated as a successful one."""

    def complete_store(self, block_hashes, success=True):
        super().complete_store(block_hashes, True)


class FailedStoreDropsReady(ReferenceManager):
    """M7: a failed store also drops ready blocks it lists."""

    def complete_store(self, block_hashes, success=True):
        hashes = read_hashes(block_hashes)
        if not success:
            for h in hashes:
                block = self.policy.get(h)
                if block is not None and block.ref_cnt == 0:
                    self.policy.remove(h)
                    self.backend.free(block)
        super().complete_store(hashes, success)


class FailedStoreLeaks(ReferenceManager):
    """M7: a failed store forgets the hash but never frees its block."""

    def complete_store(self, block_hashes, success=True):
        hashes = read_hashes(block_hashes)
        if success:
            return super().complete_store(hashes, True)
        for h in hashes:
            block = self.policy.get(h)
            if block is not None and block.ref_cnt == -1:
                self.policy.remove(h)


class NoStoredEvent(ReferenceManager):
    """M6: completed stores are never announced."""

    def complete_store(self, block_hashes, success=True):
        events = self.enable_events
        self.enable_events = False
        try:
            super().complete_store(block_hashes, success)
        finally:
            self.enable_events = events


class FailedStoreAnnounced(ReferenceManager):
    """M7: a failed store queues a stored event."""

    def complete_store(self, block_hashes, success=True):
        hashes = read_hashes(block_hashes)
        failed = [h for h in hashes if (b := self.policy.get(h)) is not None and b.ref_cnt == -1]
        super().complete_store(hashes, success)
        if not success and failed and self.enable_events:
            self._queue_event(failed, removed=False)


class LookupCountsPending(ReferenceManager):
    """M1: pending blocks count as hits."""

    def lookup(self, block_hashes):
        hits = 0
        for h in read_hashes(block_hashes):
            if self.policy.get(h) is None:
                break
            hits += 1
        return hits


class LookupNotPrefix(ReferenceManager):
    """M1: counts every ready hash, not the prefix."""

    def lookup(self, block_hashes):
        return sum(1 for h in read_hashes(block_hashes) if (b := self.policy.get(h)) is not None and b.is_ready)


class DuplicateLoadCountedOnce(ReferenceManager):
    """M2: a hash listed twice in prepare_load is pinned once (strict mode)."""

    def prepare_load(self, block_hashes):
        hashes = read_hashes(block_hashes)
        spec = super().prepare_load(list(dict.fromkeys(hashes)))
        return self.backend.get_load_store_spec(hashes, [self.policy.get(h) for h in hashes])


class CompleteLoadUnchecked(ReferenceManager):
    """M3: complete_load never checks for outstanding loads (strict mode)."""

    def complete_load(self, block_hashes):
        for h in read_hashes(block_hashes):
            block = self.policy.get(h)
            if block is not None and block.ref_cnt > 0:
                block.ref_cnt -= 1


class LoadNotPinned(ReferenceManager):
    """I3: a block with a load in flight is not pinned, so it can be evicted."""

    def prepare_load(self, block_hashes):
        hashes = read_hashes(block_hashes)
        blocks = []
        for h in hashes:
            block = self.policy.get(h)
            if block is None or not block.is_ready:
                raise ContractViolation("M2", "not ready")
            blocks.append(block)
        return self.backend.get_load_store_spec(hashes, blocks)

    def complete_load(self, block_hashes):
        read_hashes(block_hashes)


class FingerprintPolicy(ReferenceLRUPolicy):
    """I8: keyed by the first 8 bytes of the hash (a 64-bit fingerprint)."""

    def get(self, block_hash):
        return super().get(block_hash[:8])

    def insert(self, block_hash, block):
        super().insert(block_hash[:8], block)

    def remove(self, block_hash):
        super().remove(block_hash[:8])

    def touch(self, block_hashes):
        super().touch([h[:8] for h in read_hashes(block_hashes)])

    def evict(self, n, protected):
        return super().evict(n, {h[:8] for h in protected})


manager_fingerprint = _manager_with(FingerprintPolicy)


class IteratesTwice(ReferenceManager):
    """M0: prepare_store counts its argument before reading it again."""

    def prepare_store(self, block_hashes):
        if sum(1 for _ in block_hashes) == 0:
            return PrepareStoreOutput([], self.backend.get_load_store_spec([], []), [])
        return super().prepare_store(block_hashes)


class SpuriousRefusal(ReferenceManager):
    """I6: refuses any store that needs more than one eviction."""

    def prepare_store(self, block_hashes):
        hashes = read_hashes(block_hashes)
        absent = {h for h in hashes if self.policy.get(h) is None}
        if len(absent) - self.backend.get_num_free_blocks() > 1:
            return None
        return super().prepare_store(hashes)


class PrepareLoadTouches(ReferenceManager):
    """M10: prepare_load counts as a use (touches the policy)."""

    def prepare_load(self, block_hashes):
        hashes = read_hashes(block_hashes)
        spec = super().prepare_load(hashes)
        self.policy.touch(hashes)
        return spec


# ---------------------------------------------------------------- backends


class OverAllocatingBackend(ReferenceCPUBackend):
    """B2: asking for more than the free count hands out what it can."""

    def allocate_blocks(self, block_hashes):
        return super().allocate_blocks(list(block_hashes)[: len(self._free_ids)])


class DoubleFreeBackend(ReferenceCPUBackend):
    """B3: freeing a block twice is ignored instead of refused."""

    def free(self, block):
        if self._handed_out.get(block.block_id) is not block:
            return
        super().free(block)


class LeakyFreeCountBackend(ReferenceCPUBackend):
    """B1/B3: the free count forgets frees of the highest id."""

    def get_num_free_blocks(self):
        count = super().get_num_free_blocks()
        return count - 1 if (self.num_blocks - 1) in self._free_ids and count < self.num_blocks else count


class ReversedSpecBackend(ReferenceCPUBackend):
    """B4: the spec lists the blocks in reverse order."""

    def get_load_store_spec(self, block_hashes, blocks):
        return super().get_load_store_spec(block_hashes, list(blocks)[::-1])


class DuplicateIdBackend(ReferenceCPUBackend):
    """I4/B2: a freed id goes back on the free list twice, so two live blocks alias."""

    def free(self, block):
        super().free(block)
        heapq.heappush(self._free_ids, block.block_id)
        self.num_blocks += 0

    def get_num_free_blocks(self):
        return min(len(set(self._free_ids)) + 0, self.num_blocks - len(self._handed_out))

    def allocate_blocks(self, block_hashes):
        count = len(block_hashes)
        if count > self.get_num_free_blocks():
            raise ContractViolation("B2", "too many")
        blocks = []
        for _ in range(count):
            block = BlockStatus(heapq.heappop(self._free_ids))
            self._handed_out[block.block_id] = block
            blocks.append(block)
        return blocks

    def check_invariants(self):
        pass


def manager_aliasing_backend(num_blocks, enable_events=False):
    return ReferenceManager(num_blocks, enable_events=enable_events, backend=DuplicateIdBackend(num_blocks))


def backend_factory(cls):
    return lambda num_blocks: cls(num_blocks)


class StoreIdPastCapacity(ReferenceManager):
    """B4: the last block id of every store spec is offset by the capacity (an address past
    the CPU buffer); what a cosmic-ray mutant of vLLM's chunk allocator did (XOR for minus)."""

    def prepare_store(self, block_hashes):
        output = super().prepare_store(block_hashes)
        if output is not None and len(output.block_hashes_to_store):
            ids = output.store_spec.block_ids.tolist()
            ids[-1] += self.num_blocks
            output = PrepareStoreOutput(output.block_hashes_to_store, CPULoadStoreSpec(ids),
                                        output.block_hashes_evicted)
        return output
