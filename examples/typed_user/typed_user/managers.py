"""The production manager and the reference model, called with plain ``bytes``."""

from __future__ import annotations

from collections.abc import Iterable

import kvoffload
from kvoffload import (
    BlockStatus,
    ContractViolation,
    CPULoadStoreSpec,
    OffloadingEvent,
    OffloadingManager,
    PrepareStoreOutput,
    ReferenceManager,
)


def store_all(manager: OffloadingManager, hashes: list[bytes]) -> int:
    """Store ``hashes`` and return how many events that queued."""
    output: PrepareStoreOutput | None = manager.prepare_store(hashes)
    if output is None:
        return 0
    manager.complete_store(output.block_hashes_to_store, success=True)
    events: Iterable[OffloadingEvent] = manager.take_events()
    return len(list(events))


def production_round_trip() -> list[bytes]:
    manager = kvoffload.CPUOffloadingManager(num_blocks=8, policy="arc", enable_events=True)
    hashes = [bytes([i]) * 32 for i in range(4)]
    store_all(manager, hashes)
    hits: int = manager.lookup(hashes)
    spec: CPULoadStoreSpec = manager.prepare_load(hashes[:hits])
    manager.complete_load(hashes[: len(spec.block_ids)])
    return sorted(manager.blocks())


def reference_violation() -> str:
    manager = ReferenceManager(num_blocks=4, policy="lru", enable_events=True)
    store_all(manager, [b"a" * 32, b"b" * 32])
    status: BlockStatus = BlockStatus(7)
    ready: bool = status.is_ready
    try:
        manager.complete_load([b"x" * 32])
    except ContractViolation as violation:
        clause: str = violation.clause
        return f"{ready} {clause}"
    return ""
