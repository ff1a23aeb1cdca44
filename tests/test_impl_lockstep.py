"""The production manager in lockstep with the reference model (M0–M10, I1–I8).

A hypothesis state machine drives ``CPUOffloadingManager`` and ``ReferenceManager`` with
the same calls, both policies, events on, normal and colliding fingerprints, hashes of
mixed lengths that share prefixes, and compares every answer, output, error and event
(block ids aside: the live ids are checked to be distinct and in range instead).
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from kvoffload.impl import CPUOffloadingManager
from kvoffload.spec import ContractViolation, ReferenceManager

# Hashes of lengths 8/16/32/36: some share an 8-byte prefix, and each 8-byte hash is a
# prefix of a longer one (I8).
_PREFIXES = [bytes([i]) * 8 for i in range(3)]
POOL: list[bytes] = []
for _i, _prefix in enumerate(_PREFIXES):
    POOL.append(_prefix)
    POOL.append(_prefix + bytes([_i + 10]) * 8)
    POOL.append(_prefix + bytes([_i + 20]) * 24)
    POOL.append(_prefix + bytes([_i + 20]) * 24 + b"\x00\x00\x00\x01")
    POOL.append(_prefix + bytes([_i + 30]) * 28)
POOL.append(b"\x00" * 8 + b"\x00" * 8)  # a zero-padded look-alike of an 8-byte hash
POOL.append(b"\x00" * 9)

FINGERPRINTS = ["default", "constant", "low_bits:2"]

batches = st.lists(st.sampled_from(POOL), max_size=8)
distinct_batches = st.lists(st.sampled_from(POOL), max_size=8, unique=True)


def outcome(call: Any) -> tuple[str, Any]:
    try:
        return "ok", call()
    except ContractViolation as error:
        return "violation", error.clause
    except (TypeError, ValueError) as error:
        return type(error).__name__, None


def normalise(value: Any) -> Any:
    """Drop block ids from results: compare everything else."""
    if value is None or isinstance(value, (int, str)):
        return value
    if hasattr(value, "block_hashes_to_store"):
        return (list(value.block_hashes_to_store), list(value.block_hashes_evicted), len(value.store_spec))
    if hasattr(value, "block_ids"):
        return ("spec", value.medium(), len(value))
    return value


class Lockstep(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.impl: CPUOffloadingManager
        self.ref: ReferenceManager
        self.loads: list[list[bytes]] = []

    @initialize(
        capacity=st.integers(1, 6),
        policy=st.sampled_from(["lru", "arc"]),
        fingerprint=st.sampled_from(FINGERPRINTS),
        direct=st.booleans(),
    )
    def setup(self, capacity: int, policy: str, fingerprint: str, direct: bool) -> None:
        self.impl = CPUOffloadingManager(
            num_blocks=capacity, policy=policy, enable_events=True, fingerprint=fingerprint
        )
        # Both front ends: the compiled reader of the list, and the Python-packed path.
        self.impl.direct = direct and CPUOffloadingManager.direct
        self.ref = ReferenceManager(capacity, policy=policy, enable_events=True)

    def both(self, method: str, hashes: list[bytes], *args: Any) -> Any:
        # M0: each side gets a one-shot iterable.
        got = outcome(lambda: getattr(self.impl, method)(iter(list(hashes)), *args))
        want = outcome(lambda: getattr(self.ref, method)((h for h in hashes), *args))
        assert (got[0], normalise(got[1])) == (want[0], normalise(want[1])), (method, hashes)
        if got[0] == "ok" and method == "prepare_load":
            self.loads.append(hashes)
        return got

    @rule(hashes=batches)
    def lookup(self, hashes: list[bytes]) -> None:
        self.both("lookup", hashes)

    @rule(hashes=batches)
    def touch(self, hashes: list[bytes]) -> None:
        self.both("touch", hashes)

    @rule(hashes=batches)
    def prepare_store(self, hashes: list[bytes]) -> None:
        self.both("prepare_store", hashes)

    @rule(hashes=distinct_batches, success=st.booleans())
    def complete_store(self, hashes: list[bytes], success: bool) -> None:
        self.both("complete_store", hashes, success)

    @rule(hashes=batches)
    def prepare_load(self, hashes: list[bytes]) -> None:
        # Mostly loads of ready hashes (C1); sometimes anything (strict: M2 violations).
        self.both("prepare_load", hashes)

    @rule(data=st.data())
    def prepare_load_hits(self, data: st.DataObject) -> None:
        ready = [h for h, b in self.ref.blocks().items() if b.ref_cnt >= 0]
        if ready:
            self.both("prepare_load", data.draw(st.lists(st.sampled_from(ready), max_size=6)))

    @rule(data=st.data())
    def complete_load(self, data: st.DataObject) -> None:
        if self.loads and data.draw(st.booleans()):
            hashes = self.loads.pop(data.draw(st.integers(0, len(self.loads) - 1)))
        else:
            hashes = data.draw(batches)  # strict: M3 violations (nothing changes)
        self.both("complete_load", hashes)

    @rule(data=st.data())
    def complete_pending(self, data: st.DataObject) -> None:
        pending = [h for h, b in self.ref.blocks().items() if b.ref_cnt == -1]
        if pending:
            chosen = data.draw(st.lists(st.sampled_from(pending), unique=True, min_size=1))
            self.both("complete_store", chosen, data.draw(st.booleans()))

    @rule(bad=st.sampled_from([[b"x", bytearray(b"y")], [b"x", "s"], [b"x", 3], [b""], b"abc", 5]))
    def bad_call(self, bad: Any) -> None:
        for method in ("lookup", "touch", "prepare_store", "prepare_load", "complete_load", "complete_store"):
            got = outcome(lambda: getattr(self.impl, method)(bad))
            want = outcome(lambda: getattr(self.ref, method)(bad))
            assert got == want, (method, bad)

    @invariant()
    def same_state(self) -> None:
        if not hasattr(self, "impl"):
            return
        got_events = [(e.block_hashes, e.removed, e.block_size, e.medium) for e in self.impl.take_events()]
        want_events = [(e.block_hashes, e.removed, e.block_size, e.medium) for e in self.ref.take_events()]
        assert got_events == want_events
        impl_blocks, ref_blocks = self.impl.blocks(), self.ref.blocks()
        assert {h: b.ref_cnt for h, b in impl_blocks.items()} == {h: b.ref_cnt for h, b in ref_blocks.items()}
        ids = [b.block_id for b in impl_blocks.values()]
        assert len(set(ids)) == len(ids) and all(0 <= i < self.impl.num_blocks for i in ids)  # I4, B4
        assert self.impl.get_num_free_blocks() == self.ref.backend.get_num_free_blocks()
        if self.impl.policy == "arc":
            assert self.impl.arc_target == self.ref.policy.p  # type: ignore[attr-defined]
        self.impl.check_invariants()


Lockstep.TestCase.settings = settings(max_examples=60, stateful_step_count=40)
test_I8_lockstep_with_reference = Lockstep.TestCase


def test_M0_islice_and_generator_read_once() -> None:
    hashes = [bytes([i]) * 32 for i in range(6)]
    impl = CPUOffloadingManager(num_blocks=4)
    out = impl.prepare_store(itertools.islice(iter(hashes), 3))
    assert out is not None and out.block_hashes_to_store == hashes[:3]
    impl.complete_store(h for h in hashes[:3])
    assert impl.lookup(itertools.islice(hashes, 6)) == 3


@pytest.mark.parametrize("policy", ["lru", "arc"])
@pytest.mark.parametrize("fingerprint", FINGERPRINTS)
def test_I8_prefixes_and_collisions_stay_distinct(policy: str, fingerprint: str) -> None:
    impl = CPUOffloadingManager(num_blocks=len(POOL), policy=policy, fingerprint=fingerprint)
    out = impl.prepare_store(POOL)
    assert out is not None and out.block_hashes_to_store == POOL
    impl.complete_store(POOL[::2])
    for i, h in enumerate(POOL):
        assert impl.lookup([h]) == (1 if i % 2 == 0 else 0)
    assert len(set(out.store_spec.block_ids.tolist())) == len(POOL)  # type: ignore[attr-defined]
    impl.check_invariants()
