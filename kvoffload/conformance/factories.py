"""Factories for the reference parts, in the shape the suite calls them with keywords.

``kvoffload conform manager kvoffload.conformance.factories:reference_arc_manager --policy arc``
"""

from __future__ import annotations

from ..spec import (
    ReferenceARCPolicy,
    ReferenceCPUBackend,
    ReferenceLRUPolicy,
    ReferenceManager,
    ReferenceS3FIFOPolicy,
    ReferenceSIEVEPolicy,
)

__all__ = [
    "reference_lru_manager",
    "reference_arc_manager",
    "reference_backend",
    "reference_lru_policy",
    "reference_arc_policy",
    "reference_s3fifo_manager",
    "reference_sieve_manager",
    "reference_s3fifo_policy",
    "reference_sieve_policy",
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


def reference_s3fifo_manager(num_blocks: int, enable_events: bool = False) -> ReferenceManager:
    return ReferenceManager(num_blocks, policy="s3fifo", enable_events=enable_events)


def reference_sieve_manager(num_blocks: int, enable_events: bool = False) -> ReferenceManager:
    return ReferenceManager(num_blocks, policy="sieve", enable_events=enable_events)


def reference_s3fifo_policy(cache_capacity: int) -> ReferenceS3FIFOPolicy:
    return ReferenceS3FIFOPolicy(cache_capacity)


def reference_sieve_policy(cache_capacity: int) -> ReferenceSIEVEPolicy:
    return ReferenceSIEVEPolicy(cache_capacity)
