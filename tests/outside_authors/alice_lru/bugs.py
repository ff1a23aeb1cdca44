"""Five buggy variants of manager.LRUOffloadingManager, one bug each.

Each is the kind of mistake a real engineer could ship; see BUGS.md for the
clause broken and a call sequence that exposes it.
"""

from __future__ import annotations

from collections import Counter
from typing import List, Optional

from kvoffload.spec import (
    ContractViolation,
    CPULoadStoreSpec,
    OffloadingEvent,
    PrepareStoreOutput,
)

from .manager import PENDING, LRUOffloadingManager, _Block, _read_all, _short


# ---------------------------------------------------------------------------
# 1. Eviction protects only the hashes being newly stored.
class _ProtectNewOnly(LRUOffloadingManager):
    def prepare_store(self, hashes):
        keys = _read_all(hashes)
        blocks = self._blocks
        to_store: List[bytes] = []
        seen = set()
        for h in keys:
            if h not in blocks and h not in seen:
                seen.add(h)
                to_store.append(h)
        if not to_store:
            return PrepareStoreOutput([], CPULoadStoreSpec([]), [])
        need = len(to_store) - len(self._free)
        # BUG: "protect what we are about to store" -- but the hashes of the
        # request that are already offloaded are left evictable.
        victims = self._select_victims(need, set(to_store))
        if victims is None:
            return None
        for h in victims:
            self._free.append(blocks.pop(h).block_id)
        ids = []
        for h in to_store:
            blk = _Block(self._free.pop())
            blocks[h] = blk
            ids.append(blk.block_id)
        if self.enable_events and victims:
            self._events.append(OffloadingEvent(list(victims), self.block_size, self.medium, True))
        return PrepareStoreOutput(to_store, CPULoadStoreSpec(ids), victims)


def make_protect_new_only(num_blocks, enable_events=False):
    return _ProtectNewOnly(num_blocks, enable_events)


# ---------------------------------------------------------------------------
# 2. A load counts as a use of the block.
class _LoadRefreshes(LRUOffloadingManager):
    def prepare_load(self, hashes):
        keys = _read_all(hashes)
        spec = super().prepare_load(keys)
        # BUG: "the block is hot, it is being read" -- refreshes recency on
        # load (and in front-to-back order, so the last hash ends up newest).
        for h in keys:
            self._blocks.move_to_end(h)
        return spec


def make_load_refreshes(num_blocks, enable_events=False):
    return _LoadRefreshes(num_blocks, enable_events)


# ---------------------------------------------------------------------------
# 3. Evict-as-you-go with a rollback that loses the LRU positions.
class _NoneReorders(LRUOffloadingManager):
    def prepare_store(self, hashes):
        keys = _read_all(hashes)
        blocks = self._blocks
        to_store: List[bytes] = []
        seen = set()
        for h in keys:
            if h not in blocks and h not in seen:
                seen.add(h)
                to_store.append(h)
        if not to_store:
            return PrepareStoreOutput([], CPULoadStoreSpec([]), [])
        need = len(to_store) - len(self._free)
        protected = set(keys)
        victims: List[tuple] = []
        if need > 0:
            for h in list(blocks):
                if len(victims) == need:
                    break
                blk = blocks[h]
                if blk.ref_cnt == 0 and h not in protected:
                    victims.append((h, blocks.pop(h)))
            if len(victims) < need:
                # BUG: rollback re-inserts the tentative victims, but an
                # OrderedDict insert goes to the most-recent end, so a refused
                # store silently refreshes the oldest blocks.
                for h, blk in victims:
                    blocks[h] = blk
                return None
        for _, blk in victims:
            self._free.append(blk.block_id)
        ids = []
        for h in to_store:
            blk = _Block(self._free.pop())
            blocks[h] = blk
            ids.append(blk.block_id)
        evicted = [h for h, _ in victims]
        if self.enable_events and evicted:
            self._events.append(OffloadingEvent(list(evicted), self.block_size, self.medium, True))
        return PrepareStoreOutput(to_store, CPULoadStoreSpec(ids), evicted)


def make_none_reorders(num_blocks, enable_events=False):
    return _NoneReorders(num_blocks, enable_events)


# ---------------------------------------------------------------------------
# 4. complete_load validates each occurrence, not the total per block.
class _DupUnload(LRUOffloadingManager):
    def complete_load(self, hashes):
        keys = _read_all(hashes)
        blocks = self._blocks
        for h in keys:
            blk = blocks.get(h)
            if blk is None:
                raise ContractViolation("M3", f"complete_load: hash {_short(h)} is absent")
            # BUG: checks one occurrence against ref_cnt; a hash listed twice
            # with one outstanding load passes and is decremented twice.
            if blk.ref_cnt < 1:
                raise ContractViolation("M3", f"complete_load: hash {_short(h)} has no load")
        for h, c in Counter(keys).items():
            blocks[h].ref_cnt -= c


def make_dup_unload(num_blocks, enable_events=False):
    return _DupUnload(num_blocks, enable_events)


# ---------------------------------------------------------------------------
# 5. A failed store drops the hash but never returns its block.
class _FailLeaksBlock(LRUOffloadingManager):
    def complete_store(self, hashes, success=True):
        if success:
            return super().complete_store(hashes, success)
        if not isinstance(success, bool):
            raise TypeError("success must be a bool")
        keys = _read_all(hashes)
        for h in keys:
            blk = self._blocks.get(h)
            if blk is not None and blk.ref_cnt == PENDING:
                # BUG: removed from the table, but the block id is not pushed
                # back onto the free list -- capacity leaks one block per
                # failed store.
                del self._blocks[h]


def make_fail_leaks_block(num_blocks, enable_events=False):
    return _FailLeaksBlock(num_blocks, enable_events)


ALL = [
    "make_protect_new_only",
    "make_load_refreshes",
    "make_none_reorders",
    "make_dup_unload",
    "make_fail_leaks_block",
]
