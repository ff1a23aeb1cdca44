"""S3-FIFO (F1–F7) and SIEVE (V1–V6) in the compiled core, in lockstep with the reference.

The lockstep machines of ``test_impl_lockstep`` (mixed hash lengths, colliding
fingerprints, both batch readers, strict calls) and ``test_impl_eviction`` (many stores
and loads in flight) run with these two policies, and after every call the whole policy
state is compared with the reference policy's: S, M and G in order with every counter
(S3-FIFO), Q in order with every bit and the hand (SIEVE). Deterministic tests pin the
rules that random calls reach rarely.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant

from kvoffload.impl import CPUOffloadingManager
from kvoffload.impl.core import layout as L
from kvoffload.spec import ReferenceManager
from kvoffload.spec.s3fifo import ReferenceS3FIFOPolicy, s3fifo_sizes
from kvoffload.spec.sieve import ReferenceSIEVEPolicy
from test_impl_eviction import InFlight
from test_impl_lockstep import FINGERPRINTS, Lockstep

POLICIES = ["s3fifo", "sieve"]


def reference_view(policy: Any) -> dict[str, Any]:
    """The reference policy's state in the shape of ``CPUOffloadingManager.policy_view``."""
    if isinstance(policy, ReferenceS3FIFOPolicy):
        marks = {h: e.freq for queue in (policy.small, policy.main) for h, e in queue.items()}
        return {"lists": [list(policy.small), list(policy.main)], "ghosts": [list(policy.ghost), []],
                "marks": marks, "hand": None}
    assert isinstance(policy, ReferenceSIEVEPolicy)
    marks = {h: int(e.visited) for h, e in policy.queue.items()}
    return {"lists": [list(policy.queue), []], "ghosts": [[], []], "marks": marks, "hand": policy.hand}


def assert_same_policy_state(impl: CPUOffloadingManager, ref: ReferenceManager) -> None:
    assert impl.policy_view() == reference_view(ref.policy)


class PolicyLockstep(Lockstep):
    @initialize(
        capacity=st.integers(1, 12),
        policy=st.sampled_from(POLICIES),
        fingerprint=st.sampled_from(FINGERPRINTS),
        direct=st.booleans(),
    )
    def setup(self, capacity: int, policy: str, fingerprint: str, direct: bool) -> None:
        super().setup(capacity, policy, fingerprint, direct)

    @invariant()
    def same_policy_state(self) -> None:
        if hasattr(self, "impl"):
            assert_same_policy_state(self.impl, self.ref)


class PolicyInFlight(InFlight):
    @initialize(capacity=st.integers(3, 20), policy=st.sampled_from(POLICIES))
    def setup(self, capacity: int, policy: str) -> None:
        super().setup(capacity, policy)

    @invariant()
    def same_policy_state(self) -> None:
        if hasattr(self, "impl"):
            assert_same_policy_state(self.impl, self.ref)


PolicyLockstep.TestCase.settings = settings(max_examples=60, stateful_step_count=40)
test_F5_V5_lockstep_with_reference_state = PolicyLockstep.TestCase
PolicyInFlight.TestCase.settings = settings(max_examples=60, stateful_step_count=60, deadline=None)
test_F5_V5_eviction_with_blocks_in_flight = PolicyInFlight.TestCase


def _h(i: int) -> bytes:
    return bytes([i]) * 32


def _store(manager: Any, hashes: list[bytes]) -> list[bytes]:
    """M5 then M6 of ``hashes``; the evicted hashes."""
    out = manager.prepare_store(hashes)
    assert out is not None
    manager.complete_store(out.block_hashes_to_store)
    return list(out.block_hashes_evicted)


def _both(policy: str, capacity: int, steps: list[tuple[str, list[bytes]]]) -> CPUOffloadingManager:
    """Run ``steps`` on the production manager and the reference; equal answers and state."""
    impl = CPUOffloadingManager(capacity, policy=policy)
    ref = ReferenceManager(capacity, policy=policy)
    for op, hashes in steps:
        if op == "store":
            assert _store(impl, hashes) == _store(ref, hashes)
        elif op == "fail":
            assert impl.prepare_store(hashes) is not None and ref.prepare_store(hashes) is not None
            impl.complete_store(hashes, success=False)
            ref.complete_store(hashes, success=False)
        else:
            getattr(impl, op)(hashes)
            getattr(ref, op)(hashes)
        assert_same_policy_state(impl, ref)
        impl.check_invariants()
    return impl


def test_F1_F6_ghost_nodes_and_marks_are_sized_to_the_policy() -> None:
    """F1: G holds at most C - s ghosts, so the core allocates exactly that many ghost
    nodes; S3-FIFO and SIEVE keep one mark byte per block, LRU and ARC none."""
    cap = 50
    small, bound = s3fifo_sizes(cap)
    nodes = {p: int(CPUOffloadingManager(cap, policy=p)._meta[L.NODES]) for p in ("lru", "arc", "s3fifo", "sieve")}
    assert nodes == {"lru": cap, "arc": 3 * cap, "s3fifo": cap + bound, "sieve": cap}
    assert (small, bound) == (5, 45)
    a8 = {p: len(CPUOffloadingManager(cap, policy=p)._a8) for p in ("lru", "arc", "s3fifo", "sieve")}
    assert a8["s3fifo"] - L.arena_sizes(cap, bound)[2] == cap
    assert a8["sieve"] - a8["lru"] == cap
    assert a8["lru"] == L.arena_sizes(cap, 0)[2]


