"""Keyword factories for the conformance suite (``kvoffload conform ... MODULE:FACTORY``).

The suite calls a manager factory as ``f(num_blocks=..., enable_events=...)``, a backend
factory as ``f(num_blocks=...)`` and a policy factory as ``f(cache_capacity=...)``.
``CPUOffloadingManager`` defaults to LRU; these name the policy (and, for the tests of
I8, a fingerprint that makes every hash collide).
"""

from __future__ import annotations

from .components import ARCCachePolicy, CPUBackend, LRUCachePolicy, S3FIFOCachePolicy, SIEVECachePolicy
from .manager import CPUOffloadingManager

__all__ = [
    "lru_manager",
    "arc_manager",
    "colliding_lru_manager",
    "colliding_arc_manager",
    "s3fifo_manager",
    "sieve_manager",
    "colliding_s3fifo_manager",
    "colliding_sieve_manager",
    "backend",
    "lru_policy",
    "arc_policy",
    "s3fifo_policy",
    "sieve_policy",
]


def lru_manager(num_blocks: int, enable_events: bool = False) -> CPUOffloadingManager:
    return CPUOffloadingManager(num_blocks=num_blocks, policy="lru", enable_events=enable_events)


def arc_manager(num_blocks: int, enable_events: bool = False) -> CPUOffloadingManager:
    return CPUOffloadingManager(num_blocks=num_blocks, policy="arc", enable_events=enable_events)


def colliding_lru_manager(num_blocks: int, enable_events: bool = False) -> CPUOffloadingManager:
    """Every fingerprint equal: only the full-hash comparison keeps hashes apart (I8)."""
    return CPUOffloadingManager(
        num_blocks=num_blocks, policy="lru", enable_events=enable_events, fingerprint="constant"
    )


def colliding_arc_manager(num_blocks: int, enable_events: bool = False) -> CPUOffloadingManager:
    """Every fingerprint equal, ARC (I8)."""
    return CPUOffloadingManager(
        num_blocks=num_blocks, policy="arc", enable_events=enable_events, fingerprint="constant"
    )


def s3fifo_manager(num_blocks: int, enable_events: bool = False) -> CPUOffloadingManager:
    return CPUOffloadingManager(num_blocks=num_blocks, policy="s3fifo", enable_events=enable_events)


def sieve_manager(num_blocks: int, enable_events: bool = False) -> CPUOffloadingManager:
    return CPUOffloadingManager(num_blocks=num_blocks, policy="sieve", enable_events=enable_events)


def colliding_s3fifo_manager(num_blocks: int, enable_events: bool = False) -> CPUOffloadingManager:
    """Every fingerprint equal, S3-FIFO (I8; G's ghosts share the table)."""
    return CPUOffloadingManager(
        num_blocks=num_blocks, policy="s3fifo", enable_events=enable_events, fingerprint="constant"
    )


def colliding_sieve_manager(num_blocks: int, enable_events: bool = False) -> CPUOffloadingManager:
    """Every fingerprint equal, SIEVE (I8)."""
    return CPUOffloadingManager(
        num_blocks=num_blocks, policy="sieve", enable_events=enable_events, fingerprint="constant"
    )


def backend(num_blocks: int) -> CPUBackend:
    return CPUBackend(num_blocks=num_blocks)


def lru_policy(cache_capacity: int) -> LRUCachePolicy:
    return LRUCachePolicy(cache_capacity)


def arc_policy(cache_capacity: int) -> ARCCachePolicy:
    return ARCCachePolicy(cache_capacity)


def s3fifo_policy(cache_capacity: int) -> S3FIFOCachePolicy:
    return S3FIFOCachePolicy(cache_capacity)


def sieve_policy(cache_capacity: int) -> SIEVECachePolicy:
    return SIEVECachePolicy(cache_capacity)
