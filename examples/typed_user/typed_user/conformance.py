"""The conformance suite's Python API on a user's own factory."""

from __future__ import annotations

from kvoffload import ReferenceManager
from kvoffload.conformance import ConformanceResult, check_manager


def make_manager(num_blocks: int, enable_events: bool) -> ReferenceManager:
    return ReferenceManager(num_blocks, policy="lru", enable_events=enable_events)


def conforms() -> bool:
    result: ConformanceResult = check_manager(make_manager, policy="lru", max_examples=2, steps=10)
    clause: str | None = result.clause
    return result.ok and clause is None
