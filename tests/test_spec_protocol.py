"""The caller protocol (C1–C6): protocol-keeping call sequences that exercise each clause,
and what the reference manager must do on them (M1–M9, I1–I8)."""

from __future__ import annotations

import pytest

from kvoffload.spec import OffloadingEvent, ReferenceManager


def h(i: int, length: int = 32) -> bytes:
    return bytes([i]) * length


A, B, C, D, E, F = (h(i) for i in range(1, 7))
X, Y = h(24), h(25)


def refs(m: ReferenceManager) -> dict[bytes, int]:
    return {k: b.ref_cnt for k, b in m.blocks().items()}


def ready(m: ReferenceManager, hashes: list[bytes]) -> None:
    out = m.prepare_store(hashes)
    assert out is not None
    m.complete_store(out.block_hashes_to_store)


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_C1_prepare_load_of_ready_hashes_pins_them(policy: str) -> None:
    m = ReferenceManager(4, policy=policy)
    ready(m, [A, B])
    assert m.prepare_store([C]) is not None  # C pending: a C1-keeping caller never loads it
    hits = m.lookup([A, B, C])
    assert hits == 2
    spec = m.prepare_load([A, B, C][:hits])  # the caller loads exactly the ready prefix
    blocks = m.blocks()
    assert spec.block_ids.tolist() == [blocks[A].block_id, blocks[B].block_id]
    assert refs(m) == {A: 1, B: 1, C: -1}
    m.check_invariants()


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_C2_complete_load_with_the_same_hashes_restores_ref_cnt(policy: str) -> None:
    m = ReferenceManager(4, policy=policy)
    ready(m, [A, B, C])
    first, second = [A, B], [B, C]  # two requests sharing B, loads overlapping in time
    m.prepare_load(first)
    m.prepare_load(second)
    assert refs(m) == {A: 1, B: 2, C: 1}
    m.complete_load(first)
    assert refs(m) == {A: 0, B: 1, C: 1}
    m.complete_load(second)
    assert refs(m) == {A: 0, B: 0, C: 0}
    m.check_invariants()


def test_C3_one_complete_store_covering_two_outputs_and_one_output_over_two_calls() -> None:
    m = ReferenceManager(8, enable_events=True)
    out1 = m.prepare_store([A, B])
    out2 = m.prepare_store([A, B, C, D])  # A, B already pending: to_store [C, D]
    out3 = m.prepare_store([E, F])
    assert out1 and out2 and out3
    assert out2.block_hashes_to_store == [C, D]
    # One call, given a set, covers out1 and out2.
    covering = set(out1.block_hashes_to_store) | set(out2.block_hashes_to_store)
    m.complete_store(covering)
    assert refs(m) == {A: 0, B: 0, C: 0, D: 0, E: -1, F: -1}
    (event,) = m.take_events()
    assert event.removed is False
    assert sorted(event.block_hashes) == sorted([A, B, C, D]) and len(event.block_hashes) == 4
    # out3 is covered by two calls, one failed and one successful.
    m.complete_store([F], success=False)
    m.complete_store([E], success=True)
    assert refs(m) == {A: 0, B: 0, C: 0, D: 0, E: 0}
    assert list(m.take_events()) == [OffloadingEvent([E], 16, "CPU", False)]
    assert m.backend.get_num_free_blocks() == 3
    m.check_invariants()


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_C4_lookup_touch_and_prepare_store_take_any_hashes(policy: str) -> None:
    m = ReferenceManager(3, policy=policy)
    assert m.lookup([X, Y]) == 0
    m.touch([X, Y])
    assert m.blocks() == {}
    out = m.prepare_store([X, Y])
    assert out is not None and out.block_hashes_to_store == [X, Y]
    m.touch([A, X, Y])  # absent A, pending X, Y
    assert m.lookup([X]) == 0
    out = m.prepare_store([X, Y, A])  # pending ones skipped, absent A stored
    assert out is not None and out.block_hashes_to_store == [A]
    assert refs(m) == {X: -1, Y: -1, A: -1}
    m.check_invariants()


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_C5_shared_prefixes_recur_across_calls(policy: str) -> None:
    m = ReferenceManager(6, policy=policy, enable_events=True)
    req1, req2 = [A, B, C], [A, B, D]  # two requests with the prefix A, B
    out1 = m.prepare_store(req1)
    out2 = m.prepare_store(req2)
    assert out1 and out2
    assert out1.block_hashes_to_store == [A, B, C] and out2.block_hashes_to_store == [D]
    m.complete_store(out1.block_hashes_to_store)
    m.complete_store(out2.block_hashes_to_store)
    assert m.lookup(req1) == 3 and m.lookup(req2) == 3
    m.prepare_load(req1)
    m.prepare_load(req2)
    assert refs(m) == {A: 2, B: 2, C: 1, D: 1}
    m.touch(req1)
    m.touch(req2)
    m.complete_load(req2)
    m.complete_load(req1)
    assert refs(m) == {A: 0, B: 0, C: 0, D: 0}
    events = list(m.take_events())
    assert [(e.block_hashes, e.removed) for e in events] == [([A, B, C], False), ([D], False)]
    m.check_invariants()


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_C6_a_block_being_loaded_is_not_evicted_until_complete_load(policy: str) -> None:
    m = ReferenceManager(2, policy=policy)
    ready(m, [A, B])
    m.prepare_load([A])  # the worker is copying A out
    out = m.prepare_store([X])  # must take B, not A
    assert out is not None and out.block_hashes_evicted == [B]
    assert m.prepare_store([Y]) is None  # A in use, X pending
    assert refs(m) == {A: 1, X: -1}
    m.complete_store([X])  # the worker reported X's copy done
    m.complete_load([A])  # the worker reported A's copy done
    out = m.prepare_store([Y])
    # LRU order A, X → A. ARC: T1 [A, X], p = 0, t1 = 2 >= 0 → A.
    assert out is not None and out.block_hashes_evicted == [A]
    m.check_invariants()
