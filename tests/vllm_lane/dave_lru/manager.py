"""An independent LRU CPU offloading manager for vLLM 0.32.

Written against the abstract ``vllm.v1.kv_offload.base.OffloadingManager``
interface, aiming to be observably identical to vLLM's own
``CPUOffloadingManager(cache_policy="lru")`` with default settings
(``store_threshold`` disabled).

Design
------
* ``_table`` is one ``OrderedDict`` holding *every* resident key (pending,
  ready-and-pinned, ready-and-idle), ordered from least to most recently
  used.  A recency update is ``move_to_end``.  Eviction walks the table from
  the front and picks idle (ready, unpinned), unprotected entries.
* Each entry is a tiny mutable record ``[slot, pins]``; ``pins == -1`` means
  "store still in flight", ``pins >= 0`` means ready with that many
  outstanding loads.
* Slots come from ``_SlotPool``: a stack of free slot ids, initially holding
  all ids so the lowest ids are handed out first, freed ids are reused LIFO.
* Request-scoped recency: every key a request *used* (loaded, newly stored,
  or offered for store while already ready) is remembered per request and
  gets its recency bumped when the request finishes, the request's first
  key ending up most recently used.  The trace lives inside the request's
  ``ReqContext`` (keyed by a private type), tagged with this manager and a
  cache generation so that ``reset_cache`` invalidates it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Iterable, Iterator

from vllm.distributed.kv_transfer.kv_connector.v1.offloading.metrics import (
    OffloadingConnectorStats,
)
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
    get_offload_group_idx,
)
from vllm.v1.kv_offload.cpu.common import CPULoadStoreSpec, CPUOffloadingMetrics
from vllm.v1.metrics.cache_hit_source import CacheHitSource

_PENDING = -1  # pins value of an entry whose store has not completed yet
_SLOT, _PINS = 0, 1  # field indices of a table entry


class _SlotPool:
    """Free list of slot ids in [0, capacity)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._free: list[int] = []
        self.refill()

    def refill(self) -> None:
        # popping from the end hands out 0, 1, 2, ... first
        self._free = list(range(self.capacity - 1, -1, -1))

    def available(self) -> int:
        return len(self._free)

    def in_use(self) -> int:
        return self.capacity - len(self._free)

    def take(self) -> int:
        return self._free.pop()

    def give_back(self, slot: int) -> None:
        self._free.append(slot)


class _RequestTrace:
    """Keys a single request used, for the recency update at finish time."""

    __slots__ = ("owner", "generation", "by_group", "known", "closed")

    def __init__(self, owner: object, generation: int) -> None:
        self.owner = owner
        self.generation = generation
        self.by_group: dict[int, list[OffloadKey]] = {}
        self.known: set[OffloadKey] = set()
        self.closed = False

    def note(self, keys: Iterable[OffloadKey]) -> None:
        for key in keys:
            if key in self.known:
                continue
            assert not self.closed, (
                "New cache keys observed after request finalization"
            )
            self.by_group.setdefault(get_offload_group_idx(key), []).append(key)
            self.known.add(key)