def test_F2_F6_a_hash_remembered_by_G_comes_back_into_M() -> None:
    """F6: an unused block evicted from S leaves a ghost; F2: storing it again puts it in
    M (not S), and G forgets it. M's victims leave no ghost."""
    steps = [("store", [_h(i)]) for i in range(10)]  # capacity 10: s = 1
    steps += [("store", [_h(10)]), ("store", [_h(0)])]  # 0 -> G, then back: into M
    impl = _both("s3fifo", 10, steps)
    view = impl.policy_view()
    assert _h(0) in view["lists"][1] and _h(0) not in view["ghosts"][0]


def test_F4_F5_used_blocks_move_to_M_and_age_there() -> None:
    """F4: touches count (saturating at 3); F5: a block used while in S moves to M with
    counter 0; M is a CLOCK whose blocks lose one count per pass. Heavy reuse (most calls
    touch, often the same hash several times) so that counters of 2 and 3 meet M's hand."""
    import random

    rng = random.Random(3)
    pool = [_h(i) for i in range(24)]
    steps: list[tuple[str, list[bytes]]] = []
    for _ in range(300):
        if rng.random() < 0.6:
            steps.append(("touch", [rng.choice(pool[:12]) for _ in range(rng.randint(1, 6))]))
        else:
            steps.append(("store", rng.sample(pool, rng.randint(1, 3))))
    impl = _both("s3fifo", 10, steps)
    assert impl.policy_view()["lists"][1]  # M was used


def test_F7_V6_failed_stores_leave_ghosts_and_move_the_hand() -> None:
    """F7: a failed store drops the block from S or M, G untouched; V6: a hand resting on
    a removed block moves to the next newer block, or to none past the newest."""
    for policy in POLICIES:
        steps = [("store", [_h(i) for i in range(4)]), ("touch", [_h(0), _h(1)])]
        steps += [("store", [_h(10)])]  # SIEVE: clears 0 and 1, evicts 2, hand on 3
        steps += [("fail", [_h(11)])]
        steps += [("store", [_h(12)]), ("fail", [_h(13)]), ("store", [_h(14), _h(15)])]
        _both(policy, 4, steps)


def test_V5_the_hand_passes_blocks_in_use_and_keeps_their_bits() -> None:
    """V5: blocks being read or pending are passed unchanged (bit included); a walk that
    ends at the newest block leaves the hand on none (the oldest), not on a later insert."""
    impl = CPUOffloadingManager(5, policy="sieve")
    ref = ReferenceManager(5, policy="sieve")
    for manager in (impl, ref):
        _store(manager, [_h(i) for i in range(5)])
        manager.touch([_h(0), _h(2)])
        manager.prepare_load([_h(1)])
        assert manager.prepare_store([_h(7)]) is not None  # pending
    assert_same_policy_state(impl, ref)
    for i in range(8, 14):
        assert _store(impl, [_h(i)]) == _store(ref, [_h(i)])
        assert_same_policy_state(impl, ref)
    assert impl.policy_view()["marks"][_h(1)] == 0 and _h(1) in impl.policy_view()["lists"][0]


@pytest.mark.parametrize("policy", POLICIES)
def test_F5_V5_protected_and_pinned_blocks_keep_their_place(policy: str) -> None:
    """M5.3, I3: blocks of the request itself and blocks being read are skipped in place;
    a store that cannot find enough others is refused with nothing changed (I7)."""
    impl = CPUOffloadingManager(4, policy=policy)
    ref = ReferenceManager(4, policy=policy)
    for manager in (impl, ref):
        _store(manager, [_h(i) for i in range(4)])
        manager.touch([_h(3)])
        manager.prepare_load([_h(1)])
    before = [a.copy() for a in impl._state]
    assert impl.prepare_store([_h(0), _h(2), _h(3), _h(9), _h(10)]) is None
    assert ref.prepare_store([_h(0), _h(2), _h(3), _h(9), _h(10)]) is None
    assert all(np.array_equal(a, b) for a, b in zip(before, impl._state))
    assert _store(impl, [_h(0), _h(9)]) == _store(ref, [_h(0), _h(9)])
    assert_same_policy_state(impl, ref)


def test_F5_runs_of_used_blocks_move_as_one_block_at_a_time_would() -> None:
    """F5: the core moves a run of used blocks at S's or M's head with one relink; the
    order, counters and stamps must be those of moving them one at a time. S's run broken
    by a block being read; M going round whole (every block used, counters 3) three times
    before a victim leaves, its runs broken by a block being read and by the request's own."""
    cap = 40
    first = [_h(i) for i in range(cap)]
    steps: list[tuple[str, list[bytes]]] = [("store", first), ("touch", first), ("prepare_load", [_h(7)])]
    steps += [("store", [_h(200)]), ("complete_load", [_h(7)])]  # S's run to M, around 7; |S| = 1
    steps += [("touch", first)] * 3 + [("prepare_load", [_h(20)])]  # M's counters at 3
    steps += [("store", [_h(201), _h(30)])]  # M round three times, past 20 (read) and 30 (own)
    steps += [("complete_load", [_h(20)]), ("touch", [_h(201)] * 2), ("store", [_h(210 + i) for i in range(12)])]
    impl = _both("s3fifo", cap, steps)
    assert len(impl.policy_view()["lists"][1]) >= cap // 2  # M was the big queue
