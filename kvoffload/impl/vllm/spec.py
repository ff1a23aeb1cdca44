"""``KVOffloadingSpec``: vLLM 0.32's ``OffloadingSpec`` built on our ``CPUOffloadingSpec``.

vLLM builds it from an ``OffloadingConfig`` (in the engine core for the scheduler and in
each worker process). The translation (S1–S4):

- ``hash_block_size`` ← ``config.cache.tokens_per_hash``;
- ``gpu_block_sizes`` ← ``group.tokens_per_block`` of each KV cache group (any number of
  groups, one block size shared by all: S2);
- ``block_size`` (S2) ← ``tokens_per_block · blocks_per_chunk`` when vLLM's extra config
  set ``block_size`` or ``blocks_per_chunk`` (vLLM already turned either into
  ``config.cache.blocks_per_chunk``);
- capacity: ``num_blocks`` as given, or from ``cpu_bytes_to_use`` the way vLLM's own
  CPU spec sizes it: ``cpu_bytes_to_use // round_up(worker_kv_bytes_per_block ·
  world_size · blocks_per_chunk, page size)``, where vLLM's ``worker_kv_bytes_per_block``
  already counts every group's layers; the worker's host planes (one per KV tensor, of
  ``num_blocks · blocks_per_chunk`` pages) hold what vLLM's own CPU worker holds;
- ``eviction_policy`` (``lru``/``arc``/``s3fifo``/``sieve``) as given; events on when vLLM publishes KV events;
- ``lru_order`` (``auto``/``recency``/``request-rank``): LRU's order; ``auto`` (default) is
  the installed vLLM's own (0.32: recency, L1; 0.33: request-rank, N9);
- ``kv_layout`` = ``page``: the worker sees canonical ``(num_blocks, page_bytes)`` tensors.

Every error is a ``ValueError`` naming the key and the value (S4), raised before anything
is allocated.
"""

from __future__ import annotations

import mmap
from collections.abc import Mapping
from typing import Any

from vllm.v1.kv_offload.base import OffloadingSpec

from ..cpu_spec import CPUOffloadingSpec
from ..manager import CPUOffloadingManager
from . import features, stats
from .admission import StoreAdmission
from ._log import log_event
from .manager import KVOffloadingManager
from .worker import KVOffloadingWorker

__all__ = ["KVOffloadingSpec"]

#: vLLM 0.32's CPU spec aligns each chunk to the mmap page size (its shared region).
CHUNK_ALIGNMENT = mmap.PAGESIZE

#: Keys of vLLM's own CPU manager that ours does not implement: refused, not ignored.
#: A vLLM ``CachePolicy`` keeps Python objects per chunk and decides evictions itself;
#: our manager's policies are compiled (LRU, ARC, S3-FIFO, SIEVE) and checked against the contract.
_UNSUPPORTED = {
    "cache_policy_module_path": "kvoffload runs its own compiled policies; choose "
    "eviction_policy='lru', 'arc', 's3fifo' or 'sieve', or use vLLM's CPUOffloadingSpec for a custom CachePolicy",
    "secondary_tiers": "secondary tiers need vLLM's tiering and a shared host region: use "
    "spec_name='KVOffloadTieringSpec' (our manager is its primary tier)",
}

#: vLLM's default size of the admission tracker (N2).
DEFAULT_MAX_TRACKER_SIZE = 64_000


def _admission(extra: Mapping[str, Any]) -> StoreAdmission:
    """N2: ``store_threshold`` (default 0: off) and ``max_tracker_size`` (default 64000)."""
    threshold = extra.get("store_threshold", 0)
    if threshold is None:
        threshold = 0
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0:
        raise ValueError(f"S4: store_threshold={threshold!r} must be a non-negative integer")
    size = extra.get("max_tracker_size")
    tracker = DEFAULT_MAX_TRACKER_SIZE if size is None else _positive_int("max_tracker_size", size)
    return StoreAdmission(threshold, tracker)


