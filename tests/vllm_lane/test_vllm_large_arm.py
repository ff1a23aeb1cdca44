"""Issue 14's last generation gaps, each judged at default settings: sizes above 256 in
one call or request (the large arm: CPython shares int objects only up to 256, so a
size compared by identity, or a bound at a byte, differs only there), admission at
thresholds other than the one given (N2), and a request finished twice (a caller
breach, K5/K3: strict mode only). vLLM's own managers conform; a bug planted in each
place is caught with its clause."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

pytest.importorskip("vllm")

from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager, _RequestCacheAccess  # noqa: E402
from vllm.v1.kv_offload.cpu.policies.lru import LRUCachePolicy  # noqa: E402

from kvoffload.conformance import check_manager  # noqa: E402
from kvoffload.conformance.lockstep.vllm import as_contract_manager  # noqa: E402
from kvoffload.conformance.lockstep.vllm import machine as vllm_machine  # noqa: E402
from outside_manager import outside_lru  # noqa: E402

LARGE = 256  # the last int CPython shares

#: the planted policies override vLLM 0.32's LRU internals; on 0.33's LRU (insert with a
#: request context) the plants are not caught: not investigated yet, so skipped there
ON_032_POLICY = pytest.mark.skipif("req_context" in inspect.signature(LRUCachePolicy.insert).parameters,
                                   reason="bug planted in vLLM 0.32's LRUCachePolicy internals (0.33: not investigated)")


class _ByteBoundLRU(LRUCachePolicy):  # type: ignore[misc]
    """Refuses to evict more than 256 blocks at once (as ``len(selected) is not n`` does)."""

    def evict(self, n: int, protected: Any) -> Any:
        if n > LARGE:
            return None
        return super().evict(n, protected)


class _ByteBoundGroupsLRU(LRUCachePolicy):  # type: ignore[misc]
    """Applies a finished request's keys unsorted once it has more than 256 of them (as
    ``len(positions) is len(keys)`` in ``order_request_keys`` does)."""

    def on_request_finished(self, key_groups: Any, insertion_only_keys: Any, reused_keys: Any,
                            req_context: Any) -> None:
        keys = [key for group in key_groups for key in group]
        if len(keys) <= LARGE:
            super().on_request_finished(key_groups, insertion_only_keys, reused_keys, req_context)
            return
        self._update_recency(reversed(keys))


def _with_policy(policy_class: Any) -> Any:
    def factory(num_blocks: int, enable_events: bool = False) -> CPUOffloadingManager:
        manager = CPUOffloadingManager(num_blocks, cache_policy="lru", enable_events=enable_events)
        manager._policy = policy_class(cache_capacity=num_blocks)
        return manager

    return factory


@pytest.fixture
def large_arm_always(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every example takes the large arm. At default settings about one example in
    ``LARGE_ONE_IN`` does, so whether a given run meets these bugs depends on hypothesis'
    draws, which change with the modules loaded before it (its constant pool); the mutation
    runs measure the default rate, these tests that the arm, once taken, catches them."""
    monkeypatch.setattr(vllm_machine, "LARGE_ONE_IN", 1)


@ON_032_POLICY
def test_M5_eviction_of_more_than_256_blocks_refused_is_caught(large_arm_always: None) -> None:
    result = check_manager(_with_policy(_ByteBoundLRU), policy="lru", shrink=False)
    assert not result.ok and result.clause in ("M5", "I6", "L3"), result.report()
    assert "m.request = m.context()" in result.reproduction


@ON_032_POLICY
def test_K5_request_of_more_than_256_keys_left_unsorted_is_caught(large_arm_always: None) -> None:
    result = check_manager(_with_policy(_ByteBoundGroupsLRU), policy="lru", shrink=False)
    assert not result.ok and result.clauses[:2] == ("L3", "K5"), result.report()
    assert "m.set_positions(" in result.reproduction


class _AdmissionAtTwoOnly(CPUOffloadingManager):  # type: ignore[misc]
    """Admission on only for ``store_threshold == 2`` (as ``>= 2`` turned into ``== 2``)."""

    def __init__(self, num_chunks: int, *args: Any, store_threshold: int = 1, **kwargs: Any) -> None:
        super().__init__(num_chunks, *args, store_threshold=store_threshold, **kwargs)
        if store_threshold != 2:
            self.counts = None


