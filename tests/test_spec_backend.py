"""Example-based tests of the reference CPU backend (B1–B4)."""

from __future__ import annotations

import pytest

from kvoffload.spec import BlockStatus, ContractViolation, CPULoadStoreSpec, ReferenceCPUBackend


def h(i: int, length: int = 32) -> bytes:
    return bytes([i]) * length


def hs(n: int, start: int = 1) -> list[bytes]:
    return [h(i) for i in range(start, start + n)]


def live_ids(backend: ReferenceCPUBackend, blocks: list[BlockStatus]) -> list[int]:
    return [b.block_id for b in blocks]


def test_B1_free_count_stays_in_zero_to_capacity() -> None:
    backend = ReferenceCPUBackend(3)
    assert backend.get_num_free_blocks() == 3
    blocks = backend.allocate_blocks(hs(2))
    assert backend.get_num_free_blocks() == 1
    blocks += backend.allocate_blocks(hs(1, 10))
    assert backend.get_num_free_blocks() == 0
    with pytest.raises(ContractViolation):
        backend.allocate_blocks(hs(1, 20))
    assert backend.get_num_free_blocks() == 0
    for i, block in enumerate(blocks):
        backend.free(block)
        assert backend.get_num_free_blocks() == i + 1
    with pytest.raises(ContractViolation):
        backend.free(blocks[0])
    assert backend.get_num_free_blocks() == 3
    backend.check_invariants()


def test_B2_allocate_returns_distinct_new_pending_blocks() -> None:
    backend = ReferenceCPUBackend(5, block_size=32)
    first = backend.allocate_blocks(hs(3))
    assert len(first) == 3 and all(isinstance(b, BlockStatus) for b in first)
    assert all(b.ref_cnt == -1 for b in first)
    assert len({id(b) for b in first}) == 3 and len({b.block_id for b in first}) == 3
    assert backend.get_num_free_blocks() == 2
    assert backend.allocate_blocks([]) == [] and backend.get_num_free_blocks() == 2
    second = backend.allocate_blocks(hs(2, 10))
    assert not {b.block_id for b in second} & {b.block_id for b in first}
    assert backend.get_num_free_blocks() == 0


def test_B2_over_allocation_is_a_violation_with_no_change() -> None:
    backend = ReferenceCPUBackend(4)
    held = backend.allocate_blocks(hs(2))
    with pytest.raises(ContractViolation) as err:
        backend.allocate_blocks(hs(3, 10))
    assert err.value.clause == "B2"
    assert backend.get_num_free_blocks() == 2
    backend.check_invariants()
    # The two free blocks are still there, and distinct from the held ones.
    rest = backend.allocate_blocks(hs(2, 10))
    ids = {b.block_id for b in held + rest}
    assert ids == set(range(4))


def test_B3_free_returns_a_block_that_can_be_handed_out_again() -> None:
    backend = ReferenceCPUBackend(2)
    a, b = backend.allocate_blocks(hs(2))
    backend.free(a)
    assert backend.get_num_free_blocks() == 1
    (c,) = backend.allocate_blocks(hs(1, 10))
    assert c.block_id == a.block_id  # the only free id
    assert c.ref_cnt == -1 and c is not a
    assert c.block_id != b.block_id


def test_B3_double_free_and_foreign_block_are_violations_with_no_change() -> None:
    backend = ReferenceCPUBackend(3)
    other = ReferenceCPUBackend(3)
    a, b = backend.allocate_blocks(hs(2))
    (foreign,) = other.allocate_blocks(hs(1))  # same id as a, another backend's block
    backend.free(a)
    for bad in (a, BlockStatus(b.block_id), foreign, BlockStatus(7)):
        with pytest.raises(ContractViolation) as err:
            backend.free(bad)
        assert err.value.clause == "B3"
        assert backend.get_num_free_blocks() == 2
        backend.check_invariants()
    backend.free(b)  # the real b is still handed out
    assert backend.get_num_free_blocks() == 3
    assert {blk.block_id for blk in backend.allocate_blocks(hs(3))} == {0, 1, 2}


def test_B4_spec_addresses_exactly_the_blocks_in_order() -> None:
    backend = ReferenceCPUBackend(4)
    blocks = backend.allocate_blocks(hs(4))
    order = [blocks[2], blocks[0], blocks[3]]
    spec = backend.get_load_store_spec([h(3), h(1), h(4)], order)
    assert isinstance(spec, CPULoadStoreSpec)
    assert spec.medium() == backend.medium == "CPU"
    assert spec.block_ids.tolist() == [blocks[2].block_id, blocks[0].block_id, blocks[3].block_id]
    assert str(spec.block_ids.dtype) == "int64"
    empty = backend.get_load_store_spec([], [])
    assert empty.medium() == "CPU" and empty.block_ids.tolist() == []


def test_B4_live_block_ids_are_distinct_and_in_range() -> None:
    backend = ReferenceCPUBackend(5)
    live = backend.allocate_blocks(hs(5))
    for round_ in range(6):
        backend.free(live.pop(round_ % len(live)))
        backend.free(live.pop(0))
        live += backend.allocate_blocks(hs(2, 10 + 2 * round_))
        ids = [b.block_id for b in live]
        assert len(ids) == 5 and len(set(ids)) == 5, ids
        assert all(0 <= i < 5 for i in ids), ids
        backend.check_invariants()