def _positive_int(key: str, value: object) -> int:
    """An int (or an integral float / digit string, as vLLM's ``int()`` accepts) > 0."""
    number: int | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    if number is None or number <= 0:
        raise ValueError(f"S4: {key}={value!r} must be a positive integer")
    return number


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def _tokens_held(config: Any, num_blocks: int, tokens_per_chunk: int) -> int | None:
    """Tokens the host cache holds for requests of ``max_model_len`` tokens (vLLM 0.33's
    ``cpu_kv_cache_size_tokens``, one group); ``None`` when the length is not known (0.32)."""
    max_model_len = int(getattr(config.model, "max_model_len", 0) or 0)
    if max_model_len <= 0:
        return None
    chunks_per_request = -(-max_model_len // tokens_per_chunk)
    return num_blocks * max_model_len // chunks_per_request


def _shared_block_size(groups: tuple[Any, ...]) -> int:
    """S2: the one GPU block size (tokens) every KV cache group shares."""
    sizes = sorted({int(g.tokens_per_block) for g in groups})
    if len(sizes) != 1:
        raise ValueError(
            f"S2: kvoffload needs at least one KV cache group and one GPU block size shared "
            f"by all groups (its copy handlers work in one block size), got "
            f"tokens_per_block={[g.tokens_per_block for g in groups]}"
        )
    return sizes[0]


def _chunk_config(extra: dict[str, Any], tokens_per_block: int, blocks_per_chunk: int) -> dict[str, Any]:
    """Our core spec's extra config: the page layout, the policy asked for, and (S2) the
    chunk vLLM configured as ``block_size`` (a ``block_size`` the user set must equal it)."""
    ours: dict[str, Any] = {"kv_layout": "page"}
    if "eviction_policy" in extra:
        ours["eviction_policy"] = extra["eviction_policy"]
    if "block_size" in extra:
        requested = _positive_int("block_size", extra["block_size"])
        if requested != tokens_per_block * blocks_per_chunk:
            raise ValueError(
                f"S2: block_size={extra['block_size']!r} is not the chunk vLLM configured: "
                f"{blocks_per_chunk} block(s) of {tokens_per_block} tokens"
            )
    if "block_size" in extra or "blocks_per_chunk" in extra:
        ours["block_size"] = tokens_per_block * blocks_per_chunk
    return ours


def _num_blocks(extra: dict[str, Any], per_block: int, per_chunk_bytes: int) -> int:
    """S4: host blocks from exactly one of ``num_blocks`` and ``cpu_bytes_to_use`` (a
    budget in whole chunks of ``per_chunk_bytes``, all ranks' bytes, aligned)."""
    has_count = extra.get("num_blocks") is not None
    if has_count == (extra.get("cpu_bytes_to_use") is not None):
        raise ValueError(
            "S4: set exactly one of cpu_bytes_to_use and num_blocks in "
            f"kv_connector_extra_config, got cpu_bytes_to_use={extra.get('cpu_bytes_to_use')!r}, "
            f"num_blocks={extra.get('num_blocks')!r}"
        )
    if has_count:
        return _positive_int("num_blocks", extra["num_blocks"])
    budget = _positive_int("cpu_bytes_to_use", extra["cpu_bytes_to_use"])
    if per_block <= 0:
        raise ValueError(
            f"S4: cpu_bytes_to_use={extra['cpu_bytes_to_use']!r} needs the KV bytes per "
            f"block, but vLLM reported worker_kv_bytes_per_block={per_block}"
        )
    num_blocks = budget // per_chunk_bytes
    if num_blocks <= 0:
        raise ValueError(
            f"S4: cpu_bytes_to_use={extra['cpu_bytes_to_use']!r} holds no offloaded block of {per_chunk_bytes} bytes"
        )
    return num_blocks


class KVOffloadingSpec(OffloadingSpec):  # type: ignore[misc]
    """Our manager for vLLM's scheduler, our copy handlers for its worker (S3)."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        extra = dict(config.extra_config or {})

        groups = tuple(config.groups)
        tokens_per_block = _shared_block_size(groups)
        for key, why in _UNSUPPORTED.items():
            if extra.get(key) is not None:
                raise ValueError(f"S4: {key}={extra[key]!r} is not supported: {why}")
        self.admission_config = _admission(extra)

        blocks_per_chunk = int(config.cache.blocks_per_chunk)
        if blocks_per_chunk <= 0:
            raise ValueError(f"S2: blocks_per_chunk={blocks_per_chunk!r} must be a positive integer")
        ours = _chunk_config(extra, tokens_per_block, blocks_per_chunk)
        world_size = max(int(config.parallel.world_size), 1)
        per_block = int(config.worker_kv_bytes_per_block)
        per_chunk_bytes = _round_up(max(per_block, 0) * world_size * blocks_per_chunk, CHUNK_ALIGNMENT)
        num_blocks = ours["num_blocks"] = _num_blocks(extra, per_block, per_chunk_bytes)

        self.num_blocks = num_blocks
        self.core = CPUOffloadingSpec(
            hash_block_size=int(config.cache.tokens_per_hash),
            gpu_block_sizes=[int(g.tokens_per_block) for g in groups],
            extra_config=ours,
            enable_events=bool(config.enable_kv_cache_events),
        )
        self.lru_order = features.lru_order(self.core.eviction_policy, extra.get("lru_order", "auto"))
        self.info = stats.config_info(
            num_blocks=num_blocks,
            blocks_per_chunk=blocks_per_chunk,
            bytes_per_block=per_chunk_bytes,
            tokens=_tokens_held(config, num_blocks, tokens_per_block * blocks_per_chunk),
            policy=self.core.eviction_policy,
            store_threshold=self.admission_config.store_threshold,
        )
        self._manager: KVOffloadingManager | None = None
        self._worker: KVOffloadingWorker | None = None
        log_event(side="spec", op="config", tokens_per_block=[int(g.tokens_per_block) for g in groups], num_blocks=num_blocks)

    @classmethod
    def build_metric_definitions(cls, extra_config: dict[str, Any]) -> dict[str, Any]:
        """N3: the metrics ``get_stats`` reports, for vLLM's Prometheus frontend."""
        return dict(stats.metric_definitions(extra_config))

    @classmethod
    def config_info_keys(cls, extra_config: dict[str, Any]) -> tuple[str, ...]:
        """N3 (vLLM 0.33): the labels ``KVOffloadingManager.config_info`` fills."""
        return stats.INFO_KEYS

    def _new_core_manager(self) -> CPUOffloadingManager:
        core = self.core
        return CPUOffloadingManager(
            num_blocks=core.num_blocks,
            policy=core.eviction_policy,
            enable_events=core.enable_events,
            block_size=core.offloaded_block_sizes[0],
            lru_order=self.lru_order,
        )

    def get_manager(self) -> KVOffloadingManager:
        """S3: the same adapter on every call (``reset_cache`` swaps its core manager)."""
        if self._manager is None:
            self._manager = KVOffloadingManager(
                self._new_core_manager, admission=self.admission_config, info=self.info
            )
        return self._manager

    def get_worker(self, kv_caches: Any) -> KVOffloadingWorker:
        """The worker adapter over vLLM's canonical KV tensors (built once)."""
        if self._worker is None:
            self._worker = KVOffloadingWorker(
                kv_caches,
                gpu_block_size=self.core.gpu_block_size,
                block_size_factor=self.core.block_size_factor,
                num_cpu_blocks=self.core.num_blocks,
            )
        return self._worker
