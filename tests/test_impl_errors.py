"""Bad calls to the production manager and its components: the same exception as the
reference, naming the clause and the hash, and nothing changed (M2, M3, M9, I7, B2, B3,
P2, P3, P5)."""

from __future__ import annotations

from typing import Any

import pytest

from kvoffload.impl import ARCCachePolicy, CPUBackend, CPUOffloadingManager, LRUCachePolicy
from kvoffload.spec import BlockStatus, ContractViolation, ReferenceManager

H = [bytes([i]) * 32 for i in range(8)]


def snapshot(manager: CPUOffloadingManager) -> Any:
    return (
        {h: (b.ref_cnt, b.block_id) for h, b in manager.blocks().items()},
        manager.get_num_free_blocks(),
        manager.arc_target,
        [a.copy() for a in manager._state],  # every compiled array, order included
    )


def same(a: Any, b: Any) -> bool:
    return a[:3] == b[:3] and all((x == y).all() for x, y in zip(a[3], b[3]))


@pytest.fixture(params=["lru", "arc"])
def pair(request: pytest.FixtureRequest) -> tuple[CPUOffloadingManager, ReferenceManager]:
    impl = CPUOffloadingManager(num_blocks=4, policy=request.param, enable_events=True)
    ref = ReferenceManager(4, policy=request.param, enable_events=True)
    for m in (impl, ref):
        m.prepare_store(H[:3])
        m.complete_store(H[:2])
        m.take_events()
    return impl, ref


def test_M2_absent_or_pending_changes_nothing(pair: tuple[CPUOffloadingManager, ReferenceManager]) -> None:
    impl, ref = pair
    for bad in ([H[0], H[5]], [H[0], H[2]]):
        before = snapshot(impl)
        with pytest.raises(ContractViolation) as got:
            impl.prepare_load(bad)
        with pytest.raises(ContractViolation) as want:
            ref.prepare_load(bad)
        assert got.value.clause == want.value.clause == "M2"
        assert bad[1][:12].hex() in str(got.value) and str(got.value) == str(want.value)
        assert same(before, snapshot(impl))


def test_M3_too_many_completions_change_nothing(pair: tuple[CPUOffloadingManager, ReferenceManager]) -> None:
    impl, ref = pair
    for m in (impl, ref):
        m.prepare_load([H[0], H[1]])
    for bad in ([H[0], H[0]], [H[1], H[5]], [H[2]], [H[0], H[1], H[1]]):
        before = snapshot(impl)
        with pytest.raises(ContractViolation) as got:
            impl.complete_load(bad)
        with pytest.raises(ContractViolation) as want:
            ref.complete_load(bad)
        assert got.value.clause == want.value.clause == "M3"
        assert str(got.value) == str(want.value)
        assert same(before, snapshot(impl))
    impl.complete_load([H[0], H[1]])
    assert {h: b.ref_cnt for h, b in impl.blocks().items()} == {H[0]: 0, H[1]: 0, H[2]: -1}


@pytest.mark.parametrize(
    "bad",
    [b"abc", "abc", 5, None, [H[0], bytearray(b"x")], [H[0], "x"], [H[0], 7], [H[0], memoryview(b"x")], [b""]],
)
def test_M9_bad_types_raise_and_change_nothing(
    pair: tuple[CPUOffloadingManager, ReferenceManager], bad: Any
) -> None:
    impl, ref = pair
    for method in ("lookup", "touch", "prepare_load", "complete_load", "prepare_store", "complete_store"):
        before = snapshot(impl)
        with pytest.raises((TypeError, ValueError)) as got:
            getattr(impl, method)(bad)
        with pytest.raises((TypeError, ValueError)) as want:
            getattr(ref, method)(bad)
        assert type(got.value) is type(want.value) and str(got.value) == str(want.value)
        assert same(before, snapshot(impl))
    with pytest.raises(TypeError):
        impl.complete_store([H[0]], success=1)  # type: ignore[arg-type]


