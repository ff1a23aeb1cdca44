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
import click

from ...spec.tiers import payload_of
from ...spec.types import BlockHash
from .jobs import TierJobResult

__all__ = ["FaultRunReport", "run_faults", "payload_of", "simulate_tier"]


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


@click.command(name="simulate-tier")
@click.option("--tier", type=click.Choice(["disk"]), default="disk", show_default=True)
@click.option("--policy", type=click.Choice(["lru", "arc"]), default="lru", show_default=True)
@click.option("--steps", type=int, default=600, show_default=True, help="Jobs submitted.")
@click.option("--blocks", type=int, default=24, show_default=True, help="Tier capacity.")
@click.option("--fault-rate", type=float, default=0.05, show_default=True,
              help="Probability of each injected fault per block: failed write, torn write, flipped bit, failed read.")
@click.option("--seed", type=int, default=0, show_default=True)
def simulate_tier(tier: str, policy: str, steps: int, blocks: int, fault_rate: float, seed: int) -> None:
    """A fault run of a tier (E1, E2, T1, T2): exit 1 on any corrupt load or leaked block."""
    import tempfile

    from .blockfile import IOFaults
    from .disk import DiskTier

    faults = IOFaults(seed=seed, write_error=fault_rate, torn_write=fault_rate, bit_flip=fault_rate,
                      read_error=fault_rate)
    with tempfile.TemporaryDirectory(prefix="kvoffload-simulate-", dir=".") as scratch:
        disk = DiskTier(f"{scratch}/blocks", blocks, 4096 + 512, policy=policy, faults=faults)

        def leaks() -> int:
            present = disk.manager.blocks()
            busy = sum(block.ref_cnt != 0 for block in present.values())
            return busy + (blocks - disk.manager.get_num_free_blocks() - len(present))

        report = run_faults(disk, steps, seed=seed, leaks=leaks)
        disk.close()
    click.echo(f"jobs: {report.stores} stores ({report.blocks_stored} blocks landed, {report.failed_store_jobs} failed), "
               f"{report.loads} loads ({report.blocks_loaded} blocks served, {report.failed_load_blocks} refused by T1)")
    click.echo("faults injected: " + ", ".join(f"{k} {v}" for k, v in sorted(faults.injected.items())))
    click.echo(f"corrupt loads: {report.corrupt_loads}")
    click.echo(f"leaked blocks: {report.leaked_blocks}")
    if not report.ok():
        raise SystemExit(1)