class DaveLRUOffloadingManager(OffloadingManager):
    medium = Medium.CPU

    def __init__(self, num_blocks: int, enable_events: bool = False) -> None:
        self._capacity = num_blocks
        self._pool = _SlotPool(num_blocks)
        self._table: OrderedDict[OffloadKey, list[int]] = OrderedDict()
        self._idle = 0  # entries that are ready and unpinned
        self._writing = 0  # stores in flight (as counted by prepare_store)
        self._generation = 0
        self._alloc_sizes: list[int] = []
        self._events: list[OffloadingEvent] | None = [] if enable_events else None

    # ------------------------------------------------------------ helpers

    def _trace(self, req_context: ReqContext) -> _RequestTrace:
        trace = req_context.get_state(_RequestTrace)
        if (
            trace is None
            or trace.owner is not self
            or trace.generation != self._generation
        ):
            trace = _RequestTrace(self, self._generation)
            req_context.set_state(trace)
        return trace

    def _bump(self, keys_most_recent_first: list[OffloadKey]) -> None:
        """Make the given resident keys most recently used, the first one
        ending up as the most recent of all."""
        table = self._table
        for key in reversed(keys_most_recent_first):
            if key in table:
                table.move_to_end(key)

    def _pick_victims(
        self, count: int, shielded: set[OffloadKey]
    ) -> list[OffloadKey] | None:
        victims: list[OffloadKey] = []
        if count <= 0:
            return victims
        for key, entry in self._table.items():
            if entry[_PINS] == 0 and key not in shielded:
                victims.append(key)
                if len(victims) == count:
                    return victims
        return None

    def _emit(self, keys: list[OffloadKey], removed: bool) -> None:
        if self._events is not None and keys:
            self._events.append(
                OffloadingEvent(keys=keys, medium=self.medium, removed=removed)
            )

    # ------------------------------------------------------ request hooks

    def on_new_request(self, req_context: ReqContext) -> RequestOffloadingContext:
        self._trace(req_context)
        return RequestOffloadingContext()

    def on_request_finished(self, req_context: ReqContext) -> None:
        trace = req_context.get_state(_RequestTrace)
        if (
            trace is None
            or trace.owner is not self
            or trace.generation != self._generation
            or trace.closed
        ):
            return
        trace.closed = True

        def by_position(keys: list[OffloadKey]) -> list[OffloadKey]:
            pos = [req_context.get_offload_key_position(k) for k in keys]
            if any(p is None for p in pos):
                return keys
            order = sorted(range(len(keys)), key=pos.__getitem__)
            return [keys[i] for i in order]

        ordered: list[OffloadKey] = []
        for group in sorted(trace.by_group):
            ordered.extend(by_position(trace.by_group[group]))
        self._bump(by_position(ordered))

    # ------------------------------------------------------------ lookups

    def lookup(self, key: OffloadKey, req_context: ReqContext) -> LookupResult:
        entry = self._table.get(key)
        if entry is None:
            return LookupResult.MISS
        return LookupResult.HIT_PENDING if entry[_PINS] < 0 else LookupResult.HIT

    def get_load_source(
        self, key: OffloadKey, req_context: ReqContext
    ) -> CacheHitSource:
        return CacheHitSource.HOST

    def touch(self, keys: Collection[OffloadKey], req_context: ReqContext) -> None:
        self._bump(list(keys))

    # -------------------------------------------------------------- loads

    def prepare_load(
        self, keys: Collection[OffloadKey], req_context: ReqContext
    ) -> LoadStoreSpec:
        slots: list[int] = []
        for key in keys:
            entry = self._table.get(key)
            assert entry is not None, f"Chunk {key!r} not found in cache"
            assert entry[_PINS] >= 0, f"Chunk {key!r} is not ready for reading"
            if entry[_PINS] == 0:
                self._idle -= 1
            entry[_PINS] += 1
            slots.append(entry[_SLOT])
        self._trace(req_context).note(keys)
        return CPULoadStoreSpec(slots)

    def complete_load(
        self, keys: Collection[OffloadKey], req_context: ReqContext
    ) -> None:
        for key in keys:
            entry = self._table.get(key)
            assert entry is not None, f"Chunk {key!r} not found"
            assert entry[_PINS] > 0, f"Chunk {key!r} ref_cnt is already 0"
            entry[_PINS] -= 1
            if entry[_PINS] == 0:
                self._idle += 1

    # ------------------------------------------------------------- stores

    def prepare_store(
        self, keys: Collection[OffloadKey], req_context: ReqContext
    ) -> PrepareStoreOutput | None:
        offered = list(keys)
        table = self._table
        fresh = [k for k in offered if k not in table]
        present_ready = {k for k in offered if k in table and table[k][_PINS] >= 0}

        trace = self._trace(req_context)
        fresh_set = set(fresh)
        trace.note(k for k in offered if k in fresh_set or k in present_ready)

        if not fresh:
            return PrepareStoreOutput(
                keys_to_store=[], store_spec=CPULoadStoreSpec([]), evicted_keys=[]
            )

        self._alloc_sizes.append(len(fresh))
        victims = self._pick_victims(
            len(fresh) - self._pool.available(), set(offered)
        )
        if victims is None:
            return None

        for key in victims:
            self._pool.give_back(table.pop(key)[_SLOT])
        self._idle -= len(victims)
        self._emit(victims, removed=True)

        slots = []
        for key in fresh:
            slot = self._pool.take()
            slots.append(slot)
            table[key] = [slot, _PENDING]
            table.move_to_end(key)
        self._writing += len(fresh)

        return PrepareStoreOutput(
            keys_to_store=fresh,
            store_spec=CPULoadStoreSpec(slots),
            evicted_keys=victims,
        )

    def complete_store(
        self,
        keys: Collection[OffloadKey],
        req_context: ReqContext,
        success: bool = True,
    ) -> None:
        table = self._table
        landed: list[OffloadKey] = []
        for key in keys:
            entry = table.get(key)
            if entry is None or entry[_PINS] != _PENDING:
                continue
            self._writing -= 1
            if success:
                entry[_PINS] = 0
                self._idle += 1
                landed.append(key)
            else:
                del table[key]
                self._pool.give_back(entry[_SLOT])
        self._emit(landed, removed=False)

    # -------------------------------------------------------------- misc

    def take_events(self) -> Iterator[OffloadingEvent]:
        if self._events is None:
            return
        yield from self._events
        self._events.clear()

    def reset_cache(self) -> None:
        self._table.clear()
        self._pool.refill()
        self._idle = 0
        self._writing = 0
        self._generation += 1

    def get_stats(self) -> OffloadingConnectorStats:
        stats = OffloadingConnectorStats()
        cap = self._capacity
        busy = self._pool.in_use() - self._idle
        usage = busy / cap if cap > 0 else 0.0
        stats.set_gauge(CPUOffloadingMetrics.CPU_CACHE_USAGE_PERC, usage)
        for size in self._alloc_sizes:
            stats.observe_histogram(CPUOffloadingMetrics.CPU_ALLOCATION_SIZE, size)
        self._alloc_sizes.clear()
        write_usage = self._writing / cap if cap > 0 else 0.0
        stats.set_gauge(CPUOffloadingMetrics.CPU_CACHE_WRITE_USAGE_PERC, write_usage)
        stats.set_gauge(
            CPUOffloadingMetrics.CPU_CACHE_READ_USAGE_PERC,
            max(usage - write_usage, 0.0),
        )
        return stats

    # ------------------------------------------------------- introspection

    def live_slots(self) -> dict[OffloadKey, int]:
        """Slot of every resident key (used by the self-test)."""
        return {key: entry[_SLOT] for key, entry in self._table.items()}


def make_manager(num_blocks: int, enable_events: bool = False) -> OffloadingManager:
    return DaveLRUOffloadingManager(num_blocks, enable_events=enable_events)
