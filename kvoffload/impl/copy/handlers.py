"""GPU ↔ CPU copy handlers with vLLM's worker interface (H1–H4).

``CpuGpuHandler`` serves one direction: ``"store"`` (GPU → CPU) or ``"load"``
(CPU → GPU). ``transfer_async`` validates the whole job before anything is issued (H1),
hands the copies to an engine (inline on CPU, a dedicated stream on CUDA: H4), and
``get_finished`` reports jobs strictly in submission order, each exactly once (H2).
``build_cpu_handlers`` builds both directions over one set of host buffers.
"""

from __future__ import annotations

import enum
import logging
from collections import deque
from collections.abc import Iterator, Mapping

import numpy as np
import torch

from kvoffload.spec.errors import ContractViolation
from kvoffload.spec.interfaces import OffloadingHandler
from kvoffload.spec.types import (
    CPULoadStoreSpec,
    GPULoadStoreSpec,
    LoadStoreSpec,
    TransferResult,
    TransferSpec,
)

from .buffers import KVBuffers
from .cuda import Completion, CopyEngine, Issue, make_engine
from .indices import IntArray, load_pairs, store_pairs
from .layouts import KVLayout
from . import uva
from .paths import CopyPath, available_paths, load_rows, store_rows

__all__ = ["Direction", "CpuGpuHandler", "build_cpu_handlers", "cpu_handler_triples", "default_path"]

logger = logging.getLogger(__name__)


class Direction(str, enum.Enum):
    """Which way a handler copies."""

    STORE = "store"  # GPU -> CPU
    LOAD = "load"  # CPU -> GPU


def default_path(device: torch.device, pinned: bool = True) -> CopyPath:
    """The path ``"auto"`` picks, by measurement (``kvoffload bench copy``).

    CPU: ``direct`` (one pass, no staging) was fastest or tied at every block size and
    batch measured. CUDA: ``uva`` (one kernel per job) where Triton is installed and the
    host planes are pinned: on an H200 it was the fastest path, or within 1.1% of
    ``gather``, at every block size, batch and shape measured, and 3–4× ``gather`` on
    small jobs (``docs/bench/copy-h200.txt``). Otherwise ``gather`` (one kernel per
    plane plus one DMA per host run).
    """
    if device.type == "cpu":
        return CopyPath.DIRECT
    return CopyPath.UVA if pinned and uva.available() else CopyPath.GATHER


def _job_id(job_id: object) -> int:
    if isinstance(job_id, bool) or not isinstance(job_id, (int, np.integer)):
        raise TypeError(f"H1: job_id must be an int, got {type(job_id).__name__} {job_id!r}")
    return int(job_id)


def _pair(spec: object) -> tuple[LoadStoreSpec, LoadStoreSpec]:
    if not isinstance(spec, (tuple, list)) or len(spec) != 2:
        raise TypeError(f"H1: spec must be a (src_spec, dst_spec) pair, got {spec!r}")
    return spec[0], spec[1]


def _medium(spec: object, role: str) -> str:
    medium = getattr(spec, "medium", None)
    if not callable(medium):
        raise TypeError(f"H1: {role} spec {spec!r} is not a LoadStoreSpec (no medium())")
    return str(medium())


def _ids(spec: object, role: str, limit: int, unit: str) -> IntArray:
    """The spec's block ids as a private int64 copy, checked to lie in ``[0, limit)``."""
    raw = np.asarray(getattr(spec, "block_ids", None))
    if raw.ndim != 1 or not (raw.dtype.kind in "iu" or raw.size == 0):
        raise TypeError(f"H1: {role} spec needs a 1-D integer block_ids array, got {raw!r}")
    # A copy: the caller may reuse its array while the job is in flight.
    ids = np.array(raw, dtype=np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= limit):
        bad = ids[(ids < 0) | (ids >= limit)]
        raise ContractViolation(
            "H1", f"{role} block id(s) {bad.tolist()} out of range [0, {limit}) of {unit}"
        )
    return ids


def _distinct(ids: IntArray, role: str) -> None:
    # Our decision (the contract is silent): two rows writing one destination block
    # would make the result depend on copy order, so such a job is refused.
    # A sort and one comparison: np.unique was a tenth of a job's CPU time on CUDA.
    ordered = np.sort(ids)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if repeated.size:
        raise ContractViolation(
            "H1", f"{role} block id(s) {np.unique(repeated).tolist()} appear more than once"
        )


