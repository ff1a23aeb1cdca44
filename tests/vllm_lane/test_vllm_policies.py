"""S3-FIFO (F1–F7) and SIEVE (V1–V6) behind vLLM's connector: ``eviction_policy`` in
``kv_connector_extra_config`` builds the compiled policy, and the connector's calls give
the reference model's answers.

vLLM 0.32 has no S3-FIFO or SIEVE of its own, so the check is against our reference
model (``ReferenceManager``) driven with the batch calls the adapter maps each connector
call to (K2), and, at ``on_request_finished``, the ``touch`` of the request's observed
keys that the adapter makes (K5 as for LRU: loaded keys and keys offered while absent or
ready, in position order).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

pytest.importorskip("vllm")

from vllm_helpers import key, offloading_config  # noqa: E402

from kvoffload.spec import ReferenceManager  # noqa: E402

POLICIES = ["s3fifo", "sieve"]


def _ctx(req_id: str, keys: list[bytes]) -> Any:
    from vllm.v1.kv_offload.base import ReqContext

    ctx = ReqContext(req_id=req_id)
    for position, k in enumerate(keys, start=1):
        ctx.set_offload_key_position(k, 16 * position)
    return ctx


@pytest.mark.parametrize("policy", POLICIES)
def test_F1_V1_eviction_policy_in_the_extra_config_builds_the_compiled_policy(policy: str) -> None:
    from vllm.v1.kv_offload.factory import OffloadingSpecFactory

    from kvoffload.impl.vllm import KVOffloadingManager, make_manager

    spec = OffloadingSpecFactory.create_spec(offloading_config({"num_blocks": 7, "eviction_policy": policy}))
    manager = spec.get_manager()
    assert isinstance(manager, KVOffloadingManager)
    assert (manager.core.policy, manager.core.num_blocks) == (policy, 7)
    assert make_manager(4, policy=policy).core.policy == policy
    manager.reset_cache()  # K7: a fresh core of the same policy
    assert manager.core.policy == policy
    with pytest.raises(ValueError, match="eviction_policy='s3-fifo'"):
        OffloadingSpecFactory.create_spec(offloading_config({"num_blocks": 7, "eviction_policy": "s3-fifo"}))


@pytest.mark.parametrize("policy", POLICIES)
def test_F5_V5_connector_calls_give_the_reference_models_answers(policy: str) -> None:
    """Random requests through the connector's call sequence (per-key lookups, loads,
    stores, some failed, request ends): every lookup, store decision and eviction equals
    the reference model's, and nothing leaks (E2)."""
    from vllm.v1.kv_offload.base import LookupResult
    from vllm.v1.kv_offload.factory import OffloadingSpecFactory

    capacity = 10
    ours = OffloadingSpecFactory.create_spec(
        offloading_config({"num_blocks": capacity, "eviction_policy": policy}, events=True)).get_manager()
    ref = ReferenceManager(capacity, policy=policy, enable_events=True)
    rng = random.Random(11)
    docs = [[key(d * 100 + i) for i in range(8)] for d in range(5)]
    for step in range(300):
        keys = rng.choice(docs)[: rng.randint(1, 8)]
        ctx = _ctx(f"r{step}", keys)
        ours.on_new_request(ctx)
        hits = 0
        for k in keys:  # what the connector's prefix lookup does
            result = ours.lookup(k, ctx)
            assert (result is LookupResult.HIT) == (ref.lookup([k]) == 1)
            if result is not LookupResult.HIT:
                break
            hits += 1
        assert hits == ref.lookup(keys)
        observed = dict.fromkeys(keys[:hits])
        if hits:
            ours.prepare_load(keys[:hits], ctx)
            ref.prepare_load(keys[:hits])
        pending = {h for h, b in ref.blocks().items() if b.ref_cnt == -1}
        observed.update(dict.fromkeys(k for k in keys if k not in pending))
        out, want = ours.prepare_store(keys, ctx), ref.prepare_store(keys)
        if want is None:
            assert out is None
        else:
            assert (out.keys_to_store, out.evicted_keys) == (want.block_hashes_to_store, want.block_hashes_evicted)
        if hits:
            ours.complete_load(set(keys[:hits]), ctx)
            ref.complete_load(keys[:hits])
        if out is not None and out.keys_to_store and rng.random() < 0.8:  # some stores stay in flight
            success = rng.random() > 0.1
            done = set(out.keys_to_store)  # as the connector passes them (M6: events in this order)
            ours.complete_store(done, ctx, success=success)
            ref.complete_store(list(done), success=success)
        ours.on_request_finished(ctx)
        ref.touch(list(observed))
        got = [(e.keys, e.removed) for e in ours.take_events() if not getattr(e, "metadata_only", False)]
        assert got == [(e.block_hashes, e.removed) for e in ref.take_events()]
    pending = [h for h, b in ref.blocks().items() if b.ref_cnt == -1]
    ours.complete_store(set(pending), _ctx("end", []))
    ref.complete_store(pending)
    assert ours.pending == set()
    fresh = [key(10_000 + i) for i in range(capacity)]  # E2: the whole capacity is storable again
    out = ours.prepare_store(fresh, _ctx("last", fresh))
    assert out is not None and out.keys_to_store == fresh
