"""A scheduler-side KV offloading manager for vLLM 0.33 that evicts with SIEVE.

Blocks live in one FIFO queue, oldest to newest; new blocks join at the newest
end. Each block has a "visited" bit. The hand starts at the oldest block and
moves toward the newest, wrapping around. When space is needed, every block the
hand passes that could be evicted either loses its visited bit (if set) or is
evicted (if not). Blocks that cannot be evicted -- pending stores (ref_cnt -1),
blocks being read (ref_cnt > 0), and the keys of the store itself -- are passed
over with their bit untouched.

What counts as a use (sets the visited bit): a touch() of a ready block.
A lookup, a load or a completed store is not a use, and neither is a touch of a
block whose store is still in flight (that is the storing request itself).
vLLM 0.33's scheduler reports reuse through on_request_finished(); this manager
ignores that hook, so the visited bit comes from touch() alone.

Bookkeeping otherwise follows vLLM's CPUOffloadingManager: ref_cnt -1 pending,
0 ready and idle, k > 0 ready with k loads in flight; store specs are
CPULoadStoreSpec block ids; events (when enabled) are one removed event per
eviction batch and one stored event per completing call. Unlike vLLM's
(assert-based) manager, a bad call raises and leaves everything as it was.
"""

from collections import Counter, deque
from collections.abc import Collection, Iterable

from vllm.v1.kv_offload.base import (
    LoadStoreSpec,
    LookupResult,
    Medium,
    OffloadingEvent,
    OffloadingManager,
    OffloadKey,
    PrepareStoreOutput,
    ReqContext,
    RequestOffloadingContext,
)
from vllm.v1.kv_offload.cpu.common import CPULoadStoreSpec
from vllm.v1.metrics.cache_hit_source import CacheHitSource


class ContractViolation(AssertionError):
    """A call the manager refuses (vLLM's own manager asserts here)."""


class _Block:
    __slots__ = ("key", "block_id", "ref_cnt", "visited", "older", "newer")

    def __init__(self, key: OffloadKey, block_id: int):
        self.key = key
        self.block_id = block_id
        self.ref_cnt = -1  # pending until complete_store(success=True)
        self.visited = False
        self.older: _Block | None = None
        self.newer: _Block | None = None

    @property
    def is_ready(self) -> bool:
        return self.ref_cnt >= 0


