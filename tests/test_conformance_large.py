"""The scripted example above 256 blocks a call (``kvoffload.conformance.lockstep.large``),
run after every passing hypothesis run of a contract-interface manager."""

from __future__ import annotations

import pytest

import planted_bugs as pb
from kvoffload.conformance import check_manager
from kvoffload.conformance.lockstep.large import CAPACITY, run_large_example
from kvoffload.conformance.lockstep.machine_base import FactoryRef
from kvoffload.conformance.reports.result import ConformanceResult
from kvoffload.conformance.runner import conformance_settings, machine_for, run_machine
from kvoffload.impl import factories
from kvoffload.spec import ReferenceManager


def test_M5_a_size_compared_by_identity_is_caught_above_256_with_a_reproduction_that_runs() -> None:
    """``len(victims) is n`` holds only for CPython's shared ints (up to 256): the hypothesis
    run conforms, the large example's store of 270 fresh hashes evicts all 300 blocks."""
    result = check_manager(pb.manager_size_by_identity, policy="lru", max_examples=20,
                           source="planted_bugs:manager_size_by_identity")
    assert not result.ok and result.clause == "M5", result.report()
    assert "evicted 300 blocks, but M5.3 needs exactly 270" in result.message
    assert f"num_blocks={CAPACITY}" in result.reproduction
    with pytest.raises(AssertionError, match="M5"):
        exec(compile(result.reproduction, "<reproduction>", "exec"), {})


def test_M5_the_same_bug_below_257_is_not_seen_by_the_hypothesis_run_alone() -> None:
    """Why the example exists: the machine's own examples (caches of at most 32 blocks)
    pass this manager."""
    machine = machine_for("manager", FactoryRef.of(pb.manager_size_by_identity, None), "lru")
    result = ConformanceResult(target="t", kind="manager", policy="lru", strict=False, ok=True)
    run_machine(machine, conformance_settings(40, 40), 0, result, "", full_traceback=False)
    assert result.ok, result.message
    with pytest.raises(AssertionError, match="M5"):
        run_large_example(machine)


@pytest.mark.parametrize("policy", ["lru", "arc", "s3fifo", "sieve"])
def test_M5_the_production_managers_pass_the_large_example_judged_exactly(policy: str) -> None:
    machine = machine_for("manager", FactoryRef.of(getattr(factories, f"{policy}_manager"), None), policy)
    run_large_example(machine)  # raises ConformanceFailure at the first verdict
    assert {"M1", "M2", "M3", "M5", "M6"} <= machine.stats.clauses


def _small_only_manager(num_blocks: int, enable_events: bool = False) -> ReferenceManager:
    if num_blocks > 64:
        raise ValueError("this manager supports at most 64 blocks")
    return ReferenceManager(num_blocks, policy="lru", enable_events=enable_events)


def test_M5_a_factory_that_refuses_the_large_cache_conforms_and_says_what_was_skipped() -> None:
    result = check_manager(_small_only_manager, policy="lru", max_examples=10)
    assert result.ok, result.report()
    assert any(reason.startswith("sizes above 256") and "at most 64 blocks" in reason
               for reason in result.clauses_skipped), result.clauses_skipped


class _NewestFirstAbove64(ReferenceManager):
    """L3 above 64 victims a call: the newest eligible blocks instead of the oldest."""

    def __init__(self, num_blocks: int, enable_events: bool = False) -> None:
        super().__init__(num_blocks, policy="lru", enable_events=enable_events)
        exact = self.policy.evict

        def evict(n: int, protected: set[bytes]) -> object:
            if n <= 64:
                return exact(n, protected)
            eligible = [(h, b) for h, b in reversed(self.policy.order.items()) if b.ref_cnt == 0 and h not in protected]
            for h, _ in eligible[:n]:
                del self.policy.order[h]
            return eligible[:n] if len(eligible) >= n else None

        self.policy.evict = evict  # type: ignore[method-assign]


def test_L3_long_victim_lists_are_summed_up_in_the_message_and_kept_whole_in_the_check() -> None:
    """A wrong order in the large example (270 victims): the message says where the victims
    first differ and shows a few, not hundreds of names; the reproduction's check holds them all."""
    result = check_manager(_NewestFirstAbove64, policy="lru", max_examples=10)
    assert not result.ok and result.clause == "L3", result.report()
    assert "prepare_store evicted 270 blocks, LRU evicts 270; from victim 0 on the target's are [" in result.message
    assert len(result.message) < 400, result.message
    assert result.reproduction.count(", h") > 270  # the failing check names every expected victim
