"""Example-based tests of the reference cache policies (P1–P6, L1–L3, A1–A6).

Policies are driven directly, with hand-made ``BlockStatus`` objects. Lists are written
least → most recent; expected values are worked out by hand from CONTRACT.md.
"""

from __future__ import annotations

import pytest

from kvoffload.spec import BlockStatus, ContractViolation, ReferenceARCPolicy, ReferenceLRUPolicy


def h(i: int, length: int = 32) -> bytes:
    return bytes([i]) * length


A, B, C, D, E, F, G = (h(i) for i in range(1, 8))
X, Y, Z = h(24), h(25), h(26)

POLICIES = [ReferenceLRUPolicy, ReferenceARCPolicy]


def blk(ref_cnt: int = 0, block_id: int = 0) -> BlockStatus:
    block = BlockStatus(block_id)
    block.ref_cnt = ref_cnt
    return block


def fill(pol, hashes, ref_cnt: int = 0) -> dict[bytes, BlockStatus]:
    blocks = {}
    for i, k in enumerate(hashes):
        blocks[k] = blk(ref_cnt, i)
        pol.insert(k, blocks[k])
    return blocks


def state(pol):
    if isinstance(pol, ReferenceLRUPolicy):
        return [(k, b.ref_cnt) for k, b in pol.order.items()]
    return (
        [(k, b.ref_cnt) for k, b in pol.t1.items()],
        [(k, b.ref_cnt) for k, b in pol.t2.items()],
        list(pol.b1),
        list(pol.b2),
        pol.p,
    )


def arc_lists(pol: ReferenceARCPolicy):
    return list(pol.t1), list(pol.t2), list(pol.b1), list(pol.b2), pol.p


# ------------------------------------------------------------------------------ P1–P6


@pytest.mark.parametrize("cls", POLICIES)
def test_P1_get_returns_the_inserted_block_until_removed_or_evicted(cls) -> None:
    pol = cls(4)
    blocks = fill(pol, [A, B, C])
    assert pol.get(A) is blocks[A] and pol.get(B) is blocks[B] and pol.get(C) is blocks[C]
    assert pol.get(X) is None
    pol.remove(B)
    assert pol.get(B) is None
    victims = pol.evict(1, set())
    assert victims == [(A, blocks[A])] and victims[0][1] is blocks[A]
    assert pol.get(A) is None and pol.get(C) is blocks[C]


@pytest.mark.parametrize("cls", POLICIES)
def test_P2_insert_of_present_hash_is_a_violation_with_no_change(cls) -> None:
    pol = cls(4)
    fill(pol, [A, B])
    pol.touch([A])  # ARC: A to T2 — "present" covers both lists
    before = state(pol)
    for k in (A, B):
        with pytest.raises(ContractViolation) as err:
            pol.insert(k, blk())
        assert err.value.clause == "P2"
    assert state(pol) == before


@pytest.mark.parametrize("cls", POLICIES)
def test_P3_remove_of_absent_hash_is_a_violation_with_no_change(cls) -> None:
    pol = cls(4)
    fill(pol, [A, B])
    pol.remove(A)
    before = state(pol)
    for k in (A, X):
        with pytest.raises(ContractViolation) as err:
            pol.remove(k)
        assert err.value.clause == "P3"
    assert state(pol) == before


def test_P3_arc_remove_of_a_ghost_only_hash_is_a_violation() -> None:
    pol = ReferenceARCPolicy(4)
    fill(pol, [A, B])
    pol.evict(1, set())  # A → B1
    before = state(pol)
    with pytest.raises(ContractViolation) as err:
        pol.remove(A)
    assert err.value.clause == "P3"
    assert state(pol) == before


def test_P4_lru_touch_walks_last_to_first() -> None:
    pol = ReferenceLRUPolicy(8)
    fill(pol, [A, B, C, D, E])
    pol.touch([C, A, X, B])  # walk B, X (absent), A, C → D, E, B, A, C
    assert list(pol.order) == [D, E, B, A, C]
    pol.touch([E, D, E])  # walk E, D, E → B, A, C, D, E
    assert list(pol.order) == [B, A, C, D, E]


def test_P4_arc_touch_walks_last_to_first() -> None:
    pol = ReferenceARCPolicy(8)
    fill(pol, [A, B, C, D])
    pol.touch([C, A, B])  # walk B, A, C: each ready T1 → T2's end
    assert arc_lists(pol) == ([D], [B, A, C], [], [], 0.0)
    pol.touch([B, D, B])  # walk B (T2 end), D (T1 → T2), B (T2 end)
    assert arc_lists(pol) == ([], [A, C, D, B], [], [], 0.0)


