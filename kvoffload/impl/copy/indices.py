"""Index arithmetic of the block-size factor (H3), kept apart from any copying.

Offloaded block ``b`` holds GPU-sized sub-blocks ``b·f … b·f+f−1`` of a host plane.
A store of ``k`` offloaded blocks carries ``k·f`` GPU blocks (GPU block ``i`` lands in
sub-block ``dst[i // f]·f + i % f``). A load into ``m`` GPU blocks from ``k`` offloaded
blocks, ``k·f − f < m ≤ k·f``, reads the *last* ``m`` of the ``k·f`` sub-blocks: the
first ``k·f − m`` belong to a prefix that is already on the GPU.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from kvoffload.spec.clauses import implements
from kvoffload.spec.errors import ContractViolation

__all__ = ["sub_blocks", "store_pairs", "load_pairs", "group_rows", "runs", "pair_runs"]

IntArray = npt.NDArray[np.int64]


def sub_blocks(offloaded_ids: IntArray, factor: int) -> IntArray:
    """The ``k·f`` sub-block indices of offloaded blocks ``offloaded_ids``, in order (H3)."""
    ids = np.asarray(offloaded_ids, dtype=np.int64)
    return (ids[:, None] * factor + np.arange(factor, dtype=np.int64)).reshape(-1)


@implements("H3")
def store_pairs(gpu_ids: IntArray, offloaded_ids: IntArray, factor: int) -> tuple[IntArray, IntArray]:
    """``(gpu block ids, host sub-block ids)`` of a store, row for row (H3).

    Raises ``ContractViolation`` (H1, H3) when ``len(gpu_ids) != k·f``.
    """
    k, n = len(offloaded_ids), len(gpu_ids)
    if n != k * factor:
        raise ContractViolation(
            "H1",
            f"H3: a store of {k} offloaded block(s) with block-size factor {factor} carries "
            f"{k * factor} GPU block(s), got {n}",
        )
    return np.asarray(gpu_ids, dtype=np.int64), sub_blocks(offloaded_ids, factor)


@implements("H3")
def load_pairs(offloaded_ids: IntArray, gpu_ids: IntArray, factor: int) -> tuple[IntArray, IntArray]:
    """``(host sub-block ids, gpu block ids)`` of a load, row for row (H3).

    Raises ``ContractViolation`` (H1, H3) unless ``k·f − f < m ≤ k·f``.
    """
    k, m = len(offloaded_ids), len(gpu_ids)
    total = k * factor
    if not (total - factor < m <= total):
        raise ContractViolation(
            "H1",
            f"H3: a load from {k} offloaded block(s) with block-size factor {factor} fills "
            f"more than {total - factor} and at most {total} GPU block(s), got {m}",
        )
    return sub_blocks(offloaded_ids, factor)[total - m :], np.asarray(gpu_ids, dtype=np.int64)


@implements("N8")
def group_rows(
    gpu_ids: IntArray,
    offloaded_ids: IntArray,
    group_sizes: Sequence[int],
    block_indices: Sequence[int],
    factor: int,
) -> list[tuple[IntArray, IntArray]]:
    """Per KV cache group, ``(gpu block ids, host sub-block ids)`` row for row (H3).

    vLLM's ``GPULoadStoreSpec`` orders ``gpu_ids`` by group (``group_sizes[g]`` of them
    for group ``g``) and the offloaded ids follow the same group order. Group ``g``
    starts ``s = block_indices[g] % factor`` sub-blocks into its first offloaded block
    and covers ``ceil((group_sizes[g] + s) / factor)`` offloaded blocks; its GPU block
    ``i`` pairs with sub-block ``s + i`` of them. With one group whose last offloaded
    block is full this is H3's rule (a load reads the last ``m`` sub-blocks); it also
    covers a sliding-window group whose first blocks lie outside the window (``s > 0``
    on a store) and a load that ends inside an offloaded block.

    Raises ``ContractViolation`` (H1, H3) when the counts do not add up, before any
    pair is used.
    """
    gpu = np.asarray(gpu_ids, dtype=np.int64)
    offloaded = np.asarray(offloaded_ids, dtype=np.int64)
    if len(block_indices) != len(group_sizes) or sum(group_sizes) != len(gpu):
        raise ContractViolation(
            "H1",
            f"H3: group_sizes={list(group_sizes)} and block_indices={list(block_indices)} do not "
            f"describe {len(gpu)} GPU block(s)",
        )
    rows: list[tuple[IntArray, IntArray]] = []
    gpu_at = host_at = 0
    for size, first in zip(group_sizes, block_indices):
        if size < 0 or first < 0:
            raise ContractViolation("H1", f"H3: negative group size {size} or block index {first}")
        skip = first % factor if size else 0
        count = -(-(size + skip) // factor) if size else 0
        chunk = offloaded[host_at : host_at + count]
        rows.append((gpu[gpu_at : gpu_at + size], sub_blocks(chunk, factor)[skip : skip + size]))
        gpu_at, host_at = gpu_at + size, host_at + count
    if host_at != len(offloaded):
        raise ContractViolation(
            "H1",
            f"H3: group_sizes={list(group_sizes)} with block_indices={list(block_indices)} and "
            f"block-size factor {factor} cover {host_at} offloaded block(s), got {len(offloaded)}",
        )
    return rows


def runs(ids: IntArray) -> list[tuple[int, int, int]]:
    """Maximal runs of consecutive ids as ``(position, first id, length)``.

    The host side of a copy is contiguous per run, so one large ``copy_`` per run replaces
    one per block; the block allocator hands out consecutive ids often, and a factor
    ``f > 1`` makes every offloaded block a run of at least ``f`` sub-blocks.
    """
    ids = np.asarray(ids, dtype=np.int64)
    if ids.size == 0:
        return []
    starts = np.concatenate(([0], np.flatnonzero(np.diff(ids) != 1) + 1))
    ends = np.concatenate((starts[1:], [ids.size]))
    return [(int(s), int(ids[s]), int(e - s)) for s, e in zip(starts, ends)]


def pair_runs(src: IntArray, dst: IntArray) -> list[tuple[int, int, int]]:
    """Maximal runs where *both* ``src`` and ``dst`` ids are consecutive, as
    ``(first src id, first dst id, length)``: each is one slice-to-slice copy.
    """
    a, b = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    if a.size == 0:
        return []
    starts = np.concatenate(([0], np.flatnonzero((np.diff(a) != 1) | (np.diff(b) != 1)) + 1))
    ends = np.concatenate((starts[1:], [a.size]))
    return [(int(a[s]), int(b[s]), int(e - s)) for s, e in zip(starts, ends)]
