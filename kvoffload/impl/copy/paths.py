"""The candidate copy paths, each a plain function over planes (H2, H4).

A *plane* is a block-first view (``layouts.kv_planes``): row ``i`` is GPU block ``i``
(device plane) or sub-block ``i`` (host plane). Each path copies rows
``device[gpu[j]] <-> host[sub[j]]`` for every ``j`` and every plane, and touches no
other row. Which path is fastest depends on block size, batch size and device, so the
path is a parameter and ``kvoffload bench copy`` measures them side by side:

- ``per_block`` — one ``copy_`` per block and plane. Many small copies; the baseline
  vLLM started from; on CUDA one ``cudaMemcpyAsync`` each.
- ``gather`` — one ``index_select`` / ``index_copy_`` kernel per plane on the device
  into / out of a contiguous device staging buffer, plus one large ``copy_`` per run of
  consecutive host sub-blocks. The CUDA default: few launches, large DMA transfers.
- ``index`` — ``index_select`` then ``index_copy_`` on both sides (same device only:
  the CPU-only configuration).
- ``runs`` — one ``copy_`` per run where both sides' ids are consecutive: ``per_block``
  when ids are scattered, one large copy when they are not.
- ``direct`` — stores ``index_select(out=host run)``, one pass and no staging; loads as
  ``runs`` (on the CPU ``index_copy_``/``index_put_`` measured 2–5× slower than one
  ``copy_`` per row). Same device only.
- ``uva`` — one Triton kernel per job that reads and writes pinned host memory through
  its device mapping, every plane at once (``uva.py``; CUDA with Triton only). The
  handler launches it itself, from a table of addresses built once, so it has no row
  function here.

All functions take ``non_blocking``; on CUDA they are called inside the copy stream's
context, so every kernel and copy they issue is ordered on that stream (H4).
"""

from __future__ import annotations

import enum
from collections.abc import Callable

import torch

from . import uva
from .indices import IntArray, pair_runs, runs

__all__ = ["CopyPath", "available_paths", "store_rows", "load_rows"]


class CopyPath(str, enum.Enum):
    """A copy strategy (module docstring)."""

    PER_BLOCK = "per_block"
    GATHER = "gather"
    RUNS = "runs"
    INDEX = "index"
    DIRECT = "direct"
    UVA = "uva"


def available_paths(device: torch.device) -> list[CopyPath]:
    """The paths that can run with device planes on ``device``.

    ``index`` and ``direct`` index the host plane with a tensor op, which needs the
    device plane on the host too; ``uva`` needs CUDA and Triton.
    """
    if device.type == "cpu":
        return [p for p in CopyPath if p is not CopyPath.UVA]
    kernel = [CopyPath.UVA] if uva.available() else []
    return [CopyPath.GATHER, CopyPath.PER_BLOCK, CopyPath.RUNS, *kernel]


Planes = list[torch.Tensor]
# One copy of one path: (device planes, host planes, gpu ids, gpu ids as a device tensor,
# host sub-block ids, non_blocking). Stores copy device -> host, loads host -> device.
RowCopy = Callable[[Planes, Planes, IntArray, torch.Tensor, IntArray, bool], None]


def _copy_each(src_planes: Planes, dst_planes: Planes, src_ids: IntArray, dst_ids: IntArray, nb: bool) -> None:
    """``per_block`` in either direction: ``dst[dst_ids[j]] <- src[src_ids[j]]``, one row at a time."""
    pairs = list(zip(src_ids.tolist(), dst_ids.tolist()))
    for src, dst in zip(src_planes, dst_planes):
        for i, j in pairs:
            dst[j].copy_(src[i], non_blocking=nb)


def _copy_spans(src_planes: Planes, dst_planes: Planes, src_ids: IntArray, dst_ids: IntArray, nb: bool) -> None:
    """``runs`` in either direction: one ``copy_`` per run consecutive on both sides."""
    spans = pair_runs(src_ids, dst_ids)
    for src, dst in zip(src_planes, dst_planes):
        for i, j, n in spans:
            dst[j : j + n].copy_(src[i : i + n], non_blocking=nb)


