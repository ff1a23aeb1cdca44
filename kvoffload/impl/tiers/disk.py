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


from ...spec.errors import ContractViolation
from ...spec.hashes import describe_hash, read_hashes
from ...spec.interfaces import OffloadingManager
from ...spec.types import BlockHash, BlockIdsLoadStoreSpec, BlockStatus, OffloadingEvent, PrepareStoreOutput
from ..manager import CPUOffloadingManager
from .blockfile import BlockFile, IOFaults
from .jobs import TierJob, TierJobResult, TierJobs

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


class DiskTier(TierJobs):
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
        super().__init__(payload_bytes, io_threads, "kvoffload-disk")
        self.manager = DiskBlockTable(num_blocks, policy=policy)
        self.file = BlockFile(path, num_blocks, payload_bytes, digest, direct=direct, faults=faults)

    # -- lookups ------------------------------------------------------------------------
    def lookup(self, block_hashes: Iterable[BlockHash]) -> int:
        """M1; T1: a quarantined block ends the prefix."""
        hashes = read_hashes(block_hashes)
        return self._unquarantined_prefix(hashes, self.manager.lookup(hashes))

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
    def submit_store(
        self, job_id: int, block_hashes: Iterable[BlockHash], payloads: Sequence[Buffer]
    ) -> PrepareStoreOutput | None:
        """M5, then one write per new block; ``None`` (and a failed job) if the tier is full of pinned blocks."""
        hashes = self._new_job(job_id, block_hashes, payloads, "payloads")
        first = {h: i for i, h in reversed(list(enumerate(hashes)))}
        output = self.manager.prepare_store(hashes)
        if output is None:
            self._jobs[job_id] = TierJob(job_id, True, [], [], refused=True)
            return None
        self.quarantined.difference_update(output.block_hashes_evicted)
        slots = output.store_spec.block_ids  # type: ignore[attr-defined]
        to_store = output.block_hashes_to_store
        futures = [
            self._pool.submit(self.file.write, int(slot), h, payloads[first[h]]) for h, slot in zip(to_store, slots)
        ]
        self._storing.update(to_store)
        self._jobs[job_id] = TierJob(job_id, True, to_store, futures)
        return output

    def submit_load(self, job_id: int, block_hashes: Iterable[BlockHash], outs: Sequence[memoryview]) -> None:
        """M2 (pins), then one verified read per block into ``outs`` (T1)."""
        hashes = self._new_job(job_id, block_hashes, outs, "destinations")
        self._refuse_quarantined(hashes)
        slots = self.manager.prepare_load(hashes).block_ids
        futures = [self._pool.submit(self.file.read, int(slot), h, out) for h, slot, out in zip(hashes, slots, outs)]
        self._jobs[job_id] = TierJob(job_id, False, hashes, futures)

    def _finish(self, job: TierJob) -> TierJobResult:
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

    def close(self) -> None:
        super().close()
        self.file.close()
