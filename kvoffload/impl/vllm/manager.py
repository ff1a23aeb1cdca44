"""``KVOffloadingManager``: vLLM 0.32's ``OffloadingManager`` over our contract manager.

A thin adapter (mapping table: the package docstring). The only state it keeps beyond
the core manager is the set of keys whose store is prepared but not completed, so that
a per-key lookup can answer ``HIT_PENDING`` (M1 reports pending blocks as a miss), and
counters of what it was told.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable
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
from ._log import log_event

__all__ = ["KVOffloadingManager"]


def _keys(keys: Iterable[bytes]) -> list[BlockHash]:
    """vLLM passes lists and sets of ``OffloadKey`` (plain ``bytes``): one list, in order."""
    return [BlockHash(key) for key in keys]


class KVOffloadingManager(OffloadingManager):  # type: ignore[misc]
    """vLLM 0.32 ``OffloadingManager`` backed by a ``CPUOffloadingManager`` (M0–M10).

    ``factory`` builds the core manager; it is called again by ``reset_cache``.
    """

    def __init__(self, factory: Callable[[], CPUOffloadingManager]) -> None:
        self._factory = factory
        self.core: CPUOffloadingManager = factory()
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
        return CPULoadStoreSpec(spec.block_ids.tolist())

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
        if to_store or evicted:
            log_event(side="scheduler", op="prepare_store", blocks=len(to_store), evicted=len(evicted))
        ids = getattr(output.store_spec, "block_ids")
        return PrepareStoreOutput(
            keys_to_store=to_store,
            store_spec=CPULoadStoreSpec(ids.tolist()),
            evicted_keys=evicted,
        )

    def complete_store(self, keys: Collection[bytes], req_context: Any, success: bool = True) -> None:
        hashes = _keys(keys)
        self.core.complete_store(hashes, success=bool(success))
        self.pending.difference_update(hashes)
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

    def take_events(self) -> Iterable[Any]:
        for event in self.core.take_events():
            yield OffloadingEvent(keys=list(event.block_hashes), medium=Medium.CPU, removed=event.removed)

    def reset_cache(self) -> None:
        self.core = self._factory()
        self.pending.clear()
        self._seen.clear()
        self.counters["resets"] += 1
        log_event(side="scheduler", op="reset_cache")

    def get_stats(self) -> Any:
        return None

    def has_pending_work(self) -> bool:
        return False

    def shutdown(self) -> None:
        return None
