"""The ``uva`` copy path: one Triton kernel per job moves every row of every plane (H2, H4).

Why a kernel. With per-layer KV tensors a job touches many planes (64 for a 32-layer model,
K and V apart), and a 16-token block's row in one plane is small (32 KiB for Llama-3-8B).
The ``gather`` path issues, per plane, one gather kernel and one DMA per host run, all in
order on one stream: the copy engine idles while each gather runs, and each DMA is only a
few hundred KiB. Pinned host memory is mapped into the GPU's address space (unified
virtual addressing, every 64-bit CUDA platform), so one kernel can read device rows and
write host rows, or the reverse, directly: one launch per job, whatever the number of
planes and however scattered the GPU block ids.

Alternatives not taken (neither was measured):

- ``cudaMemcpyBatchAsync`` (CUDA ≥ 12.8) still moves one small DMA per row and plane, and
  torch does not expose it; reaching it through ctypes ties us to one CUDA runtime ABI.
- A single gather into one staging tensor plus one 2-D DMA needs every plane to share a
  row size and the host planes to share one allocation; vLLM's tensors do neither in
  general.

How. Each (device plane, host plane) pair is cut into *segments* whose rows are contiguous
on both sides (``layers_*`` layouts keep the layer dimension inside a row with a stride,
so each layer becomes its own segment). A ``SegmentTable`` holds, per segment, both base
addresses, both row strides in bytes and the row length in words, as one int64 tensor on
the device, built once per handler. A job is a (gpu ids; host sub-block ids) pair of rows
that the handler validated (H1) before they reach the kernel; the kernel's grid is
(row, segment, chunk of the row), and it copies words of the widest integer type that
divides every address and length, so bytes move as bits (H2).

The kernel runs on the handler's stream (``cuda.CudaEngine``), so H4's ordering holds as
for the other paths. It needs host memory that is pinned (mapped); ``available`` says
whether Triton can be imported at all.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import torch

__all__ = ["available", "SegmentTable", "copy_rows"]

# Words per step of one program, and steps per program: a program moves one chunk of
# BLOCK * STEPS words of one row of one segment (64 KiB with 8-byte words).
BLOCK = 1024
STEPS = 8
_WORDS = (8, 4, 2, 1)
_MAX_GRID = 65535  # CUDA's limit on a grid's second and third dimensions


@functools.cache
def _kernel() -> Any:
    """The Triton kernel, compiled on first use (Triton is imported only here).

    ``table`` is a ``SegmentTable.packed`` tensor (five rows of ``segments`` columns);
    ``rows`` is the job's ``(2, n)`` int64 tensor: GPU block ids, then host sub-block ids.
    """
    import triton
    import triton.language as tl

    @triton.jit(do_not_specialize=["segments", "n"])  # type: ignore[untyped-decorator]
    def copy_rows_kernel(table, segments, rows, n, STORE: tl.constexpr,  # type: ignore[no-untyped-def]
                         WORD: tl.constexpr, BLOCK: tl.constexpr, STEPS: tl.constexpr):
        row = tl.program_id(0)
        seg = tl.program_id(1)
        chunk = tl.program_id(2)
        words = tl.load(table + 4 * segments + seg)
        dev = tl.load(table + seg) + tl.load(rows + row) * tl.load(table + segments + seg)
        host = tl.load(table + 2 * segments + seg) + tl.load(rows + n + row) * tl.load(table + 3 * segments + seg)
        src = dev if STORE else host
        dst = host if STORE else dev
        if WORD == 8:
            src_ptr = src.to(tl.pointer_type(tl.int64))
            dst_ptr = dst.to(tl.pointer_type(tl.int64))
        elif WORD == 4:
            src_ptr = src.to(tl.pointer_type(tl.int32))
            dst_ptr = dst.to(tl.pointer_type(tl.int32))
        elif WORD == 2:
            src_ptr = src.to(tl.pointer_type(tl.int16))
            dst_ptr = dst.to(tl.pointer_type(tl.int16))
        else:
            src_ptr = src.to(tl.pointer_type(tl.uint8))
            dst_ptr = dst.to(tl.pointer_type(tl.uint8))
        offsets = tl.arange(0, BLOCK)
        first = chunk.to(tl.int64) * (BLOCK * STEPS)
        for step in range(STEPS):
            index = first + step * BLOCK + offsets
            inside = index < words
            tl.store(dst_ptr + index, tl.load(src_ptr + index, mask=inside), mask=inside)

    return copy_rows_kernel


def available() -> bool:
    """Whether Triton can be imported (it ships with CUDA builds of torch)."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def _segments(dev: torch.Tensor, host: torch.Tensor) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Pairs of block-first views whose rows are contiguous on both sides, covering the
    rows of ``dev`` and ``host`` exactly once."""
    if dev.shape[1:].numel() == 0:
        return
    if dev.dim() == 1 or (dev[0].is_contiguous() and host[0].is_contiguous()):
        yield dev, host
        return
    for i in range(dev.shape[1]):
        yield from _segments(dev.select(1, i), host.select(1, i))


def _row(view: torch.Tensor) -> tuple[int, int]:
    """(address of row 0, row stride) in bytes."""
    return view.data_ptr(), view.stride(0) * view.element_size()


@attrs.frozen
class SegmentTable:
    """Per segment, in the rows of ``packed`` (int64, on the device): device row-0
    address, device row stride, host row-0 address, host row stride (bytes), row length
    (words of ``word_bytes``). One tensor, so a launch passes one pointer for all of it."""

    packed: torch.Tensor
    word_bytes: int
    max_words: int
    host_views: tuple[torch.Tensor, ...]  # kept alive: the table holds their addresses

    @classmethod
    def build(cls, device_planes: Sequence[torch.Tensor], host_planes: Sequence[torch.Tensor]) -> SegmentTable:
        """The table of every segment of every (device plane, host plane) pair.

        The host planes must be pinned for a CUDA kernel to reach them (the handler checks;
        Triton's CPU interpreter, which the tests use without a GPU, needs no pinning).
        """
        pairs = [pair for d, h in zip(device_planes, host_planes) for pair in _segments(d, h)]
        if len(pairs) > _MAX_GRID:
            raise ValueError(f"{len(pairs)} segments: the uva kernel's grid holds at most {_MAX_GRID}")
        rows = [(*_row(d), *_row(h), d[0].numel() * d.element_size()) for d, h in pairs]
        word = next(w for w in _WORDS if all(v % w == 0 for r in rows for v in r))
        fields = [[r[i] for r in rows] for i in range(4)] + [[r[4] // word for r in rows]]
        longest = max(fields[4], default=0)
        if math.ceil(longest / (BLOCK * STEPS)) > _MAX_GRID:
            raise ValueError(f"a row of {longest} words is longer than the uva kernel's grid covers")
        packed = torch.tensor(fields, dtype=torch.int64, device=device_planes[0].device)
        return cls(packed=packed, word_bytes=word, max_words=longest, host_views=tuple(h for _, h in pairs))

    @property
    def segments(self) -> int:
        """Number of segments."""
        return int(self.packed.shape[1])


def copy_rows(table: SegmentTable, store: bool, rows: torch.Tensor) -> None:
    """Launch the kernel on the current stream: for every segment and every ``j``, copy
    device row ``rows[0, j]`` to host row ``rows[1, j]`` (``store``) or back.

    ``rows`` is a contiguous ``(2, n)`` int64 tensor the kernel can read (on the device,
    or pinned), validated by the caller (H1): the kernel does no bounds check of its own.
    """
    n = rows.shape[1]
    if n == 0 or table.max_words == 0:
        return
    chunks = math.ceil(table.max_words / (BLOCK * STEPS))
    _kernel()[(n, table.segments, chunks)](
        table.packed, table.segments, rows, n, STORE=store, WORD=table.word_bytes, BLOCK=BLOCK, STEPS=STEPS
    )
