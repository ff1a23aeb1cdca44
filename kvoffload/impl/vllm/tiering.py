"""``KVOffloadTieringSpec``: vLLM 0.32's ``TieringOffloadingSpec`` with our copy handlers as its worker.

vLLM's tiering spec (a CPU primary tier plus secondary tiers loaded by module path, such as
``KVOffloadDiskTier``) inherits ``CPUOffloadingSpec.get_worker``, which refuses every
platform but CUDA and XPU, and vLLM's copy worker asserts device tensors. This subclass
keeps vLLM's ``TieringOffloadingManager`` (cascades of every stored chunk to the secondary
tiers, promotions of secondary hits into the primary tier) and replaces

- the primary tier: our manager (``KVOffloadPrimaryTier``, ``primary.py``: our compiled
  policies ``lru``/``arc``/``s3fifo``/``sieve``, the contract's ref counts and failed-store
  cleanup) by default, or vLLM's own CPU manager with ``"primary_tier": "vllm"``;
- the worker: ``KVOffloadingWorker`` (H1–H4), whose host planes are views into vLLM's
  ``SharedOffloadRegion``, the mmap that the scheduler's secondary tiers read and write one
  row per chunk. Our primary's block ids are those rows.

Row layout (H3): chunk ``c`` is row ``c`` of the region (``kv_bytes_per_chunk`` bytes);
inside it sub-block ``j`` (``0 ≤ j < blocks_per_chunk``) holds every KV tensor's page in
vLLM's tensor order, ``[j: tensor0 page | tensor1 page | …]``. With one block per chunk
this is byte for byte the row vLLM's own CPU worker writes (tensor by tensor), so the
records a tier keeps of it are the same bytes either way. Each host plane is then one
strided view ``(num_chunks · f, page)`` with stride ``Σ pages``, which needs rows without
padding (``f · Σ pages`` a multiple of the page size, true for every model whose page is
a multiple of 4 KiB) and one worker per row (world size 1, or vLLM's replicated layout);
other configurations are refused with a ``ValueError`` naming them (S4).

Usage::

    kv_connector_extra_config={
        "spec_name": "KVOffloadTieringSpec", "spec_module_path": "kvoffload.impl.vllm",
        "cpu_bytes_to_use": 8 << 30, "eviction_policy": "arc",   # "primary_tier": "vllm" for vLLM's
        "secondary_tiers": [{"type": "KVOffloadDiskTier", "module_path": "kvoffload.impl.vllm.tiers",
                             "path": "/mnt/nvme/kv.blocks", "bytes_to_use": 200 << 30}],
    }
"""

from __future__ import annotations

from typing import Any

import torch

from vllm.v1.kv_offload.cpu.shared_offload_region import SharedOffloadRegion
from vllm.v1.kv_offload.tiering.factory import SecondaryTierFactory
from vllm.v1.kv_offload.tiering.spec import TieringOffloadingSpec

from ..manager import MANAGER_POLICIES, CPUOffloadingManager
from . import features, stats
from ._log import log_event
from .primary import KVOffloadPrimaryTier, KVOffloadTieringManager
from .worker import KVOffloadingWorker

__all__ = ["KVOffloadTieringSpec", "RegionWorker", "region_host_planes"]


def region_host_planes(base: torch.Tensor, page_bytes: list[int], blocks_per_chunk: int,
                       num_chunks: int, row_bytes: int) -> list[torch.Tensor]:
    """H3: one ``(num_chunks · f, page)`` uint8 view of ``base`` per KV tensor, sub-block major.

    ``base`` is the region's flat int8 tensor of ``num_chunks · row_bytes`` bytes.
    """
    stride = sum(page_bytes)
    if stride * blocks_per_chunk != row_bytes:
        raise ValueError(
            f"S4: KVOffloadTieringSpec needs chunk rows without padding: {blocks_per_chunk} block(s) "
            f"of {stride} bytes (pages {page_bytes}) in a row of {row_bytes} bytes"
        )
    if base.numel() < num_chunks * row_bytes:
        raise ValueError(f"S4: the shared region holds {base.numel()} bytes, needs {num_chunks * row_bytes}")
    flat = base.view(torch.uint8)
    planes, offset = [], 0
    for page in page_bytes:
        planes.append(torch.as_strided(flat, (num_chunks * blocks_per_chunk, page), (stride, 1), offset))
        offset += page
    return planes


