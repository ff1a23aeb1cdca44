"""``KVOffloadPrimaryTier``: our manager as the primary tier of vLLM's ``TieringOffloadingManager``.

vLLM's tiering (0.32 and 0.33) drives its primary tier through the ``OffloadingManager``
interface plus what ``CPUPrimaryTierOffloadingManager`` adds for the secondary tiers:

==================================  ==================================================================
vLLM's primary-tier call            here
==================================  ==================================================================
``prepare_read(keys)`` (cascade)    M2 pin only: no request access recorded (a cascade is not a use),
                                    block ids = rows of the shared region the tier reads
``complete_read(keys)``             ``complete_load`` (M3)
``prepare_write([key])`` (promote)  ``prepare_store`` (M5): the key is pending (``HIT_PENDING``) until
``complete_write(keys, success)``   ``complete_store`` (M6/M7) makes it ready or frees its block
``get_kv_memoryview()``             the scheduler's ``(num_chunks, row)`` view of the shared region
``_num_chunks``                     the capacity (vLLM's tiering metrics read it)
``shutdown()``                      release the view, unmap the region
==================================  ==================================================================

Block ids are rows of vLLM's ``SharedOffloadRegion``: the worker (``RegionWorker``) copies
device blocks into them and the secondary tiers move them to and from disk or Redis, so
one id names the same bytes on both sides (the reset fence's renaming applies to both).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from vllm.v1.kv_offload.cpu.common import CPULoadStoreSpec
from vllm.v1.kv_offload.cpu.shared_offload_region import SharedOffloadRegion
from vllm.v1.kv_offload.tiering.manager import TieringOffloadingManager

from ..manager import CPUOffloadingManager
from ._log import log_event
from .manager import KVOffloadingManager, _keys

__all__ = ["KVOffloadPrimaryTier", "KVOffloadTieringManager"]


class KVOffloadPrimaryTier(KVOffloadingManager):
    """``KVOffloadingManager`` with vLLM's primary-tier interface over a shared region."""

    def __init__(self, factory: Callable[[], CPUOffloadingManager], region: SharedOffloadRegion, *,
                 info: Mapping[str, str | int | float | bool] | None = None) -> None:
        super().__init__(factory, info=info)
        self._num_chunks = self.core.num_blocks
        self._mmap_region: SharedOffloadRegion | None = region
        self._kv_memoryview: memoryview = region.create_kv_memoryview()
        if len(self._kv_memoryview) != self._num_chunks:
            self._kv_memoryview.release()
            raise ValueError(
                f"S4: the shared region holds {len(self._kv_memoryview)} rows, the primary tier "
                f"{self._num_chunks} blocks"
            )
        # The secondary-tier names of the same calls, as vLLM's CPU primary tier has them.
        self.complete_read = self.complete_load
        self.prepare_write = self.prepare_store
        self.complete_write = self.complete_store

    def prepare_read(self, keys: Collection[bytes], req_context: Any) -> CPULoadStoreSpec:
        """M2 for a cascade to a secondary tier: the blocks are pinned until
        ``complete_read``; the request's recency is left alone (a cascade is no access)."""
        hashes = _keys(keys)
        spec = self.cache.prepare_load(hashes)
        self.counters["prepare_read_blocks"] += len(hashes)
        if self._log:
            log_event(side="scheduler", op="prepare_read", blocks=len(hashes))
        return CPULoadStoreSpec(self.fence.physical(spec.block_ids))

    def get_kv_memoryview(self) -> memoryview:
        """The ``(num_chunks, row_bytes)`` view the secondary tiers address as ``view[c]``."""
        return self._kv_memoryview

    def shutdown(self) -> None:
        self._kv_memoryview.release()
        if self._mmap_region is not None:
            self._mmap_region.cleanup()
            self._mmap_region = None


class KVOffloadTieringManager(TieringOffloadingManager):  # type: ignore[misc]
    """vLLM's ``TieringOffloadingManager`` that also tells our primary tier when the
    workers flushed the jobs of the last reset (N1: vLLM 0.33's manager keeps that
    notice to itself, and our primary fences the blocks a copy may still touch)."""

    def on_reset_flushed(self) -> None:
        parent = getattr(super(), "on_reset_flushed", None)
        if callable(parent):
            parent()
        self.primary_tier.on_reset_flushed()
