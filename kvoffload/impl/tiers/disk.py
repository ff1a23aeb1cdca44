"""The bounded disk tier (T1, T2): our block table and policy over one preallocated file.

``DiskBlockTable`` is the production manager (``CPUOffloadingManager``: exact LRU or ARC,
M1–M10) whose block ids are file slots, medium ``"DISK"``. ``DiskTier`` adds the bytes:
stores and loads are jobs whose blocks a small thread pool moves with ``pwrite`` /
``preadv`` (``BlockFile``), and every manager call happens on the caller's thread, in
``submit_*`` and ``get_finished`` — never on an I/O thread. A block is announced ready
only after its record landed (T2); a read is served only after its record verified (T1),
and a block that failed a read is quarantined until the policy evicts it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait

import attrs

from ...spec.errors import ContractViolation
from ...spec.hashes import describe_hash, read_hashes
from ...spec.interfaces import OffloadingManager
from ...spec.types import BlockHash, BlockIdsLoadStoreSpec, BlockStatus, OffloadingEvent, PrepareStoreOutput
from ..manager import CPUOffloadingManager
from .blockfile import BlockFile, IOFaults
from .jobs import LOOKUP_HIT, LOOKUP_MISS, LOOKUP_RETRY, TierJobResult

__all__ = ["DiskLoadStoreSpec", "DiskBlockTable", "DiskTier"]

Buffer = memoryview | bytes


class DiskLoadStoreSpec(BlockIdsLoadStoreSpec):
    """Slots of a tier's block file; ``medium() == "DISK"``."""

    @staticmethod
    def medium() -> str:
        return "DISK"


class DiskBlockTable(OffloadingManager):
    """The production manager (M1–M10, exact LRU or ARC) whose specs and events name the
    ``"DISK"`` medium (B4, M8): block ids are slots of the tier's file."""

    medium = "DISK"

    def __init__(self, num_blocks: int, policy: str = "lru", enable_events: bool = False) -> None:
        self.core = CPUOffloadingManager(num_blocks, policy=policy, enable_events=enable_events)
        self.core.medium = self.medium  # its events name our medium
        self.num_blocks = self.core.num_blocks

    def lookup(self, block_hashes: Iterable[BlockHash]) -> int:
        return self.core.lookup(block_hashes)

    def prepare_load(self, block_hashes: Iterable[BlockHash]) -> DiskLoadStoreSpec:
        return DiskLoadStoreSpec(self.core.prepare_load(block_hashes).block_ids)

    def complete_load(self, block_hashes: Iterable[BlockHash]) -> None:
        self.core.complete_load(block_hashes)

    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        self.core.touch(block_hashes)

    def prepare_store(self, block_hashes: Iterable[BlockHash]) -> PrepareStoreOutput | None:
        output = self.core.prepare_store(block_hashes)
        if output is not None:
            ids = output.store_spec.block_ids  # type: ignore[attr-defined]
            output.store_spec = DiskLoadStoreSpec(ids)
        return output

    def complete_store(self, block_hashes: Iterable[BlockHash], success: bool = True) -> None:
        self.core.complete_store(block_hashes, success)

    def take_events(self) -> Iterable[OffloadingEvent]:
        return self.core.take_events()

    def get_num_free_blocks(self) -> int:
        return self.core.get_num_free_blocks()

    def blocks(self) -> dict[BlockHash, BlockStatus]:
        return self.core.blocks()

    def check_invariants(self) -> None:
        self.core.check_invariants()


@attrs.define
class _Job:
    job_id: int
    store: bool
    hashes: list[BlockHash]  # stores: the blocks to write; loads: the pinned blocks
    futures: list[Future[None]]
    nbytes: int
    refused: bool = False  # M5.4: no room (every block pinned or pending)


