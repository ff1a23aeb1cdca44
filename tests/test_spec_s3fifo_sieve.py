"""Example-based tests of the reference S3-FIFO (F1–F7) and SIEVE (V1–V6) policies.

Policies are driven directly with hand-made ``BlockStatus`` objects; queues are written
oldest → newest, and every expected value is worked out by hand from CONTRACT.md.
"""

from __future__ import annotations

import pytest

from kvoffload.spec import (
    BlockStatus,
    ContractViolation,
    ReferenceManager,
    ReferenceS3FIFOPolicy,
    ReferenceSIEVEPolicy,
    make_reference_policy,
)
from kvoffload.spec.s3fifo import s3fifo_sizes


def h(i: int) -> bytes:
    return bytes([i]) * 32


A, B, C, D, E = (h(i) for i in range(1, 6))


def blk(ref_cnt: int = 0) -> BlockStatus:
    block = BlockStatus(0)
    block.ref_cnt = ref_cnt
    return block


def s3(capacity: int, *hashes: bytes) -> ReferenceS3FIFOPolicy:
    policy = ReferenceS3FIFOPolicy(capacity)
    for key in hashes:
        policy.insert(key, blk())
    return policy


def sieve(*hashes: bytes) -> ReferenceSIEVEPolicy:
    policy = ReferenceSIEVEPolicy(16)
    for key in hashes:
        policy.insert(key, blk())
    return policy


def victims(result: list[tuple[bytes, BlockStatus]] | None) -> list[bytes] | None:
    return None if result is None else [key for key, _ in result]


def s3_state(policy: ReferenceS3FIFOPolicy) -> tuple[list[tuple[bytes, int]], ...]:
    return (
        [(k, e.freq) for k, e in policy.small.items()],
        [(k, e.freq) for k, e in policy.main.items()],
        [(k, 0) for k in policy.ghost],
    )


# -- S3-FIFO --------------------------------------------------------------------------


def test_F1_small_target_and_ghost_bound() -> None:
    assert s3fifo_sizes(1) == (1, 0)
    assert s3fifo_sizes(9) == (1, 8)
    assert s3fifo_sizes(10) == (1, 9)
    assert s3fifo_sizes(25) == (2, 23)
    policy = s3(1, A)
    assert victims(policy.evict(1, set())) == [A]
    assert list(policy.ghost) == []  # c − s = 0: G holds nothing


def test_F2_insert_goes_to_small_unless_the_ghost_remembers() -> None:
    policy = s3(10, A, B)
    assert list(policy.small) == [A, B] and not policy.main
    assert victims(policy.evict(1, set())) == [A]
    assert list(policy.ghost) == [A]
    policy.insert(A, blk())
    assert list(policy.main) == [A] and list(policy.small) == [B] and not policy.ghost
    assert policy.freq(A) == 0


def test_F3_get_never_returns_a_ghost() -> None:
    policy = s3(10, A, B)
    block_b = policy.get(B)
    policy.evict(1, set())
    assert policy.get(A) is None and A in policy.ghost
    assert policy.get(B) is block_b


def test_F4_touch_counts_ready_uses_up_to_three() -> None:
    policy = s3(10, A)
    policy.insert(B, blk(-1))  # pending
    policy.evict(0, set())
    policy.touch([A, B, C])
    assert policy.freq(A) == 1 and policy.freq(B) == 0 and policy.freq(C) is None
    for _ in range(5):
        policy.touch([A])
    assert policy.freq(A) == 3


def test_F5_small_demotes_quickly_and_main_is_a_clock() -> None:
    policy = s3(10, A, B, C)  # s = 1
    policy.touch([A])
    assert victims(policy.evict(1, set())) == [B]  # A used again: promoted, B leaves
    assert s3_state(policy) == ([(C, 0)], [(A, 0)], [(B, 0)])
    policy.touch([A])
    policy.touch([A])
    assert victims(policy.evict(1, set())) == [C]
    policy.insert(D, blk())
    policy.insert(E, blk())
    policy.touch([D])
    # D promoted; E protected, so S has nothing left: M's clock turns A (2 → 1) and
    # takes D; then A (1 → 0) goes round once more and is taken. No ghosts from M.
    assert victims(policy.evict(2, {E})) == [D, A]
    assert s3_state(policy) == ([(E, 0)], [], [(B, 0), (C, 0)])


def test_F5_main_is_chosen_while_small_is_below_its_target() -> None:
    policy = s3(20, A, B, C)  # s = 2
    policy.touch([A, B])
    assert victims(policy.evict(1, set())) == [C]  # the S walk goes on until a victim
    assert s3_state(policy) == ([], [(A, 0), (B, 0)], [(C, 0)])
    policy.insert(D, blk())
    assert victims(policy.evict(1, set())) == [A]  # |S| = 1 < 2: from M


