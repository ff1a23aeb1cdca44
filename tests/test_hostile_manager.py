"""Hostile input to every public method of the managers (M9, I7), production and reference.

Each example builds a manager in a known state (ready, pending and loaded blocks, events
drained), makes one malformed call and checks three things: only the documented
exception (``TypeError`` for wrong types, ``ValueError`` for an empty hash,
``ContractViolation`` for M2/M3 breaches), no crash, and every observable unchanged —
lookups of a hash pool, ref counts, the free count, the policy's whole state (for the
production manager every compiled array, for the reference its lists and ``p``), and no
event queued. The production manager's own ``check_invariants()`` runs after each call.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvoffload.impl import CPUOffloadingManager
from kvoffload.spec import ContractViolation, ReferenceManager

CAPACITY = 4
READY = [bytes([i]) * 32 for i in range(1, 3)]  # h1, h2 ready; READY[0] loaded once
PENDING = [bytes([3]) * 32]
ABSENT = [bytes([9]) * 32, bytes([1]) * 31, bytes([1]) * 32 + b"\x00", bytes([7]) * 8]
POOL = READY + PENDING + ABSENT

FACTORIES: dict[str, Callable[[], Any]] = {
    "production-lru": lambda: CPUOffloadingManager(CAPACITY, policy="lru", enable_events=True),
    "production-arc": lambda: CPUOffloadingManager(CAPACITY, policy="arc", enable_events=True),
    "reference-lru": lambda: ReferenceManager(CAPACITY, policy="lru", enable_events=True),
    "reference-arc": lambda: ReferenceManager(CAPACITY, policy="arc", enable_events=True),
}
METHODS = ("lookup", "prepare_load", "complete_load", "touch", "prepare_store", "complete_store")

_BUILT: dict[str, Any] = {}


def built(name: str) -> Any:
    """One manager per factory, shared by the examples (a refused call changes nothing)."""
    if name not in _BUILT:
        _BUILT[name] = build(name)
    return _BUILT[name]


def build(name: str) -> Any:
    """A manager with ready, loaded, pending and ghost state, events drained."""
    manager = FACTORIES[name]()
    ghost = bytes([5]) * 32
    assert manager.prepare_store([ghost]) is not None
    manager.complete_store([ghost])
    manager.touch([ghost])
    out = manager.prepare_store(READY + PENDING + [bytes([6]) * 32])
    assert out is not None
    assert out.block_hashes_evicted == [ghost]  # ARC: now a ghost in B2
    manager.complete_store(READY + [bytes([6]) * 32])
    manager.prepare_load([READY[0]])
    list(manager.take_events())
    return manager


def snapshot(manager: Any) -> tuple[Any, ...]:
    """Every observable of the manager (I7), without changing it."""
    lookups = tuple(manager.lookup([h]) for h in POOL)
    blocks = sorted((h, b.block_id, b.ref_cnt) for h, b in manager.blocks().items())
    if isinstance(manager, CPUOffloadingManager):
        inner: Any = tuple(np.array(a, copy=True).tobytes() for a in manager._state)
        free = manager.get_num_free_blocks()
    else:
        policy = manager.policy
        inner = tuple(
            [(h, id(b)) for h, b in getattr(policy, name).items()] if name != "p" else policy.p
            for name in ("order", "t1", "t2", "b1", "b2", "p")
            if hasattr(policy, name)
        )
        free = manager.backend.get_num_free_blocks()
    return lookups, blocks, free, inner


def check_unchanged(manager: Any, before: tuple[Any, ...]) -> None:
    assert snapshot(manager) == before, "I7/M9: a refused call changed the manager"
    assert list(manager.take_events()) == [], "I7: a refused call queued an event"
    manager.check_invariants()


# -- malformed hash arguments ----------------------------------------------------------

#: Elements that are not block hashes, and what the contract says they raise.
BAD_ELEMENTS: list[tuple[Any, type[Exception]]] = [
    (None, TypeError),
    (0, TypeError),
    (-1, TypeError),
    (2**70, TypeError),
    (1.5, TypeError),
    ("abc", TypeError),
    (bytearray(b"x" * 32), TypeError),
    (memoryview(b"x" * 32), TypeError),
    ([1, 2, 3], TypeError),
    ([[1], [2]], TypeError),
    ((b"x",), TypeError),
    (object(), TypeError),
    (np.uint64(7), TypeError),
    (b"", ValueError),
]
#: Whole arguments that are not iterables of hashes.
BAD_ARGUMENTS: list[Any] = [None, 0, 7, 1.0, b"x" * 32, bytearray(b"x" * 32), memoryview(b"x" * 32), "hash", object()]

good_hash = st.sampled_from(POOL)
bad_element = st.sampled_from(range(len(BAD_ELEMENTS)))


def _one_shot(items: list[Any]) -> Iterator[Any]:
    yield from items


def _call(manager: Any, method: str, argument: Any, success: bool = True) -> Any:
    if method == "complete_store":
        return manager.complete_store(argument, success=success)
    return getattr(manager, method)(argument)


@pytest.mark.parametrize("name", list(FACTORIES))
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(
    method=st.sampled_from(METHODS),
    prefix=st.lists(good_hash, max_size=4, unique=True),
    suffix=st.lists(good_hash, max_size=3),
    bad=st.lists(bad_element, min_size=1, max_size=2),
    shape=st.sampled_from(["list", "tuple", "generator", "islice"]),
    success=st.booleans(),
)
def test_M9_bad_element_in_a_batch_changes_nothing(
    name: str, method: str, prefix: list[bytes], suffix: list[bytes], bad: list[int], shape: str, success: bool
) -> None:
    manager = built(name)
    before = snapshot(manager)
    elements = [BAD_ELEMENTS[i][0] for i in bad]
    items = prefix + elements + suffix
    argument: Any = {
        "list": items,
        "tuple": tuple(items),
        "generator": _one_shot(items),
        "islice": itertools.islice(iter(items), len(items)),
    }[shape]
    expected = BAD_ELEMENTS[bad[0]][1]
    try:
        result = _call(manager, method, argument, success)
    except (TypeError, ValueError) as error:
        assert isinstance(error, expected), f"{method}: {type(error).__name__}: {error}"
        assert not isinstance(error, ContractViolation)
    else:
        # M1: lookup may stop reading at the first miss; nothing else may accept the batch.
        assert method == "lookup", f"{method} accepted a batch with {elements!r}: {result!r}"
        assert result <= len(prefix)
    check_unchanged(manager, before)


@pytest.mark.parametrize("name", list(FACTORIES))
@pytest.mark.parametrize("method", METHODS)
def test_M9_non_iterable_arguments_raise_TypeError(name: str, method: str) -> None:
    manager = build(name)
    before = snapshot(manager)
    for argument in BAD_ARGUMENTS:
        with pytest.raises(TypeError):
            _call(manager, method, argument)
        check_unchanged(manager, before)


@pytest.mark.parametrize("name", list(FACTORIES))
@pytest.mark.parametrize("success", [0, 1, None, "yes", np.bool_(True), 1.0, [True]])
def test_M9_non_bool_success_raises_TypeError(name: str, success: Any) -> None:
    manager = build(name)
    before = snapshot(manager)
    with pytest.raises(TypeError):
        manager.complete_store(list(PENDING), success=success)
    check_unchanged(manager, before)


# -- contract breaches (M2, M3) and refusals (M5.4) ----------------------------------------

@pytest.mark.parametrize("name", list(FACTORIES))
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(
    method=st.sampled_from(["prepare_load", "complete_load"]),
    batch=st.lists(good_hash, min_size=1, max_size=6),
)
def test_M2_M3_breaches_raise_ContractViolation_and_change_nothing(name: str, method: str, batch: list[bytes]) -> None:
    manager = built(name)
    before = snapshot(manager)
    if method == "prepare_load":
        breach = any(h not in READY for h in batch)
    else:
        breach = any(h != READY[0] for h in batch) or batch.count(READY[0]) > 1
    if not breach:
        return
    with pytest.raises(ContractViolation) as caught:
        getattr(manager, method)(batch)
    assert caught.value.clause == ("M2" if method == "prepare_load" else "M3")
    check_unchanged(manager, before)


@pytest.mark.parametrize("name", list(FACTORIES))
def test_M5_4_refused_store_changes_nothing(name: str) -> None:
    manager = build(name)
    before = snapshot(manager)
    fresh = [bytes([0xF0, i]) * 16 for i in range(CAPACITY + 1)]
    assert manager.prepare_store(fresh) is None
    check_unchanged(manager, before)


# -- empty, huge and long batches --------------------------------------------------------

@pytest.mark.parametrize("name", list(FACTORIES))
def test_empty_batches_are_no_ops(name: str) -> None:
    manager = build(name)
    before = snapshot(manager)
    for empty in ([], (), iter([]), set()):
        assert manager.lookup(empty) == 0
    assert len(manager.prepare_load([]).block_ids) == 0
    manager.complete_load([])
    manager.touch([])
    manager.complete_store([])
    manager.complete_store([], success=False)
    out = manager.prepare_store([])
    assert out is not None and out.block_hashes_to_store == [] and out.block_hashes_evicted == []
    assert len(out.store_spec.block_ids) == 0 and out.store_spec.medium() == "CPU"
    check_unchanged(manager, before)


HUGE = 100_000


@pytest.mark.parametrize("name", list(FACTORIES))
def test_huge_batches(name: str) -> None:
    """100k hashes (production): lookups stop, stores are refused atomically, a late bad element is caught."""
    manager = build(name)
    before = snapshot(manager)
    # The reference's M5.1 dedup is quadratic (``not in to_store`` on a list): 100k
    # hashes take minutes there, so it gets a smaller huge batch.
    size = HUGE if name.startswith("production") else 3_000
    fresh = [i.to_bytes(32, "little") for i in range(size)]
    assert manager.lookup(fresh) == 0
    assert manager.lookup(READY[1:] + fresh) == 1
    assert manager.prepare_store(fresh) is None  # M5.4: 100k > capacity
    manager.complete_store(fresh, success=False)  # absent: ignored (M7)
    manager.complete_store(fresh)  # absent: ignored (M6)
    with pytest.raises(ContractViolation):
        manager.prepare_load(fresh)
    with pytest.raises(ContractViolation):
        manager.complete_load(fresh)
    for method in ("prepare_store", "touch", "complete_store", "prepare_load", "complete_load"):
        with pytest.raises(TypeError):
            getattr(manager, method)(fresh + [None])
    check_unchanged(manager, before)
    manager.touch(fresh)  # absent hashes are ignored (M4) — ARC's ghosts may learn (A3)
    assert snapshot(manager)[:3] == before[:3]


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_I8_long_and_prefix_hashes_in_lockstep(policy: str) -> None:
    """1 KiB hashes, hashes that are prefixes of one another: production = reference."""
    production = CPUOffloadingManager(CAPACITY, policy=policy, enable_events=True)
    reference = ReferenceManager(CAPACITY, policy=policy, enable_events=True)
    long = b"\xab" * 1024
    family = [long, long[:-1], long + b"\x00", long[:-1] + b"\xac", b"\xab" * 8, b"\xab"]
    for manager in (production, reference):
        out = manager.prepare_store(family[:4])
        assert out is not None and out.block_hashes_to_store == family[:4]
        manager.complete_store(family[:3])
        manager.complete_store(family[3:4], success=False)
        assert manager.lookup(family) == 3
        manager.prepare_load(family[:3])
        out = manager.prepare_store(family[3:4])
        assert out is not None
        manager.complete_store(family[3:4])
    assert sorted(production.blocks()) == sorted(reference.blocks())
    assert [(e.block_hashes, e.removed) for e in production.take_events()] == [
        (e.block_hashes, e.removed) for e in reference.take_events()
    ]
    production.check_invariants()


def test_bytes_subclass_hashes_are_plain_hashes() -> None:
    """M9: a ``bytes`` subclass is a hash; its identity is its content (I8)."""

    class Odd(bytes):
        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return 0

    for manager in (CPUOffloadingManager(CAPACITY), ReferenceManager(CAPACITY)):
        a, b = Odd(b"a" * 32), Odd(b"b" * 32)
        out = manager.prepare_store([a, b])
        assert out is not None and len(out.block_hashes_to_store) == 2
        manager.complete_store([b"a" * 32, b"b" * 32])
        assert manager.lookup([b"a" * 32, b"b" * 32]) == 2
        assert all(type(h) is bytes for h in manager.blocks())


def test_snapshot_sees_a_change() -> None:
    """Control: the snapshot is not blind (a real change is detected)."""
    for name in FACTORIES:
        manager = build(name)
        before = snapshot(manager)
        manager.touch([READY[1]])
        assert snapshot(manager) != before, name