def _store_gather(dev_planes: Planes, host_planes: Planes, gpu_ids: IntArray, gpu_index: torch.Tensor,
                  sub_ids: IntArray, nb: bool) -> None:
    host_runs = runs(sub_ids)
    for dev, host in zip(dev_planes, host_planes):
        # Allocated on the current (copy) stream: the caching allocator reuses it
        # only for later work of that stream, so dropping it here is safe.
        staging = dev.index_select(0, gpu_index)
        for pos, first, n in host_runs:
            host[first : first + n].copy_(staging[pos : pos + n], non_blocking=nb)


def _store_index(dev_planes: Planes, host_planes: Planes, gpu_ids: IntArray, gpu_index: torch.Tensor,
                 sub_ids: IntArray, nb: bool) -> None:
    sub_index = torch.from_numpy(sub_ids)
    for dev, host in zip(dev_planes, host_planes):
        host.index_copy_(0, sub_index, dev.index_select(0, gpu_index))


def _store_direct(dev_planes: Planes, host_planes: Planes, gpu_ids: IntArray, gpu_index: torch.Tensor,
                  sub_ids: IntArray, nb: bool) -> None:
    host_runs = runs(sub_ids)
    for dev, host in zip(dev_planes, host_planes):
        for pos, first, n in host_runs:
            torch.index_select(dev, 0, gpu_index[pos : pos + n], out=host[first : first + n])


def _load_gather(dev_planes: Planes, host_planes: Planes, gpu_ids: IntArray, gpu_index: torch.Tensor,
                 sub_ids: IntArray, nb: bool) -> None:
    host_runs = runs(sub_ids)
    for host, dev in zip(host_planes, dev_planes):
        staging = torch.empty((len(sub_ids), *dev.shape[1:]), dtype=dev.dtype, device=dev.device)
        for pos, first, n in host_runs:
            staging[pos : pos + n].copy_(host[first : first + n], non_blocking=nb)
        dev.index_copy_(0, gpu_index, staging)


def _load_index(dev_planes: Planes, host_planes: Planes, gpu_ids: IntArray, gpu_index: torch.Tensor,
                sub_ids: IntArray, nb: bool) -> None:
    sub_index = torch.from_numpy(sub_ids)
    for host, dev in zip(host_planes, dev_planes):
        dev.index_copy_(0, gpu_index, host.index_select(0, sub_index))


# The one table of which function copies each path's rows, per direction. ``direct`` loads
# as ``runs`` (module docstring).
_STORES: dict[CopyPath, RowCopy] = {
    CopyPath.PER_BLOCK: lambda dev, host, gpu, _index, sub, nb: _copy_each(dev, host, gpu, sub, nb),
    CopyPath.RUNS: lambda dev, host, gpu, _index, sub, nb: _copy_spans(dev, host, gpu, sub, nb),
    CopyPath.GATHER: _store_gather, CopyPath.INDEX: _store_index, CopyPath.DIRECT: _store_direct,
}
_LOADS: dict[CopyPath, RowCopy] = {
    CopyPath.PER_BLOCK: lambda dev, host, gpu, _index, sub, nb: _copy_each(host, dev, sub, gpu, nb),
    CopyPath.RUNS: lambda dev, host, gpu, _index, sub, nb: _copy_spans(host, dev, sub, gpu, nb),
    CopyPath.GATHER: _load_gather, CopyPath.INDEX: _load_index,
    CopyPath.DIRECT: lambda dev, host, gpu, _index, sub, nb: _copy_spans(host, dev, sub, gpu, nb),
}


def store_rows(
    path: CopyPath,
    device_planes: list[torch.Tensor],
    host_planes: list[torch.Tensor],
    gpu_ids: IntArray,
    gpu_index: torch.Tensor,
    sub_ids: IntArray,
    non_blocking: bool,
) -> None:
    """Copy ``device[gpu_ids[j]] -> host[sub_ids[j]]`` for every plane.

    ``gpu_index`` is ``gpu_ids`` as an int64 tensor on the device planes' device.
    """
    _STORES[CopyPath(path)](device_planes, host_planes, gpu_ids, gpu_index, sub_ids, non_blocking)


def load_rows(
    path: CopyPath,
    host_planes: list[torch.Tensor],
    device_planes: list[torch.Tensor],
    sub_ids: IntArray,
    gpu_ids: IntArray,
    gpu_index: torch.Tensor,
    non_blocking: bool,
) -> None:
    """Copy ``host[sub_ids[j]] -> device[gpu_ids[j]]`` for every plane."""
    _LOADS[CopyPath(path)](device_planes, host_planes, gpu_ids, gpu_index, sub_ids, non_blocking)
