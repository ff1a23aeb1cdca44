"""``KVOffloadingWorker``: vLLM 0.32's ``OffloadingWorker`` over our copy handlers.

vLLM hands the worker canonical KV tensors, one ``(num_blocks, page_bytes)`` int8
tensor per layer; our handlers copy them in the ``page`` layout (H1–H4). Specs are
translated: vLLM's ``GPULoadStoreSpec(block_ids, group_sizes, block_indices)`` becomes
our ``GPULoadStoreSpec(block_ids)``, its ``CPULoadStoreSpec`` ours. One KV cache group
is supported. A load that starts inside an offloaded block (``block_indices[0]`` not a
multiple of the block-size factor ``f``) reads the last ``m`` sub-blocks (H3); the
adapter checks that vLLM's ``block_indices`` agree with that.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from vllm.v1.kv_offload.base import OffloadingWorker, TransferResult

from ...spec.types import CPULoadStoreSpec, GPULoadStoreSpec
from ..copy import CpuGpuHandler, build_cpu_handlers
from ._log import corrupt_loads, log_event

__all__ = ["KVOffloadingWorker"]

logger = logging.getLogger(__name__)


def _group_sizes(spec: Any, role: str) -> None:
    """One KV cache group only: ``group_sizes`` of length 1 (or ``None``)."""
    sizes: Sequence[int] | None = getattr(spec, "group_sizes", None)
    if sizes is not None and len(sizes) > 1:
        raise ValueError(
            f"kvoffload supports one KV cache group; the {role} spec has group_sizes={list(sizes)}"
        )


def _first_index(spec: Any) -> int | None:
    indices: Sequence[int] | None = getattr(spec, "block_indices", None)
    if not indices:
        return None
    return int(indices[0])


class KVOffloadingWorker(OffloadingWorker):  # type: ignore[misc]
    """Stores (GPU → CPU) and loads (CPU → GPU) through our ``CpuGpuHandler`` pair."""

    def __init__(
        self,
        kv_caches: Any,
        *,
        gpu_block_size: int,
        block_size_factor: int,
        num_cpu_blocks: int,
    ) -> None:
        groups = list(getattr(kv_caches, "group_data_refs", []) or [])
        if len(groups) > 1:
            raise ValueError(f"kvoffload supports one KV cache group, got {len(groups)}")
        tensors: dict[str, torch.Tensor] = {
            f"tensor{i}": entry.tensor for i, entry in enumerate(kv_caches.tensors)
        }
        self.store: CpuGpuHandler
        self.load: CpuGpuHandler
        self.store, self.load = build_cpu_handlers(
            tensors, "page", gpu_block_size, block_size_factor, num_cpu_blocks
        )
        self.factor = block_size_factor
        self.bytes_per_gpu_block = self.store.buffers.bytes_per_gpu_block
        # job id -> (direction, bytes, start time)
        self._jobs: dict[int, tuple[str, int, float, int]] = {}
        self.completed: dict[str, int] = {"store": 0, "load": 0, "store_blocks": 0, "load_blocks": 0}
        self._corrupt = corrupt_loads()

    # -- submission ----------------------------------------------------------------------
    def submit_store(self, job_id: int, src_spec: Any, dst_spec: Any) -> bool:
        try:
            _group_sizes(src_spec, "store source")
            start = _first_index(src_spec)
            if start is not None and start % self.factor:
                raise ValueError(
                    f"H3: a store starts at GPU block index {start}, inside an offloaded block "
                    f"of {self.factor} GPU blocks"
                )
            gpu = GPULoadStoreSpec(np.asarray(src_spec.block_ids, dtype=np.int64))
            cpu = CPULoadStoreSpec(np.asarray(dst_spec.block_ids, dtype=np.int64))
            accepted = self.store.transfer_async(int(job_id), (gpu, cpu))
        except Exception as error:  # H1: a refused job is logged and reported as False
            logger.error("kvoffload: store job %r refused: %s", job_id, error)
            return False
        if accepted:
            self._jobs[int(job_id)] = ("store", len(gpu) * self.bytes_per_gpu_block, time.perf_counter(), len(cpu))
        return bool(accepted)

    def submit_load(self, job_id: int, src_spec: Any, dst_spec: Any, expedited: bool = False) -> bool:
        """CPU → device copy (H1, H3). ``expedited`` (vLLM 0.33, N6): the connector waits on
        this job within the step (``wait``). Handled like any load: on CPU the copy runs at
        submission; on CUDA the load stream keeps submission order (H2), so an expedited
        load is not moved ahead of loads submitted before it."""
        try:
            _group_sizes(dst_spec, "load destination")
            cpu = CPULoadStoreSpec(np.asarray(src_spec.block_ids, dtype=np.int64))
            gpu = GPULoadStoreSpec(np.asarray(dst_spec.block_ids, dtype=np.int64))
            start = _first_index(dst_spec)
            skip = len(cpu) * self.factor - len(gpu)
            if start is not None and len(gpu) and start % self.factor != skip % self.factor:
                raise ValueError(
                    f"H3: a load into {len(gpu)} GPU block(s) from {len(cpu)} offloaded block(s) "
                    f"skips {skip} sub-block(s), but block_indices[0]={start} starts "
                    f"{start % self.factor} GPU block(s) into an offloaded block of {self.factor}"
                )
            if self._corrupt and len(cpu):
                self._zero_host_block(int(cpu.block_ids[0]))
            accepted = self.load.transfer_async(int(job_id), (cpu, gpu))
        except Exception as error:  # H1
            logger.error("kvoffload: load job %r refused: %s", job_id, error)
            return False
        if accepted:
            self._jobs[int(job_id)] = ("load", len(gpu) * self.bytes_per_gpu_block, time.perf_counter(), len(cpu))
        return bool(accepted)

    def _zero_host_block(self, block_id: int) -> None:
        """Test seam: zero every host plane's sub-blocks of offloaded block ``block_id``."""
        first = block_id * self.factor
        for plane in self.load.buffers.host_planes:
            plane[first : first + self.factor].zero_()
        log_event(side="worker", op="corrupt", block=block_id)

    # -- completion ----------------------------------------------------------------------
    def get_finished(self) -> list[Any]:
        results: list[Any] = []
        now = time.perf_counter()
        for handler in (self.store, self.load):
            for job_id, success in handler.get_finished():
                direction, size, started, blocks = self._jobs.pop(job_id, ("?", 0, now, 0))
                if success and direction in ("store", "load"):
                    self.completed[direction] += 1
                    self.completed[f"{direction}_blocks"] += blocks
                log_event(side="worker", op=direction, job=job_id, success=bool(success), blocks=blocks, bytes=size)
                results.append(
                    TransferResult(
                        job_id=job_id,
                        success=bool(success),
                        transfer_size=size,
                        transfer_time=max(now - started, 0.0),
                    )
                )
        return results

    def wait(self, job_ids: set[int]) -> None:
        self.store.wait(set(job_ids))
        self.load.wait(set(job_ids))

    def shutdown(self) -> None:
        return None
