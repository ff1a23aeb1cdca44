"""Factories of vLLM 0.19's own scheduler-side parts, the generation whose connector called
the contract's batch API (``lookup(block_hashes) -> int``): the conformance suite and the
model checker take them by ``MODULE:FACTORY``, as a third party's. Imported only under the
0.19 overlay (``.ci/vllm_overlay.sh 0.19``)."""

from __future__ import annotations

from typing import Any


def lru_manager(num_blocks: int, enable_events: bool = False) -> Any:
    from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager

    return CPUOffloadingManager(block_size=16, num_blocks=num_blocks, cache_policy="lru", enable_events=enable_events)


def arc_manager(num_blocks: int, enable_events: bool = False) -> Any:
    from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager

    return CPUOffloadingManager(block_size=16, num_blocks=num_blocks, cache_policy="arc", enable_events=enable_events)


def arc_policy(cache_capacity: int) -> Any:
    from vllm.v1.kv_offload.cpu.policies.arc import ARCCachePolicy

    return ARCCachePolicy(cache_capacity=cache_capacity)
