"""The conformance suite on targets written against vLLM's own interfaces (K1–K8):
vLLM 0.32's ``CPUOffloadingManager`` (LRU, ARC) and policies, an outside author's
manager (``outside_manager.py``), and bugs planted in both, each caught with its clause.

Budgets are below the CLI's defaults to keep the lane short; the default-budget runs of
vLLM's own parts are in docs/conformance.md (seconds measured there)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import pytest

pytest.importorskip("vllm")

from vllm.v1.kv_offload.base import LookupResult, OffloadingEvent, ReqContext  # noqa: E402
from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager  # noqa: E402
from vllm.v1.kv_offload.cpu.policies.arc import ARCCachePolicy  # noqa: E402
from vllm.v1.kv_offload.cpu.policies.lru import LRUCachePolicy  # noqa: E402

from kvoffload.conformance import check_manager, check_policy
from kvoffload.conformance.runner import run_conformance
from kvoffload.conformance.lockstep.vllm import as_contract_manager
from kvoffload.spec import ContractViolation
import outside_bugs
from outside_manager import OutsideLRUManager, outside_lru
from vllm_helpers import run_reproduction

BUDGET = {"max_examples": 40}


def vllm_lru(num_blocks: int, enable_events: bool = False) -> CPUOffloadingManager:
    return CPUOffloadingManager(num_blocks, cache_policy="lru", enable_events=enable_events)


def vllm_arc(num_blocks: int, enable_events: bool = False) -> CPUOffloadingManager:
    return CPUOffloadingManager(num_blocks, cache_policy="arc", enable_events=enable_events)


@pytest.mark.parametrize("factory, policy", [(vllm_lru, "lru"), (vllm_arc, "arc")])
def test_K1_vllm_own_managers_conform_detected_as_vllm(factory: Any, policy: str) -> None:
    result = check_manager(factory, policy=policy, **BUDGET)
    assert result.ok, result.report()
    assert result.interface == "vllm"
    assert {"K1", "K5", "K6", "K7"} <= set(result.clauses_exercised)
    assert any(reason.startswith("M9") for reason in result.clauses_skipped)


@pytest.mark.parametrize("factory", [vllm_lru, vllm_arc], ids=["lru", "arc"])
def test_I7_M10_vllm_own_managers_conform_under_policy_any_with_twins(factory: Any) -> None:
    """``--policy any`` judges order only on twins (I7, M10): vLLM's own managers pass, 0.33's
    LRU included, whose loads inside a request with key positions rank its keys (N9 allows
    that, and ``any`` cannot tell N9's policies from others, so it judges no twins there)."""
    result = check_manager(factory, policy="any")
    assert result.ok, result.report()
    assert {"I7", "M10"} <= set(result.clauses_exercised)


def test_K1_outside_manager_conforms_in_both_modes() -> None:
    for strict in (False, True):
        result = check_manager(outside_lru, policy="lru", strict=strict, interface="vllm", **BUDGET)
        assert result.ok, result.report()


def _outside(bug: str) -> Any:
    def factory(num_blocks: int, enable_events: bool = False) -> OutsideLRUManager:
        return OutsideLRUManager(num_blocks, enable_events, bug=bug)

    return factory


def test_K1_miss_while_pending_is_caught_and_reproduces() -> None:
    result = run_conformance("manager", _outside("pending_is_miss"), policy="lru",
                             source="outside_manager:OutsideLRUManager")
    assert not result.ok and result.clause == "K1", result.report()
    assert "HIT_PENDING" in result.message
    error = run_reproduction(result.reproduction.replace(
        "OutsideLRUManager(num_blocks=", "OutsideLRUManager(bug='pending_is_miss', num_blocks="))
    assert isinstance(error, AssertionError) and "K1" in str(error)
    assert run_reproduction(result.reproduction) is None  # the fixed manager passes it


def test_K2_resident_key_reported_as_stored_is_caught() -> None:
    result = check_manager(_outside("restores_resident"), policy="lru", shrink=False)
    assert not result.ok and result.clauses[:2] == ("M5", "K2"), result.report()


def test_K3_documented_assertion_becomes_contract_violation() -> None:
    view: Any = as_contract_manager(vllm_lru(2))
    with pytest.raises(ContractViolation) as caught:
        view.prepare_load([b"absent-key"])
    assert caught.value.clause == "K3" and "AssertionError" in str(caught.value)


def test_K3_vllm_manager_breaks_C5_duplicates_finding() -> None:
    """A finding about vLLM 0.32 (docs/vllm-findings.md, finding 1): a key listed twice in one
    prepare_store (a C5 breach, strict mode) is stored twice, leaking a chunk, instead of once (M5.1)."""
    result = check_manager(vllm_lru, policy="lru", strict=True, **BUDGET)
    assert not result.ok and result.clauses[:2] == ("M5", "K2"), result.report()
    assert "r1 = m.prepare_store([h0, h0])" in result.reproduction


def test_M9_vllm_prepare_load_of_an_absent_key_leaves_earlier_keys_pinned_finding() -> None:
    """A finding about vLLM 0.32 and 0.33 (docs/vllm-findings.md, finding 4): ``prepare_load([h0, h3])`` with
    h3 absent (a C2 breach, strict mode) pins h0 and then asserts, so h0 stays pinned where
    M9 (K3) wants nothing changed; the next eviction passes over it."""
    h0, h1, h2, h3 = (bytes([i]) * 8 + bytes(4) for i in range(4))
    m = as_contract_manager(vllm_lru(3))
    m.prepare_store([h0, h1, h2])
    m.complete_store([h0, h1, h2], success=True)
    with pytest.raises((AssertionError, ContractViolation)):
        m.prepare_load([h0, h3])
    # LRU order is h0, h1, h2: with nothing changed by the refused load, h0 would go
    assert list(m.prepare_store([h3]).block_hashes_evicted) == [h1]


class _MetadataOnlyManager(CPUOffloadingManager):  # type: ignore[misc]
    """vLLM 0.33's failed-store event on 0.32's manager; ``sloppy`` lists the first key twice."""

    sloppy = False

    def complete_store(self, keys: Collection[bytes], req_context: Any, success: bool = True) -> None:
        keys = list(keys)
        failed = [k for k in keys if (c := self._policy.get(k)) is not None and not c.is_ready]
        super().complete_store(keys, req_context, success)
        listed = failed + failed[:1] if self.sloppy else failed
        if not success and listed and self.events is not None:
            removal = OffloadingEvent(keys=listed, medium=self.medium, removed=True)
            removal.metadata_only = True  # 0.33's field, set on 0.32's dataclass
            self.events.append(removal)


def _metadata_only(sloppy: bool) -> Any:
    def factory(num_blocks: int, enable_events: bool = False) -> CPUOffloadingManager:
        manager = _MetadataOnlyManager(num_blocks, cache_policy="lru", enable_events=enable_events)
        manager.sloppy = sloppy
        return manager

    return factory


def test_K4_metadata_only_events_of_failed_stores() -> None:
    good = check_manager(_metadata_only(False), policy="lru", **BUDGET)
    assert good.ok and "K4" in good.clauses_exercised, good.report()
    bad = check_manager(_metadata_only(True), policy="lru", shrink=False)
    assert not bad.ok and bad.clause == "K4", bad.report()


def test_K5_request_end_without_recency_is_caught() -> None:
    result = check_manager(_outside("no_finish_recency"), policy="lru")
    assert not result.ok and result.clauses[:2] == ("L3", "K5"), result.report()
    assert "m.finish_request()" in result.reproduction


def test_K5_a_request_end_applied_to_the_request_that_called_last_is_caught() -> None:
    """Requests open at once (``interleaved_requests``): ``on_request_finished(ctx)`` that
    ends whichever request called last, not ``ctx``'s, is caught; the shrunk reproduction
    keeps a request open while requests of their own store, and fails on its own."""
    result = check_manager(outside_bugs.last_caller, policy="lru", seed=2)
    assert not result.ok and result.clauses[:2] == ("L3", "K5"), result.report()
    assert "rq1 = m.request = m.context()" in result.reproduction and "m.request = rq1" in result.reproduction
    error = run_reproduction(result.reproduction)
    assert isinstance(error, AssertionError) and "L3" in str(error)
    fixed = result.reproduction.replace("from outside_bugs import last_caller",
                                        "from outside_manager import outside_lru as last_caller")
    assert run_reproduction(fixed) is None  # the fixed manager passes it


class _NoStoreMissARC(ARCCachePolicy):  # type: ignore[misc]
    """ARC that ignores store misses (no ``on_store_miss``): a ghost stored again does not move p."""

    def on_store_miss(self, keys: Any, req_context: Any) -> None:
        return None


def test_K6_store_miss_ignored_by_arc_is_caught() -> None:
    def factory(num_blocks: int, enable_events: bool = False) -> CPUOffloadingManager:
        manager = CPUOffloadingManager(num_blocks, cache_policy="arc", enable_events=enable_events)
        manager._policy = _NoStoreMissARC(num_blocks)
        return manager

    result = check_manager(factory, policy="arc", shrink=False)
    assert not result.ok and result.clause in ("A4", "M10") and "K6" in result.clauses, result.report()


def test_K7_reset_that_keeps_blocks_is_caught() -> None:
    result = check_manager(_outside("reset_keeps_blocks"), policy="lru")
    assert not result.ok and result.clauses[:2] == ("K7", "K1"), result.report()
    assert "m.reset_cache()" in result.reproduction


class _UnreversedLRU(LRUCachePolicy):  # type: ignore[misc]
    """Touches in the order given: the last key ends up most recent (P4 wants the first)."""

    def touch(self, keys: Any, req_context: Any) -> None:
        self._update_recency(list(keys))


@pytest.mark.parametrize("policy_class, mode", [(LRUCachePolicy, "lru"), (ARCCachePolicy, "arc")])
def test_K8_vllm_own_policies_conform(policy_class: Any, mode: str) -> None:
    result = check_policy(policy_class, policy=mode, **BUDGET)
    assert result.ok and result.interface == "vllm", result.report()


def test_K8_planted_policy_bug_is_caught() -> None:
    result = check_policy(_UnreversedLRU, policy="lru", shrink=False)
    assert not result.ok and result.clause in ("L2", "L3", "P4"), result.report()


def test_K1_lookup_answers_through_the_view() -> None:
    manager = vllm_lru(2)
    view: Any = as_contract_manager(manager)
    key = b"k" * 8
    assert view.key_lookup(key) == "MISS"
    view.prepare_store([key])
    assert view.key_lookup(key) == "HIT_PENDING" and view.lookup([key]) == 0
    view.complete_store([key])
    assert view.key_lookup(key) == "HIT" and view.lookup([key]) == 1
    assert manager.lookup(key, ReqContext(req_id="x")) is LookupResult.HIT


class _MiscountedPendingManager(CPUOffloadingManager):  # type: ignore[misc]
    """vLLM's manager whose write-usage gauge keeps counting a store after it completed
    (a pending counter decremented one short), so every usage gauge reads high."""

    def complete_store(self, keys: Collection[bytes], req_context: Any, success: bool = True) -> None:
        super().complete_store(keys, req_context, success)
        if success and keys:
            self._num_write_pending_chunks += 1


def _miscounted(num_blocks: int, enable_events: bool = False) -> CPUOffloadingManager:
    return _MiscountedPendingManager(num_blocks, cache_policy="lru", enable_events=enable_events)


def test_K9_usage_gauges_judged_and_a_miscounted_one_caught() -> None:
    good = check_manager(vllm_lru, policy="lru", **BUDGET)
    assert good.ok and "K9" in good.clauses_exercised, good.report()
    bad = check_manager(_miscounted, policy="lru", shrink=False)
    assert not bad.ok and bad.clause == "K9", bad.report()
    assert "write_usage" in bad.report()
    assert isinstance(run_reproduction(bad.reproduction), AssertionError)  # the snippet fails as reported