class RegionWorker(KVOffloadingWorker):
    """Our worker over host planes in the shared region; it owns the region's mapping."""

    def __init__(self, kv_caches: Any, region: SharedOffloadRegion, *, gpu_block_size: int,
                 blocks_per_chunk: int, num_chunks: int, row_bytes: int) -> None:
        pages = [int(entry.tensor.shape[-1]) * entry.tensor.element_size() for entry in kv_caches.tensors]
        host = region_host_planes(region.base_tensor, pages, blocks_per_chunk, num_chunks, row_bytes)
        super().__init__(kv_caches, gpu_block_size=gpu_block_size, block_size_factor=blocks_per_chunk,
                         num_cpu_blocks=num_chunks, host_planes=host)
        self.region: SharedOffloadRegion | None = region

    def shutdown(self) -> None:
        """Drop the views, then unmap (the copies on CPU are synchronous: nothing in flight)."""
        self.buffers.host_planes.clear()
        for handler in (*self.stores, *self.loads):
            handler.buffers.host_planes.clear()
        if self.region is not None:
            self.region.cleanup()
            self.region = None


#: ``primary_tier`` values: our manager (the default) or vLLM's own CPU primary tier.
PRIMARY_KINDS = ("kvoffload", "vllm")


def _primary_kind(extra: dict[str, Any]) -> str:
    """S4: ``primary_tier`` and what our primary tier refuses, before anything is built."""
    kind = extra.get("primary_tier", "kvoffload")
    if kind not in PRIMARY_KINDS:
        raise ValueError(f"S4: primary_tier={kind!r} is not one of {list(PRIMARY_KINDS)}")
    if kind == "vllm":
        return str(kind)
    policy = extra.get("eviction_policy", "lru")
    if policy not in MANAGER_POLICIES:
        raise ValueError(f"S4: eviction_policy={policy!r} is not one of {list(MANAGER_POLICIES)} "
                         "(or set primary_tier='vllm' for vLLM's own policies)")
    if extra.get("cache_policy_module_path") is not None:
        raise ValueError("S4: cache_policy_module_path is not supported by kvoffload's primary tier; "
                         "set primary_tier='vllm' for a custom vLLM CachePolicy")
    if int(extra.get("store_threshold", 0) or 0) >= 2:
        raise ValueError("S4: store_threshold is not supported behind vLLM's tiering")
    return str(kind)