def test_N2_admission_off_above_threshold_two_is_caught() -> None:
    def factory(num_blocks: int, enable_events: bool = False, **admission: int) -> CPUOffloadingManager:
        return _AdmissionAtTwoOnly(num_blocks, cache_policy="lru", enable_events=enable_events, **admission)

    result = check_manager(factory, policy="lru", shrink=False, store_threshold=2, max_tracker_size=6)
    assert not result.ok and "N2" in result.clauses, result.report()


class _DedupingManager(CPUOffloadingManager):  # type: ignore[misc]
    """vLLM's manager with its two strict-mode manager findings worked around, so that strict
    mode gets past them to the breaches judged here (docs/vllm-findings.md, findings 1 and 4): a key listed
    twice in one ``prepare_store`` is stored twice
    (test_K3_vllm_manager_breaks_C5_duplicates_finding), and a ``prepare_load`` naming an
    absent key leaves the keys before it pinned
    (test_M9_vllm_prepare_load_of_an_absent_key_leaves_earlier_keys_pinned_finding)."""

    def prepare_store(self, keys: Any, req_context: Any) -> Any:
        return super().prepare_store(list(dict.fromkeys(keys)), req_context)

    def prepare_load(self, keys: Any, req_context: Any) -> Any:
        keys = list(keys)
        for key in keys:  # refuse before vLLM pins anything (M9: nothing changes)
            chunk = self._policy.get(key)
            assert chunk is not None and chunk.is_ready, f"C2: {key!r} is not ready"
        return super().prepare_load(keys, req_context)

    def complete_load(self, keys: Any, req_context: Any) -> None:
        keys = list(keys)
        for key in keys:  # the same partial change as finding 4, on a C3 breach
            chunk = self._policy.get(key)
            assert chunk is not None and keys.count(key) <= chunk.ref_cnt, f"C3: {key!r} not loaded"
        super().complete_load(keys, req_context)


class _FinishedTwiceManager(_DedupingManager):
    """Applies a request's recency again when it is finished a second time."""

    def on_request_finished(self, req_context: Any) -> None:
        state = req_context.get_state(_RequestCacheAccess)
        if state is not None:
            state.finished = False
        super().on_request_finished(req_context)


def _finished_twice(num_blocks: int, enable_events: bool = False) -> _FinishedTwiceManager:
    return _FinishedTwiceManager(num_blocks, cache_policy="lru", enable_events=enable_events)


def test_K5_request_finished_twice_is_judged_in_strict_mode_only() -> None:
    strict = check_manager(_finished_twice, policy="lru", strict=True, shrink=False)
    clauses = tuple(c for c in strict.clauses if c != "N9")  # 0.33's LRU: judged by N9 (its order) first
    assert not strict.ok and clauses[:2] == ("L3", "K5"), strict.report()
    assert "m.finish_again()" in strict.reproduction
    # a caller breach: the default mode never makes it (vLLM's scheduler signals once)
    default = check_manager(_finished_twice, policy="lru", shrink=False)
    assert default.ok, default.report()


def test_K5_vllm_manager_ignores_a_second_finish() -> None:
    """K5's text: vLLM's CPU manager ignores a second ``on_request_finished`` of a request.
    R1 stores h0 and finishes, R2 stores h1 and finishes; finishing R1 again must not make
    h0 the most recent, so the next store still evicts h0."""
    h0, h1, h2 = (bytes([i]) * 8 + bytes(4) for i in range(3))
    m = as_contract_manager(CPUOffloadingManager(2, cache_policy="lru"))
    finished = []
    for key in (h0, h1):
        m.request = m.context()
        m.prepare_store([key])
        m.complete_store([key], success=True)
        m.finish_request()
        finished.append(m.finished)
    m.finished = finished[0]  # R1 again
    m.finish_again()
    assert list(m.prepare_store([h2]).block_hashes_evicted) == [h0]


def test_K5_a_manager_that_ignores_second_finishes_conforms_in_strict_mode() -> None:
    """Strict mode finishes requests twice (K5, K3) and does not flag a manager that ignores
    it: the outside author's manager conforms (vLLM's own stops on findings 1 and 4 first)."""
    result = check_manager(outside_lru, policy="lru", strict=True)
    assert result.ok, result.report()
    assert {"K3", "K5"} <= set(result.clauses_exercised)
