"""Add the suite to your own pytest run: subclass a base class and give it a factory.

    from kvoffload.conformance.pytest_support import ManagerConformance

    class TestMyManager(ManagerConformance):
        policy = "lru"            # or "arc", or "any" (default) for your own policy

        def make_manager(self, num_blocks, enable_events):
            return MyManager(num_blocks, enable_events=enable_events)

Each class runs default and strict mode as two tests; a failure raises
``ConformanceFailure`` whose message names the clause and holds the reproduction.
pytest is not imported here: the classes are plain classes that pytest collects.
"""

from __future__ import annotations

from typing import Any

from .reports.result import ConformanceFailure, ConformanceResult
from .runner import run_conformance

__all__ = ["ManagerConformance", "BackendConformance", "PolicyConformance", "assert_conforms"]


def assert_conforms(result: ConformanceResult) -> None:
    """Raise ``ConformanceFailure`` (an AssertionError) with the full report if not ok."""
    if not result.ok:
        raise ConformanceFailure(result.clauses, result.report(), result.reproduction)


class _Conformance:
    kind = ""
    policy = "any"
    max_examples: int | None = None
    steps: int | None = None
    seed = 0
    #: "auto" (detected), "contract", or "vllm" for a target written against vLLM's
    #: OffloadingManager / CachePolicy (K1–K9; needs vLLM importable)
    interface = "auto"

    def _check(self, strict: bool) -> None:
        # how a reproduction builds the target: the test class's own maker method
        # (``TestX().make_manager(...)``), which exists and runs as printed
        source = f"{type(self).__module__}:{type(self).__qualname__}().make_{self.kind}"
        assert_conforms(
            run_conformance(self.kind, getattr(self, f"make_{self.kind}"), policy=self.policy, strict=strict,
                            max_examples=self.max_examples, steps=self.steps, seed=self.seed,
                            interface=self.interface, source=source)
        )

    def test_conformance_default_mode(self) -> None:
        self._check(strict=False)

    def test_conformance_strict_mode(self) -> None:
        self._check(strict=True)


class ManagerConformance(_Conformance):
    """Override ``make_manager(self, num_blocks, enable_events)``."""

    kind = "manager"

    def make_manager(self, num_blocks: int, enable_events: bool) -> Any:
        raise NotImplementedError("override make_manager(num_blocks, enable_events)")


class BackendConformance(_Conformance):
    """Override ``make_backend(self, num_blocks)``."""

    kind = "backend"

    def make_backend(self, num_blocks: int) -> Any:
        raise NotImplementedError("override make_backend(num_blocks)")


class PolicyConformance(_Conformance):
    """Override ``make_policy(self, cache_capacity)``."""

    kind = "policy"

    def make_policy(self, cache_capacity: int) -> Any:
        raise NotImplementedError("override make_policy(cache_capacity)")
