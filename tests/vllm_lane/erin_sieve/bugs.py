"""Five variants of the SIEVE manager, each with one deliberate bug.

See BUGS.md for what each one gets wrong and a call sequence that shows it.
"""

from collections import deque

from vllm.v1.kv_offload.base import OffloadingEvent

from .manager import SieveOffloadingManager, _Block


class _RefusalClearsBits(SieveOffloadingManager):
    """Walks the hand first and checks for enough victims afterwards."""

    def _evict(self, n, protected):
        chosen: list[_Block] = []
        node = self._hand or self._oldest
        # lap 1 clears visited bits, lap 2 finds the unvisited victims
        for _ in range(2 * len(self._blocks)):
            if len(chosen) == n:
                break
            if self._is_candidate(node, protected) and node not in chosen:
                if node.visited:
                    node.visited = False
                else:
                    chosen.append(node)
            node = node.newer or self._oldest
        self._hand = node
        if len(chosen) < n:
            return None
        for block in chosen:
            self._remove(block)
        self._num_evictable -= n
        return chosen


class _PendingEvictable(SieveOffloadingManager):
    """Treats every block nobody is reading as a candidate."""

    def _is_candidate(self, block, protected):
        # idle = no load in flight
        return block.ref_cnt <= 0 and block.key not in protected


class _FailedStoreAnnounced(SieveOffloadingManager):
    """Tells event consumers that the blocks of a failed store were removed."""

    def complete_store(self, keys, req_context, success=True):
        keys = self._as_keys(keys)
        if success:
            return super().complete_store(keys, req_context, success=True)
        removed = []
        for key in keys:
            block = self._blocks.get(key)
            if block is not None and block.ref_cnt == -1:
                self._remove(block)
                self._free_ids.append(block.block_id)
                removed.append(key)
        if removed and self.events is not None:
            self.events.append(
                OffloadingEvent(keys=removed, medium=self.medium, removed=True)
            )


class _FailedStoreLeaks(SieveOffloadingManager):
    """Drops a failed store's block from the cache but never frees its id."""

    def complete_store(self, keys, req_context, success=True):
        keys = self._as_keys(keys)
        if success:
            return super().complete_store(keys, req_context, success=True)
        for key in keys:
            block = self._blocks.get(key)
            if block is not None and block.ref_cnt == -1:
                self._remove(block)


class _ResetKeepsHand(SieveOffloadingManager):
    """Resets every field it remembers to reset; the hand is not one of them."""

    def reset_cache(self):
        self._blocks.clear()
        self._oldest = self._newest = None
        self._free_ids = deque(range(self.num_blocks))
        self._num_evictable = 0


def make_refusal_clears_bits(num_blocks, enable_events=False):
    return _RefusalClearsBits(num_blocks, enable_events=enable_events)


def make_pending_evictable(num_blocks, enable_events=False):
    return _PendingEvictable(num_blocks, enable_events=enable_events)


def make_failed_store_announced(num_blocks, enable_events=False):
    return _FailedStoreAnnounced(num_blocks, enable_events=enable_events)


def make_failed_store_leaks(num_blocks, enable_events=False):
    return _FailedStoreLeaks(num_blocks, enable_events=enable_events)


def make_reset_keeps_hand(num_blocks, enable_events=False):
    return _ResetKeepsHand(num_blocks, enable_events=enable_events)
