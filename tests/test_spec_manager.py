"""Example-based tests of the reference manager (M0–M10, I1–I8).

Every expected value is computed by hand from CONTRACT.md; comments show the working.
LRU orders and ARC lists are written least → most recent.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kvoffload.spec import (
    BlockStatus,
    ContractViolation,
    CPULoadStoreSpec,
    OffloadingEvent,
    ReferenceARCPolicy,
    ReferenceLRUPolicy,
    ReferenceManager,
)


def h(i: int, length: int = 32) -> bytes:
    """A distinct hash per ``i`` (0 <= i < 256)."""
    return bytes([i]) * length


A, B, C, D, E = h(1), h(2), h(3), h(4), h(5)
X, Y, Z, Q = h(24), h(25), h(26), h(17)


def ready(m: ReferenceManager, hashes: list[bytes]) -> None:
    """prepare_store then complete_store(success=True): the hashes become ready."""
    out = m.prepare_store(hashes)
    assert out is not None
    m.complete_store(out.block_hashes_to_store)


def refs(m: ReferenceManager) -> dict[bytes, int]:
    return {k: b.ref_cnt for k, b in m.blocks().items()}


def ids(spec) -> list[int]:
    return [int(i) for i in spec.block_ids]


def policy_state(m: ReferenceManager):
    pol = m.policy
    if isinstance(pol, ReferenceLRUPolicy):
        return ("lru", list(pol.order))
    assert isinstance(pol, ReferenceARCPolicy)
    return ("arc", list(pol.t1), list(pol.t2), list(pol.b1), list(pol.b2), pol.p)


def snapshot(m: ReferenceManager):
    """Every observable but the event queue (checked by draining, by hand)."""
    return (
        m.backend.get_num_free_blocks(),
        {k: (b.block_id, b.ref_cnt) for k, b in m.blocks().items()},
        policy_state(m),
    )


def ev(hashes: list[bytes], removed: bool, block_size: int = 16) -> OffloadingEvent:
    return OffloadingEvent(block_hashes=list(hashes), block_size=block_size, medium="CPU", removed=removed)


class OneShot:
    """An iterable that fails if iterated twice, and records what was read."""

    def __init__(self, items):
        self.items = list(items)
        self.iter_calls = 0
        self.read: list[bytes] = []

    def __iter__(self):
        self.iter_calls += 1
        if self.iter_calls > 1:
            raise AssertionError("M0: argument iterated twice")
        for item in self.items:
            self.read.append(item)
            yield item


# ---------------------------------------------------------------------------------- M0


def test_M0_generators_and_islice_accepted_by_every_method() -> None:
    m = ReferenceManager(4)
    out = m.prepare_store(x for x in [A, B, C])
    assert out is not None and out.block_hashes_to_store == [A, B, C]
    # islice over an infinite-ish iterator: only A, B are completed.
    m.complete_store(itertools.islice(itertools.chain([A, B], itertools.repeat(C)), 2))
    assert refs(m) == {A: 0, B: 0, C: -1}
    assert m.lookup(x for x in [A, B, C]) == 2
    assert m.lookup(itertools.islice([A, B, C, D], 1)) == 1
    spec = m.prepare_load(itertools.islice([B, A, C], 2))
    assert ids(spec) == [m.blocks()[B].block_id, m.blocks()[A].block_id]
    m.complete_load(x for x in [B, A])
    assert refs(m) == {A: 0, B: 0, C: -1}
    m.touch(x for x in [A])  # order was A, B, C → B, C, A
    assert list(m.policy.order) == [B, C, A]
    m.complete_store((x for x in [C]), success=False)
    assert refs(m) == {A: 0, B: 0}


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_M0_each_argument_read_once_front_to_back(policy: str) -> None:
    m = ReferenceManager(4, policy=policy, enable_events=True)
    calls = [
        ("prepare_store", [A, B, C]),
        ("complete_store", [A, B]),
        ("lookup", [A, B, C]),
        ("prepare_load", [A, B, A]),
        ("complete_load", [A, B, A]),
        ("touch", [B, A, D]),
        ("complete_store_fail", [C]),
    ]
    for name, items in calls:
        arg = OneShot(items)
        if name == "complete_store_fail":
            m.complete_store(arg, success=False)
        else:
            getattr(m, name)(arg)
        assert arg.iter_calls == 1, name
        assert arg.read == items[: len(arg.read)], name  # front to back
        assert len(arg.read) >= 1
    m.check_invariants()


# ---------------------------------------------------------------------------------- M1


def test_M1_lookup_is_longest_ready_prefix() -> None:
    m = ReferenceManager(8)
    ready(m, [A, B, C])
    assert m.lookup([A, B, C]) == 3
    assert m.lookup([A, B, D, C]) == 2  # D absent ends the prefix, C after it does not count
    assert m.lookup([D, A, B]) == 0
    assert m.lookup([]) == 0
    assert m.lookup([A, A, B]) == 3  # duplicates are each a hit


def test_M1_pending_block_ends_the_prefix() -> None:
    m = ReferenceManager(8)
    ready(m, [A])
    assert m.prepare_store([B]) is not None  # B pending
    assert m.lookup([A, B]) == 1
    assert m.lookup([B, A]) == 0
    m.complete_store([B])
    assert m.lookup([A, B]) == 2


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_M1_lookup_is_pure(policy: str) -> None:
    m = ReferenceManager(4, policy=policy, enable_events=True)
    ready(m, [A, B, C])
    m.touch([C])
    m.take_events()
    before = snapshot(m)
    assert m.lookup([A, B, C, D]) == 3
    assert m.lookup([C, A]) == 2
    assert snapshot(m) == before
    assert list(m.take_events()) == []


# ---------------------------------------------------------------------------------- M2


def test_M2_each_occurrence_adds_one_and_spec_in_order() -> None:
    m = ReferenceManager(4)
    ready(m, [A, B, C])
    blocks = m.blocks()
    spec = m.prepare_load([B, A, B])
    assert isinstance(spec, CPULoadStoreSpec) and spec.medium() == "CPU"
    assert ids(spec) == [blocks[B].block_id, blocks[A].block_id, blocks[B].block_id]
    assert refs(m) == {A: 1, B: 2, C: 0}
    m.prepare_load([A])
    assert refs(m) == {A: 2, B: 2, C: 0}


def test_M2_empty_prepare_load_gives_spec_with_no_ids() -> None:
    m = ReferenceManager(2)
    ready(m, [A])
    spec = m.prepare_load([])
    assert spec.medium() == "CPU" and len(spec) == 0 and spec.block_ids.dtype == np.int64
    assert refs(m) == {A: 0}


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_M2_absent_or_pending_hash_raises_and_changes_nothing(policy: str) -> None:
    m = ReferenceManager(4, policy=policy)
    ready(m, [A, B])
    assert m.prepare_store([C]) is not None  # C pending
    before = snapshot(m)
    with pytest.raises(ContractViolation) as absent:
        m.prepare_load([A, B, X])
    assert absent.value.clause == "M2" and X[:12].hex() in str(absent.value)
    assert snapshot(m) == before  # A, B were not counted
    with pytest.raises(ContractViolation) as pending:
        m.prepare_load([A, C, B])
    assert pending.value.clause == "M2" and C[:12].hex() in str(pending.value)
    assert snapshot(m) == before


# ---------------------------------------------------------------------------------- M3


def test_M3_each_occurrence_subtracts_one() -> None:
    m = ReferenceManager(4)
    ready(m, [A, B])
    m.prepare_load([A, A, B])
    assert refs(m) == {A: 2, B: 1}
    m.complete_load([A, B])
    assert refs(m) == {A: 1, B: 0}
    m.complete_load([A])
    assert refs(m) == {A: 0, B: 0}


def test_M3_not_enough_outstanding_loads_raises_and_changes_nothing() -> None:
    m = ReferenceManager(4)
    ready(m, [A, B, C])
    assert m.prepare_store([D]) is not None  # D pending
    m.prepare_load([A, B])
    before = snapshot(m)
    for bad in ([B, A, A], [C], [D], [X], [A, X]):
        with pytest.raises(ContractViolation) as err:
            m.complete_load(bad)
        assert err.value.clause == "M3", bad
        assert snapshot(m) == before, bad
    assert refs(m) == {A: 1, B: 1, C: 0, D: -1}


def test_M3_block_is_evictable_again_at_zero() -> None:
    m = ReferenceManager(1)
    ready(m, [A])
    m.prepare_load([A])
    m.prepare_load([A])
    assert m.prepare_store([B]) is None  # A in use (2)
    m.complete_load([A])
    assert m.prepare_store([B]) is None  # still 1
    m.complete_load([A])
    out = m.prepare_store([B])
    assert out is not None and out.block_hashes_evicted == [A]


# ---------------------------------------------------------------------------------- M4


def test_M4_touch_ignores_absent_never_changes_refcnt_or_presence() -> None:
    m = ReferenceManager(5)
    ready(m, [A, B, C])
    assert m.prepare_store([D]) is not None  # D pending; order A, B, C, D
    m.prepare_load([A])
    free = m.backend.get_num_free_blocks()
    m.touch([X, C, D, A, Y])
    # Walk Y (absent), A → end, D → end, C → end, X (absent): B, A, D, C.
    assert list(m.policy.order) == [B, A, D, C]
    assert refs(m) == {A: 1, B: 0, C: 0, D: -1}
    assert m.backend.get_num_free_blocks() == free
    assert m.lookup([X]) == 0 and m.lookup([Y]) == 0


def test_M4_arc_touch_of_absent_hash_may_learn_from_ghost() -> None:
    m = ReferenceManager(1, policy="arc")
    ready(m, [A])
    out = m.prepare_store([B])  # evicts A from T1 → B1 [A]
    assert out is not None and out.block_hashes_evicted == [A]
    m.touch([A])  # absent for the manager, a B1 ghost: p = min(0 + max(1, 0/1), 1) = 1
    assert m.policy.p == 1.0
    assert m.lookup([A]) == 0 and refs(m) == {B: -1}


# ---------------------------------------------------------------------------------- M5


def test_M5_1_to_store_is_absent_hashes_deduplicated_in_first_occurrence_order() -> None:
    m = ReferenceManager(8)
    ready(m, [A])
    assert m.prepare_store([B]) is not None  # B pending
    out = m.prepare_store([X, A, Y, X, B, Z, Y])
    assert out is not None
    assert out.block_hashes_to_store == [X, Y, Z]
    assert out.block_hashes_evicted == []
    blocks = m.blocks()
    assert ids(out.store_spec) == [blocks[X].block_id, blocks[Y].block_id, blocks[Z].block_id]
    assert refs(m) == {A: 0, B: -1, X: -1, Y: -1, Z: -1}
    assert list(m.policy.order) == [A, B, X, Y, Z]
    assert m.backend.get_num_free_blocks() == 8 - 5


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_M5_2_nothing_to_store_returns_empty_output_and_changes_nothing(policy: str) -> None:
    m = ReferenceManager(2, policy=policy, enable_events=True)
    ready(m, [A])
    assert m.prepare_store([B]) is not None  # B pending, cache full
    m.take_events()
    before = snapshot(m)
    for hashes in ([A, B, A], []):
        out = m.prepare_store(hashes)
        assert out is not None
        assert out.block_hashes_to_store == [] and out.block_hashes_evicted == []
        assert out.store_spec.medium() == "CPU" and len(out.store_spec) == 0
        assert snapshot(m) == before
    assert list(m.take_events()) == []


def test_M5_3_already_stored_input_hash_is_protected_from_eviction() -> None:
    m = ReferenceManager(3, enable_events=True)
    ready(m, [A, B, C])  # LRU order A, B, C: A would be the first victim
    m.take_events()
    out = m.prepare_store([A, X])  # to_store [X], need 1, protected {A, X} → victim B
    assert out is not None
    assert out.block_hashes_to_store == [X]
    assert out.block_hashes_evicted == [B]
    assert refs(m) == {A: 0, C: 0, X: -1}
    assert list(m.policy.order) == [A, C, X]  # A was skipped, not touched
    assert list(m.take_events()) == [ev([B], removed=True)]


def test_M5_3_eviction_skips_in_use_and_pending_and_evicts_exactly_need() -> None:
    m = ReferenceManager(5)
    ready(m, [A, B])
    assert m.prepare_store([C]) is not None  # C pending
    ready(m, [D, E])  # order A, B, C, D, E; free 0
    m.prepare_load([A])
    out = m.prepare_store([X, Y])  # need 2; eligible in order: B, D, E → B, D
    assert out is not None and out.block_hashes_evicted == [B, D]
    assert list(m.policy.order) == [A, C, E, X, Y]
    m.complete_store([X, Y])
    m.complete_store([C], success=False)  # one free block now
    out = m.prepare_store([Z, Q])  # need 2 - 1 = 1: only E (A in use)
    assert out is not None and out.block_hashes_evicted == [E]
    assert refs(m) == {A: 1, X: 0, Y: 0, Z: -1, Q: -1}
    m.check_invariants()


def test_M5_4_refused_store_changes_nothing() -> None:
    m = ReferenceManager(3, enable_events=True)
    ready(m, [A, B, C])  # event stored [A, B, C]; order A, B, C
    m.prepare_load([A, B])
    m.touch([B])  # order A, C, B
    before = snapshot(m)
    # need 2, eligible: C only (A, B in use) → refused; C must not be half-evicted.
    assert m.prepare_store([X, Y]) is None
    assert snapshot(m) == before
    assert list(m.policy.order) == [A, C, B]
    assert m.backend.get_num_free_blocks() == 0
    assert m.lookup([A, B, C]) == 3 and m.lookup([X]) == 0
    assert refs(m) == {A: 1, B: 1, C: 0}
    assert list(m.take_events()) == [ev([A, B, C], removed=False)]


def test_M5_4_refused_store_changes_nothing_arc() -> None:
    m = ReferenceManager(3, policy="arc", enable_events=True)
    ready(m, [A, B, C])  # T1 [A, B, C]; event stored [A, B, C]
    m.touch([A])  # A ready in T1 → T2: T1 [B, C], T2 [A]
    out = m.prepare_store([D])  # need 1; p=0, t1=2 >= 0 → T1's B; B1 [B]
    assert out is not None and out.block_hashes_evicted == [B]
    m.complete_store([D])  # events: removed [B], stored [D]; T1 [C, D]
    m.touch([B])  # B1 ghost: p = min(0 + max(1, 0/1), 3) = 1
    m.prepare_load([C])
    pol = m.policy
    assert (list(pol.t1), list(pol.t2), list(pol.b1), list(pol.b2), pol.p) == ([C, D], [A], [B], [], 1.0)
    before = snapshot(m)
    # to_store [X, Y], need 2; protected {X, Y, D, A}; C in use → nothing eligible.
    assert m.prepare_store([X, Y, D, A]) is None
    # need 2 with one eligible (D; A protected, C in use) → refused, D not half-evicted.
    assert m.prepare_store([X, Y, A]) is None
    assert snapshot(m) == before
    assert (list(pol.t1), list(pol.t2), list(pol.b1), list(pol.b2), pol.p) == ([C, D], [A], [B], [], 1.0)
    assert list(m.take_events()) == [
        ev([A, B, C], removed=False),
        ev([B], removed=True),
        ev([D], removed=False),
    ]


def test_M5_5_inserts_pending_in_order_and_reports_victims_in_eviction_order() -> None:
    m = ReferenceManager(4, enable_events=True, block_size=32)
    ready(m, [A, B, C, D])
    m.touch([B, A])  # walk A (→ B, C, D, A), then B (→ C, D, A, B): B most recent
    m.take_events()
    out = m.prepare_store([Y, X, Z])  # need 3 → C, D, A
    assert out is not None
    assert out.block_hashes_to_store == [Y, X, Z]
    assert out.block_hashes_evicted == [C, D, A]
    blocks = m.blocks()
    assert ids(out.store_spec) == [blocks[Y].block_id, blocks[X].block_id, blocks[Z].block_id]
    assert len(set(ids(out.store_spec)) | {blocks[B].block_id}) == 4
    assert refs(m) == {B: 0, Y: -1, X: -1, Z: -1}
    assert list(m.policy.order) == [B, Y, X, Z]  # Z, the last, is most recent
    assert list(m.take_events()) == [ev([C, D, A], removed=True, block_size=32)]


def test_M5_5_arc_inserts_into_t1_in_to_store_order() -> None:
    m = ReferenceManager(4, policy="arc")
    out = m.prepare_store([Y, X, Y, Z])
    assert out is not None and out.block_hashes_to_store == [Y, X, Z]
    assert list(m.policy.t1) == [Y, X, Z] and list(m.policy.t2) == []


# ---------------------------------------------------------------------------------- M6


def test_M6_pending_becomes_ready_once_with_one_event_in_argument_order() -> None:
    m = ReferenceManager(4, enable_events=True)
    ready(m, [A])
    m.take_events()
    assert m.prepare_store([X, Y, Z]) is not None
    m.complete_store([Y, A, X, Y, Q])  # A ready and Q absent are ignored; Y listed twice
    assert refs(m) == {A: 0, X: 0, Y: 0, Z: -1}
    assert list(m.take_events()) == [ev([Y, X], removed=False)]
    m.complete_store([X, Y, A])  # idempotent: nothing becomes ready, no event
    assert list(m.take_events()) == []
    m.complete_store([Z])
    assert list(m.take_events()) == [ev([Z], removed=False)]
    assert m.lookup([A, X, Y, Z]) == 4


def test_M6_completing_a_ready_in_use_block_leaves_its_count() -> None:
    m = ReferenceManager(2)
    ready(m, [A])
    m.prepare_load([A, A])
    m.complete_store([A])
    assert refs(m) == {A: 2}


# ---------------------------------------------------------------------------------- M7


def test_M7_failed_store_frees_pending_keeps_ready_and_queues_nothing() -> None:
    m = ReferenceManager(3, enable_events=True)
    ready(m, [A])
    m.prepare_load([A])
    assert m.prepare_store([X, Y]) is not None  # order A, X, Y; free 0
    m.take_events()
    m.complete_store([A, X, Q], success=False)  # A ready (in use), X pending, Q absent
    assert refs(m) == {A: 1, Y: -1}
    assert m.lookup([A]) == 1 and m.lookup([X]) == 0
    assert list(m.policy.order) == [A, Y]
    assert m.backend.get_num_free_blocks() == 1
    assert list(m.take_events()) == []
    out = m.prepare_store([Z])  # the freed block is reusable at once: no eviction
    assert out is not None and out.block_hashes_evicted == [] and out.block_hashes_to_store == [Z]
    out = m.prepare_store([X])  # X is absent again, can be stored again
    assert out is None  # cache full: A in use, Y and Z pending
    m.complete_load([A])
    out = m.prepare_store([X])
    assert out is not None and out.block_hashes_to_store == [X] and out.block_hashes_evicted == [A]
    assert list(m.take_events()) == [ev([A], removed=True)]
    m.check_invariants()


def test_M7_failed_store_of_only_ready_blocks_changes_nothing() -> None:
    m = ReferenceManager(3, policy="arc", enable_events=True)
    ready(m, [A, B])
    m.touch([A])
    m.take_events()
    before = snapshot(m)
    m.complete_store([A, B, A], success=False)
    assert snapshot(m) == before
    assert list(m.take_events()) == []


def test_M7_failed_store_listing_a_pending_hash_twice_frees_it_once() -> None:
    m = ReferenceManager(3)
    assert m.prepare_store([X, Y]) is not None
    m.complete_store([X, Y, X], success=False)
    assert m.blocks() == {} and m.backend.get_num_free_blocks() == 3
    m.check_invariants()


# ---------------------------------------------------------------------------------- M8


def test_M8_events_in_queue_order_and_take_events_drains() -> None:
    m = ReferenceManager(2, enable_events=True, block_size=48)
    assert m.prepare_store([A, B]) is not None
    m.complete_store([B])
    m.complete_store([A])
    out = m.prepare_store([C])  # evicts B? order A, B (insertion) → A is LRU
    assert out is not None and out.block_hashes_evicted == [A]
    m.complete_store([C])
    events = list(m.take_events())
    assert events == [
        ev([B], removed=False, block_size=48),
        ev([A], removed=False, block_size=48),
        ev([A], removed=True, block_size=48),
        ev([C], removed=False, block_size=48),
    ]
    assert all(e.medium == "CPU" and e.block_size == 48 for e in events)
    assert list(m.take_events()) == []
    ready(m, [D])  # evicts B
    assert list(m.take_events()) == [ev([B], removed=True, block_size=48), ev([D], removed=False, block_size=48)]


def test_M8_events_off_queue_nothing() -> None:
    m = ReferenceManager(2)
    ready(m, [A, B])
    ready(m, [C])  # evicts A
    assert m.prepare_store([D]) is not None
    m.complete_store([D], success=False)
    assert list(m.take_events()) == []


# ---------------------------------------------------------------------------------- M9


class MyBytes(bytes):
    pass


def _all_calls(m: ReferenceManager):
    return [
        lambda arg: m.lookup(arg),
        lambda arg: m.prepare_load(arg),
        lambda arg: m.complete_load(arg),
        lambda arg: m.touch(arg),
        lambda arg: m.prepare_store(arg),
        lambda arg: m.complete_store(arg),
        lambda arg: m.complete_store(arg, success=False),
    ]


@pytest.mark.parametrize("bad", [bytearray(b"\x07" * 32), "x" * 32, 7, None, memoryview(b"\x08" * 32)])
@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_M9_non_bytes_hash_in_middle_of_batch_raises_type_error_and_changes_nothing(
    bad: object, policy: str
) -> None:
    m = ReferenceManager(5, policy=policy, enable_events=True)
    ready(m, [A, B])
    m.prepare_load([A, B])
    assert m.prepare_store([C]) is not None  # C pending; two blocks free
    m.take_events()
    before = snapshot(m)
    # Each batch would be valid (and would act) without the bad element.
    calls = [
        (m.lookup, [A, B]),  # all hits: an early-stopping lookup (M1) still reads the bad one
        (m.prepare_load, [A, B]),
        (m.complete_load, [A, B]),
        (m.touch, [B, A, C]),
        (m.prepare_store, [X, A, Y]),
        (m.complete_store, [C, A]),
        (lambda arg: m.complete_store(arg, success=False), [C, B]),
    ]
    for call, batch in calls:
        for position in (1, len(batch)):
            with pytest.raises(TypeError):
                call(iter(batch[:position] + [bad] + batch[position:]))
            assert snapshot(m) == before, (call, position)
    assert list(m.take_events()) == []


@pytest.mark.parametrize("arg", [5, None, object(), 3.5, A, "abc", bytearray(b"ab")])
def test_M9_non_iterable_or_single_hash_argument_raises_type_error(arg: object) -> None:
    m = ReferenceManager(2)
    ready(m, [A])
    before = snapshot(m)
    for call in _all_calls(m):
        with pytest.raises(TypeError):
            call(arg)
        assert snapshot(m) == before


def test_M9_bytes_subclass_is_accepted_as_the_same_hash() -> None:
    m = ReferenceManager(2)
    out = m.prepare_store([MyBytes(A)])
    assert out is not None and out.block_hashes_to_store == [A]
    m.complete_store([MyBytes(A)])
    assert m.lookup([A]) == 1 and m.lookup([MyBytes(A)]) == 1
    m.prepare_load([MyBytes(A)])
    m.complete_load([A])
    m.touch([MyBytes(A)])
    assert refs(m) == {A: 0}


def test_M9_empty_hash_is_rejected_and_changes_nothing() -> None:
    m = ReferenceManager(3, enable_events=True)
    ready(m, [A])
    assert m.prepare_store([B]) is not None
    m.take_events()
    before = snapshot(m)
    for call in _all_calls(m):
        with pytest.raises((TypeError, ValueError)):
            call([A, b"", B])
        assert snapshot(m) == before
    assert list(m.take_events()) == []


def test_M9_contract_violations_change_nothing() -> None:
    m = ReferenceManager(2, policy="arc", enable_events=True)
    ready(m, [A])
    m.take_events()
    before = snapshot(m)
    with pytest.raises(ContractViolation):
        m.prepare_load([A, A, X])
    with pytest.raises(ContractViolation):
        m.complete_load([A])
    assert snapshot(m) == before
    assert list(m.take_events()) == []


# --------------------------------------------------------------------------------- M10


def test_M10_loads_and_successful_stores_do_not_change_lru_order() -> None:
    m = ReferenceManager(5)
    ready(m, [A, B, C])
    assert m.prepare_store([D]) is not None
    assert list(m.policy.order) == [A, B, C, D]
    m.lookup([C, B, A])
    m.prepare_load([A, A, B])
    m.complete_load([A, B])
    m.complete_store([D])  # D becomes ready in place
    m.complete_load([A])
    assert list(m.policy.order) == [A, B, C, D]


def test_M10_loads_and_successful_stores_do_not_change_arc_state() -> None:
    m = ReferenceManager(3, policy="arc")
    ready(m, [A, B, C])
    m.touch([A])  # T1 [B, C], T2 [A]
    out = m.prepare_store([D])  # evicts B → B1 [B]; T1 [C, D(pending)]
    assert out is not None and out.block_hashes_evicted == [B]
    m.touch([B])  # p = 1
    state = policy_state(m)
    assert state == ("arc", [C, D], [A], [B], [], 1.0)
    m.lookup([A, C, D, B])
    m.prepare_load([C, A, C])
    m.complete_load([C, A, C])
    m.complete_store([D])  # D ready, stays in T1 where it was
    assert policy_state(m) == state


# ----------------------------------------------------------------------------- I1–I8


def test_I1_free_plus_allocated_is_capacity_after_every_call() -> None:
    m = ReferenceManager(3, policy="arc")

    def check(expected_free: int) -> None:
        assert m.backend.get_num_free_blocks() == expected_free
        assert len(m.blocks()) == 3 - expected_free
        m.check_invariants()

    check(3)
    assert m.prepare_store([A, B]) is not None
    check(1)
    m.complete_store([A])
    check(1)
    m.complete_store([B], success=False)
    check(2)
    ready(m, [C, D])
    check(0)
    assert m.prepare_store([E]) is not None  # evicts one
    check(0)
    assert m.prepare_store([X, Y, Z]) is None  # need 3, evictable only C, D (E pending)
    check(0)


def test_I2_ref_cnt_moves_only_as_m2_m3_m5_m6_say() -> None:
    m = ReferenceManager(3)
    assert m.prepare_store([A]) is not None
    assert refs(m) == {A: -1}
    with pytest.raises(ContractViolation):
        m.prepare_load([A])  # never -1 → k > 0
    with pytest.raises(ContractViolation):
        m.complete_load([A])  # never below -1
    assert refs(m) == {A: -1}
    m.touch([A])
    assert refs(m) == {A: -1}
    m.complete_store([A])
    assert refs(m) == {A: 0}
    m.prepare_load([A])
    m.prepare_load([A])
    assert refs(m) == {A: 2}
    m.complete_store([A])  # ready: ignored, not reset to 0
    m.complete_store([A], success=False)  # ready: left as it is
    assert refs(m) == {A: 2}
    m.complete_load([A])
    assert refs(m) == {A: 1}
    m.complete_load([A])
    assert refs(m) == {A: 0}
    with pytest.raises(ContractViolation):
        m.complete_load([A])
    assert refs(m) == {A: 0}
    m.check_invariants()


def test_I2_check_invariants_detects_ref_cnt_below_minus_one() -> None:
    m = ReferenceManager(2)
    ready(m, [A])
    m.check_invariants()
    m.blocks()[A].ref_cnt = -2
    with pytest.raises(ContractViolation) as err:
        m.check_invariants()
    assert err.value.clause == "I2"


def test_I3_in_use_and_pending_blocks_are_never_evicted_or_freed() -> None:
    m = ReferenceManager(3, policy="arc")
    ready(m, [A, B])
    assert m.prepare_store([C]) is not None  # C pending
    m.prepare_load([A])
    m.prepare_load([B])
    a_id, b_id, c_id = (m.blocks()[k].block_id for k in (A, B, C))
    assert m.prepare_store([X]) is None  # nothing evictable
    m.complete_store([A, B], success=False)  # ready in use: not freed
    assert refs(m) == {A: 1, B: 1, C: -1}
    m.complete_load([B])
    out = m.prepare_store([X])  # only B is evictable
    assert out is not None and out.block_hashes_evicted == [B]
    assert m.blocks()[X].block_id not in (a_id, c_id)
    assert m.blocks()[A].block_id == a_id and m.blocks()[C].block_id == c_id
    assert refs(m) == {A: 1, C: -1, X: -1}
    m.check_invariants()


def test_I4_live_blocks_never_share_ids_through_eviction_and_reuse() -> None:
    m = ReferenceManager(3)
    seen_specs: list[list[int]] = []
    for step, batch in enumerate([[A, B], [C, D], [E], [X, Y], [Z], [Q, A]]):
        out = m.prepare_store(batch)
        assert out is not None, step
        seen_specs.append(ids(out.store_spec))
        live = [b.block_id for b in m.blocks().values()]
        assert len(live) == len(set(live)), step
        assert all(0 <= i < 3 for i in live)
        new_ids = ids(out.store_spec)
        others = [m.blocks()[k].block_id for k in m.blocks() if k not in out.block_hashes_to_store]
        assert not set(new_ids) & set(others), step
        m.complete_store(out.block_hashes_to_store)
        m.check_invariants()


def test_I4_check_invariants_detects_two_hashes_sharing_a_block() -> None:
    m = ReferenceManager(3)
    ready(m, [A, B])
    m.check_invariants()
    blocks = m.blocks()
    blocks[B].block_id = blocks[A].block_id
    with pytest.raises(ContractViolation) as err:
        m.check_invariants()
    assert err.value.clause == "I4"


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_I5_replaying_events_gives_the_ready_set(policy: str) -> None:
    m = ReferenceManager(3, policy=policy, enable_events=True)
    replayed: set[bytes] = set()

    def replay() -> None:
        for event in m.take_events():
            if event.removed:
                assert set(event.block_hashes) <= replayed
                replayed.difference_update(event.block_hashes)
            else:
                assert not set(event.block_hashes) & replayed
                replayed.update(event.block_hashes)
        assert replayed == {k for k, b in m.blocks().items() if b.ref_cnt >= 0}

    assert m.prepare_store([A, B, C]) is not None
    replay()
    m.complete_store([A, B])
    m.complete_store([C], success=False)  # failed: no trace
    replay()
    assert replayed == {A, B}
    m.touch([B])
    ready(m, [D, E])  # need 1 (one free): evicts one of A/B
    replay()
    m.prepare_load([D])
    # LRU order B, D, E → B. ARC: T1 [D, E], T2 [B], t1 = 2 >= floor(0) → T1's E (D in use).
    assert m.prepare_store([X]) is not None
    replay()
    m.complete_store([X], success=False)
    replay()
    assert replayed == ({D, E} if policy == "lru" else {B, D})


def test_I6_store_fits_exactly_at_the_boundary() -> None:
    m = ReferenceManager(5)
    ready(m, [A, B, C, D])  # one free block left
    m.prepare_load([A])
    # to_store [X, Y, Z] (3) <= free 1 + ready idle not in input (C, D: B is in the input) = 3
    out = m.prepare_store([B, X, Y, Z])
    assert out is not None
    assert out.block_hashes_to_store == [X, Y, Z] and out.block_hashes_evicted == [C, D]
    assert refs(m) == {A: 1, B: 0, X: -1, Y: -1, Z: -1}


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_I6_store_refused_one_past_the_boundary(policy: str) -> None:
    m = ReferenceManager(5, policy=policy)
    ready(m, [A, B, C, D])
    m.prepare_load([A])
    before = snapshot(m)
    # to_store [X, Y, Z, Q] (4) > free 1 + (C, D) 2 = 3 → must refuse.
    assert m.prepare_store([B, X, Y, Z, Q]) is None
    assert snapshot(m) == before
    # Without B in the input, B counts too: 4 <= 1 + 3 → fits.
    out = m.prepare_store([X, Y, Z, Q])
    assert out is not None and sorted(out.block_hashes_evicted) == sorted([B, C, D])


def test_I7_every_failing_call_leaves_all_observables_and_events() -> None:
    m = ReferenceManager(2, policy="arc", enable_events=True)
    ready(m, [A, B])  # queued: stored [A, B]
    m.prepare_load([A, B])
    before = snapshot(m)
    assert m.prepare_store([X]) is None
    with pytest.raises(ContractViolation):
        m.prepare_load([A, X])
    with pytest.raises(ContractViolation):
        m.complete_load([A, A])
    with pytest.raises(TypeError):
        m.touch([A, "B"])
    with pytest.raises(TypeError):
        m.complete_store([A, 3])
    with pytest.raises(TypeError):
        m.prepare_store([X, bytearray(b"y")])
    assert snapshot(m) == before
    assert m.lookup([A, B]) == 2
    assert list(m.take_events()) == [ev([A, B], removed=False)]


def test_I8_prefix_sharing_hashes_of_different_lengths_are_distinct_blocks() -> None:
    base = bytes(range(100, 136))  # 36 bytes
    h8, h16, h32, h36 = base[:8], base[:16], base[:32], base
    same64 = base[:8] + b"\xff" * 24  # agrees with h32 in its first 8 bytes (a 64-bit fingerprint)
    m = ReferenceManager(5, enable_events=True)
    ready(m, [h8, h16, h32])
    assert m.lookup([h36]) == 0 and m.lookup([same64]) == 0
    ready(m, [h36, same64])
    hashes = [h8, h16, h32, h36, same64]
    assert len(set(hashes)) == 5
    blocks = m.blocks()
    assert set(blocks) == set(hashes)
    assert len({b.block_id for b in blocks.values()}) == 5
    m.prepare_load([h32])
    assert refs(m) == {h8: 0, h16: 0, h32: 1, h36: 0, same64: 0}
    out = m.prepare_store([X])  # LRU: h8 goes, nothing else
    assert out is not None and out.block_hashes_evicted == [h8]
    assert m.lookup([h16]) == 1 and m.lookup([h8]) == 0
    m.complete_store([h36[:33]], success=False)  # absent: a 33-byte prefix is not h36
    assert m.lookup([h36]) == 1
    m.check_invariants()


def test_I8_arc_ghosts_are_keyed_by_the_full_hash() -> None:
    base = bytes(range(36))
    m = ReferenceManager(1, policy="arc")
    ready(m, [base[:32]])
    out = m.prepare_store([X])  # base[:32] → B1
    assert out is not None
    m.touch([base[:16], base, base[:8] + b"\x00" * 24])  # none of these is the ghost
    assert m.policy.p == 0.0
    m.touch([base[:32]])
    assert m.policy.p == 1.0


class _DunderBytes(bytes):
    """A bytes subclass whose ``__bytes__`` disagrees with its content."""

    def __bytes__(self) -> bytes:
        return b"same for every instance"


def test_I8_bytes_subclass_is_identified_by_its_content() -> None:
    # M9: bytes subclasses are fine; vocabulary/I8: a hash is its byte string. Two
    # different byte strings must be two blocks, whatever the subclass's __bytes__ says.
    m = ReferenceManager(4)
    out = m.prepare_store([_DunderBytes(A), _DunderBytes(B)])
    assert out is not None
    assert out.block_hashes_to_store == [A, B]
    m.complete_store([A, B])
    assert m.lookup([A, B]) == 2
