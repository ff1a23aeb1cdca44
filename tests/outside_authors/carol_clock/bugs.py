"""Five buggy variants of the CLOCK offloading manager, one subtle bug each.

Each factory has the same signature as ``manager.make_manager``.  See BUGS.md.
"""

from collections import OrderedDict
from typing import List, Optional, Tuple

from kvoffload.spec import PrepareStoreOutput

from .manager import (
    PENDING,
    Block,
    ClockOffloadingManager,
    ClockPolicy,
    _read_hashes,
)


# --------------------------------------------------------------------------- 1
class _ProtectNewOnly(ClockOffloadingManager):
    """prepare_store protects only the hashes it is about to store, not the
    whole input: an already-stored prefix of the request can be evicted."""

    def prepare_store(self, hashes) -> Optional[PrepareStoreOutput]:
        hs = _read_hashes(hashes, "prepare_store")
        policy = self.policy
        to_store: List[bytes] = []
        for h in hs:
            if h not in policy and h not in to_store:
                to_store.append(h)
        if not to_store:
            return PrepareStoreOutput([], self.backend.get_load_store_spec([]), [])
        need = len(to_store) - self.backend.get_num_free_blocks()
        victims = []
        if need > 0:
            # BUG: should be set(hs) -- present hashes of the request are protected too
            victims = policy.evict(need, set(to_store))
            if victims is None:
                return None
            for _h, b in victims:
                self.backend.free(b)
        blocks = self.backend.allocate_blocks(len(to_store))
        for h, b in zip(to_store, blocks):
            policy.insert(h, b)
        evicted = [h for h, _b in victims]
        if evicted and self._events is not None:
            self._events.append(self._event(evicted, removed=True))
        return PrepareStoreOutput(to_store, self.backend.get_load_store_spec(blocks), evicted)


def make_protect_new_only(num_blocks, enable_events=False):
    return _ProtectNewOnly(num_blocks, enable_events)


# --------------------------------------------------------------------------- 2
class _DedupLoads(ClockOffloadingManager):
    """prepare_load bumps ref_cnt once per *distinct* hash, while
    complete_load (correctly) subtracts once per occurrence."""

    def prepare_load(self, hashes):
        from kvoffload.spec import ContractViolation

        hs = _read_hashes(hashes, "prepare_load")
        get = self.policy.get
        blocks = []
        for h in hs:
            b = get(h)
            if b is None or b.ref_cnt < 0:
                raise ContractViolation("M2", "prepare_load: hash %s not ready" % h.hex())
            blocks.append(b)
        # BUG: "don't pin the same block twice" -- dedups the increments
        for h in dict.fromkeys(hs):
            get(h).ref_cnt += 1
        return self.backend.get_load_store_spec(blocks)


def make_dedup_loads(num_blocks, enable_events=False):
    return _DedupLoads(num_blocks, enable_events)


# --------------------------------------------------------------------------- 3
class _EventRingOrder(ClockOffloadingManager):
    """The stored event lists the newly ready hashes in the policy ring's
    order (roughly allocation order) instead of the order of the argument."""

    def complete_store(self, hashes, success: bool = True) -> None:
        if not success:
            return super().complete_store(hashes, success)
        hs = _read_hashes(hashes, "complete_store")
        get = self.policy.get
        newly = set()
        for h in hs:
            b = get(h)
            if b is not None and b.ref_cnt == PENDING:
                b.ref_cnt = 0
                newly.add(h)
        if newly and self._events is not None:
            # BUG: walks the ring to get a "stable" order
            ordered = [h for h, _e in self.policy._ring.items() if h in newly]
            self._events.append(self._event(ordered, removed=False))


def make_event_ring_order(num_blocks, enable_events=False):
    return _EventRingOrder(num_blocks, enable_events)


# --------------------------------------------------------------------------- 4
class _SweepingClock(ClockPolicy):
    """evict() has no up-front feasibility check: it sweeps (at most two full
    turns), clearing reference bits as it goes, and only then notices it found
    too few victims -- returning None with the bits already cleared."""

    def evict(self, n, protected) -> Optional[List[Tuple[bytes, Block]]]:
        if n <= 0:
            return []
        ring = self._ring
        chosen: "OrderedDict[bytes, None]" = OrderedDict()
        steps = 0
        limit = 2 * len(ring)
        while len(chosen) < n and steps < limit:
            h, e = next(iter(ring.items()))
            if h not in chosen and e.block.ref_cnt == 0 and h not in protected:
                if e.referenced:
                    e.referenced = False  # BUG: mutated before we know we succeed
                else:
                    chosen[h] = None
            ring.move_to_end(h)
            steps += 1
        if len(chosen) < n:
            return None
        return [(h, ring.pop(h).block) for h in chosen]


class _SweepingClockManager(ClockOffloadingManager):
    policy_cls = _SweepingClock


def make_refused_sweep(num_blocks, enable_events=False):
    return _SweepingClockManager(num_blocks, enable_events)


# --------------------------------------------------------------------------- 5
class _EvictsPending(ClockPolicy):
    """'In use' is tested as ref_cnt > 0, so a pending block (ref_cnt == -1,
    store in flight) counts as evictable."""

    def can_evict(self, n, protected) -> bool:
        if n <= 0:
            return True
        found = 0
        for h, e in self._ring.items():
            if not e.block.ref_cnt > 0 and h not in protected:  # BUG
                found += 1
                if found >= n:
                    return True
        return False

    def evict(self, n, protected):
        if n <= 0:
            return []
        if not self.can_evict(n, protected):
            return None
        ring = self._ring
        victims = []
        while len(victims) < n:
            h, e = next(iter(ring.items()))
            if e.block.ref_cnt > 0 or h in protected:  # BUG: pending (-1) passes
                ring.move_to_end(h)
            elif e.referenced:
                e.referenced = False
                ring.move_to_end(h)
            else:
                del ring[h]
                victims.append((h, e.block))
        return victims


class _EvictsPendingManager(ClockOffloadingManager):
    policy_cls = _EvictsPending


def make_evict_pending(num_blocks, enable_events=False):
    return _EvictsPendingManager(num_blocks, enable_events)


ALL = {
    "make_protect_new_only": make_protect_new_only,
    "make_dedup_loads": make_dedup_loads,
    "make_event_ring_order": make_event_ring_order,
    "make_refused_sweep": make_refused_sweep,
    "make_evict_pending": make_evict_pending,
}