class SieveOffloadingManager(OffloadingManager):
    def __init__(self, num_blocks: int, enable_events: bool = False):
        if num_blocks < 0:
            raise ValueError(f"num_blocks must be >= 0, got {num_blocks}")
        self.medium = Medium.CPU
        self.num_blocks = num_blocks
        self.events: list[OffloadingEvent] | None = [] if enable_events else None
        self._init_state()

    def _init_state(self) -> None:
        self._blocks: dict[OffloadKey, _Block] = {}
        self._oldest: _Block | None = None
        self._newest: _Block | None = None
        self._hand: _Block | None = None  # None: start at the oldest block
        self._free_ids: deque[int] = deque(range(self.num_blocks))
        self._num_evictable = 0  # ready blocks with ref_cnt == 0

    # --- introspection (not part of vLLM's interface) ---

    def get_num_free_blocks(self) -> int:
        return len(self._free_ids)

    def ref_cnt(self, key: OffloadKey) -> int | None:
        block = self._blocks.get(key)
        return None if block is None else block.ref_cnt

    def queue(self) -> list[tuple[OffloadKey, int, bool]]:
        """(key, ref_cnt, visited), oldest first."""
        out, node = [], self._oldest
        while node is not None:
            out.append((node.key, node.ref_cnt, node.visited))
            node = node.newer
        return out

    # --- helpers ---

    @staticmethod
    def _as_keys(keys: Iterable[OffloadKey]) -> list[OffloadKey]:
        if isinstance(keys, (bytes, bytearray, str)):
            raise TypeError("expected a collection of keys, not a single key")
        keys = list(keys)  # read a one-shot iterable exactly once
        for key in keys:
            if not isinstance(key, bytes):
                raise TypeError(f"offload keys must be bytes, got {type(key)!r}")
        return keys

    def _push_newest(self, block: _Block) -> None:
        block.older, block.newer = self._newest, None
        if self._newest is None:
            self._oldest = block
        else:
            self._newest.newer = block
        self._newest = block
        self._blocks[block.key] = block

    def _remove(self, block: _Block) -> None:
        """Unlink a block from the queue and the key map (its id is not freed)."""
        if self._hand is block:
            self._hand = block.newer
        if block.older is None:
            self._oldest = block.newer
        else:
            block.older.newer = block.newer
        if block.newer is None:
            self._newest = block.older
        else:
            block.newer.older = block.older
        block.older = block.newer = None
        del self._blocks[block.key]

    def _is_candidate(self, block: _Block, protected: set[OffloadKey]) -> bool:
        return block.ref_cnt == 0 and block.key not in protected

    def _evict(self, n: int, protected: set[OffloadKey]) -> list[_Block] | None:
        """Evict exactly n blocks with the SIEVE hand, or return None untouched."""
        num_protected_idle = 0
        for key in protected:
            block = self._blocks.get(key)
            if block is not None and block.ref_cnt == 0:
                num_protected_idle += 1
        if self._num_evictable - num_protected_idle < n:
            return None  # decided before the hand moves or any bit is cleared

        victims: list[_Block] = []
        node = self._hand or self._oldest
        while len(victims) < n:
            following = node.newer or self._oldest  # wrap around
            if self._is_candidate(node, protected):
                if node.visited:
                    node.visited = False
                else:
                    self._remove(node)
                    victims.append(node)
            node = following
        # the hand rests on the block after the last victim
        self._hand = node if self._blocks.get(node.key) is node else None
        self._num_evictable -= n
        return victims

    # --- OffloadingManager interface ---

    def on_new_request(self, req_context: ReqContext) -> RequestOffloadingContext:
        return RequestOffloadingContext()

    def lookup(self, key: OffloadKey, req_context: ReqContext) -> LookupResult:
        if not isinstance(key, bytes):
            raise TypeError(f"offload keys must be bytes, got {type(key)!r}")
        block = self._blocks.get(key)
        if block is None:
            return LookupResult.MISS
        return LookupResult.HIT if block.is_ready else LookupResult.HIT_PENDING

    def get_load_source(
        self, key: OffloadKey, req_context: ReqContext
    ) -> CacheHitSource:
        return CacheHitSource.HOST

    def prepare_load(
        self, keys: Collection[OffloadKey], req_context: ReqContext
    ) -> LoadStoreSpec:
        keys = self._as_keys(keys)
        blocks = []
        for key in keys:
            block = self._blocks.get(key)
            if block is None or not block.is_ready:
                state = "absent" if block is None else "pending"
                raise ContractViolation(f"M2: cannot load {state} key {key!r}")
            blocks.append(block)
        for block in blocks:  # a key listed twice is pinned twice
            if block.ref_cnt == 0:
                self._num_evictable -= 1
            block.ref_cnt += 1
        return CPULoadStoreSpec([block.block_id for block in blocks])

    def touch(self, keys: Collection[OffloadKey], req_context: ReqContext) -> None:
        for key in self._as_keys(keys):
            block = self._blocks.get(key)
            if block is not None and block.is_ready:
                block.visited = True

    def complete_load(
        self, keys: Collection[OffloadKey], req_context: ReqContext
    ) -> None:
        counts = Counter(self._as_keys(keys))
        for key, count in counts.items():
            block = self._blocks.get(key)
            if block is None or block.ref_cnt < count:
                have = None if block is None else block.ref_cnt
                raise ContractViolation(
                    f"M3: key {key!r} completes {count} load(s), ref_cnt is {have}"
                )
        for key, count in counts.items():
            block = self._blocks[key]
            block.ref_cnt -= count
            if block.ref_cnt == 0:
                self._num_evictable += 1

    def prepare_store(
        self, keys: Collection[OffloadKey], req_context: ReqContext
    ) -> PrepareStoreOutput | None:
        keys = self._as_keys(keys)
        to_store = list(dict.fromkeys(k for k in keys if k not in self._blocks))
        if not to_store:
            return PrepareStoreOutput(
                keys_to_store=[], store_spec=CPULoadStoreSpec([]), evicted_keys=[]
            )

        victims: list[_Block] = []
        need = len(to_store) - len(self._free_ids)
        if need > 0:
            # every key of the request is protected, also those already stored
            evicted = self._evict(need, set(keys))
            if evicted is None:
                return None
            victims = evicted
            for block in victims:
                self._free_ids.append(block.block_id)
            if self.events is not None:
                self.events.append(
                    OffloadingEvent(
                        keys=[b.key for b in victims], medium=self.medium, removed=True
                    )
                )

        new_blocks = [_Block(key, self._free_ids.popleft()) for key in to_store]
        for block in new_blocks:  # the last key ends up the newest
            self._push_newest(block)
        return PrepareStoreOutput(
            keys_to_store=to_store,
            store_spec=CPULoadStoreSpec([b.block_id for b in new_blocks]),
            evicted_keys=[b.key for b in victims],
        )

    def complete_store(
        self,
        keys: Collection[OffloadKey],
        req_context: ReqContext,
        success: bool = True,
    ) -> None:
        keys = self._as_keys(keys)
        if success:
            stored = []
            for key in keys:
                block = self._blocks.get(key)
                if block is not None and block.ref_cnt == -1:
                    block.ref_cnt = 0
                    self._num_evictable += 1
                    stored.append(key)
            if stored and self.events is not None:
                self.events.append(
                    OffloadingEvent(keys=stored, medium=self.medium, removed=False)
                )
        else:
            # only pending blocks are dropped; ready ones were stored earlier.
            # They were never announced, so no event either.
            for key in keys:
                block = self._blocks.get(key)
                if block is not None and block.ref_cnt == -1:
                    self._remove(block)
                    self._free_ids.append(block.block_id)

    def on_request_finished(self, req_context: ReqContext) -> None:
        return  # see the module docstring: reuse is learnt from touch() only

    def reset_cache(self) -> None:
        # Like vLLM: drop every block, pinned or pending, without events; the
        # scheduler never completes loads or stores issued before the reset.
        self._init_state()

    def take_events(self) -> Iterable[OffloadingEvent]:
        if self.events is None:
            return
        events, self.events = self.events, []
        yield from events


def make_manager(num_blocks: int, enable_events: bool = False) -> SieveOffloadingManager:
    return SieveOffloadingManager(num_blocks, enable_events=enable_events)