@pytest.mark.parametrize("cls", POLICIES)
def test_P5_evict_returns_exactly_n_eligible_and_removes_them(cls) -> None:
    pol = cls(8)
    blocks = fill(pol, [A, B, C, D, E])
    blocks[A].ref_cnt = 2
    blocks[C].ref_cnt = -1
    victims = pol.evict(2, {B})  # eligible in order: D, E
    assert [k for k, _ in victims] == [D, E]
    assert all(v is blocks[k] for k, v in victims)
    assert pol.get(D) is None and pol.get(E) is None
    assert pol.get(A) is blocks[A] and pol.get(B) is blocks[B] and pol.get(C) is blocks[C]
    assert pol.evict(0, set()) == []


@pytest.mark.parametrize("cls", POLICIES)
def test_P5_not_enough_eligible_returns_none_and_changes_nothing(cls) -> None:
    pol = cls(8)
    blocks = fill(pol, [A, B, C, D])
    blocks[A].ref_cnt = 1
    blocks[B].ref_cnt = -1
    pol.touch([D])
    before = state(pol)
    assert pol.evict(2, {C}) is None  # only D eligible
    assert pol.evict(3, set()) is None  # only C, D eligible
    assert state(pol) == before
    assert pol.evict(0, set()) == [] and state(pol) == before


@pytest.mark.parametrize("cls", POLICIES)
def test_P6_evict_and_touch_never_change_ref_cnt(cls) -> None:
    pol = cls(8)
    blocks = fill(pol, [A, B, C, D])
    blocks[A].ref_cnt = 3
    blocks[B].ref_cnt = -1
    pol.touch([A, B, C, D, A])
    pol.touch([A, B])
    assert [blocks[k].ref_cnt for k in (A, B, C, D)] == [3, -1, 0, 0]
    victims = pol.evict(2, set())
    assert sorted(k for k, _ in victims) == sorted([C, D])
    assert [b.ref_cnt for _, b in victims] == [0, 0]
    assert [blocks[k].ref_cnt for k in (A, B)] == [3, -1]
    pol.remove(B)
    assert blocks[B].ref_cnt == -1


# ------------------------------------------------------------------------------ L1–L3


def test_L1_insert_places_at_the_most_recent_end() -> None:
    pol = ReferenceLRUPolicy(4)
    fill(pol, [C, A, B])
    assert list(pol.order) == [C, A, B]
    pol.remove(A)
    pol.insert(A, blk())
    assert list(pol.order) == [C, B, A]


def test_L2_touch_moves_pending_and_ready_to_the_most_recent_end() -> None:
    pol = ReferenceLRUPolicy(4)
    blocks = fill(pol, [A, B, C, D])
    blocks[A].ref_cnt = -1  # pending
    blocks[B].ref_cnt = 2  # in use
    pol.touch([A])
    assert list(pol.order) == [B, C, D, A]
    pol.touch([B, X])
    assert list(pol.order) == [C, D, A, B]


def test_L3_evict_takes_eligible_blocks_from_the_least_recent_end_in_order() -> None:
    pol = ReferenceLRUPolicy(8)
    blocks = fill(pol, [A, B, C, D, E, F])
    blocks[A].ref_cnt = -1
    blocks[C].ref_cnt = 1
    pol.touch([B])  # A, C, D, E, F, B
    victims = pol.evict(3, {E})  # skip A (pending), C (in use), E (protected) → D, F, B
    assert [k for k, _ in victims] == [D, F, B]
    assert list(pol.order) == [A, C, E]


# ------------------------------------------------------------------------------ A1–A6


def test_A1_insert_appends_to_t1_and_deletes_ghosts() -> None:
    pol = ReferenceARCPolicy(4)
    fill(pol, [A, B, C])
    pol.touch([A])  # T1 [B, C], T2 [A]
    assert [k for k, _ in pol.evict(2, set())] == [B, C]  # p = 0: T1 first → B1 [B, C]
    assert [k for k, _ in pol.evict(1, set())] == [A]  # T1 empty → T2 → B2 [A]
    assert arc_lists(pol) == ([], [], [B, C], [A], 0.0)
    pol.insert(B, blk())
    assert arc_lists(pol) == ([B], [], [C], [A], 0.0)
    pol.insert(A, blk())
    assert arc_lists(pol) == ([B, A], [], [C], [], 0.0)
    pol.insert(D, blk())
    assert arc_lists(pol) == ([B, A, D], [], [C], [], 0.0)


