"""``KVOffloadingManager``: vLLM 0.32's ``OffloadingManager`` over our contract manager.

A thin adapter (mapping table: the package docstring). The only state it keeps beyond
the core manager is the set of keys whose store is prepared but not completed, so that
a per-key lookup can answer ``HIT_PENDING`` (M1 reports pending blocks as a miss), and
counters of what it was told.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

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

from ...spec.types import BlockHash
from ..manager import CPUOffloadingManager
from . import features
from ._log import log_event
from .admission import StoreAdmission
from .reset_fence import ResetFence
from .stats import ManagerStats

__all__ = ["KVOffloadingManager"]


def _keys(keys: Iterable[bytes]) -> list[BlockHash]:
    """vLLM passes lists and sets of ``OffloadKey`` (plain ``bytes``): one list, in order."""
    return [BlockHash(key) for key in keys]


class KVOffloadingManager(OffloadingManager):  # type: ignore[misc]
    """vLLM 0.32 ``OffloadingManager`` backed by a ``CPUOffloadingManager`` (M0–M10).

    ``factory`` builds the core manager; it is called again by ``reset_cache``.
    ``admission``: the store threshold (N2), off by default; ``info``: the labels of
    vLLM 0.33's info gauge (N3).
    """

    def __init__(
        self,
        factory: Callable[[], CPUOffloadingManager],
        *,
        admission: StoreAdmission | None = None,
        info: Mapping[str, str | int | float | bool] | None = None,
    ) -> None:
        self._factory = factory
        self.core: CPUOffloadingManager = factory()
        # 0.33's exclusion (N5): vLLM enters it around every call; a real lock, so
        # that a thread other than the scheduler's (a metrics reader) is kept out too.
        self._lock = threading.Lock()
        self.fence = ResetFence()
        self.admission = admission or StoreAdmission(0, 0)
        self.stats = ManagerStats()
        self._info = dict(info or {})
        self._events: list[Any] = []  # ours (N4) and the core's, in order
        self.pending: set[bytes] = set()
        self.counters: Counter[str] = Counter()
        # req_id -> the keys the request loaded or offered for storing, in call order
        # (a dict as an ordered set); turned into one touch when the request finishes.
        self._seen: dict[str, dict[BlockHash, None]] = {}

    def _record(self, req_context: Any, hashes: list[BlockHash]) -> None:
        req_id = getattr(req_context, "req_id", None)
        if req_id is not None:
            self._seen.setdefault(req_id, {}).update(dict.fromkeys(hashes))

    # -- lookups ------------------------------------------------------------------------
    def lookup(self, key: bytes, req_context: Any) -> Any:
        if self.core.lookup([BlockHash(key)]) == 1:
            self.counters["lookup_hit"] += 1
            return LookupResult.HIT
        if key in self.pending:
            self.counters["lookup_hit_pending"] += 1
            return LookupResult.HIT_PENDING
        self.counters["lookup_miss"] += 1
        return LookupResult.MISS

    def get_load_source(self, key: bytes, req_context: Any) -> Any:
        return CacheHitSource.HOST

    # -- loads --------------------------------------------------------------------------
    def prepare_load(self, keys: Collection[bytes], req_context: Any) -> Any:
        hashes = _keys(keys)
        spec = self.core.prepare_load(hashes)
        self._record(req_context, hashes)
        self.counters["prepare_load_calls"] += 1
        self.counters["prepare_load_blocks"] += len(hashes)
        log_event(side="scheduler", op="prepare_load", blocks=len(hashes))
        return CPULoadStoreSpec(self.fence.physical(spec.block_ids))

    def touch(self, keys: Collection[bytes], req_context: Any) -> None:
        hashes = _keys(keys)
        self.core.touch(hashes)
        self.counters["touch_blocks"] += len(hashes)

    def complete_load(self, keys: Collection[bytes], req_context: Any) -> None:
        hashes = _keys(keys)
        self.core.complete_load(hashes)
        self.counters["complete_load_blocks"] += len(hashes)

    # -- stores -------------------------------------------------------------------------
    def prepare_store(self, keys: Collection[bytes], req_context: Any) -> Any:
        hashes = _keys(keys)
        if self.admission.enabled:  # N2: new keys below the threshold are not offered
            hashes = self.admission.filter_offer(hashes, self._resident)
        output = self.core.prepare_store(hashes)
        self._record(req_context, hashes)
        if output is None:
            self.counters["prepare_store_refused"] += 1
            log_event(side="scheduler", op="prepare_store", refused=True, blocks=len(hashes))
            return None
        to_store = list(output.block_hashes_to_store)
        evicted = list(output.block_hashes_evicted)
        self.pending.update(to_store)
        self.counters["store_blocks"] += len(to_store)
        self.counters["evicted_blocks"] += len(evicted)
        if to_store:
            self.stats.allocated(len(to_store))
        if to_store or evicted:
            log_event(side="scheduler", op="prepare_store", blocks=len(to_store), evicted=len(evicted))
        ids = getattr(output.store_spec, "block_ids")
        return PrepareStoreOutput(
            keys_to_store=to_store,
            store_spec=CPULoadStoreSpec(self.fence.physical(ids)),
            evicted_keys=evicted,
        )

    def complete_store(self, keys: Collection[bytes], req_context: Any, success: bool = True) -> None:
        hashes = _keys(keys)
        failed = [] if success or not features.METADATA_ONLY_EVENTS else [h for h in hashes if h in self.pending]
        self.core.complete_store(hashes, success=bool(success))
        self.pending.difference_update(hashes)
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
        the most recently used (P4), as vLLM's own LRU orders them."""
        self.counters["requests_finished"] += 1
        seen = self._seen.pop(getattr(req_context, "req_id", None), None)  # type: ignore[arg-type]
        if not seen:
            return
        keys = list(seen)
        position = getattr(req_context, "get_offload_key_position", None)
        if callable(position):
            positions = [position(k) for k in keys]
            if all(p is not None for p in positions):
                order = sorted(range(len(keys)), key=lambda i: positions[i])
                keys = [keys[i] for i in order]
        self.core.touch(keys)
        self.counters["touch_blocks"] += len(keys)

    def _resident(self, key: bytes) -> bool:
        """Present in the core: being stored (pending) or ready."""
        return key in self.pending or self.core.lookup([BlockHash(key)]) == 1

    def _drain_core_events(self) -> None:
        for event in self.core.take_events():
            self._events.append(
                OffloadingEvent(keys=list(event.block_hashes), medium=Medium.CPU, removed=event.removed)
            )

    def _queue_own_event(self, keys: list[BlockHash]) -> None:
        self._drain_core_events()  # keep the order of what happened
        self._events.append(OffloadingEvent(keys=keys, medium=Medium.CPU, removed=True, metadata_only=True))

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
    def lock(self) -> threading.Lock:
        """N5: held by vLLM 0.33's caller around every call but ``shutdown``; not reentrant."""
        return self._lock

    def reset_cache(self) -> None:
        """Every block dropped. 0.33 (N1): blocks a copy may still touch stay fenced until
        ``on_reset_flushed``; 0.32 discards pre-reset jobs and flushes them first."""
        old, self.core = self.core, self._factory()
        if features.RESET_FENCE:
            self.counters["fenced_blocks"] += self.fence.fence(old, self.core)
        else:
            self.fence = ResetFence()
        self._events.clear()
        self.pending.clear()
        self._seen.clear()
        self.counters["resets"] += 1
        log_event(side="scheduler", op="reset_cache")

    def on_reset_flushed(self) -> None:
        """N1: the workers reported every job in flight at the last reset: free its blocks."""
        self.counters["released_fenced_blocks"] += self.fence.release(self.core)

    def get_stats(self) -> Any:
        """N3: the metric families of vLLM's CPU manager plus ours (``stats.py``)."""
        skipped = self.admission.take_skipped() if self.admission.enabled else None
        return self.stats.collect(self.core, self.counters, skipped)

    def config_info(self) -> Sequence[Mapping[str, str | int | float | bool]]:
        """N3 (0.33): the info gauge's labels, one series."""
        return [dict(self._info)]

    def has_pending_work(self) -> bool:
        return False

    def shutdown(self) -> None:
        return None