def test_M9_bytes_subclass_is_fine() -> None:
    class Sub(bytes):
        pass

    impl = CPUOffloadingManager(num_blocks=2)
    out = impl.prepare_store([Sub(H[0])])
    assert out is not None and out.block_hashes_to_store == [H[0]]
    assert type(out.block_hashes_to_store[0]) is bytes


def test_I7_refused_store_changes_nothing(pair: tuple[CPUOffloadingManager, ReferenceManager]) -> None:
    impl, ref = pair
    for m in (impl, ref):
        m.prepare_load([H[0]])
    before = snapshot(impl)
    assert impl.prepare_store(H[3:7]) is None and ref.prepare_store(H[3:7]) is None
    assert same(before, snapshot(impl))
    assert list(impl.take_events()) == []


def test_M5_constructor_and_config_errors() -> None:
    for kwargs in ({"num_blocks": 0}, {"num_blocks": 2, "block_size": 0}, {"num_blocks": 2, "policy": "fifo"},
                   {"num_blocks": 2, "fingerprint": "low_bits:99"}):
        with pytest.raises(ValueError):
            CPUOffloadingManager(**kwargs)  # type: ignore[arg-type]


def test_M5_long_hashes_grow_the_key_store() -> None:
    impl = CPUOffloadingManager(num_blocks=3)
    long = [b"a" * 100, b"a" * 101, b"a" * 36]
    out = impl.prepare_store(long)
    assert out is not None and out.block_hashes_to_store == long
    impl.complete_store(long)
    assert impl.lookup(long) == 3 and impl.lookup([b"a" * 102]) == 0


def test_B2_B3_backend_violations() -> None:
    backend = CPUBackend(2, block_size=8)
    with pytest.raises(ContractViolation) as error:
        backend.allocate_blocks([H[0], H[1], H[2]])
    assert error.value.clause == "B2" and backend.get_num_free_blocks() == 2
    blocks = backend.allocate_blocks([H[0], H[1]])
    assert sorted(b.block_id for b in blocks) == [0, 1] and all(b.ref_cnt == -1 for b in blocks)
    backend.free(blocks[0])
    for bad in (blocks[0], BlockStatus(1)):
        with pytest.raises(ContractViolation) as error:
            backend.free(bad)
        assert error.value.clause == "B3"
    assert backend.get_num_free_blocks() == 1
    with pytest.raises(TypeError):
        backend.free("x")  # type: ignore[arg-type]
    spec = backend.get_load_store_spec([H[1]], [blocks[1]])
    assert spec.medium() == "CPU" and spec.block_ids.tolist() == [blocks[1].block_id]
    backend.check_invariants()


@pytest.mark.parametrize("policy_class", [LRUCachePolicy, ARCCachePolicy])
def test_P2_P3_P5_policy_violations(policy_class: type[LRUCachePolicy] | type[ARCCachePolicy]) -> None:
    policy = policy_class(4)
    blocks = [BlockStatus(i) for i in range(3)]
    for h, b in zip(H, blocks):
        policy.insert(h, b)
    with pytest.raises(ContractViolation) as error:
        policy.insert(H[0], BlockStatus(9))
    assert error.value.clause == "P2"
    with pytest.raises(ContractViolation) as error:
        policy.remove(H[5])
    assert error.value.clause == "P3"
    assert policy.evict(1, set()) is None  # all pending
    blocks[0].ref_cnt = 0
    blocks[1].ref_cnt = 2
    blocks[2].ref_cnt = 0
    assert policy.evict(0, set()) == []
    assert policy.evict(3, set()) is None
    assert policy.evict(1, {H[0]}) == [(H[2], blocks[2])]
    assert policy.get(H[2]) is None and policy.get(H[0]) is blocks[0]
    with pytest.raises(ValueError):
        policy.evict(-1, set())