class CpuGpuHandler(OffloadingHandler):
    """One direction of GPU ↔ CPU block copies over shared ``KVBuffers`` (H1–H4)."""

    def __init__(
        self,
        buffers: KVBuffers,
        direction: Direction | str,
        path: CopyPath | str = "auto",
        engine: CopyEngine | None = None,
    ) -> None:
        self.buffers = buffers
        self.direction = Direction(direction)
        if path == "auto":
            # ``buffers.pinned``: host planes this package allocated pinned. Planes a
            # caller hands in (vLLM's shared region) keep ``gather``: the kernel reaching
            # registered memory through its device mapping was not checked on a GPU.
            chosen = default_path(buffers.device, buffers.pinned)
        else:
            try:
                chosen = CopyPath(path)
            except ValueError:
                names = ", ".join(p.value for p in CopyPath)
                raise ValueError(f"unknown copy path {path!r}; expected auto, {names}") from None
        if chosen not in available_paths(buffers.device):
            raise ValueError(f"copy path {chosen.value!r} cannot run on {buffers.device}")
        self.path = chosen
        self._table = self._segment_table() if chosen is CopyPath.UVA else None
        self.engine = engine if engine is not None else make_engine(buffers.device)
        store = self.direction is Direction.STORE
        self.src_medium, self.dst_medium = ("GPU", "CPU") if store else ("CPU", "GPU")
        self._queue: deque[tuple[int, Completion]] = deque()
        self._in_flight: dict[int, Completion] = {}

    def _segment_table(self) -> uva.SegmentTable:
        """The uva path's addresses, built once; the kernel reaches host memory only
        through its device mapping, so the host planes must be pinned (H4)."""
        if not all(h.is_pinned() for h in self.buffers.host_planes):
            raise ValueError("copy path 'uva' needs pinned host planes (pin_memory=True)")
        return uva.SegmentTable.build(self.buffers.device_planes, self.buffers.host_planes)

    def __repr__(self) -> str:
        return (
            f"CpuGpuHandler({self.direction.value}, path={self.path.value}, "
            f"device={self.buffers.device}, in_flight={len(self._in_flight)})"
        )

    def transfer_async(self, job_id: int, spec: TransferSpec) -> bool:
        """Validate the whole job, then issue it; ``True`` when accepted (H1).

        Refusals raise before any byte moves: ``TypeError`` for a non-int job id or a
        malformed spec; ``ContractViolation`` (H1) for a job id in flight, a wrong
        medium, lengths that break H3, ids out of range or duplicate destinations.
        """
        jid, gpu_ids, sub_ids = self.check(job_id, spec)
        self.submit_rows(jid, gpu_ids, sub_ids)
        return True

    def check(self, job_id: int, spec: TransferSpec) -> tuple[int, IntArray, IntArray]:
        """Validate a job as ``transfer_async`` does (H1, H3), without issuing it.

        Returns ``(job id, GPU block ids, host sub-block ids)``, row for row, for
        ``submit_rows``. A caller that splits one job over several handlers (one per KV
        cache group) checks every part before it issues any, so a refused part moves
        no byte of the others either (H1).
        """
        jid = _job_id(job_id)
        if jid in self._in_flight:
            raise ContractViolation("H1", f"job id {jid} is already in flight")
        src, dst = _pair(spec)
        media = (_medium(src, "source"), _medium(dst, "destination"))
        if media != (self.src_medium, self.dst_medium):
            raise ContractViolation(
                "H1",
                f"this {self.direction.value} handler copies {self.src_medium} -> "
                f"{self.dst_medium}, got {media[0]} -> {media[1]}",
            )
        b = self.buffers
        gpu_unit = f"{b.num_gpu_blocks} GPU blocks"
        cpu_unit = f"{b.num_cpu_blocks} offloaded blocks"
        if self.direction is Direction.STORE:
            src_ids = _ids(src, "source", b.num_gpu_blocks, gpu_unit)
            dst_ids = _ids(dst, "destination", b.num_cpu_blocks, cpu_unit)
            _distinct(dst_ids, "destination")
            gpu_ids, sub_ids = store_pairs(src_ids, dst_ids, b.block_size_factor)
        else:
            src_ids = _ids(src, "source", b.num_cpu_blocks, cpu_unit)
            dst_ids = _ids(dst, "destination", b.num_gpu_blocks, gpu_unit)
            _distinct(dst_ids, "destination")
            sub_ids, gpu_ids = load_pairs(src_ids, dst_ids, b.block_size_factor)
        return jid, gpu_ids, sub_ids

    def submit_rows(self, job_id: int, gpu_ids: IntArray, sub_ids: IntArray) -> None:
        """Issue a job that ``check`` accepted (its return values, unchanged)."""
        rows = np.stack((gpu_ids, sub_ids))
        completion = self.engine.submit(self._issuer(gpu_ids, sub_ids), rows)
        self._in_flight[job_id] = completion
        self._queue.append((job_id, completion))

    def _issuer(self, gpu_ids: IntArray, sub_ids: IntArray) -> Issue:
        b, path, table = self.buffers, self.path, self._table
        store = self.direction is Direction.STORE
        if table is not None:

            def issue_kernel(index: torch.Tensor, non_blocking: bool) -> None:
                uva.copy_rows(table, store, index)

            return issue_kernel
        if store:

            def issue_store(index: torch.Tensor, non_blocking: bool) -> None:
                store_rows(path, b.device_planes, b.host_planes, gpu_ids, index[0], sub_ids, non_blocking)

            return issue_store

        def issue_load(index: torch.Tensor, non_blocking: bool) -> None:
            load_rows(path, b.host_planes, b.device_planes, sub_ids, gpu_ids, index[0], non_blocking)

        return issue_load

    def get_finished(self) -> list[TransferResult]:
        """Finished jobs, oldest first, each reported once (H2).

        Stops at the first unfinished job, so a later job is never reported before an
        earlier one (submission order, H2).
        """
        finished: list[TransferResult] = []
        while self._queue and self._queue[0][1].done():
            jid, completion = self._queue.popleft()
            del self._in_flight[jid]
            finished.append((jid, completion.success))
        return finished

    def wait(self, job_ids: set[int]) -> None:
        """Block until the given jobs (and, by order, every earlier one) are done (H2).

        Ids that are not in flight are ignored: they were reported already or never
        accepted. The jobs are still reported by the next ``get_finished``.
        """
        for jid, completion in self._queue:
            if jid in job_ids:
                completion.synchronize()