def test_A2_get_never_returns_ghosts() -> None:
    pol = ReferenceARCPolicy(4)
    blocks = fill(pol, [A, B])
    pol.touch([B])  # T2 [B]
    pol.evict(2, set())  # A → B1, B → B2
    assert list(pol.b1) == [A] and list(pol.b2) == [B]
    assert pol.get(A) is None and pol.get(B) is None
    pol.insert(C, blocks[A])
    assert pol.get(C) is blocks[A] and pol.get(A) is None


def test_A3_touch_ready_t1_goes_to_t2_pending_t1_stays_in_t1() -> None:
    pol = ReferenceARCPolicy(8)
    blocks = fill(pol, [A, B, C, D])
    blocks[B].ref_cnt = -1  # pending
    blocks[C].ref_cnt = 2  # ready, in use: still "ready"
    pol.touch([B, A])  # walk A (ready → T2), B (pending → T1's end)
    assert arc_lists(pol) == ([C, D, B], [A], [], [], 0.0)
    pol.touch([C])
    assert arc_lists(pol) == ([D, B], [A, C], [], [], 0.0)
    pol.touch([A])  # T2 → T2's end
    assert arc_lists(pol) == ([D, B], [C, A], [], [], 0.0)
    blocks[B].ref_cnt = 0  # the store completed: now a touch is a second use
    pol.touch([B, X])  # X absent everywhere: nothing
    assert arc_lists(pol) == ([D], [C, A, B], [], [], 0.0)


def _ghosts_2_in_b1_3_in_b2(capacity: int = 10) -> ReferenceARCPolicy:
    pol = ReferenceARCPolicy(capacity)
    fill(pol, [F, G, A, B, C])
    pol.touch([C, B, A])  # walk A, B, C → T2 [A, B, C]; T1 [F, G]
    victims = pol.evict(5, set())  # p = 0: t1 >= 0 → F, G; T1 then empty → A, B, C
    assert [k for k, _ in victims] == [F, G, A, B, C]
    assert arc_lists(pol) == ([], [], [F, G], [A, B, C], 0.0)
    return pol


def test_A3_b1_ghost_hit_adds_fractional_ratio_and_moves_ghost() -> None:
    pol = _ghosts_2_in_b1_3_in_b2()
    pol.touch([F])  # p = min(0 + max(1, 3/2), 10) = 1.5
    assert pol.p == 1.5
    assert list(pol.b1) == [G, F] and list(pol.b2) == [A, B, C]
    assert pol.get(F) is None


def test_A3_b1_ghost_hit_adds_one_when_ratio_below_one() -> None:
    pol = ReferenceARCPolicy(10)
    fill(pol, [A, B, C, D])
    pol.touch([D])  # T2 [D]
    pol.evict(4, set())  # B1 [A, B, C], B2 [D]
    assert arc_lists(pol) == ([], [], [A, B, C], [D], 0.0)
    pol.touch([B])  # max(1, 1/3) = 1
    assert pol.p == 1.0
    pol.touch([A, C])  # walk C, A: +1 each
    assert pol.p == 3.0
    assert list(pol.b1) == [B, C, A]


def test_A3_b2_ghost_hit_subtracts_and_p_floors_at_zero() -> None:
    pol = ReferenceARCPolicy(10)
    fill(pol, [A, B, C, D, E])
    pol.touch([E, D])  # walk D, E → T2 [D, E]; T1 [A, B, C]
    pol.evict(5, set())  # B1 [A, B, C], B2 [D, E]
    pol.touch([A])
    pol.touch([B])
    pol.touch([C])  # p = 0 + max(1, 2/3) three times = 3
    assert pol.p == 3.0
    pol.touch([D])  # p = max(3 - max(1, 3/2), 0) = 1.5
    assert pol.p == 1.5
    assert list(pol.b2) == [E, D]
    pol.touch([E])  # 1.5 - 1.5 = 0
    assert pol.p == 0.0
    pol.touch([D])  # max(0 - 1.5, 0) = 0
    assert pol.p == 0.0


def test_A3_b2_ghost_hit_with_ratio_below_one_subtracts_one() -> None:
    pol = _ghosts_2_in_b1_3_in_b2()
    pol.touch([F, G])  # walk G: +1.5 (3/2), F: +1.5 → p = 3
    assert pol.p == 3.0
    pol.touch([A])  # max(1, 2/3) = 1 → p = 2
    assert pol.p == 2.0
    pol.touch([B, C])  # walk C, B: → 0
    assert pol.p == 0.0
    assert list(pol.b2) == [A, C, B]


def test_A3_p_is_capped_at_capacity() -> None:
    pol = ReferenceARCPolicy(2)
    fill(pol, [A, B])
    pol.evict(2, set())  # B1 [A, B]
    pol.touch([A])
    assert pol.p == 1.0
    pol.touch([B])
    assert pol.p == 2.0
    pol.touch([A, B])
    assert pol.p == 2.0


