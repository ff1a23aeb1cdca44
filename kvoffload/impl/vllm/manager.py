"""``KVOffloadingManager``: vLLM 0.32's ``OffloadingManager`` over our contract manager.

A thin adapter (mapping table: the package docstring) over a ``KeyIndexedManager``:
the core manager plus a Python dict of its present keys (ready or pending). vLLM's
connector calls ``lookup(key, ctx)`` once per key, up to a request's whole prefix at
every scheduler step; that call is one ``dict.get`` here and never enters compiled
code. Batch calls go to the core, which keeps the index in step (``keyindex``).
Besides it the adapter keeps, per request, the keys to touch when the request finishes
(vLLM 0.32 updates recency there) and counters of what it was told, per batch call.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable
from itertools import filterfalse, islice
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

from ...spec.types import BlockHash
from ..keyindex import KeyIndexedManager
from ..manager import CPUOffloadingManager
from ._log import log_enabled, log_event

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


class KVOffloadingManager(OffloadingManager):  # type: ignore[misc]
    """vLLM 0.32 ``OffloadingManager`` backed by a ``CPUOffloadingManager`` (M0–M10).

    ``factory`` builds the core manager; it is called again by ``reset_cache``.
    Answers are those of vLLM's own ``CPUOffloadingManager`` of the same policy for LRU
    (lookups, stored and evicted keys, events), block ids aside.
    """

    def __init__(self, factory: Callable[[], CPUOffloadingManager]) -> None:
        self.cache = KeyIndexedManager(factory)
        # The cache's two sets (the same objects for its whole life): all of a lookup.
        self._ready = self.cache.ready
        self._pending = self.cache.pending
        self.counters: Counter[str] = Counter()
        # The JSON-lines test seam is read once: a disabled log costs nothing per call.
        self._log = log_enabled()
        # req_id -> the keys the request loaded or offered for storing, in call order
        # (a dict as an ordered set); turned into one touch when the request finishes.
        self._seen: dict[str, dict[bytes, None]] = {}

    @property
    def core(self) -> CPUOffloadingManager:
        """The core manager of now (``reset_cache`` replaces it)."""
        return self.cache.core

    @property
    def pending(self) -> set[bytes]:
        """Keys whose store is prepared and not completed (the live set: do not modify)."""
        return self._pending

    def _record(self, req_context: Any, keys: Iterable[bytes]) -> None:
        req_id = getattr(req_context, "req_id", None)
        if req_id is not None:
            seen = self._seen.get(req_id)
            if seen is None:
                seen = self._seen[req_id] = {}
            seen.update(dict.fromkeys(keys))

    # -- lookups ------------------------------------------------------------------------
    def lookup(self, key: bytes, req_context: Any) -> Any:
        """M1 per key: ``HIT`` ready, ``HIT_PENDING`` pending, ``MISS`` absent."""
        if key in self._ready:
            return _HIT
        return _HIT_PENDING if key in self._pending else _MISS

    def get_load_source(self, key: bytes, req_context: Any) -> Any:
        return CacheHitSource.HOST

    # -- loads --------------------------------------------------------------------------
    def prepare_load(self, keys: Collection[bytes], req_context: Any) -> Any:
        hashes = _keys(keys)
        spec = self.cache.prepare_load(hashes)
        self._record(req_context, hashes)
        self.counters["prepare_load_calls"] += 1
        self.counters["prepare_load_blocks"] += len(hashes)
        if self._log:
            log_event(side="scheduler", op="prepare_load", blocks=len(hashes))
        # vLLM's spec turns any sequence into an int32 array: give it ours (no list).
        return CPULoadStoreSpec(spec.block_ids)

    def touch(self, keys: Collection[bytes], req_context: Any) -> None:
        hashes = _keys(keys)
        self.cache.touch(hashes)
        self.counters["touch_blocks"] += len(hashes)

    def complete_load(self, keys: Collection[bytes], req_context: Any) -> None:
        hashes = _keys(keys)
        self.cache.complete_load(hashes)
        self.counters["complete_load_blocks"] += len(hashes)

    # -- stores -------------------------------------------------------------------------
    def prepare_store(self, keys: Collection[bytes], req_context: Any) -> Any:
        hashes = _keys(keys)
        # vLLM records the request's absent and ready keys (not the pending ones), even
        # when the store is then refused; read before the call changes the index.
        offered: Iterable[bytes] = hashes
        if self._pending:
            try:
                offered = list(filterfalse(self._pending.__contains__, hashes))
            except TypeError:  # an unhashable element: the core refuses it below (M9)
                offered = []
        output = self.cache.prepare_store(hashes)
        self._record(req_context, offered)
        if output is None:
            self.counters["prepare_store_refused"] += 1
            if self._log:
                log_event(side="scheduler", op="prepare_store", refused=True, blocks=len(hashes))
            return None
        to_store = output.block_hashes_to_store
        evicted = output.block_hashes_evicted
        self.counters["store_blocks"] += len(to_store)
        self.counters["evicted_blocks"] += len(evicted)
        if self._log and (to_store or evicted):
            log_event(side="scheduler", op="prepare_store", blocks=len(to_store), evicted=len(evicted))
        ids = getattr(output.store_spec, "block_ids")
        return PrepareStoreOutput(
            keys_to_store=to_store,
            store_spec=CPULoadStoreSpec(ids),
            evicted_keys=evicted,
        )

    def complete_store(self, keys: Collection[bytes], req_context: Any, success: bool = True) -> None:
        hashes = _keys(keys)
        self.cache.complete_store(hashes, success=bool(success))
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
        self.cache.touch(_keys(self._finish_order(list(seen), req_context)))
        self.counters["touch_blocks"] += len(seen)

    @staticmethod
    def _finish_order(keys: list[bytes], req_context: Any) -> list[bytes]:
        """vLLM's order (``order_request_keys``): keys by group, first seen first, then
        by end-token position when every key has one (stable: groups break ties)."""
        if len(keys) < 2:
            return keys
        # vLLM 0.32's ReqContext keeps the positions in this dict; reading it directly
        # keeps the work at C speed (a method call per key costs more than the sort).
        positions = getattr(req_context, "_offload_key_positions", None)
        if not isinstance(positions, dict):
            position = getattr(req_context, "get_offload_key_position", None)
            positions = {key: position(key) for key in keys} if callable(position) else {}
            positions = {key: p for key, p in positions.items() if p is not None}
        try:
            order = list(map(positions.__getitem__, keys))
        except KeyError:  # a key without a position: groups, first seen first
            keys.sort(key=_group)
            return keys
        if all(map(lt, order, islice(order, 1, None))):
            return keys  # already in position order (the usual case): no sort
        if len(set(order)) < len(keys):
            keys.sort(key=_group)  # equal positions (one per group): groups break ties
        keys.sort(key=positions.__getitem__)
        return keys

    def take_events(self) -> Iterable[Any]:
        for event in self.cache.take_events():
            yield OffloadingEvent(keys=list(event.block_hashes), medium=Medium.CPU, removed=event.removed)

    def reset_cache(self) -> None:
        self.cache.reset()
        self._seen.clear()
        self.counters["resets"] += 1
        if self._log:
            log_event(side="scheduler", op="reset_cache")

    def get_stats(self) -> Any:
        return None

    def has_pending_work(self) -> bool:
        return False

    def shutdown(self) -> None:
        return None
