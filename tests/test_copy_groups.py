"""Several KV cache groups in one job (vLLM's ``GPULoadStoreSpec(block_ids, group_sizes,
block_indices)``): the index arithmetic ``group_rows`` against a plain per-block loop
that shares no helper with it, and handlers over one group's planes (H1, H3)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvoffload.impl.copy.indices import group_rows
from kvoffload.spec.errors import ContractViolation


def reference_rows(gpu_ids, offloaded_ids, sizes, indices, factor):  # type: ignore[no-untyped-def]
    """GPU block ``i`` of a group starting at logical block ``first`` is logical block
    ``first + i``: it sits at position ``(first + i) % factor`` of the group's
    ``((first % factor) + i) // factor``-th offloaded block."""
    rows = []
    gpu_at = host_at = 0
    for size, first in zip(sizes, indices):
        pairs = []
        for i in range(size):
            chunk = offloaded_ids[host_at + (first % factor + i) // factor]
            pairs.append((gpu_ids[gpu_at + i], chunk * factor + (first + i) % factor))
        if size:
            host_at += (first % factor + size - 1) // factor + 1
        gpu_at += size
        rows.append(pairs)
    assert host_at == len(offloaded_ids)
    return rows


def test_N8_two_groups_one_starting_inside_an_offloaded_block() -> None:
    # f = 2. Group 0 (full attention): GPU blocks 10..13 are logical blocks 0..3 →
    # offloaded 5, 6. Group 1 (sliding window): only logical blocks 3, 4, 5 are in the
    # window → GPU 20, 21, 22 land in sub-block 1 of offloaded 7 and both of offloaded 8.
    rows = group_rows(
        np.array([10, 11, 12, 13, 20, 21, 22]), np.array([5, 6, 7, 8]), [4, 3], [0, 3], 2
    )
    assert [(g.tolist(), s.tolist()) for g, s in rows] == [
        ([10, 11, 12, 13], [10, 11, 12, 13]),
        ([20, 21, 22], [15, 16, 17]),
    ]


def test_H3_a_load_may_end_inside_an_offloaded_block() -> None:
    ((gpu, sub),) = group_rows(np.array([7, 8, 9]), np.array([0, 1]), [3], [2], 2)
    assert (gpu.tolist(), sub.tolist()) == ([7, 8, 9], [0, 1, 2])


@pytest.mark.parametrize(
    ("gpu", "offloaded", "sizes", "indices"),
    [
        ([1, 2, 3], [0], [3], [1]),  # needs 2 offloaded blocks, got 1
        ([1, 2], [0, 1, 2], [2], [0]),  # one offloaded block left over
        ([1, 2], [0], [1], [0]),  # sizes do not add up to the GPU blocks
        ([1, 2], [0], [1, 1], [0]),  # one block index for two groups
    ],
)
def test_H1_counts_that_do_not_add_up_are_refused(gpu, offloaded, sizes, indices) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ContractViolation, match="H3"):
        group_rows(np.array(gpu), np.array(offloaded), sizes, indices, 2)


@st.composite
def group_jobs(draw):  # type: ignore[no-untyped-def]
    factor = draw(st.integers(1, 4))
    groups = draw(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 20)), min_size=1, max_size=4))
    sizes = [size for size, _ in groups]
    indices = [first for _, first in groups]
    gpu = draw(st.permutations(range(40)))[: sum(sizes)]
    chunks = sum(-(-(size + first % factor) // factor) for size, first in groups if size)
    offloaded = draw(st.permutations(range(60)))[:chunks]
    return np.array(gpu, dtype=np.int64), np.array(offloaded, dtype=np.int64), sizes, indices, factor


@settings(max_examples=200, deadline=None)
@given(group_jobs())
def test_N8_H3_group_rows_match_a_per_block_loop(job) -> None:  # type: ignore[no-untyped-def]
    gpu, offloaded, sizes, indices, factor = job
    got = [list(zip(g.tolist(), s.tolist())) for g, s in group_rows(gpu, offloaded, sizes, indices, factor)]
    assert got == reference_rows(gpu.tolist(), offloaded.tolist(), sizes, indices, factor)


def test_H1_sub_block_view_copies_only_its_planes_and_check_moves_nothing() -> None:
    torch = pytest.importorskip("torch")
    from kvoffload.impl.copy import CpuGpuHandler, Direction, KVBuffers
    from kvoffload.spec.types import CPULoadStoreSpec, GPULoadStoreSpec

    gen = torch.Generator().manual_seed(1)
    kv = {f"t{i}": torch.randint(-128, 128, (6, 8), dtype=torch.int8, generator=gen) for i in range(3)}
    buffers = KVBuffers.build(kv, "page", 16, 2, 4)
    for plane in buffers.host_planes:
        plane.zero_()
    view = buffers.sub_block_view([2, 0])
    assert (view.num_cpu_blocks, view.block_size_factor, len(view.host_planes)) == (8, 1, 2)
    store = CpuGpuHandler(view, Direction.STORE)
    # check() validates without copying; a bad part is refused before anything moves.
    jid, gpu_ids, sub_ids = store.check(1, (GPULoadStoreSpec(np.array([4, 5])), CPULoadStoreSpec(np.array([3, 6]))))
    assert all(not plane.any() for plane in buffers.host_planes)
    with pytest.raises(ContractViolation, match="H1"):
        store.check(2, (GPULoadStoreSpec(np.array([4])), CPULoadStoreSpec(np.array([8]))))
    store.submit_rows(jid, gpu_ids, sub_ids)
    assert store.get_finished() == [(1, True)]
    for name, index in (("t0", 0), ("t2", 2)):
        assert torch.equal(buffers.host_planes[index][[3, 6]], kv[name][[4, 5]].view(torch.uint8))
    assert not buffers.host_planes[1].any()  # plane 1 is not in the view
    with pytest.raises(ValueError, match="planes"):
        buffers.sub_block_view([3])
