"""``KVOffloadingWorker``: vLLM 0.32's ``OffloadingWorker`` over our copy handlers.

vLLM hands the worker canonical KV tensors, one ``(num_blocks, page_bytes)`` int8
tensor each, and per KV cache group the tensors its layers use
(``CanonicalKVCaches.group_data_refs``). One host plane per tensor holds
``num_cpu_blocks · f`` GPU-sized sub-blocks (as vLLM's own CPU worker allocates them);
every group's offloaded blocks come from the one pool the manager hands out, so the
groups share those planes.

A job's ``GPULoadStoreSpec(block_ids, group_sizes, block_indices)`` lists the GPU blocks
group by group; the offloaded ids follow the same group order. ``indices.group_rows``
maps each group's GPU blocks to host sub-blocks the way vLLM's worker does (group ``g``
starts ``block_indices[g] % f`` sub-blocks into its first offloaded block: a
sliding-window group stores and loads only the blocks vLLM lists), and each group's part
is copied by a handler pair over that group's planes only (H1–H4). Every part of a job
is validated before any is issued (H1); the job finishes when all its parts have, and
succeeds when all of them did.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np
import torch

from vllm.v1.kv_offload.base import OffloadingWorker, TransferResult

from ...spec.clauses import implements
from ...spec.types import CPULoadStoreSpec, GPULoadStoreSpec
from ..copy import CpuGpuHandler, Direction, KVBuffers
from ..copy.indices import IntArray, group_rows
from ._log import corrupt_loads, log_event

__all__ = ["KVOffloadingWorker"]

logger = logging.getLogger(__name__)


def group_planes(kv_caches: Any) -> list[list[int]]:
    """Per KV cache group, the indices of the tensors its layers use (all when none given)."""
    count = len(kv_caches.tensors)
    refs = list(getattr(kv_caches, "group_data_refs", None) or [])
    if not refs:
        return [list(range(count))]
    planes = [sorted({int(ref.tensor_idx) for ref in group}) for group in refs]
    for group, indices in enumerate(planes):
        if not indices or indices[-1] >= count or indices[0] < 0:
            raise ValueError(
                f"KV cache group {group} refers to tensors {indices}, but vLLM handed {count} tensor(s)"
            )
    return planes


@implements("N8")
def _distinct_across_groups(destinations: list[IntArray], direction: str) -> None:
    """H1: two groups never write one destination block (each handler checks its own
    group; groups may share tensors, so a block written twice would depend on order)."""
    everything = np.concatenate(destinations) if destinations else np.empty(0, dtype=np.int64)
    values, counts = np.unique(everything, return_counts=True)
    if (counts > 1).any():
        side = "host sub-block" if direction == "store" else "GPU block"
        raise ValueError(f"H1: {side}(s) {values[counts > 1].tolist()} written by more than one group")


@attrs.define
class _Job:
    """One vLLM job in flight: its parts (one per non-empty group) and what it moves."""

    direction: str
    size: int
    blocks: int
    started: float
    pending: set[int]
    group_blocks: list[int]
    success: bool = True


class KVOffloadingWorker(OffloadingWorker):  # type: ignore[misc]
    """Stores (GPU → CPU) and loads (CPU → GPU), one ``CpuGpuHandler`` pair per group."""

    def __init__(
        self,
        kv_caches: Any,
        *,
        gpu_block_size: int,
        block_size_factor: int,
        num_cpu_blocks: int,
        host_planes: Sequence[torch.Tensor] | None = None,
    ) -> None:
        """``host_planes``: one per KV tensor, in vLLM's tensor order (``KVBuffers.build``);
        allocated here when not given."""
        planes = group_planes(kv_caches)
        tensors: dict[str, torch.Tensor] = {
            f"tensor{i}": entry.tensor for i, entry in enumerate(kv_caches.tensors)
        }
        #: Every tensor's host plane (vLLM's "page" layout: one plane per tensor).
        self.buffers = KVBuffers.build(
            tensors, "page", gpu_block_size, block_size_factor, num_cpu_blocks, host_planes=host_planes
        )
        views = [self.buffers.sub_block_view(group) for group in planes]
        self.stores = [CpuGpuHandler(view, Direction.STORE) for view in views]
        self.loads = [CpuGpuHandler(view, Direction.LOAD) for view in views]
        self.factor = block_size_factor
        self.bytes_per_gpu_block = [view.bytes_per_gpu_block for view in views]
        self._jobs: dict[int, _Job] = {}
        self._empty: list[int] = []  # accepted jobs with no block in any group
        self.completed: dict[str, int] = {"store": 0, "load": 0, "store_blocks": 0, "load_blocks": 0}
        self._corrupt = corrupt_loads()

    # -- submission ----------------------------------------------------------------------
    @implements("N8")
    def _rows(self, gpu_spec: Any, offloaded_ids: IntArray) -> list[tuple[IntArray, IntArray]]:
        gpu_ids = np.asarray(gpu_spec.block_ids, dtype=np.int64)
        sizes: Sequence[int] | None = getattr(gpu_spec, "group_sizes", None)
        indices: Sequence[int] | None = getattr(gpu_spec, "block_indices", None)
        if sizes is None:  # one group, aligned (vLLM's "group_sizes=None")
            sizes, indices = [len(gpu_ids)], [0]
        if len(sizes) != len(self.stores):
            raise ValueError(
                f"the spec has group_sizes={list(sizes)} for {len(sizes)} KV cache group(s), "
                f"the KV caches have {len(self.stores)}"
            )
        return group_rows(gpu_ids, offloaded_ids, [int(s) for s in sizes], [int(i) for i in indices or []], self.factor)

    def _submit(self, direction: str, job_id: int, gpu_spec: Any, cpu_spec: Any) -> bool:
        handlers = self.stores if direction == "store" else self.loads
        try:
            jid = int(job_id)
            if jid in self._jobs or jid in self._empty:
                raise ValueError(f"H1: job id {jid} is already in flight")
            offloaded = np.asarray(cpu_spec.block_ids, dtype=np.int64)
            parts = []
            for group, (gpu, sub) in enumerate(self._rows(gpu_spec, offloaded)):
                if len(gpu):
                    sides = (GPULoadStoreSpec(gpu), CPULoadStoreSpec(sub))
                    spec = sides if direction == "store" else sides[::-1]
                    parts.append((group, *handlers[group].check(jid, spec)))
            _distinct_across_groups([p[3] if direction == "store" else p[2] for p in parts], direction)
            if direction == "load" and self._corrupt and len(offloaded):
                self._zero_host_block(int(offloaded[0]))
        except Exception as error:  # H1: a refused job is logged and reported as False
            logger.error("kvoffload: %s job %r refused: %s", direction, job_id, error)
            return False
        for group, _, gpu_ids, sub_ids in parts:
            handlers[group].submit_rows(jid, gpu_ids, sub_ids)
        size = sum(len(gpu_ids) * self.bytes_per_gpu_block[group] for group, _, gpu_ids, _ in parts)
        per_group = [0] * len(handlers)
        for group, _, gpu_ids, _ in parts:
            per_group[group] = len(gpu_ids)
        self._jobs[jid] = _Job(direction, size, len(offloaded), time.perf_counter(), {p[0] for p in parts}, per_group)
        if not parts:
            self._empty.append(jid)
        return True

    def submit_store(self, job_id: int, src_spec: Any, dst_spec: Any) -> bool:
        return self._submit("store", job_id, src_spec, dst_spec)

    @implements("N6")
    def submit_load(self, job_id: int, src_spec: Any, dst_spec: Any, expedited: bool = False) -> bool:
        """CPU → device copy (H1, H3). ``expedited`` (vLLM 0.33, N6): the connector waits on
        this job within the step (``wait``). Handled like any load: on CPU the copy runs at
        submission; on CUDA the load stream keeps submission order (H2), so an expedited
        load is not moved ahead of loads submitted before it."""
        return self._submit("load", job_id, dst_spec, src_spec)

    def _zero_host_block(self, block_id: int) -> None:
        """Test seam: zero every host plane's sub-blocks of offloaded block ``block_id``."""
        first = block_id * self.factor
        for plane in self.buffers.host_planes:
            plane[first : first + self.factor].zero_()
        log_event(side="worker", op="corrupt", block=block_id)

    # -- completion ----------------------------------------------------------------------
    def _finished_parts(self) -> list[tuple[int, int, bool]]:
        """``(job id, group, success)`` of every part that finished since the last call."""
        parts: list[tuple[int, int, bool]] = []
        for group, (store, load) in enumerate(zip(self.stores, self.loads)):
            for handler in (store, load):
                parts.extend((int(jid), group, bool(ok)) for jid, ok in handler.get_finished())
        return parts

    def get_finished(self) -> list[Any]:
        done = self._empty
        self._empty = []
        for jid, group, success in self._finished_parts():
            job = self._jobs.get(jid)
            if job is None or group not in job.pending:
                continue
            job.pending.discard(group)
            job.success = job.success and success
            if not job.pending:
                done.append(jid)
        now = time.perf_counter()
        results: list[Any] = []
        for jid in done:
            job = self._jobs.pop(jid)
            if job.success:
                self.completed[job.direction] += 1
                self.completed[f"{job.direction}_blocks"] += job.blocks
            log_event(
                side="worker",
                op=job.direction,
                job=jid,
                success=job.success,
                blocks=job.blocks,
                bytes=job.size,
                group_gpu_blocks=job.group_blocks,
            )
            results.append(
                TransferResult(
                    job_id=jid, success=job.success, transfer_size=job.size, transfer_time=max(now - job.started, 0.0)
                )
            )
        return results

    def wait(self, job_ids: set[int]) -> None:
        for handler in (*self.stores, *self.loads):
            handler.wait(set(job_ids))

    def shutdown(self) -> None:
        return None
