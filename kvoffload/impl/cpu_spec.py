"""``CPUOffloadingSpec``: CPU offloading configured from plain values (S1–S4).

The extra-config keys are vLLM's: ``num_blocks`` *or* ``cpu_bytes_to_use`` (host memory
for offloaded blocks; needs the bytes of one GPU block across all layers, which vLLM
knows from its KV cache config), ``eviction_policy`` (``"lru"``, ``"arc"``, ``"s3fifo"`` or ``"sieve"``),
``block_size`` (offloaded tokens per block, S2) and ``kv_layout`` (how the KV tensors
handed to ``get_handlers`` are laid out; see ``kvoffload.impl.copy.KVLayout``). Every
value is validated in the constructor (S4); the manager and the host buffers are only
allocated when first asked for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..spec.interfaces import OffloadingHandler
from ..spec.offloading_spec import OffloadingSpec, positive_int
from ..spec.types import LoadStoreSpec
from .manager import MANAGER_POLICIES, CPUOffloadingManager

__all__ = ["CPUOffloadingSpec"]


class CPUOffloadingSpec(OffloadingSpec):
    """Our manager for the scheduler, torch copy handlers for the worker (S3)."""

    def __init__(
        self,
        hash_block_size: int,
        gpu_block_sizes: tuple[int, ...] | list[int],
        extra_config: Mapping[str, Any] | None = None,
        *,
        bytes_per_gpu_block: int | None = None,
        enable_events: bool = False,
    ) -> None:
        super().__init__(hash_block_size, gpu_block_sizes, extra_config)
        config = self.extra_config

        policy = config.get("eviction_policy", "lru")
        if policy not in MANAGER_POLICIES:
            raise ValueError(
                f"S4: eviction_policy={policy!r} is not one of {list(MANAGER_POLICIES)}"
            )
        self.eviction_policy: str = policy

        has_count, has_bytes = "num_blocks" in config, "cpu_bytes_to_use" in config
        if has_count == has_bytes:
            raise ValueError(
                "S4: set exactly one of num_blocks and cpu_bytes_to_use in the extra config, "
                f"got num_blocks={config.get('num_blocks')!r}, "
                f"cpu_bytes_to_use={config.get('cpu_bytes_to_use')!r}"
            )
        if has_count:
            self.num_blocks = positive_int("num_blocks", config["num_blocks"])
        else:
            budget = positive_int("cpu_bytes_to_use", config["cpu_bytes_to_use"])
            if bytes_per_gpu_block is None:
                raise ValueError(
                    f"S4: cpu_bytes_to_use={budget!r} needs bytes_per_gpu_block "
                    "(bytes of one GPU block across all layers) to size the host buffer"
                )
            per_block = positive_int("bytes_per_gpu_block", bytes_per_gpu_block) * self.block_size_factor
            if budget < per_block:
                raise ValueError(
                    f"S4: cpu_bytes_to_use={budget!r} holds no offloaded block of {per_block} bytes"
                )
            self.num_blocks = budget // per_block

        self.kv_layout: str | None = config.get("kv_layout")
        if self.kv_layout is not None and not isinstance(self.kv_layout, str):
            raise ValueError(f"S4: kv_layout={self.kv_layout!r} must be a layout name")
        self.enable_events = bool(enable_events)
        self._manager: CPUOffloadingManager | None = None

    @property
    def gpu_block_size(self) -> int:
        """The one GPU block size the copy handlers work in (all groups must agree)."""
        sizes = set(self.gpu_block_sizes)
        if len(sizes) != 1:
            raise ValueError(
                f"S2: CPU copy handlers need one GPU block size, got gpu_block_sizes={list(self.gpu_block_sizes)}"
            )
        return sizes.pop()

    def get_manager(self) -> CPUOffloadingManager:
        """S3: built on first use, then the same object on every call."""
        if self._manager is None:
            block_size = self.offloaded_block_sizes[0] if self.gpu_block_sizes else self.hash_block_size
            self._manager = CPUOffloadingManager(
                num_blocks=self.num_blocks,
                policy=self.eviction_policy,
                enable_events=self.enable_events,
                block_size=block_size,
            )
        return self._manager

    def get_handlers(
        self, kv_caches: Mapping[str, Any], attn_backends: Mapping[str, Any]
    ) -> Iterator[tuple[type[LoadStoreSpec], type[LoadStoreSpec], OffloadingHandler]]:
        """S3: the GPU → CPU store and CPU → GPU load handlers over ``kv_caches``.

        The layout comes from ``kv_layout`` in the extra config, or per layer from
        ``attn_backends`` when its values are layout names (torch is imported here only).
        """
        from .copy import build_cpu_handlers, cpu_handler_triples

        layout: Any = self.kv_layout
        if layout is None:
            if not attn_backends or not all(isinstance(v, str) for v in attn_backends.values()):
                raise ValueError(
                    "S4: kv_layout is not set and attn_backends does not name a layout per layer"
                )
            layout = dict(attn_backends)
        store, load = build_cpu_handlers(
            kv_caches, layout, self.gpu_block_size, self.block_size_factor, self.num_blocks
        )
        yield from cpu_handler_triples(store, load)