def test_F5_busy_blocks_keep_place_and_counter_and_refusal_changes_nothing() -> None:
    policy = ReferenceS3FIFOPolicy(10)
    policy.insert(A, blk(1))  # in use
    policy.insert(B, blk())
    policy.insert(C, blk())
    policy.touch([A, C])
    before = s3_state(policy)
    assert policy.evict(3, set()) is None
    assert s3_state(policy) == before
    assert victims(policy.evict(1, set())) == [B]
    assert s3_state(policy) == ([(A, 1), (C, 1)], [], [(B, 0)])


def test_F6_ghosts_in_victim_order_trimmed_from_the_oldest() -> None:
    policy = s3(3, A, B, C)  # s = 1, G holds 2
    assert victims(policy.evict(3, set())) == [A, B, C]
    assert list(policy.ghost) == [B, C]


def test_F7_remove_leaves_the_ghost_alone() -> None:
    policy = s3(10, A, B)
    policy.evict(1, set())
    policy.remove(B)
    assert list(policy.ghost) == [A] and policy.get(B) is None
    with pytest.raises(ContractViolation, match="P3"):
        policy.remove(A)


def test_F2_reference_manager_accepts_s3fifo() -> None:
    manager = ReferenceManager(2, policy="s3fifo")
    assert isinstance(manager.policy, ReferenceS3FIFOPolicy)
    out = manager.prepare_store([A, B])
    assert out is not None
    manager.complete_store([A, B])
    manager.touch([A])
    out = manager.prepare_store([C])
    assert out is not None and out.block_hashes_evicted == [B]  # A was used: promoted
    manager.check_invariants()


# -- SIEVE ----------------------------------------------------------------------------


def sieve_state(policy: ReferenceSIEVEPolicy) -> tuple[list[tuple[bytes, bool]], bytes | None]:
    return [(k, e.visited) for k, e in policy.queue.items()], policy.hand


def test_V1_the_hand_rests_where_the_last_eviction_stopped() -> None:
    policy = sieve(A, B, C)
    assert policy.hand is None
    policy.evict(1, set())
    assert policy.hand == B
    policy.check_invariants()


def test_V2_insert_appends_with_a_clear_bit() -> None:
    policy = sieve(A, B, C)
    policy.touch([A])
    policy.evict(1, set())  # A passed (bit cleared), B taken; hand on C
    policy.insert(D, blk())
    assert sieve_state(policy) == ([(A, False), (C, False), (D, False)], C)


def test_V3_get_looks_in_the_queue() -> None:
    policy = sieve(A)
    assert policy.get(A) is not None and policy.get(B) is None


def test_V4_touch_marks_ready_hashes_only() -> None:
    policy = sieve(A)
    policy.insert(B, blk(-1))
    policy.touch([A, B, C])
    assert policy.visited(A) is True and policy.visited(B) is False


def test_V5_walk_clears_bits_and_wraps() -> None:
    policy = sieve(A, B, C, D)
    policy.touch([A, C])
    assert victims(policy.evict(1, set())) == [B]
    assert sieve_state(policy) == ([(A, False), (C, True), (D, False)], C)
    assert victims(policy.evict(1, set())) == [D]  # C cleared, D taken, hand off the end
    assert policy.hand is None
    assert victims(policy.evict(1, set())) == [A]  # from the oldest again
    assert sieve_state(policy) == ([(C, False)], C)


def test_V5_ineligible_blocks_are_passed_unchanged() -> None:
    policy = ReferenceSIEVEPolicy(8)
    policy.insert(A, blk(1))  # in use
    policy.insert(B, blk())
    policy.insert(C, blk())
    policy.touch([A, B])
    # A passed (in use, bit kept), B cleared, C protected, wrap, A passed, B taken.
    assert victims(policy.evict(1, {C})) == [B]
    assert sieve_state(policy) == ([(A, True), (C, False)], C)


def test_V5_several_victims_or_none_and_nothing_changed() -> None:
    policy = sieve(A, B, C)
    policy.touch([B])
    before = sieve_state(policy)
    assert policy.evict(3, {A}) is None
    assert sieve_state(policy) == before
    assert victims(policy.evict(2, set())) == [A, C]
    assert sieve_state(policy) == ([(B, False)], None)  # B was passed on the way to C


def test_V6_remove_moves_a_hand_resting_on_the_hash() -> None:
    policy = sieve(A, B, C, D)
    policy.evict(1, set())  # A taken, hand on B
    policy.remove(B)
    assert policy.hand == C
    policy.remove(D)
    assert policy.hand == C
    policy.remove(C)
    assert policy.hand is None
    with pytest.raises(ContractViolation, match="P3"):
        policy.remove(C)


def test_V2_reference_manager_accepts_sieve() -> None:
    assert isinstance(make_reference_policy("sieve", 4), ReferenceSIEVEPolicy)
    manager = ReferenceManager(2, policy="sieve")
    manager.prepare_store([A, B])
    manager.complete_store([A, B])
    manager.touch([A])
    out = manager.prepare_store([C])
    assert out is not None and out.block_hashes_evicted == [B]
    manager.check_invariants()
