"""What the vLLM-interface suite used not to generate (issue 14's gaps), each judged:
a request open across ``reset_cache`` (K7), key positions over two KV cache groups (K5),
and ``store_threshold`` admission (N2, ``--store-threshold``, in the lockstep suite and the
model checker). vLLM's own managers and ours conform; a bug planted in each place is
caught with its clause."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest

pytest.importorskip("vllm")

from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager, _RequestCacheAccess  # noqa: E402
from vllm.v1.kv_offload.cpu.policies.lru import LRUCachePolicy  # noqa: E402

from kvoffload.conformance import check_manager  # noqa: E402
from kvoffload.conformance.checking.exhaustive import run_exhaustive  # noqa: E402
from kvoffload.conformance.lockstep.machine_base import TargetSetupError  # noqa: E402
from kvoffload.impl.vllm import make_manager  # noqa: E402
from vllm_helpers import run_reproduction  # noqa: E402

BUDGET = {"max_examples": 40}
ADMISSION = {"store_threshold": 2, "max_tracker_size": 6}


class StaleRequestManager(CPUOffloadingManager):  # type: ignore[misc]
    """Applies what a request observed before ``reset_cache`` when it finishes after it
    (vLLM's ``on_request_finished`` without its generation check)."""

    def on_request_finished(self, req_context: Any) -> None:
        state = req_context.get_state(_RequestCacheAccess)
        if state is not None:
            state.cache_generation = self._cache_generation
        super().on_request_finished(req_context)


def stale_lru(num_blocks: int, enable_events: bool = False) -> StaleRequestManager:
    return StaleRequestManager(num_blocks, cache_policy="lru", enable_events=enable_events)


class GroupMajorLRU(LRUCachePolicy):  # type: ignore[misc]
    """Applies a finished request group by group, ignoring the keys' positions."""

    def on_request_finished(self, key_groups: Any, insertion_only_keys: Any, reused_keys: Any,
                            req_context: Any) -> None:
        self._update_recency(reversed([key for group in key_groups for key in group]))


def group_major_lru(num_blocks: int, enable_events: bool = False) -> CPUOffloadingManager:
    manager = CPUOffloadingManager(num_blocks, cache_policy="lru", enable_events=enable_events)
    manager._policy = GroupMajorLRU(num_blocks)
    return manager


def vllm_lru(num_blocks: int, enable_events: bool = False, **admission: int) -> CPUOffloadingManager:
    return CPUOffloadingManager(num_blocks, cache_policy="lru", enable_events=enable_events, **admission)


def vllm_arc(num_blocks: int, enable_events: bool = False, **admission: int) -> CPUOffloadingManager:
    return CPUOffloadingManager(num_blocks, cache_policy="arc", enable_events=enable_events, **admission)


def ours_lru(num_blocks: int, enable_events: bool = False, **admission: int) -> Any:
    return make_manager(num_blocks, "lru", enable_events, **admission)


def vllm_threshold_3(num_blocks: int, enable_events: bool = False, store_threshold: int = 1,
                     max_tracker_size: int = 64_000) -> CPUOffloadingManager:
    """Admits one offer later than it is told to."""
    return CPUOffloadingManager(num_blocks, cache_policy="lru", enable_events=enable_events,
                                store_threshold=store_threshold + 1, max_tracker_size=max_tracker_size)


def vllm_no_admission(num_blocks: int, enable_events: bool = False, store_threshold: int = 1,
                      max_tracker_size: int = 64_000) -> CPUOffloadingManager:
    """Takes the keyword and drops it: stores at the first offer."""
    return CPUOffloadingManager(num_blocks, cache_policy="lru", enable_events=enable_events)


def test_K7_request_finished_after_reset_applies_nothing_from_before_it() -> None:
    result = check_manager(stale_lru, policy="lru", shrink=False)
    clauses = tuple(c for c in result.clauses if c != "N9")  # 0.33's LRU: judged by N9 (its order) first
    assert not result.ok and clauses[0] == "L3" and "K7" in clauses, result.report()
    for line in ("m.reset_cache()", "m.finish_request()"):
        assert line in result.reproduction
    # others store while it is open: K7's flow, or interleaved_requests' (every target; N9's under 0.33)
    assert "held, m.request = m.request, None" in result.reproduction or "m.request = None" in result.reproduction
    assert isinstance(run_reproduction(result.reproduction), AssertionError)


def test_K5_positions_across_groups_ignored_is_caught() -> None:
    result = check_manager(group_major_lru, policy="lru", shrink=False)
    clauses = tuple(c for c in result.clauses if c != "N9")  # 0.33's LRU: judged by N9 (its order) first
    assert not result.ok and clauses[:2] == ("L3", "K5"), result.report()
    assert "m.set_positions({" in result.reproduction
    assert isinstance(run_reproduction(result.reproduction), AssertionError)


@pytest.mark.parametrize("factory, policy", [(vllm_lru, "lru"), (vllm_arc, "arc"), (ours_lru, "lru")])
def test_N2_vllm_and_our_managers_conform_with_admission_on(factory: Any, policy: str) -> None:
    result = check_manager(factory, policy=policy, **ADMISSION, **BUDGET)
    assert result.ok, result.report()
    assert {"N2", "K5", "K7"} <= set(result.clauses_exercised)


def vllm_tracker_at_threshold_1(num_blocks: int, enable_events: bool = False, store_threshold: int = 1,
                                max_tracker_size: int = 64_000) -> CPUOffloadingManager:
    """Keeps an offer tracker at store_threshold 1 too (vLLM builds one from 2 only)."""
    manager = CPUOffloadingManager(num_blocks, cache_policy="lru", enable_events=enable_events,
                                   store_threshold=store_threshold, max_tracker_size=max_tracker_size)
    if manager.counts is None:
        manager.counts = OrderedDict()
    return manager


def test_N2_a_tracker_at_threshold_one_is_caught() -> None:
    """An admission run also gives threshold 1 with its tracker size: admission is off then,
    so an offer longer than the tracker must still store every absent key (N2, M5.1)."""
    result = check_manager(vllm_tracker_at_threshold_1, policy="lru", shrink=False, **ADMISSION)
    assert not result.ok and "N2" in result.clauses[:2] and "M5" in result.clauses, result.report()
    assert "store_threshold 1 admits every offer" in result.message


@pytest.mark.parametrize("factory", [vllm_threshold_3, vllm_no_admission])
def test_N2_wrong_admission_is_caught(factory: Any) -> None:
    result = check_manager(factory, policy="lru", shrink=False, **ADMISSION)
    # N2 first, or after I8 when the key not stored shares a prefix with a present one (``judge.refine``)
    assert not result.ok and "N2" in result.clauses[:2] and result.clauses[0] in ("N2", "I8"), result.report()


class SkipMiscountingManager(CPUOffloadingManager):  # type: ignore[misc]
    """Counts one skipped store too many on every offer admission judges (vLLM's counter, off by one)."""

    def prepare_store(self, keys: Any, req_context: Any) -> Any:
        out = super().prepare_store(keys, req_context)
        if self.counts is not None:
            self.stores_skipped_in_current_batch += 1
        return out


def vllm_skip_miscounted(num_blocks: int, enable_events: bool = False, **admission: int) -> SkipMiscountingManager:
    return SkipMiscountingManager(num_blocks, cache_policy="lru", enable_events=enable_events, **admission)


def test_K9_stores_skipped_judged_with_admission_and_a_miscount_caught() -> None:
    good = check_manager(vllm_lru, policy="lru", **ADMISSION, **BUDGET)
    assert good.ok and "K9" in good.clauses_exercised, good.report()
    bad = check_manager(vllm_skip_miscounted, policy="lru", shrink=False, **ADMISSION)
    assert not bad.ok and bad.clause == "K9" and "stores_skipped" in bad.message, bad.report()
    assert isinstance(run_reproduction(bad.reproduction), AssertionError)  # the snippet fails as reported


def test_N2_factory_without_the_keyword_is_refused_clearly() -> None:
    with pytest.raises(TargetSetupError, match="store_threshold"):
        check_manager(stale_lru, policy="lru", store_threshold=2)


def test_N2_admission_on_a_contract_target_is_a_usage_error() -> None:
    with pytest.raises(ValueError, match="N2"):
        check_manager(stale_lru, policy="lru", store_threshold=2, interface="contract")


# -- N2 in the model checker -------------------------------------------------------------------------
class TrackerBugManager(CPUOffloadingManager):  # type: ignore[misc]
    """vLLM's manager with its offer tracker (``_record_accesses``) rewritten with one bug:
    ``newest_out`` pushes out the most recently offered key, ``no_refresh`` leaves a
    counted key where it was, ``unprotected`` lets an offer push out its own tracked keys."""

    bug = ""

    def _record_accesses(self, keys: Any) -> None:
        counts = self.counts
        mine = [key for key in keys if key in counts]
        for key in mine:
            counts[key] += 1
            if self.bug != "no_refresh":
                counts.move_to_end(key)
        others = len(counts) - (0 if self.bug == "unprotected" else len(set(mine)))
        for key in keys:
            if key in counts:
                continue
            if len(counts) >= self.max_tracker_size:
                if others == 0:
                    continue
                counts.popitem(last=self.bug == "newest_out")
                others -= 1
            counts[key] = 1


def _tracker_bug(bug: str) -> Any:
    def make(num_blocks: int, enable_events: bool = False, **admission: int) -> TrackerBugManager:
        manager = TrackerBugManager(num_blocks, cache_policy="lru", enable_events=enable_events, **admission)
        manager.bug = bug
        return manager

    make.__name__ = bug or "rewritten"
    return make


rewritten, newest_out, no_refresh, unprotected = map(_tracker_bug, ("", "newest_out", "no_refresh", "unprotected"))


def _checked(factory: Any, capacity: int, admission: tuple[int, int]) -> Any:
    name = factory.__name__
    return run_exhaustive(factory, policy="lru", capacity=capacity, interface="vllm", source=name,
                          imports=[f"from {__name__} import {name}"], distinguished=0, request_calls=0,
                          admission=admission)


@pytest.mark.parametrize(("factory", "capacity", "admission"),
                         [(vllm_lru, 1, (2, 2)), (vllm_lru, 2, (2, 1)), (vllm_lru, 1, (3, 2)), (vllm_lru, 2, (1, 1)),
                          (ours_lru, 1, (2, 2)), (ours_lru, 1, (3, 1)), (rewritten, 1, (2, 2))])
def test_N2_model_checker_proves_admission_of_vllm_and_our_managers(factory: Any, capacity: int,
                                                                   admission: tuple[int, int]) -> None:
    """Every reachable state of a manager built with ``store_threshold`` and ``max_tracker_size``
    (N2's tracker in the state; at threshold 1 admission is off; 3 is above the lowest, where a
    key offered twice is still not stored): vLLM's own, ours, and the tracker rewritten without a bug."""
    run = _checked(factory, capacity, admission)
    assert run.ok and run.result.complete, run.report()
    plain = run_exhaustive(factory, policy="lru", capacity=capacity, interface="vllm", distinguished=0,
                           request_calls=0)
    assert plain.ok and plain.result.complete, plain.report()
    if admission[0] >= 2:  # the tracker is state
        assert run.result.states > plain.result.states, (run.summary(), plain.summary())
    assert f"store_threshold={admission[0]}, max_tracker_size={admission[1]} (admission" in run.alphabet()


@pytest.mark.parametrize(("factory", "admission"), [(vllm_threshold_3, (2, 2)), (vllm_no_admission, (2, 2)),
                                                    (newest_out, (2, 2)), (no_refresh, (2, 2)), (unprotected, (2, 1)),
                                                    (vllm_tracker_at_threshold_1, (1, 1))])
def test_N2_model_checker_refutes_wrong_admission_with_a_shortest_reproduction(factory: Any,
                                                                              admission: tuple[int, int]) -> None:
    """Admission one offer late, off, or on at threshold 1, and three tracker bugs: refuted
    naming N2, by a reproduction that builds the manager with those keywords and fails as
    printed."""
    run = _checked(factory, 2, admission)
    failure = run.result.failure
    assert failure is not None and "N2" in failure.clauses[:2], run.report()
    assert len(run.result.failing_path) <= 4, run.report()
    assert f"store_threshold={admission[0]}, max_tracker_size={admission[1]})" in failure.reproduction
    assert isinstance(run_reproduction(failure.reproduction), AssertionError), failure.reproduction