def build_cpu_handlers(
    kv_caches: Mapping[str, torch.Tensor],
    layout: KVLayout | str | Mapping[str, KVLayout | str],
    gpu_block_size: int,
    block_size_factor: int,
    num_cpu_blocks: int,
    *,
    path: CopyPath | str = "auto",
    pin_memory: bool | None = None,
) -> tuple[CpuGpuHandler, CpuGpuHandler]:
    """``(store, load)`` handlers (GPU → CPU, CPU → GPU) sharing host buffers (S3, H3, H4).

    ``kv_caches`` maps layer (or group) names to KV tensors, all on one device with one
    number of GPU blocks; ``layout`` names their layout (one for all, or per name: see
    ``KVLayout``). ``gpu_block_size`` is tokens per GPU block, ``block_size_factor`` the
    ``f`` of H3 and ``num_cpu_blocks`` the number of offloaded blocks. Host buffers are
    pinned when the KV cache is on CUDA unless ``pin_memory`` says otherwise. Usable as
    a conformance factory (``kvoffload conform handler``), called positionally.
    """
    buffers = KVBuffers.build(
        kv_caches, layout, gpu_block_size, block_size_factor, num_cpu_blocks, pin_memory
    )
    return (
        CpuGpuHandler(buffers, Direction.STORE, path),
        CpuGpuHandler(buffers, Direction.LOAD, path),
    )


def cpu_handler_triples(
    store: OffloadingHandler, load: OffloadingHandler
) -> Iterator[tuple[type[LoadStoreSpec], type[LoadStoreSpec], OffloadingHandler]]:
    """What ``OffloadingSpec.get_handlers`` yields for the two CPU handlers (S3)."""
    yield GPULoadStoreSpec, CPULoadStoreSpec, store
    yield CPULoadStoreSpec, GPULoadStoreSpec, load
