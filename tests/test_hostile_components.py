"""Hostile input to the backends (B2, B3), the policies (P2–P5) and the copy handlers (H1).

Production and reference parts alike: malformed arguments raise only what the contract
documents (``TypeError``, ``ValueError``, ``ContractViolation``), nothing crashes, and
every observable is unchanged afterwards (I7): the free count and a probe of the free
ids for a backend; the full order, ghost lists and ``p`` for a policy; every byte of the
GPU and host buffers, and the jobs reported, for a handler.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvoffload.impl import ARCCachePolicy, CPUBackend, LRUCachePolicy
from kvoffload.spec import (
    BlockStatus,
    ContractViolation,
    CPULoadStoreSpec,
    GPULoadStoreSpec,
    LoadStoreSpec,
    ReferenceARCPolicy,
    ReferenceCPUBackend,
    ReferenceLRUPolicy,
)

CAPACITY = 4
FAST = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)

# -- backends ---------------------------------------------------------------------------

BACKENDS: dict[str, Callable[[int], Any]] = {"production": CPUBackend, "reference": ReferenceCPUBackend}


def backend_snapshot(backend: Any, held: list[BlockStatus]) -> tuple[Any, ...]:
    """Free count, the held blocks, and a probe: allocate every free block, then give them back."""
    free = backend.get_num_free_blocks()
    probe = backend.allocate_blocks([b"p"] * free)
    ids = sorted(b.block_id for b in probe)
    for block in probe:
        backend.free(block)
    assert backend.get_num_free_blocks() == free
    return free, [(b.block_id, b.ref_cnt) for b in held], ids


@pytest.mark.parametrize("name", list(BACKENDS))
@FAST
@given(
    hostile=st.sampled_from(
        ["over", "double", "foreign_id", "foreign_neg", "foreign_huge", "other_backend", "copy", "none", "int",
         "dict", "alloc_none", "alloc_int", "alloc_object"]
    )
)
def test_B2_B3_hostile_backend_calls(name: str, hostile: str) -> None:
    backend = BACKENDS[name](CAPACITY)
    held = backend.allocate_blocks([b"a" * 32, b"b" * 32])
    gone = backend.allocate_blocks([b"c" * 32])[0]
    backend.free(gone)
    other = BACKENDS[name](CAPACITY).allocate_blocks([b"z"])[0]
    before = backend_snapshot(backend, held)
    calls: dict[str, tuple[Callable[[], Any], tuple[type[Exception], ...]]] = {
        "over": (lambda: backend.allocate_blocks([b"x"] * (CAPACITY + 1)), (ContractViolation,)),
        "double": (lambda: backend.free(gone), (ContractViolation,)),
        "foreign_id": (lambda: backend.free(BlockStatus(held[0].block_id)), (ContractViolation,)),
        "foreign_neg": (lambda: backend.free(BlockStatus(-1)), (ContractViolation,)),
        "foreign_huge": (lambda: backend.free(BlockStatus(2**62)), (ContractViolation,)),
        "other_backend": (lambda: backend.free(other), (ContractViolation,)),
        "copy": (lambda: backend.free(BlockStatus.from_buffer_copy(held[0])), (ContractViolation,)),
        "none": (lambda: backend.free(None), (TypeError,)),
        "int": (lambda: backend.free(held[0].block_id), (TypeError,)),
        "dict": (lambda: backend.free({"block_id": 0}), (TypeError,)),
        "alloc_none": (lambda: backend.allocate_blocks(None), (TypeError,)),
        "alloc_int": (lambda: backend.allocate_blocks(3), (TypeError,)),
        "alloc_object": (lambda: backend.allocate_blocks(object()), (TypeError,)),
    }
    call, expected = calls[hostile]
    with pytest.raises(expected) as caught:
        call()
    if isinstance(caught.value, ContractViolation):
        assert caught.value.clause in ("B2", "B3")
    assert backend_snapshot(backend, held) == before
    backend.check_invariants()


@pytest.mark.parametrize("name", list(BACKENDS))
def test_B2_empty_allocation_and_spec_of_nothing(name: str) -> None:
    backend = BACKENDS[name](CAPACITY)
    assert backend.allocate_blocks([]) == []
    spec = backend.get_load_store_spec([], [])
    assert spec.medium() == "CPU" and len(spec.block_ids) == 0
    assert backend.get_num_free_blocks() == CAPACITY


# -- policies ---------------------------------------------------------------------------

POLICIES: dict[str, Callable[[int], Any]] = {
    "production-lru": LRUCachePolicy,
    "production-arc": ARCCachePolicy,
    "reference-lru": ReferenceLRUPolicy,
    "reference-arc": ReferenceARCPolicy,
}
H = [bytes([i]) * 32 for i in range(6)]


def policy_snapshot(policy: Any) -> tuple[Any, ...]:
    parts = []
    for attribute in ("order", "_order", "t1", "t2", "b1", "b2"):
        entries = getattr(policy, attribute, None)
        if entries is not None:
            parts.append([(h, id(b), getattr(b, "ref_cnt", None)) for h, b in entries.items()])
    return tuple(parts), getattr(policy, "p", None), [(h, b.ref_cnt) for h, b in policy.items()]


def built_policy(name: str) -> tuple[Any, list[BlockStatus]]:
    policy = POLICIES[name](CAPACITY)
    blocks = [BlockStatus(i) for i in range(4)]
    for block_hash, block in zip(H, blocks):
        policy.insert(block_hash, block)
    for block in blocks[:3]:
        block.ref_cnt = 0
    blocks[1].ref_cnt = 2  # loaded
    policy.touch([H[0]])
    assert policy.evict(1, set()) is not None  # a ghost for ARC
    policy.insert(H[4], BlockStatus(4))
    return policy, blocks


BAD_HASH_ARGS: list[Any] = [None, 5, "abc", b"x" * 32, bytearray(b"x"), [None], [H[0], 3], [H[1], "s"],
                            [bytearray(b"x")], [memoryview(b"x")], [[1, 2]], [b""]]


@pytest.mark.parametrize("name", list(POLICIES))
@FAST
@given(
    hostile=st.sampled_from(
        ["insert_present", "remove_absent", "remove_ghost", "evict_neg", "evict_str", "evict_none", "evict_float",
         "evict_bool", "evict_too_many", "evict_all_protected", "touch_bad"]
    ),
    bad=st.sampled_from(BAD_HASH_ARGS),
)
def test_P2_P5_hostile_policy_calls(name: str, hostile: str, bad: Any) -> None:
    policy, blocks = built_policy(name)
    before = policy_snapshot(policy)
    present = [h for h, _ in policy.items()]
    calls: dict[str, tuple[Callable[[], Any], tuple[type[Exception], ...] | None]] = {
        "insert_present": (lambda: policy.insert(present[0], BlockStatus(9)), (ContractViolation,)),
        "remove_absent": (lambda: policy.remove(H[5]), (ContractViolation,)),
        "remove_ghost": (lambda: policy.remove(H[3] if H[3] not in present else H[5]), (ContractViolation,)),
        "evict_neg": (lambda: policy.evict(-1, set()), (ValueError,)),
        "evict_str": (lambda: policy.evict("1", set()), (ValueError, TypeError)),
        "evict_none": (lambda: policy.evict(None, set()), (ValueError, TypeError)),
        "evict_float": (lambda: policy.evict(1.0, set()), (ValueError, TypeError)),
        "evict_bool": (lambda: policy.evict(True, set()), (ValueError, TypeError)),
        "evict_too_many": (lambda: policy.evict(CAPACITY + 1, set()), None),
        "evict_all_protected": (lambda: policy.evict(1, set(present)), None),
        "touch_bad": (lambda: policy.touch(bad), (TypeError, ValueError)),
    }
    call, expected = calls[hostile]
    if expected is None:
        assert call() is None  # P5: refused, nothing changed
    else:
        with pytest.raises(expected) as caught:
            call()
        if isinstance(caught.value, ContractViolation):
            assert caught.value.clause in ("P2", "P3")
    assert policy_snapshot(policy) == before
    assert all(b.ref_cnt == r for b, r in zip(blocks, [0, 2, 0, -1]))  # P6


@pytest.mark.parametrize("name", list(POLICIES))
def test_P5_evict_zero_and_huge_touch(name: str) -> None:
    policy, _ = built_policy(name)
    before = policy_snapshot(policy)
    assert policy.evict(0, set()) == []
    policy.touch([i.to_bytes(32, "little") for i in range(1000, 101_000)])  # absent: ignored
    policy.touch([])
    assert policy_snapshot(policy) == before
    assert policy.get(b"\x00" * 1024) is None


# -- copy handlers ----------------------------------------------------------------------

torch = pytest.importorskip("torch")
from kvoffload.impl.copy import build_cpu_handlers  # noqa: E402

GPU_BLOCKS, CPU_BLOCKS, FACTOR = 8, 4, 2


class OddSpec(LoadStoreSpec):
    """A spec of a medium no handler serves, or with arbitrary ``block_ids``."""

    def __init__(self, block_ids: Any, medium: str = "CPU") -> None:
        self.block_ids = block_ids
        self._medium = medium

    @staticmethod
    def medium() -> str:  # overridden per instance below
        return "CPU"


def odd(block_ids: Any, medium: str) -> Any:
    spec = OddSpec(block_ids)
    spec.medium = lambda: medium  # type: ignore[method-assign]
    return spec


def handlers() -> tuple[Any, Any, dict[str, Any]]:
    generator = torch.Generator().manual_seed(0)
    kv = {f"l{i}": torch.randn((2, GPU_BLOCKS, 4, 2, 8), generator=generator) for i in range(2)}
    store, load = build_cpu_handlers(kv, "kv_blocks", 4, FACTOR, CPU_BLOCKS)
    assert store.transfer_async(1, (GPULoadStoreSpec(list(range(2 * FACTOR))), CPULoadStoreSpec([0, 1])))
    store.wait({1})
    assert store.get_finished() == [(1, True)]
    # One job left in flight per direction: it must still be reported once, after the hostile call.
    assert store.transfer_async(7, (GPULoadStoreSpec([4, 5]), CPULoadStoreSpec([2])))
    assert load.transfer_async(8, (CPULoadStoreSpec([0]), GPULoadStoreSpec([6, 7])))
    return store, load, kv


def state(kv: dict[str, Any], handler: Any) -> list[bytes]:
    planes = [t.clone().numpy().tobytes() for t in kv.values()]
    host = getattr(getattr(handler, "buffers", None), "host_planes", None)
    if host is not None:
        planes += [p.clone().numpy().tobytes() for p in (host if isinstance(host, (list, tuple)) else [host])]
    return planes


HOSTILE_JOBS: dict[str, tuple[Any, Any, Any, type[Exception] | tuple[type[Exception], ...]]] = {
    # name: (job_id, store-direction spec, load-direction spec, expected)
    "job_none": (None, None, None, TypeError),
    "job_str": ("3", None, None, TypeError),
    "job_float": (3.0, None, None, TypeError),
    "job_bool": (True, None, None, TypeError),
    "job_in_flight": ("inflight", None, None, ContractViolation),
    "spec_none": (3, "none", "none", TypeError),
    "spec_triple": (3, "triple", "triple", TypeError),
    "wrong_medium": (3, "swap", "swap", ContractViolation),
    "unknown_medium": (3, "disk", "disk", ContractViolation),
    "negative_id": (3, "negative", "negative", ContractViolation),
    "id_out_of_range": (3, "range", "range", ContractViolation),
    "huge_id": (3, "huge", "huge", ContractViolation),
    "float_ids": (3, "float", "float", TypeError),
    "nested_ids": (3, "nested", "nested", TypeError),
    "no_ids": (3, "noids", "noids", TypeError),
    "length_mismatch": (3, "length", "length", ContractViolation),
    "duplicate_destination": (3, "dupdst", "dupdst", ContractViolation),
}


def hostile_spec(kind: str, direction: str) -> Any:
    gpu, cpu = [0, 1], [3]
    if direction == "load":
        if kind == "length":
            return (CPULoadStoreSpec([0]), GPULoadStoreSpec([0, 1, 2]))
        if kind == "dupdst":
            return (CPULoadStoreSpec([0, 1]), GPULoadStoreSpec([2, 2, 3, 4]))
    elif kind == "length":
        return (GPULoadStoreSpec([0, 1, 2]), CPULoadStoreSpec([3]))
    elif kind == "dupdst":
        return (GPULoadStoreSpec([0, 1, 2, 3]), CPULoadStoreSpec([3, 3]))
    good: tuple[Any, Any] = (GPULoadStoreSpec(gpu), CPULoadStoreSpec(cpu))
    if direction == "load":
        good = (CPULoadStoreSpec(cpu), GPULoadStoreSpec(gpu))
    src, dst = good
    table: dict[str, Any] = {
        "none": None,
        "triple": (src, dst, dst),
        "swap": (dst, src),
        "disk": (odd(src.block_ids, "DISK"), dst),
        "negative": (src, type(dst)(-(dst.block_ids + 1))),
        "range": (src, type(dst)(dst.block_ids + 1000)),
        "huge": (type(src)(src.block_ids + 2**62), dst),
        "float": (src, odd(dst.block_ids.astype(np.float64), dst.medium())),
        "nested": (src, odd([[1, 2]] * len(dst.block_ids), dst.medium())),
        "noids": (src, odd(None, dst.medium())),
    }
    return table.get(kind, good)


@pytest.mark.parametrize("direction", ["store", "load"])
@pytest.mark.parametrize("hostile", list(HOSTILE_JOBS))
def test_H1_hostile_jobs_are_refused_before_any_byte_moves(direction: str, hostile: str) -> None:
    store, load, kv = handlers()
    handler = store if direction == "store" else load
    in_flight = 7 if direction == "store" else 8
    before = state(kv, handler)
    job, store_spec, load_spec, expected = HOSTILE_JOBS[hostile]
    job_id = in_flight if job == "inflight" else job
    spec_kind = store_spec if direction == "store" else load_spec
    spec = hostile_spec(spec_kind or "good", direction)
    with pytest.raises(expected) as caught:
        handler.transfer_async(job_id, spec)
    if isinstance(caught.value, ContractViolation):
        assert caught.value.clause == "H1"
    # The job in flight is reported exactly once; the refused one never.
    store.wait({7})
    load.wait({8})
    finished = handler.get_finished()
    assert finished == [(in_flight, True)], finished
    assert handler.get_finished() == []
    # Bytes: the CPU engine copies at submission, so the accepted jobs had already moved
    # theirs when ``before`` was taken; the refused job moved none (GPU and host planes).
    assert state(kv, handler) == before


def test_H1_wait_and_get_finished_with_unknown_ids() -> None:
    store, load, _ = handlers()
    store.wait({12345, -1})  # not in flight: ignored
    load.wait(set())
    store.wait({7})
    assert store.get_finished() == [(7, True)]
    load.wait({8})
    assert load.get_finished() == [(8, True)]