class KVOffloadTieringSpec(TieringOffloadingSpec):  # type: ignore[misc]
    """vLLM's tiering manager over our primary tier (or vLLM's), our CPU-capable worker over
    its shared region. S4: ``primary_tier``, and for ours ``eviction_policy`` (our four),
    ``cache_policy_module_path`` (refused), ``store_threshold`` (refused, as vLLM's tiering
    refuses it) are checked at construction."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        world = max(int(config.parallel.world_size), 1)
        if world > 1 and not self.replicated_layout:
            raise ValueError(
                f"S4: KVOffloadTieringSpec runs one worker per chunk row (world_size=1 or a replicated "
                f"layout), got world_size={world}"
            )
        if config.canonical_layout:
            raise ValueError("S4: canonical_layout=True is not supported by KVOffloadTieringSpec's worker")
        sizes = sorted({int(g.tokens_per_block) for g in config.groups})
        if len(sizes) != 1:
            raise ValueError(f"S2: one GPU block size shared by all KV cache groups, got {sizes}")
        self.gpu_block_size = sizes[0]
        self._region_worker: RegionWorker | None = None
        self.primary_kind = _primary_kind(dict(self.extra_config))
        self.lru_order = features.lru_order(str(self.eviction_policy), dict(self.extra_config).get("lru_order", "auto"))
        self._manager: Any = getattr(self, "_manager", None)  # vLLM's, typed for mypy

    def _new_core_manager(self) -> CPUOffloadingManager:
        return CPUOffloadingManager(
            num_blocks=int(self.num_chunks),
            policy=self.eviction_policy,
            enable_events=bool(self.kv_events_config.enable_kv_cache_events),
            block_size=self.gpu_block_size * int(self.blocks_per_chunk),
            lru_order=self.lru_order,
        )

    def get_manager(self) -> Any:
        """vLLM's ``TieringOffloadingManager`` over our primary tier (``KVOffloadPrimaryTier``)
        and the configured secondary tiers; ``"primary_tier": "vllm"`` keeps vLLM's own."""
        if self.primary_kind == "vllm":
            return super().get_manager()
        if self._manager is None:
            self._manager = self._build_tiering_manager()
        return self._manager

    def _build_tiering_manager(self) -> KVOffloadTieringManager:
        """Region, primary, tiers, manager; whatever was built is released on an error."""
        region = SharedOffloadRegion(
            engine_id=self._engine_id, num_chunks=self.num_chunks, rank=None,
            kv_bytes_per_chunk=self.kv_bytes_per_chunk, cpu_page_size=self.cpu_page_size_per_worker,
        )
        primary: KVOffloadPrimaryTier | None = None
        tiers: list[Any] = []
        try:
            info = stats.config_info(
                num_blocks=int(self.num_chunks), blocks_per_chunk=int(self.blocks_per_chunk),
                bytes_per_block=int(self.kv_bytes_per_chunk), tokens=None, policy=self.eviction_policy,
                store_threshold=0,
            )
            primary = KVOffloadPrimaryTier(self._new_core_manager, region, info=info)
            view = primary.get_kv_memoryview()
            for tier_config in self.secondary_tier_configs:
                tiers.append(SecondaryTierFactory.create_secondary_tier(tier_config, view, self))
            options = {}
            if hasattr(self, "tier_poll_interval_s"):  # vLLM 0.33
                options["tier_poll_interval_s"] = self.tier_poll_interval_s
            manager = KVOffloadTieringManager(primary_tier=primary, secondary_tiers=tiers, **options)
        except Exception:
            for tier in reversed(tiers):
                tier.shutdown()
            if primary is not None:
                primary.shutdown()
            else:
                region.cleanup()
            raise
        self._scheduler_mmap = region
        log_event(side="spec", op="tiering_manager", primary="kvoffload", num_chunks=int(self.num_chunks),
                  tiers=[type(t).__name__ for t in tiers])
        return manager

    def get_worker(self, kv_caches: Any) -> RegionWorker:
        """The worker over the region row ``rank 0`` of this engine (built once)."""
        if self._region_worker is None:
            region = SharedOffloadRegion(
                engine_id=self._engine_id,
                num_chunks=self.num_chunks,
                rank=0,
                kv_bytes_per_chunk=self.kv_bytes_per_chunk,
                cpu_page_size=self.cpu_page_size_per_worker,
            )
            try:
                self._region_worker = RegionWorker(
                    kv_caches, region, gpu_block_size=self.gpu_block_size,
                    blocks_per_chunk=int(self.blocks_per_chunk), num_chunks=int(self.num_chunks),
                    row_bytes=int(self.kv_bytes_per_chunk),
                )
            except Exception:
                region.cleanup()
                raise
            log_event(side="spec", op="tiering_worker", num_chunks=int(self.num_chunks),
                      row_bytes=int(self.kv_bytes_per_chunk))
        return self._region_worker