class DiskTier:
    """``num_blocks`` blocks of ``payload_bytes`` in the file at ``path`` (T1, T2)."""

    medium = "DISK"

    def __init__(
        self,
        path: str | os.PathLike[str],
        num_blocks: int,
        payload_bytes: int,
        *,
        policy: str = "lru",
        digest: bytes = bytes(16),
        io_threads: int = 4,
        direct: bool = True,
        faults: IOFaults | None = None,
    ) -> None:
        self.manager = DiskBlockTable(num_blocks, policy=policy)
        self.file = BlockFile(path, num_blocks, payload_bytes, digest, direct=direct, faults=faults)
        self.payload_bytes = payload_bytes
        self._pool = ThreadPoolExecutor(max_workers=io_threads, thread_name_prefix="kvoffload-disk")
        self._jobs: dict[int, _Job] = {}
        self._storing: set[BlockHash] = set()
        self.quarantined: set[BlockHash] = set()

    # -- lookups ------------------------------------------------------------------------
    def lookup(self, block_hashes: Iterable[BlockHash]) -> int:
        """M1; T1: a quarantined block ends the prefix."""
        hashes = read_hashes(block_hashes)
        hits = self.manager.lookup(hashes)
        if self.quarantined:
            for index, block_hash in enumerate(hashes[:hits]):
                if block_hash in self.quarantined:
                    return index
        return hits

    def lookup_one(self, block_hash: BlockHash) -> str:
        """vLLM's per-key answer: hit, retry (a store in flight) or miss."""
        if self.lookup([block_hash]) == 1:
            return LOOKUP_HIT
        return LOOKUP_RETRY if block_hash in self._storing else LOOKUP_MISS

    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        """M4."""
        self.manager.touch(block_hashes)

    # -- fault injection (the conformance check of T1, T2) ---------------------------------
    def fail_writes(self, block_hashes: Iterable[BlockHash]) -> None:
        """Every later write of these hashes fails (T2); an empty argument clears the list."""
        if self.file.faults is None:
            self.file.faults = IOFaults()
        self.file.faults.doomed = set(read_hashes(block_hashes))

    def damage(self, block_hash: BlockHash) -> None:
        """Flip a byte of the stored record of a ready block (T1: its next read must fail)."""
        block = self.manager.blocks().get(block_hash)
        if block is None:
            raise ContractViolation("T1", f"damage of a block the tier does not hold: {describe_hash(block_hash)}")
        self.file.corrupt(block.block_id, len(block_hash))

    # -- jobs ---------------------------------------------------------------------------
    def _new_job(self, job_id: int) -> None:
        if isinstance(job_id, bool) or not isinstance(job_id, int):
            raise TypeError(f"H1: job id must be an int, got {type(job_id).__name__}")
        if job_id in self._jobs:
            raise ValueError(f"H1: job {job_id} is still in flight")

    def submit_store(
        self, job_id: int, block_hashes: Iterable[BlockHash], payloads: Sequence[Buffer]
    ) -> PrepareStoreOutput | None:
        """M5, then one write per new block; ``None`` (and a failed job) if the tier is full of pinned blocks."""
        self._new_job(job_id)
        hashes = read_hashes(block_hashes)
        if len(payloads) != len(hashes):
            raise ValueError(f"{len(payloads)} payloads for {len(hashes)} hashes")
        first = {h: i for i, h in reversed(list(enumerate(hashes)))}
        output = self.manager.prepare_store(hashes)
        if output is None:
            self._jobs[job_id] = _Job(job_id, True, [], [], 0, refused=True)
            return None
        self.quarantined.difference_update(output.block_hashes_evicted)
        slots = output.store_spec.block_ids  # type: ignore[attr-defined]
        to_store = output.block_hashes_to_store
        futures = [
            self._pool.submit(self.file.write, int(slot), h, payloads[first[h]]) for h, slot in zip(to_store, slots)
        ]
        self._storing.update(to_store)
        self._jobs[job_id] = _Job(job_id, True, to_store, futures, len(to_store) * self.payload_bytes)
        return output

    def submit_load(self, job_id: int, block_hashes: Iterable[BlockHash], outs: Sequence[memoryview]) -> None:
        """M2 (pins), then one verified read per block into ``outs`` (T1)."""
        self._new_job(job_id)
        hashes = read_hashes(block_hashes)
        if len(outs) != len(hashes):
            raise ValueError(f"{len(outs)} destinations for {len(hashes)} hashes")
        for block_hash in hashes:
            if block_hash in self.quarantined:
                raise ContractViolation("T1", f"prepare_load of quarantined hash {describe_hash(block_hash)}")
        slots = self.manager.prepare_load(hashes).block_ids
        futures = [self._pool.submit(self.file.read, int(slot), h, out) for h, slot, out in zip(hashes, slots, outs)]
        self._jobs[job_id] = _Job(job_id, False, hashes, futures, len(hashes) * self.payload_bytes)

    def get_finished(self) -> list[TierJobResult]:
        """Jobs whose every transfer ended; their manager calls (M3, M6, M7) happen here."""
        finished = [job for job in self._jobs.values() if all(f.done() for f in job.futures)]
        return [self._finish(job) for job in finished]

    def _finish(self, job: _Job) -> TierJobResult:
        del self._jobs[job.job_id]
        ok = [f.exception() is None for f in job.futures]
        done = [h for h, good in zip(job.hashes, ok) if good]
        failed = [h for h, good in zip(job.hashes, ok) if not good]
        if job.store:
            self._storing.difference_update(job.hashes)
            self.manager.complete_store(done, success=True)  # M6
            self.manager.complete_store(failed, success=False)  # T2 → M7
            return TierJobResult(job.job_id, not failed and not job.refused, done, len(done) * self.payload_bytes)
        self.quarantined.update(failed)  # T1: never served again
        self.manager.complete_load(job.hashes)  # M3
        return TierJobResult(job.job_id, not failed, done, len(done) * self.payload_bytes)

    def drain(self) -> None:
        """Wait for every transfer in flight (their results stay for ``get_finished``)."""
        wait([f for job in self._jobs.values() for f in job.futures])

    def has_pending_work(self) -> bool:
        return bool(self._jobs)

    def close(self) -> None:
        self.drain()
        self._pool.shutdown(wait=True)
        self.file.close()
