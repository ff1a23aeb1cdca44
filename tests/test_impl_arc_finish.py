"""K5 for ARC in the core (``CPUOffloadingManager.arc_request_finished``, entry point
``arc_finish``): the same random requests finished on the reference ARC policy
(``spec.keyed.arc_request_finished``) and on the core leave the same T1, T2, ghosts and p."""

from __future__ import annotations

import random

import pytest

from kvoffload.impl import CPUOffloadingManager
from kvoffload.spec import ContractViolation, ReferenceManager
from kvoffload.spec.arc import ReferenceARCPolicy
from kvoffload.spec.keyed import RequestAccess, arc_request_finished, request_order
from kvoffload.spec.types import BlockHash


def _view(ref: ReferenceManager) -> tuple[list[list[BlockHash]], list[list[BlockHash]], float]:
    policy = ref.policy
    assert isinstance(policy, ReferenceARCPolicy)
    return [list(policy.t1), list(policy.t2)], [list(policy.b1), list(policy.b2)], policy.p


def _impl_view(impl: CPUOffloadingManager) -> tuple[list[list[BlockHash]], list[list[BlockHash]], float]:
    view = impl.policy_view()
    return view["lists"], view["ghosts"], float(impl._pf[0])


def _random_access(rng: random.Random, pool: list[BlockHash]) -> RequestAccess:
    """A request's record: observed keys (present, ghost or absent), some inserted, some
    reused, some both (reused first, stored again later) and some neither."""
    access = RequestAccess()
    for key in rng.sample(pool, rng.randint(1, 8)):
        access.observed[key] = None
        kind = rng.randrange(4)
        if kind in (0, 3):
            access.inserted.add(key)
        if kind in (1, 3):
            access.reused.add(key)
    return access


def test_K5_arc_request_finished_matches_the_reference() -> None:
    rng = random.Random(5)
    pool = [BlockHash(rng.randbytes(rng.choice([8, 16]))) for _ in range(24)]
    ref, impl = ReferenceManager(6, policy="arc"), CPUOffloadingManager(6, policy="arc")
    pending: list[BlockHash] = []
    for _ in range(300):
        step = rng.randrange(4)
        if step == 0:
            hashes = rng.sample(pool, rng.randint(1, 3))
            out, ours = ref.prepare_store(hashes), impl.prepare_store(hashes)
            assert (out is None) == (ours is None)
            if out is not None and ours is not None:
                assert ours.block_hashes_evicted == out.block_hashes_evicted
                pending += out.block_hashes_to_store
        elif step == 1 and pending:
            done = rng.sample(pending, rng.randint(1, len(pending)))
            ref.complete_store(done)
            impl.complete_store(done)
            pending = [h for h in pending if h not in done]
        elif step == 2:
            hashes = rng.sample(pool, 2)
            ref.touch(hashes)
            impl.touch(hashes)
        else:
            access = _random_access(rng, pool)
            keys = [k for k in request_order(access) if k in access.inserted or k in access.reused]
            policy = ref.policy
            assert isinstance(policy, ReferenceARCPolicy)
            arc_request_finished(policy, access)
            impl.arc_request_finished(keys, [k in access.reused for k in keys])
        assert _impl_view(impl) == _view(ref)
    impl.check_invariants()


def test_K5_arc_request_finished_refuses_bad_input_and_changes_nothing() -> None:
    impl = CPUOffloadingManager(4, policy="arc")
    a, b = BlockHash(b"a" * 16), BlockHash(b"b" * 16)
    out = impl.prepare_store([a, b])
    assert out is not None
    impl.complete_store([a, b])
    before = impl.policy_view()
    with pytest.raises(ValueError, match="K5"):
        impl.arc_request_finished([a, b], [True])
    with pytest.raises((TypeError, ValueError, ContractViolation)):
        impl.arc_request_finished([a, "b"], [True, True])  # type: ignore[list-item]
    assert impl.policy_view() == before
    with pytest.raises(ValueError, match="K5"):
        CPUOffloadingManager(4, policy="lru").arc_request_finished([a], [True])
    impl.arc_request_finished([a, b], [True, False])  # a: T1 -> T2; b: T1's most recent end
    assert impl.policy_view()["lists"] == [[b], [a]]


def test_K6_arc_store_misses_is_a_touch_of_the_unreported_absent_keys() -> None:
    """K6 in the core (``arc_store_misses``): a batch of present, ghost and absent keys,
    some flagged as reported before, leaves T1, T2, the ghosts and p as the reference's
    ``touch`` of the batch's absent, unflagged keys does (only ghosts move: A3)."""
    rng = random.Random(6)
    pool = [BlockHash(rng.randbytes(rng.choice([8, 16]))) for _ in range(24)]
    ref, impl = ReferenceManager(6, policy="arc"), CPUOffloadingManager(6, policy="arc")
    moved = 0
    for _ in range(300):
        hashes = rng.sample(pool, rng.randint(1, 4))
        if rng.randrange(3):
            out, ours = ref.prepare_store(hashes), impl.prepare_store(hashes)
            assert (out is None) == (ours is None)
            if out is not None:
                ref.complete_store(out.block_hashes_to_store)
                impl.complete_store(out.block_hashes_to_store)
            continue
        flags = [rng.random() < 0.3 for _ in hashes]
        present = ref.blocks()
        absent = [h for h, flag in zip(hashes, flags) if not flag and h not in present]
        p_before = _view(ref)[2]
        ref.touch(absent)
        impl.arc_store_misses(hashes, flags if any(flags) else None)
        moved += _view(ref)[2] != p_before
        assert _impl_view(impl) == _view(ref)
    assert moved, "no store miss was a ghost"
    impl.check_invariants()
    with pytest.raises(ValueError, match="K6"):
        CPUOffloadingManager(4, policy="lru").arc_store_misses(pool[:1])
    with pytest.raises(ValueError, match="K6"):
        impl.arc_store_misses(pool[:2], [True])


def test_A5_ghost_lists_read_back_hashes_of_every_length() -> None:
    """``ghost_lists`` (and ``logical_state``, which the model checker keys states by) read each
    ghost's hash back from its key row: short hashes, 32-byte ones, and longer ones that widen
    every row mid-run, in B1 and B2, oldest first, as the reference keeps them."""
    rng = random.Random(7)
    pool = [BlockHash(rng.randbytes(length)) for length in (1, 7, 8, 9, 31, 32, 33, 40, 64, 65) for _ in range(2)]
    ref, impl = ReferenceManager(4, policy="arc"), CPUOffloadingManager(4, policy="arc")
    saw_ghosts = set()
    for _ in range(200):
        hashes = rng.sample(pool, rng.randint(1, 2))
        out, ours = ref.prepare_store(hashes), impl.prepare_store(hashes)
        assert (out is None) == (ours is None)
        if out is not None and ours is not None:
            ref.complete_store(out.block_hashes_to_store)
            impl.complete_store(ours.block_hashes_to_store)
        touched = rng.sample(pool, 2)
        ref.touch(touched)
        impl.touch(touched)
        assert _impl_view(impl) == _view(ref)
        assert impl.ghost_lists() == _view(ref)[1]
        saw_ghosts.update(len(h) for ghosts in impl.ghost_lists() for h in ghosts)
    assert {1, 32, 33, 65} <= saw_ghosts  # rows of every width were read back
