"""``KVOffloadingManager``: vLLM's ``OffloadingManager`` (0.32 and 0.33) over our contract manager.

A thin adapter (mapping table: the package docstring) over a ``KeyIndexedManager``:
the core manager plus Python sets of its present keys (ready, pending). vLLM's
connector calls ``lookup(key, ctx)`` once per key, up to a request's whole prefix at
every scheduler step; that call is two set-membership tests here and never enters
compiled code. Batch calls go to the core, which keeps the sets in step (``keyindex``).
Besides it the adapter keeps, per request, the keys to touch when the request finishes
(vLLM 0.32 updates recency there), counters of what it was told, and vLLM 0.33's
additions in their own modules: the reset fence (N1, ``reset_fence``), admission (N2,
``admission``), metrics (N3, ``stats``), metadata-only release events (N4), the lock (N5).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from itertools import chain, filterfalse, groupby, islice
from operator import itemgetter, lt
from typing import Any, cast

from vllm.v1.kv_offload.base import (
    LookupResult,
    Medium,
    OffloadingEvent,
    OffloadingManager,
    PrepareStoreOutput,
    RequestOffloadingContext,
)
from vllm.v1.kv_offload.cpu.common import CPULoadStoreSpec
from vllm.v1.metrics.cache_hit_source import CacheHitSource

from ...spec.clauses import implements
from ...spec.types import BlockHash
from ..keyindex import KeyIndexedManager
from ..manager import CPUOffloadingManager
from ..request_ranks import RequestRanks
from . import features
from ._log import log_enabled, log_event
from .admission import StoreAdmission
from .arc_requests import ArcRequests
from .reset_fence import ResetFence
from .stats import ManagerStats

__all__ = ["KVOffloadingManager"]

_HIT = LookupResult.HIT
_HIT_PENDING = LookupResult.HIT_PENDING
_MISS = LookupResult.MISS


def _keys(keys: Iterable[bytes]) -> list[BlockHash]:
    """vLLM passes lists (used as they are) and sets of ``OffloadKey`` (plain ``bytes``,
    which our contract takes as they are: I8)."""
    return cast("list[BlockHash]", keys if isinstance(keys, list) else list(keys))


#: An ``OffloadKey``'s group index bytes, big-endian: they order as vLLM's integer does
#: (a C-level key function: no Python frame per key).
_group = itemgetter(slice(-4, None))


@implements("K5")
def _positioned_groups(keys: list[bytes], positions: Mapping[bytes, int]) -> list[bytes]:
    """K5: ``keys`` (sorted by group) with each group whose keys all have a position
    ordered by position, as vLLM's manager orders a group before its policy sees it."""
    ordered: list[bytes] = []
    for _, members in groupby(keys, key=_group):
        group = list(members)
        if all(k in positions for k in group):
            group.sort(key=positions.__getitem__)
        ordered.extend(group)
    return ordered


def _positions(req_context: Any, keys: Iterable[bytes]) -> Mapping[bytes, int]:
    """The request's end-token positions (K5, N9): vLLM's ``ReqContext`` keeps them in a
    dict, read directly (a method call per key costs more than the work), else asked per
    key of ``keys``."""
    positions = getattr(req_context, "_offload_key_positions", None)
    if isinstance(positions, dict):
        return positions
    position = getattr(req_context, "get_offload_key_position", None)
    if not callable(position):
        return {}
    return {key: p for key in keys if (p := position(key)) is not None}


def _exactly_in_position_order(keys: list[bytes], positions: Mapping[bytes, int]) -> bool:
    """Whether ``keys`` are the keys of ``positions`` in its order, their positions
    strictly increasing: then they are distinct and in vLLM's order already (K5's and
    ``order_request_keys``'). The common end of a request (it loaded its hits, offered
    the rest, and the connector positioned exactly those keys, in prefix order) is told
    by a few C-level passes over the dict instead of a lookup per key."""
    if len(keys) != len(positions) or keys != list(positions):
        return False
    values = list(positions.values())
    try:
        return values == sorted(values) and len(set(values)) == len(values)
    except TypeError:  # positions that do not compare: the general path decides
        return False


