"""Factories for the reference parts, in the shape the suite calls them with keywords.

``kvoffload conform manager kvoffload.conformance.factories:reference_arc_manager --policy arc``
"""

from __future__ import annotations

from ..spec import ReferenceARCPolicy, ReferenceCPUBackend, ReferenceLRUPolicy, ReferenceManager

__all__ = [
    "reference_lru_manager",
    "reference_arc_manager",
    "reference_backend",
    "reference_lru_policy",
    "reference_arc_policy",
]


def reference_lru_manager(num_blocks: int, enable_events: bool = False) -> ReferenceManager:
    return ReferenceManager(num_blocks, policy="lru", enable_events=enable_events)


def reference_arc_manager(num_blocks: int, enable_events: bool = False) -> ReferenceManager:
    return ReferenceManager(num_blocks, policy="arc", enable_events=enable_events)


def reference_backend(num_blocks: int) -> ReferenceCPUBackend:
    return ReferenceCPUBackend(num_blocks)


def reference_lru_policy(cache_capacity: int) -> ReferenceLRUPolicy:
    return ReferenceLRUPolicy(cache_capacity)


def reference_arc_policy(cache_capacity: int) -> ReferenceARCPolicy:
    return ReferenceARCPolicy(cache_capacity)
