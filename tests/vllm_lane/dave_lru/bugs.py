"""Five deliberately buggy variants of manager.DaveLRUOffloadingManager.

Each factory has the same signature as manager.make_manager and injects ONE
subtle bug.  See BUGS.md for a description and a call sequence exposing each.
"""

from __future__ import annotations

from collections.abc import Collection

from vllm.v1.kv_offload.base import OffloadKey, ReqContext

from .manager import _PENDING, _PINS, _SLOT, DaveLRUOffloadingManager


class _RecencyOnStoreCompletion(DaveLRUOffloadingManager):
    """Bug: a completed store refreshes the key's recency (moves it to the MRU
    end), so keys are ordered by store-completion time rather than by the time
    prepare_store admitted them."""

    def complete_store(self, keys, req_context, success=True):
        pending = [
            k for k in keys
            if k in self._table and self._table[k][_PINS] == _PENDING
        ]
        super().complete_store(keys, req_context, success)
        if success:
            for k in pending:
                self._table.move_to_end(k)


class _FailedStoreLeaksSlot(DaveLRUOffloadingManager):
    """Bug: complete_store(success=False) forgets the key but never returns its
    slot to the free list, permanently shrinking the cache."""

    def complete_store(self, keys, req_context, success=True):
        if success:
            return super().complete_store(keys, req_context, success)
        for key in keys:
            entry = self._table.get(key)
            if entry is None or entry[_PINS] != _PENDING:
                continue
            self._writing -= 1
            del self._table[key]  # slot entry[_SLOT] is never given back


class _OfferNotShielded(DaveLRUOffloadingManager):
    """Bug: when prepare_store has to evict, keys that are part of the very
    same offer (already stored and ready) are not shielded and may be evicted
    to make room for their siblings."""

    def _pick_victims(self, count, shielded):
        return super()._pick_victims(count, set())


class _LoadPinIsAFlag(DaveLRUOffloadingManager):
    """Bug: complete_load clears the key's pin entirely instead of decrementing
    its load count, so with two overlapping loads of one key the key becomes
    evictable while the second load is still reading it."""

    def complete_load(
        self, keys: Collection[OffloadKey], req_context: ReqContext
    ) -> None:
        for key in keys:
            entry = self._table.get(key)
            assert entry is not None, f"Chunk {key!r} not found"
            if entry[_PINS] > 0:
                entry[_PINS] = 0
                self._idle += 1


class _FinishBumpsTailFirst(DaveLRUOffloadingManager):
    """Bug: on_request_finished refreshes the request's keys in head-to-tail
    order, leaving the request's LAST block as the most recently used one
    (vLLM leaves the first/prefix block most recent, so tails go first)."""

    def _bump(self, keys_most_recent_first):
        if getattr(self, "_in_finish", False):
            keys_most_recent_first = list(reversed(keys_most_recent_first))
        super()._bump(keys_most_recent_first)

    def on_request_finished(self, req_context):
        self._in_finish = True
        try:
            super().on_request_finished(req_context)
        finally:
            self._in_finish = False


def make_store_recency(num_blocks: int, enable_events: bool = False):
    return _RecencyOnStoreCompletion(num_blocks, enable_events)


def make_failed_store_leak(num_blocks: int, enable_events: bool = False):
    return _FailedStoreLeaksSlot(num_blocks, enable_events)


def make_offer_unshielded(num_blocks: int, enable_events: bool = False):
    return _OfferNotShielded(num_blocks, enable_events)


def make_load_pin_flag(num_blocks: int, enable_events: bool = False):
    return _LoadPinIsAFlag(num_blocks, enable_events)


def make_finish_tail_first(num_blocks: int, enable_events: bool = False):
    return _FinishBumpsTailFirst(num_blocks, enable_events)


ALL = {
    "make_store_recency": make_store_recency,
    "make_failed_store_leak": make_failed_store_leak,
    "make_offer_unshielded": make_offer_unshielded,
    "make_load_pin_flag": make_load_pin_flag,
    "make_finish_tail_first": make_finish_tail_first,
}