class KVOffloadingManager(OffloadingManager):  # type: ignore[misc]
    """vLLM ``OffloadingManager`` backed by a ``CPUOffloadingManager`` (M0–M10).

    ``factory`` builds the core manager; it is called again by ``reset_cache``.
    Answers are those of vLLM's own ``CPUOffloadingManager`` of the same policy for LRU
    (lookups, stored and evicted keys, events), block ids aside, and for ARC (K5, K6:
    store misses reported to the policy first; ARC's end-of-request rule; only ARC pays
    for that bookkeeping). ``admission``: the
    store threshold (N2), off by default; ``info``: the labels of vLLM 0.33's info
    gauge (N3).
    """

    #: The LRU order, declared for the conformance suite: ``"recency"`` (L1, vLLM 0.32's) or
    #: ``"request-rank"`` (N9, vLLM 0.33's), the core's (``lru_order=`` where it is built).
    lru_order = "recency"

    def __init__(
        self,
        factory: Callable[[], CPUOffloadingManager],
        *,
        admission: StoreAdmission | None = None,
        info: Mapping[str, str | int | float | bool] | None = None,
    ) -> None:
        self.cache = KeyIndexedManager(factory)
        # The cache's two sets (the same objects for its whole life): all of a lookup.
        self._ready = self.cache.ready
        self._pending = self.cache.pending
        self.counters: Counter[str] = Counter()
        # Per-key lookup answers, counted as plain ints (the hot path; N3 reports them).
        self.lookup_hits = 0
        self.lookup_misses = 0
        # 0.33's exclusion (N5): vLLM enters it around every call; a real lock, so
        # that a thread other than the scheduler's (a metrics reader) is kept out too.
        self._lock = threading.Lock()
        self.fence = ResetFence()
        self.admission = admission or StoreAdmission(0, 0)
        self.stats = ManagerStats()
        self._info = dict(info or {})
        self._events: list[Any] = []  # ours (N4) and the core's, in order
        # The JSON-lines test seam is read once: a disabled log costs nothing per call.
        self._log = log_enabled()
        # req_id -> the lists of keys the request loaded or offered for storing, in call
        # order; made one ordered set and one touch when the request finishes (a copy per
        # call here costs less than merging into a set per call).
        self._seen: dict[str, list[list[bytes]]] = {}
        # K5 and K6 are ARC's alone here: its ghosts are the only keys a store miss changes
        # (A3; for the other policies a touch of absent keys is a no-op, M4), and its
        # end-of-request rule is the only one that tells reused keys from inserted ones.
        self._arc = self.core.policy == "arc"
        # ARC: per open request, the lists its calls saw (K5's flags come at its end).
        self._arc_requests = ArcRequests()
        # N9 (an LRU ranked by request): per open request, its number and what it observed.
        self.lru_order = self.core.lru_order
        self._ranks = RequestRanks() if self.lru_order == "request-rank" else None

    @property
    def core(self) -> CPUOffloadingManager:
        """The core manager of now (``reset_cache`` replaces it)."""
        return self.cache.core

    @property
    def pending(self) -> set[bytes]:
        """Keys whose store is prepared and not completed (the live set: do not modify)."""
        return self._pending

    def _record(self, req_id: str | None, keys: Iterable[bytes]) -> list[bytes]:
        """The request's keys of one call, kept for its end; a copy (the caller may reuse
        its list)."""
        observed = list(keys)
        if req_id is not None:
            seen = self._seen.get(req_id)
            if seen is None:
                seen = self._seen[req_id] = []
            seen.append(observed)
        return observed

    # -- lookups ------------------------------------------------------------------------
    @implements("K1")
    def lookup(self, key: bytes, req_context: Any) -> Any:
        """M1 per key (K1): ``HIT`` ready, ``HIT_PENDING`` pending, ``MISS`` absent."""
        if key in self._ready:
            self.lookup_hits += 1
            return _HIT
        if key in self._pending:
            return _HIT_PENDING
        self.lookup_misses += 1
        return _MISS

    def get_load_source(self, key: bytes, req_context: Any) -> Any:
        return CacheHitSource.HOST

    # -- loads --------------------------------------------------------------------------
    def prepare_load(self, keys: Collection[bytes], req_context: Any) -> Any:
        hashes = _keys(keys)
        spec = self.cache.prepare_load(hashes)
        req_id = getattr(req_context, "req_id", None)
        if self._ranks is not None and req_id is not None:  # N9: the loaded keys are observed
            new, number = self._ranks.begin(self.core, req_id, hashes)
            self._ranks.observe(self.core, req_id, new, number, _positions(req_context, new), new)
        observed = self._record(req_id, hashes)
        if self._arc and req_id is not None:
            self._arc_requests.loaded(req_id, observed)
        self.counters["prepare_load_calls"] += 1
        self.counters["prepare_load_blocks"] += len(hashes)
        if self._log:
            log_event(side="scheduler", op="prepare_load", blocks=len(hashes))
        # vLLM's spec turns any sequence into an int32 array: give it ours (no list).
        return CPULoadStoreSpec(self.fence.physical(spec.block_ids))

    def touch(self, keys: Collection[bytes], req_context: Any) -> None:
        hashes = _keys(keys)
        self.cache.touch(hashes)
        self.counters["touch_blocks"] += len(hashes)

    def complete_load(self, keys: Collection[bytes], req_context: Any) -> None:
        hashes = _keys(keys)
        self.cache.complete_load(hashes)
        self.counters["complete_load_blocks"] += len(hashes)

    # -- stores -------------------------------------------------------------------------
    @implements("N2", "N7")
    def prepare_store(self, keys: Collection[bytes], req_context: Any) -> Any:
        hashes = _keys(keys)
        if self.admission.enabled:  # N2: new keys below the threshold are not offered
            hashes = self.admission.filter_offer(hashes, self._resident)
        # vLLM records the request's absent and ready keys (not the pending ones), even
        # when the store is then refused; read before the call changes the index.
        offered: Iterable[bytes] = hashes
        if self._pending:
            try:
                offered = list(filterfalse(self._pending.__contains__, hashes))
            except TypeError:  # an unhashable element: the core refuses it below (M9)
                offered = []
        req_id = getattr(req_context, "req_id", None)
        if self._arc:  # K6, before M5 (also when the store is then refused)
            self.core.arc_store_misses(hashes, self._arc_requests.reported(req_id, hashes))
        if self._ranks is not None and req_id is not None:
            return self._ranked_store(hashes, offered, req_id, req_context)
        output = self.cache.prepare_store(hashes)
        return self._store_output(hashes, offered, req_id, output)

    @implements("N9")
    def _ranked_store(self, hashes: list[BlockHash], offered: Iterable[bytes], req_id: str, req_context: Any) -> Any:
        """N9: the offered keys new to the request draw its number before the store inserts
        anything; once the store answered (refused or not) they are observed, and the keys
        it stored rank ``(number, -position)``."""
        ranks = self._ranks
        assert ranks is not None
        offered = list(offered)
        try:
            new, number = ranks.begin(self.core, req_id, offered)
        except TypeError:  # an unhashable element: the core refuses the store below (M9)
            new, number = [], 0
        output = self.cache.prepare_store(hashes)
        stored: list[BlockHash] = [] if output is None else output.block_hashes_to_store
        ids = None if output is None else getattr(output.store_spec, "block_ids")  # the core's, for N9
        # The observed keys present and ready may rise. None are when the store took every
        # offered key (M5.1: it stores exactly the absent ones). Else the index tells them
        # after the call as before it: a store evicts none of its own keys (M5.3).
        ready = [] if len(stored) == len(offered) else list(filter(self._ready.__contains__, new))
        ranks.observe(self.core, req_id, new, number, _positions(req_context, offered), ready, stored, ids)
        return self._store_output(hashes, offered, req_id, output)

    def _store_output(self, hashes: list[BlockHash], offered: Iterable[bytes], req_id: str | None, output: Any) -> Any:
        """What ``prepare_store`` records (K5) and answers once the core answered."""
        observed = self._record(req_id, offered)
        if self._arc and req_id is not None:
            if output is None:  # refused: nothing changed, so the ready keys are those of now
                self._arc_requests.refused(req_id, observed, self._ready)
            else:  # M5.1: the keys to store are exactly the offered keys that were absent
                self._arc_requests.stored(req_id, observed, output.block_hashes_to_store)
        if output is None:
            self.counters["prepare_store_refused"] += 1
            if self._log:
                log_event(side="scheduler", op="prepare_store", refused=True, blocks=len(hashes))
            return None
        to_store = output.block_hashes_to_store
        evicted = output.block_hashes_evicted
        self.counters["store_blocks"] += len(to_store)
        self.counters["evicted_blocks"] += len(evicted)
        if to_store:
            self.stats.allocated(len(to_store))
        if self._log and (to_store or evicted):
            log_event(side="scheduler", op="prepare_store", blocks=len(to_store), evicted=len(evicted))
        ids = getattr(output.store_spec, "block_ids")
        return PrepareStoreOutput(
            keys_to_store=to_store,
            store_spec=CPULoadStoreSpec(self.fence.physical(ids)),
            evicted_keys=evicted,
        )

    @implements("N4")
    def complete_store(self, keys: Collection[bytes], req_context: Any, success: bool = True) -> None:
        hashes = _keys(keys)
        failed = [] if success or not features.METADATA_ONLY_EVENTS else [h for h in hashes if h in self._pending]
        self.cache.complete_store(hashes, success=bool(success))
        if failed and self.core.enable_events:  # N4: released, not a public eviction
            self._queue_own_event(failed)
        self.counters["complete_store_blocks" if success else "failed_store_blocks"] += len(hashes)

    # -- requests, events, lifecycle ---------------------------------------------------
    def on_new_request(self, req_context: Any) -> Any:
        self.counters["requests"] += 1
        return RequestOffloadingContext()

    def on_request_finished(self, req_context: Any) -> None:
        """vLLM 0.32 updates recency here (its scheduler never calls ``touch``): one
        ``touch`` (M4) of the request's keys in prefix order, so its first block ends up
        the most recently used (P4), as vLLM's own LRU orders them. ARC: K5's rule
        (``_arc_finish``) instead."""
        self.counters["requests_finished"] += 1
        req_id = getattr(req_context, "req_id", None)
        if self._ranks is not None:  # N9: its end gives fresh numbers (the touch below)
            self._ranks.finish(req_id)
        seen = self._seen.pop(req_id, None)  # type: ignore[arg-type]
        if not seen:
            if self._arc:
                self._arc_requests.finish(req_id, [], False)  # forget the request
            return
        observed = seen[0] if len(seen) == 1 else list(chain.from_iterable(seen))
        keys = self._finish_order(observed, req_context)
        if self._arc:
            # ``_finish_order`` hands back its argument itself exactly when the keys are
            # distinct and in call order already.
            self._arc_finish(*self._arc_requests.finish(req_id, keys, keys is observed))
            return
        if not keys:
            return
        self.cache.touch(keys)
        self.counters["touch_blocks"] += len(keys)

    @implements("K5")
    def _arc_finish(self, keys: list[bytes], reused: bytes) -> None:
        """K5 for ARC: only the keys the request inserted or reused change, a reused one
        as a second use (T1 -> T2), an inserted-only one within its own list."""
        if keys:
            self.core.arc_request_finished(keys, reused)
            self.counters["touch_blocks"] += len(keys)

    @staticmethod
    def _finish_order(keys: list[bytes], req_context: Any) -> list[bytes]:
        """The request's keys once each, first seen first, in vLLM's order
        (``order_request_keys``): by group, then by end-token position when every key
        has one (stable: groups break ties)."""
        positions = _positions(req_context, keys)
        if _exactly_in_position_order(keys, positions):
            return keys  # the usual end of a request, without a dict lookup per key
        try:
            order = list(map(positions.__getitem__, keys))
        except KeyError:  # a key without a position: groups, first seen first
            keys = list(dict.fromkeys(keys))
            keys.sort(key=_group)
            return _positioned_groups(keys, positions) if positions else keys
        if all(map(lt, order, islice(order, 1, None))):
            # Strictly increasing positions (the usual case): the keys are distinct (a
            # key has one position) and in order already: no dedup, no sort.
            return keys
        keys = list(dict.fromkeys(keys))
        if len(set(map(positions.__getitem__, keys))) < len(keys):
            keys.sort(key=_group)  # equal positions (one per group): groups break ties
        keys.sort(key=positions.__getitem__)
        return keys

    def _resident(self, key: bytes) -> bool:
        """Present in the core: being stored (pending) or ready."""
        return key in self._ready or key in self._pending

    def _drain_core_events(self) -> None:
        for event in self.cache.take_events():
            self._events.append(
                OffloadingEvent(keys=list(event.block_hashes), medium=Medium.CPU, removed=event.removed)
            )

    def _queue_own_event(self, keys: list[bytes]) -> None:
        self._drain_core_events()  # keep the order of what happened
        self._events.append(OffloadingEvent(keys=keys, medium=Medium.CPU, removed=True, metadata_only=True))

    @implements("N4")
    def take_events(self) -> Iterable[Any]:
        """M8 in vLLM's shape; a failed store's release (N4) lists only the keys that no
        later store has made present again."""
        self._drain_core_events()
        events, self._events = self._events, []
        for event in events:
            if getattr(event, "metadata_only", False):
                keys = [k for k in event.keys if not self._resident(k)]
                if not keys:
                    continue
                event = OffloadingEvent(keys=keys, medium=Medium.CPU, removed=True, metadata_only=True)
            yield event

    @property
    @implements("N5")
    def lock(self) -> threading.Lock:
        """N5: held by vLLM 0.33's caller around every call but ``shutdown``; not reentrant."""
        return self._lock

    @implements("N1")
    def reset_cache(self) -> None:
        """Every block dropped; events already queued are kept, as vLLM's own manager
        keeps them. 0.33 (N1): blocks a copy may still touch stay fenced until
        ``on_reset_flushed``; 0.32 discards pre-reset jobs and flushes them first."""
        old = self.cache.core
        self.cache.reset()
        if features.RESET_FENCE:
            self.counters["fenced_blocks"] += self.fence.fence(old, self.cache.core)
        else:
            self.fence = ResetFence()
        self._seen.clear()
        self._arc_requests.clear()
        if self._ranks is not None:
            self._ranks.clear()
        self.counters["resets"] += 1
        if self._log:
            log_event(side="scheduler", op="reset_cache")

    @implements("N1")
    def on_reset_flushed(self) -> None:
        """N1: the workers reported every job in flight at the last reset: free its blocks."""
        self.counters["released_fenced_blocks"] += self.fence.release(self.cache.core)

    @implements("N3")
    def get_stats(self) -> Any:
        """N3: the metric families of vLLM's CPU manager plus ours (``stats.py``)."""
        self.counters["lookup_hit"] = self.lookup_hits
        self.counters["lookup_miss"] = self.lookup_misses
        skipped = self.admission.take_skipped() if self.admission.enabled else None
        return self.stats.collect(self.cache.core, self.counters, skipped)

    @implements("N3")
    def config_info(self) -> Sequence[Mapping[str, str | int | float | bool]]:
        """N3 (0.33): the info gauge's labels, one series."""
        return [dict(self._info)]

    @implements("N7")
    def has_pending_work(self) -> bool:
        return False

    def shutdown(self) -> None:
        return None
