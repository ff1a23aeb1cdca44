"""The pytest base classes (``kvoffload.conformance.pytest_support``): a subclass with the
reference factories passes both of its generated tests; one with a planted bug fails
with a ``ConformanceFailure`` naming the clause."""

from __future__ import annotations

from typing import Any

import pytest

import planted_bugs as pb
from kvoffload.conformance import ConformanceFailure
from kvoffload.conformance import factories as f
from kvoffload.conformance.pytest_support import BackendConformance, ManagerConformance, PolicyConformance


class TestReferenceManagerARC(ManagerConformance):
    policy = "arc"
    max_examples = 25

    def make_manager(self, num_blocks: int, enable_events: bool) -> Any:
        return f.reference_arc_manager(num_blocks, enable_events=enable_events)


class TestReferenceBackend(BackendConformance):
    max_examples = 20

    def make_backend(self, num_blocks: int) -> Any:
        return f.reference_backend(num_blocks)


class TestReferencePolicyLRU(PolicyConformance):
    policy = "lru"
    max_examples = 25

    def make_policy(self, cache_capacity: int) -> Any:
        return f.reference_lru_policy(cache_capacity)


class _ManagerWithFailedStoreBug(ManagerConformance):  # not collected: a leading underscore
    def make_manager(self, num_blocks: int, enable_events: bool) -> Any:
        return pb.FailedStoreBecomesReady(num_blocks, enable_events=enable_events)


class _PolicyTouchingPendingBug(PolicyConformance):
    policy = "lru"

    def make_policy(self, cache_capacity: int) -> Any:
        return pb.LRUTouchReadyOnly(cache_capacity)


def test_M7_subclass_with_planted_bug_fails() -> None:
    with pytest.raises(ConformanceFailure) as caught:
        _ManagerWithFailedStoreBug().test_conformance_default_mode()
    assert caught.value.clause == "M7"
    assert "VIOLATES M7" in str(caught.value) and "Reproduction" in str(caught.value)


def test_L2_policy_subclass_with_planted_bug_fails() -> None:
    with pytest.raises(ConformanceFailure) as caught:
        _PolicyTouchingPendingBug().test_conformance_default_mode()
    assert caught.value.clause in {"L3", "L2"}


def test_M7_pytest_reproduction_runs_as_printed() -> None:
    """The snippet builds the target through the test class's own maker (no ``factory``
    attribute that does not exist) and stops at its closing check."""
    with pytest.raises(ConformanceFailure) as caught:
        _ManagerWithFailedStoreBug().test_conformance_default_mode()
    reproduction = caught.value.reproduction
    assert "_ManagerWithFailedStoreBug().make_manager(" in reproduction
    with pytest.raises(AssertionError) as failed:
        exec(compile(reproduction, "<reproduction>", "exec"), {"__name__": "__repro__"})
    assert "M7" in str(failed.value)
