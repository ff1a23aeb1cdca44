"""Keyword factories of the tiers for ``kvoffload conform`` (manager and backend suites)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .backend import FileBackend
from .disk import DiskBlockTable

if TYPE_CHECKING:
    from .redis_tier import RedisBlockTable

__all__ = ["disk_lru_manager", "disk_arc_manager", "disk_backend", "redis_lru_manager"]


def disk_lru_manager(num_blocks: int, enable_events: bool = False) -> DiskBlockTable:
    return DiskBlockTable(num_blocks, policy="lru", enable_events=enable_events)


def disk_arc_manager(num_blocks: int, enable_events: bool = False) -> DiskBlockTable:
    return DiskBlockTable(num_blocks, policy="arc", enable_events=enable_events)


def disk_backend(num_blocks: int) -> FileBackend:
    return FileBackend(num_blocks, payload_bytes=4096)


def redis_lru_manager(num_blocks: int, enable_events: bool = False) -> "RedisBlockTable":
    """A fresh namespace on the server at ``$KVOFFLOAD_REDIS_URL`` (T3: a random layout digest)."""
    import os
    import secrets

    import redis

    from .redis_tier import RedisBlockTable

    url = os.environ.get("KVOFFLOAD_REDIS_URL")
    if not url:
        raise ValueError("S4: set KVOFFLOAD_REDIS_URL=redis://127.0.0.1:PORT to a server run with noeviction")
    server = redis.Redis.from_url(url)
    return RedisBlockTable(server, num_blocks, secrets.token_bytes(16), enable_events=enable_events)
