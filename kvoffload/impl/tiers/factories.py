"""Keyword factories of the tiers for ``kvoffload conform`` (manager and backend suites)."""

from __future__ import annotations

from .backend import FileBackend
from .disk import DiskBlockTable

__all__ = ["disk_lru_manager", "disk_arc_manager", "disk_backend"]


def disk_lru_manager(num_blocks: int, enable_events: bool = False) -> DiskBlockTable:
    return DiskBlockTable(num_blocks, policy="lru", enable_events=enable_events)


def disk_arc_manager(num_blocks: int, enable_events: bool = False) -> DiskBlockTable:
    return DiskBlockTable(num_blocks, policy="arc", enable_events=enable_events)


def disk_backend(num_blocks: int) -> FileBackend:
    return FileBackend(num_blocks, payload_bytes=4096)
