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

# The backend and the policies take the suite's keywords already (num_blocks=, cache_capacity=).
reference_backend = ReferenceCPUBackend
reference_lru_policy = ReferenceLRUPolicy
reference_arc_policy = ReferenceARCPolicy
reference_s3fifo_policy = ReferenceS3FIFOPolicy
reference_sieve_policy = ReferenceSIEVEPolicy


def reference_lru_manager(num_blocks: int, enable_events: bool = False) -> ReferenceManager:
    return ReferenceManager(num_blocks, policy="lru", enable_events=enable_events)


def reference_arc_manager(num_blocks: int, enable_events: bool = False) -> ReferenceManager:
    return ReferenceManager(num_blocks, policy="arc", enable_events=enable_events)


def reference_s3fifo_manager(num_blocks: int, enable_events: bool = False) -> ReferenceManager:
    return ReferenceManager(num_blocks, policy="s3fifo", enable_events=enable_events)


def reference_sieve_manager(num_blocks: int, enable_events: bool = False) -> ReferenceManager:
    return ReferenceManager(num_blocks, policy="sieve", enable_events=enable_events)
