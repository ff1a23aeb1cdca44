"""``KeyIndexedManager`` in lockstep with the reference model (M1, M5–M7, M9).

The per-key sets (``ready``, ``pending``) must say, for every key, exactly what the
reference model's blocks say (present and ready / pending / absent) after every call,
refused and failing calls included (bad input, M2/M3 violations, refused stores), and
every answer must be the reference model's.
"""

from __future__ import annotations

from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kvoffload.impl import CPUOffloadingManager
from kvoffload.impl.keyindex import KeyIndexedManager
from kvoffload.spec import ContractViolation, ReferenceManager

POOL = [bytes([i]) * 32 + bytes(4) for i in range(10)]
keys = st.lists(st.sampled_from(POOL), max_size=6)
CAPACITY = 4


def outcome(call: Any) -> tuple[str, Any]:
    try:
        value = call()
    except ContractViolation as error:
        return "violation", error.clause
    except (TypeError, ValueError) as error:
        return type(error).__name__, None
    if value is not None and hasattr(value, "block_hashes_to_store"):
        return "ok", (list(value.block_hashes_to_store), list(value.block_hashes_evicted))
    if value is not None and hasattr(value, "block_ids"):
        return "ok", len(value.block_ids)
    return "ok", value


def reference_states(reference: ReferenceManager) -> dict[bytes, bool]:
    """Every present key: ``True`` ready, ``False`` pending."""
    return {key: block.ref_cnt >= 0 for key, block in reference.blocks().items()}


class KeyIndexMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.policy = "lru"
        self.ours = KeyIndexedManager(lambda: CPUOffloadingManager(CAPACITY, policy=self.policy))
        self.ref = ReferenceManager(CAPACITY, policy=self.policy)

    def both(self, method: str, *args: Any) -> Any:
        got = outcome(lambda: getattr(self.ours, method)(*args))
        want = outcome(lambda: getattr(self.ref, method)(*args))
        assert got == want, (method, args, got, want)
        return got

    @rule(policy=st.sampled_from(["lru", "arc"]))
    def reset(self, policy: str) -> None:
        self.policy = policy
        self.ours.reset()
        self.ref = ReferenceManager(CAPACITY, policy=policy)

    @rule(batch=keys)
    def prepare_store(self, batch: list[bytes]) -> None:
        self.both("prepare_store", batch)

    @rule(batch=keys, success=st.booleans(), as_set=st.booleans())
    def complete_store(self, batch: list[bytes], success: bool, as_set: bool) -> None:
        self.both("complete_store", set(batch) if as_set else batch, success)

    @rule(batch=keys)
    def prepare_load(self, batch: list[bytes]) -> None:
        self.both("prepare_load", batch)  # often a M2 violation: must change nothing

    @rule(batch=keys)
    def complete_load(self, batch: list[bytes]) -> None:
        self.both("complete_load", batch)  # often a M3 violation: must change nothing

    @rule(batch=keys)
    def touch(self, batch: list[bytes]) -> None:
        self.both("touch", batch)

    @rule(batch=keys, bad=st.sampled_from([bytearray(b"x" * 36), 7, "text", None]),
          method=st.sampled_from(["prepare_store", "complete_store"]))
    def bad_input(self, batch: list[bytes], bad: Any, method: str) -> None:
        """M9: a bad element anywhere: an error, nothing changes (the invariant checks)."""
        got = outcome(lambda: getattr(self.ours, method)([*batch, bad]))
        assert got[0] == "TypeError", got

    @rule(batch=keys)
    def lookup(self, batch: list[bytes]) -> None:
        assert self.ours.lookup(batch) == self.ref.lookup(batch) == self.ours.core.lookup(batch)

    @invariant()
    def sets_match_the_reference(self) -> None:
        want = reference_states(self.ref)
        for key in POOL:
            assert self.ours.state(key) == want.get(key), key
        assert not self.ours.ready & self.ours.pending


TestKeyIndex = KeyIndexMachine.TestCase
TestKeyIndex.settings = settings(max_examples=100, stateful_step_count=30, deadline=None)


def test_M1_index_answers_per_key_after_store_complete_and_failure() -> None:
    ours = KeyIndexedManager(lambda: CPUOffloadingManager(2))
    a, b, c = POOL[:3]
    out = ours.prepare_store([a, b])
    assert out is not None and ours.state(a) is False and ours.pending == {a, b}
    ours.complete_store({a}, success=True)
    ours.complete_store([b], success=False)  # M7: b leaves
    assert (ours.state(a), ours.state(b)) == (True, None)
    out = ours.prepare_store([b, c])  # one free block: evicts a
    assert out is not None and out.block_hashes_evicted == [a]
    assert (ours.state(a), ours.state(b), ours.state(c)) == (None, False, False)


def test_M9_refused_calls_leave_the_index_alone() -> None:
    ours = KeyIndexedManager(lambda: CPUOffloadingManager(1))
    a, b = POOL[:2]
    ours.prepare_store([a])
    assert ours.prepare_store([b]) is None  # M5.4: a is pending, nothing to evict
    for bad in ([a, bytearray(b"z")], "abc", 5):
        outcome(lambda: ours.complete_store(bad))  # type: ignore[arg-type]
    assert ours.pending == {a} and ours.ready == set()
    ours.complete_store([a])
    assert ours.ready == {a} and ours.pending == set()
