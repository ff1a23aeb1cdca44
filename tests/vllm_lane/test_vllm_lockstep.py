"""``KVOffloadingManager`` (built by ``make_manager``) in lockstep with the installed vLLM's
own ``CPUOffloadingManager`` (LRU), through the calls its connector makes, with several
requests in flight: every per-key lookup, load spec length, store decision (keys to
store, evicted keys, refusal) and event must be the same, call for call (M1–M8). On vLLM
0.32 both keep L1's recency order; on 0.33 both rank an open request's keys by position
(N9): the requests here are positioned and interleaved, so evictions fall inside them."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("vllm")

from hypothesis import settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule  # noqa: E402
from vllm_helpers import key  # noqa: E402

CAPACITY = 5
DOCS = [[key(d * 100 + i) for i in range(6)] for d in range(3)]
POOL = [k for doc in DOCS for k in doc]


def _store(out: Any) -> Any:
    return None if out is None else (list(out.keys_to_store), list(out.evicted_keys))


class ConnectorLockstep(RuleBasedStateMachine):
    requests = Bundle("requests")
    loads = Bundle("loads")
    stores = Bundle("stores")

    def __init__(self) -> None:
        super().__init__()
        from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager as VllmManager

        from kvoffload.impl.vllm import make_manager

        self.ours = make_manager(CAPACITY, "lru", enable_events=True)
        self.theirs = VllmManager(num_chunks=CAPACITY, cache_policy="lru", enable_events=True)
        self.count = 0
        self.generation = 0

    def both(self, method: str, *args: Any) -> tuple[Any, Any]:
        return getattr(self.ours, method)(*args), getattr(self.theirs, method)(*args)

    @rule(target=requests, doc=st.integers(0, 2), length=st.integers(1, 6), tail=st.booleans())
    def new_request(self, doc: int, length: int, tail: bool) -> Any:
        from vllm.v1.kv_offload.base import ReqContext

        self.count += 1
        keys = DOCS[doc][:length] + ([key(10_000 + self.count)] if tail else [])
        ctx = ReqContext(req_id=f"r{self.count}")
        for position, k in enumerate(keys, start=1):
            ctx.set_offload_key_position(k, 16 * position)
        self.both("on_new_request", ctx)
        return (ctx, keys)

    def _prefix(self, request: Any) -> int:
        from vllm.v1.kv_offload.base import LookupResult

        ctx, keys = request
        hits = 0
        for k in keys:  # _maximal_prefix_lookup: until the first MISS
            ours, theirs = self.both("lookup", k, ctx)
            assert ours is theirs, (k, ours, theirs)
            if ours is LookupResult.MISS:
                break
            if ours is LookupResult.HIT and hits == keys.index(k):
                hits += 1
        return hits

    @rule(target=loads, request=requests)
    def lookup_and_load(self, request: Any) -> Any:
        hits = self._prefix(request)
        if not hits:
            return None
        ctx, keys = request
        ours, theirs = self.both("prepare_load", keys[:hits], ctx)
        assert len(ours.block_ids) == len(theirs.block_ids) == hits
        return (ctx, set(keys[:hits]), self.generation)

    @rule(load=consumes(loads))
    def complete_load(self, load: Any) -> None:
        if load is not None and load[2] == self.generation:
            self.both("complete_load", load[1], load[0])

    @rule(target=stores, request=requests, start=st.integers(0, 6))
    def prepare_store(self, request: Any, start: int) -> Any:
        ctx, keys = request
        if not keys[start:]:
            return None
        ours, theirs = self.both("prepare_store", keys[start:], ctx)
        assert _store(ours) == _store(theirs)
        if ours is None or not ours.keys_to_store:
            return None
        return (ctx, set(ours.keys_to_store), self.generation)

    @rule(store=consumes(stores), success=st.booleans())
    def complete_store(self, store: Any, success: bool) -> None:
        if store is not None and store[2] == self.generation:
            self.both("complete_store", store[1], store[0], success)

    @rule(request=consumes(requests))
    def finish(self, request: Any) -> None:
        self.both("on_request_finished", request[0])

    @rule()
    def reset(self) -> None:
        self.both("reset_cache")
        self.generation += 1  # the connector never completes pre-reset jobs
        if hasattr(self.theirs, "on_reset_flushed"):
            # vLLM 0.33 flushes the pre-reset jobs on the workers and calls this before
            # any new store; until then ours keeps the in-flight blocks fenced (N1).
            self.both("on_reset_flushed")

    @rule()
    def events(self) -> None:
        ours, theirs = self.both("take_events")
        assert [(list(e.keys), e.removed) for e in ours] == [(list(e.keys), e.removed) for e in theirs]

    @invariant()
    def every_key_answers_alike(self) -> None:
        from vllm.v1.kv_offload.base import ReqContext

        ctx = ReqContext(req_id="probe")
        for k in POOL:
            assert self.ours.lookup(k, ctx) is self.theirs.lookup(k, ctx), k


TestConnectorLockstep = ConnectorLockstep.TestCase
TestConnectorLockstep.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)


def test_make_manager_builds_an_offloading_manager_without_a_config() -> None:
    from vllm.v1.kv_offload.base import LookupResult, OffloadingManager, ReqContext

    from kvoffload.impl.vllm import KVOffloadingManager, make_manager

    for policy in ("lru", "arc"):
        manager = make_manager(4, policy=policy, enable_events=True)
        assert isinstance(manager, KVOffloadingManager) and isinstance(manager, OffloadingManager)
        assert manager.core.policy == policy and manager.core.num_blocks == 4
        ctx = ReqContext(req_id="a")
        manager.on_new_request(ctx)
        out = manager.prepare_store([key(1), key(2)], ctx)
        assert out.keys_to_store == [key(1), key(2)] and list(out.store_spec.block_ids) == [0, 1]
        assert manager.lookup(key(1), ctx) is LookupResult.HIT_PENDING
        manager.complete_store({key(1), key(2)}, ctx)
        assert manager.lookup(key(1), ctx) is LookupResult.HIT
        assert [e.removed for e in manager.take_events()] == [False]
    with pytest.raises(ValueError, match="policy"):
        make_manager(4, policy="fifo")
    with pytest.raises(ValueError, match="num_blocks"):
        make_manager(0)


def test_K5_finish_order_shortcut_only_where_the_order_is_already_vllms() -> None:
    """The shortcut (keys exactly the context's positioned keys, in its order, positions
    strictly increasing: the keys as they are, no sort) agrees with vLLM's
    ``order_request_keys`` and declines every near miss: equal positions across groups
    (groups break ties), a decreasing position, a key seen twice, one key missing."""
    from vllm.v1.kv_offload.base import ReqContext
    from vllm.v1.kv_offload.cpu.policies.base import order_request_keys

    from kvoffload.impl.vllm import KVOffloadingManager
    from kvoffload.impl.vllm.manager import _exactly_in_position_order

    def context(positioned: list[tuple[bytes, int]]) -> Any:
        ctx = ReqContext(req_id="s")
        for k, position in positioned:
            ctx.set_offload_key_position(k, position)
        return ctx

    def vllms(keys: list[bytes], ctx: Any) -> list[bytes]:
        by_group: dict[bytes, list[bytes]] = {}
        for k in keys:
            by_group.setdefault(k[-4:], []).append(k)
        for members in by_group.values():
            members.sort(key=ctx.get_offload_key_position)
        return order_request_keys([by_group[g] for g in sorted(by_group)], ctx)

    plain = [key(i) for i in range(6)]
    ctx = context([(k, 16 * (i + 1)) for i, k in enumerate(plain)])
    assert _exactly_in_position_order(plain, ctx._offload_key_positions)
    assert KVOffloadingManager._finish_order(plain, ctx) is plain == vllms(plain, ctx)
    # Two groups, equal positions, group 1 listed first: vLLM puts group 0 first.
    mixed = [key(7, group=1), key(7, group=0), key(8, group=1), key(8, group=0)]
    ctx = context([(k, 16 * (1 + i // 2)) for i, k in enumerate(mixed)])
    assert not _exactly_in_position_order(mixed, ctx._offload_key_positions)
    got = KVOffloadingManager._finish_order(list(mixed), ctx)
    assert got == vllms(mixed, ctx) == [mixed[1], mixed[0], mixed[3], mixed[2]]
    # A position lower than the one before: sorted, not taken as it is.
    ctx = context([(plain[0], 32), (plain[1], 16), (plain[2], 48)])
    assert not _exactly_in_position_order(plain[:3], ctx._offload_key_positions)
    assert KVOffloadingManager._finish_order(plain[:3], ctx) == [plain[1], plain[0], plain[2]]
    ctx = context([(k, 16 * (i + 1)) for i, k in enumerate(plain)])
    twice = plain + plain[:1]
    assert not _exactly_in_position_order(twice, ctx._offload_key_positions)
    assert KVOffloadingManager._finish_order(twice, ctx) == plain
    assert not _exactly_in_position_order(plain[:-1], ctx._offload_key_positions)
    assert KVOffloadingManager._finish_order(plain[1:], ctx) == plain[1:]


def test_finish_order_is_vllms_order_request_keys() -> None:
    """Recency order at ``on_request_finished``: the same as vLLM 0.32's policies use,
    for several KV-cache groups, equal positions across groups, keys seen out of order,
    keys seen twice and keys without a position."""
    import random

    from vllm.v1.kv_offload.base import ReqContext, get_offload_group_idx
    from vllm.v1.kv_offload.cpu.policies.base import order_request_keys

    from kvoffload.impl.vllm import KVOffloadingManager

    rng = random.Random(5)
    for case in range(300):
        groups = rng.randint(1, 3)
        keys = [key(100 * case + i, group=g) for i in range(rng.randint(1, 8)) for g in range(groups)]
        rng.shuffle(keys)
        ctx = ReqContext(req_id="o")
        for k in keys:
            if rng.random() > 0.05:
                ctx.set_offload_key_position(k, 16 * (int.from_bytes(k[:32], "big") % 100))
        grouped: dict[int, list[bytes]] = {}
        for k in keys:
            grouped.setdefault(get_offload_group_idx(k), []).append(k)
        # vLLM's manager orders each group whose keys all have a position by position
        # before its policy's order_request_keys sees the groups.
        for g, members in grouped.items():
            if all(ctx.get_offload_key_position(k) is not None for k in members):
                members.sort(key=ctx.get_offload_key_position)
        want = order_request_keys([tuple(grouped[g]) for g in sorted(grouped)], ctx)
        assert KVOffloadingManager._finish_order(list(keys), ctx) == want, case
        # A key recorded twice (loaded, then offered again) counts once, where first seen.
        again = keys + rng.sample(keys, rng.randint(1, len(keys)))
        assert KVOffloadingManager._finish_order(again, ctx) == want, case