def test_A4_floor_of_p_compared_with_t1_size() -> None:
    pol = _ghosts_2_in_b1_3_in_b2()
    pol.touch([F])  # p = 1.5; B1 [G, F]
    fill(pol, [D, E])
    pol.touch([E])  # T1 [D], T2 [E]
    # t1 = 1 >= floor(1.5) = 1 → T1's D (comparing with 1.5 itself would pick T2's E).
    assert [k for k, _ in pol.evict(1, set())] == [D]
    assert arc_lists(pol) == ([], [E], [G, F, D], [A, B, C], 1.5)
    pol.touch([G])  # p = 1.5 + max(1, 3/3) = 2.5; B1 [F, D, G]
    assert pol.p == 2.5
    pol.insert(X, blk())  # T1 [X]
    # t1 = 1 < floor(2.5) = 2 → T2's E.
    assert [k for k, _ in pol.evict(1, set())] == [E]
    assert arc_lists(pol) == ([X], [], [F, D, G], [A, B, C, E], 2.5)


def test_A4_t1_count_includes_ineligible_blocks_and_drops_per_t1_victim() -> None:
    pol = ReferenceARCPolicy(10)
    fill(pol, [X, Y])
    pol.evict(2, set())  # B1 [X, Y]
    pol.touch([X, Y])  # walk Y, X: +1, +1 → p = 2; B1 [Y, X]
    assert pol.p == 2.0
    blocks = fill(pol, [Z, A, B, C, D])
    blocks[Z].ref_cnt = 1  # in T1 but not eligible
    pol.touch([D, C])  # walk C, D → T2 [C, D]; T1 [Z, A, B]
    # t1 = 3 >= 2 → A; t1 = 2 >= 2 → B; t1 = 1 < 2 → T2's C.
    victims = pol.evict(3, set())
    assert [k for k, _ in victims] == [A, B, C]
    assert arc_lists(pol) == ([Z], [D], [Y, X, A, B], [C], 2.0)


def test_A4_t1_fallback_when_t2_has_no_eligible_block() -> None:
    pol = ReferenceARCPolicy(4)
    fill(pol, [X])
    pol.evict(1, set())  # B1 [X]
    pol.touch([X, X, X, X, X])  # +1 each, capped at 4
    assert pol.p == 4.0
    blocks = fill(pol, [A, B, C, D])
    pol.touch([C, D])  # T1 [A, B], T2 [D, C]
    blocks[D].ref_cnt = 1
    # t1 = 2 < floor(4): T2 first, but D is in use and C protected → fall back to T1.
    victims = pol.evict(2, {C})
    assert [k for k, _ in victims] == [A, B]
    assert arc_lists(pol) == ([], [D, C], [X, A, B], [], 4.0)


def test_A4_t2_used_when_t1_at_target_has_no_eligible_block_and_none_when_nothing() -> None:
    pol = ReferenceARCPolicy(4)
    blocks = fill(pol, [A, B, C])
    pol.touch([C])  # T1 [A, B], T2 [C]
    blocks[A].ref_cnt = -1
    # p = 0: t1 = 2 >= 0 but A pending and B protected → T2's C.
    assert [k for k, _ in pol.evict(1, {B})] == [C]
    before = state(pol)
    assert pol.evict(1, {B}) is None
    assert pol.evict(2, set()) is None
    assert state(pol) == before


def test_A5_victims_become_ghosts_in_victim_order_and_ghost_lists_are_trimmed() -> None:
    pol = ReferenceARCPolicy(2)
    fill(pol, [A, B, C])  # the policy itself does not bound T1
    assert [k for k, _ in pol.evict(3, set())] == [A, B, C]
    assert list(pol.b1) == [B, C]  # A trimmed from the least-recent end
    fill(pol, [D, E])
    pol.touch([E, D])  # walk D, E → T2 [D, E]
    assert [k for k, _ in pol.evict(2, set())] == [D, E]
    assert arc_lists(pol) == ([], [], [B, C], [D, E], 0.0)
    fill(pol, [F])
    pol.touch([F])
    pol.evict(1, set())  # B2 [D, E, F] → [E, F]
    assert arc_lists(pol) == ([], [], [B, C], [E, F], 0.0)


def test_A6_remove_leaves_ghosts_and_p() -> None:
    pol = _ghosts_2_in_b1_3_in_b2()
    pol.touch([F])  # p = 1.5
    fill(pol, [D, E])
    pol.touch([E])  # T1 [D], T2 [E]
    pol.remove(D)
    pol.remove(E)
    assert arc_lists(pol) == ([], [], [G, F], [A, B, C], 1.5)
