"""The outside author's manager (``outside_manager.py``) with one bug each, and with the
other errors vLLM's interface documents, as importable factories: a printed reproduction
imports its target by the name the run was given."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from vllm.v1.kv_offload.cpu.policies.lru import LRUCachePolicy

from outside_manager import OutsideLRUManager


def pending_is_miss(num_blocks: int, enable_events: bool = False) -> OutsideLRUManager:
    """K1: ``MISS`` while a store is in flight."""
    return OutsideLRUManager(num_blocks, enable_events, bug="pending_is_miss")


def restores_resident(num_blocks: int, enable_events: bool = False) -> OutsideLRUManager:
    """K2/M5: a resident key is reported as stored again."""
    return OutsideLRUManager(num_blocks, enable_events, bug="restores_resident")


def no_finish_recency(num_blocks: int, enable_events: bool = False) -> OutsideLRUManager:
    """K5: ``on_request_finished`` does not update recency."""
    return OutsideLRUManager(num_blocks, enable_events, bug="no_finish_recency")


def last_caller(num_blocks: int, enable_events: bool = False) -> OutsideLRUManager:
    """K5: ``on_request_finished`` ends the request that called last, whichever its
    context names (as if requests never overlapped)."""
    return OutsideLRUManager(num_blocks, enable_events, bug="last_caller")


def reset_keeps_blocks(num_blocks: int, enable_events: bool = False) -> OutsideLRUManager:
    """K7: ``reset_cache`` keeps every block."""
    return OutsideLRUManager(num_blocks, enable_events, bug="reset_keeps_blocks")


class _Raising(OutsideLRUManager):
    """Protocol breaches of loads raise ``error`` instead of a plain assertion."""

    error: type[Exception] = AssertionError

    def prepare_load(self, keys: Collection[bytes], req_context: Any) -> Any:
        keys = list(keys)
        if not all(k in self.blocks and self.blocks[k][1] >= 0 for k in keys):
            raise self.error("prepare_load of a key that is not ready")
        return super().prepare_load(keys, req_context)

    def complete_load(self, keys: Collection[bytes], req_context: Any) -> None:
        keys = list(keys)
        if not all(k in self.blocks and self.blocks[k][1] >= keys.count(k) for k in keys):
            raise self.error("complete_load without a load in flight")
        super().complete_load(keys, req_context)


def raising(error: type[Exception]) -> Any:
    """A factory of the outside manager whose load breaches raise ``error``."""

    def factory(num_blocks: int, enable_events: bool = False) -> OutsideLRUManager:
        manager = _Raising(num_blocks, enable_events)
        manager.error = error
        return manager

    return factory


class UnreversedLRU(LRUCachePolicy):  # type: ignore[misc]
    """vLLM's own LRU policy, touching in the order given: the last key ends up most
    recent (P4 wants the first)."""

    def touch(self, keys: Any, req_context: Any) -> None:
        self._update_recency(list(keys))
