"""A fault run of a tier (E1, E2, T1, T2): jobs in flight, injected I/O faults, every load checked.

Requests share prefixes; each step submits a store or a load (or finishes jobs) without
waiting, so several jobs are in flight at once. Every block's bytes are a function of its
hash, so a served load is checked byte for byte (E1); at the end every job is drained and
the tier must hold no pinned or pending block, and free + ready = capacity (E2).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from typing import Protocol

import attrs

from ...spec.types import BlockHash
from .jobs import TierJobResult

__all__ = ["FaultRunReport", "run_faults", "payload_of"]


class Tier(Protocol):
    payload_bytes: int

    def lookup(self, block_hashes: list[BlockHash]) -> int: ...
    def touch(self, block_hashes: list[BlockHash]) -> None: ...
    def submit_store(self, job_id: int, block_hashes: list[BlockHash], payloads: list[memoryview]) -> object: ...
    def submit_load(self, job_id: int, block_hashes: list[BlockHash], outs: list[memoryview]) -> None: ...
    def get_finished(self) -> list[TierJobResult]: ...
    def drain(self) -> None: ...


@attrs.define
class FaultRunReport:
    stores: int = 0
    loads: int = 0
    blocks_stored: int = 0
    blocks_loaded: int = 0
    failed_store_jobs: int = 0
    failed_load_blocks: int = 0
    corrupt_loads: int = 0
    leaked_blocks: int = 0
    most_loads_in_flight: int = 0

    def ok(self) -> bool:
        return self.corrupt_loads == 0 and self.leaked_blocks == 0


def payload_of(block_hash: bytes, size: int) -> bytes:
    """The bytes stored under ``block_hash``: a pure function of it (E1 checks against this)."""
    seed = hashlib.blake2b(block_hash, digest_size=32).digest()
    return (seed * (size // 32 + 1))[:size]


@attrs.define
class _Load:
    hashes: list[BlockHash]
    outs: list[bytearray]


def _request(rng: random.Random, prefixes: list[list[bytes]]) -> list[BlockHash]:
    base = rng.choice(prefixes)[: rng.randrange(1, 9)]
    tail = [hashlib.sha256(rng.randbytes(8)).digest() for _ in range(rng.randrange(0, 4))]
    return [BlockHash(h) for h in base + tail]


def run_faults(
    tier: Tier, steps: int, seed: int = 0, leaks: Callable[[], int] | None = None
) -> FaultRunReport:
    """Drive ``tier`` for ``steps`` steps; ``leaks()`` counts blocks pinned or pending at the end."""
    rng = random.Random(seed)
    prefixes = [[hashlib.sha256(f"{seed}:{p}:{i}".encode()).digest() for i in range(8)] for p in range(6)]
    report = FaultRunReport()
    loads: dict[int, _Load] = {}
    size = tier.payload_bytes
    for job_id in range(steps):
        hashes = _request(rng, prefixes)
        hits = tier.lookup(hashes)
        if hits and rng.random() < 0.5:
            wanted = hashes[:hits]
            outs = [bytearray(size) for _ in wanted]
            tier.submit_load(job_id, wanted, [memoryview(o) for o in outs])
            loads[job_id] = _Load(wanted, outs)
            report.loads += 1
        else:
            tier.touch(hashes[:hits])
            tier.submit_store(job_id, hashes, [memoryview(payload_of(h, size)) for h in hashes])
            report.stores += 1
        report.most_loads_in_flight = max(report.most_loads_in_flight, len(loads))
        if rng.random() < 0.5:
            tier.drain()  # else the steps outrun the I/O and every store finds the tier pending
        if rng.random() < 0.7:
            _check(tier.get_finished(), loads, report, size)
    tier.drain()
    _check(tier.get_finished(), loads, report, size)
    report.leaked_blocks = leaks() if leaks is not None else 0
    return report


def _check(results: list[TierJobResult], loads: dict[int, _Load], report: FaultRunReport, size: int) -> None:
    for result in results:
        load = loads.pop(result.job_id, None)
        if load is None:
            report.blocks_stored += len(result.done)
            report.failed_store_jobs += not result.success
            continue
        served = set(result.done)
        for block_hash, out in zip(load.hashes, load.outs):
            if block_hash in served:
                report.blocks_loaded += 1
                report.corrupt_loads += bytes(out) != payload_of(block_hash, size)
            else:
                report.failed_load_blocks += 1
                report.corrupt_loads += any(out)  # T1: a failed read leaves the destination as it was
