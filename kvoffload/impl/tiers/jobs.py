"""A tier's jobs: what the disk and Redis tiers share (job ids, jobs in flight on a
thread pool, stores in flight, quarantined blocks) and what a finished job reports
(vLLM's ``JobResult`` without vLLM). Each tier adds its medium: where bytes go and how a
job's manager calls end (``_finish``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence, Sized
from concurrent.futures import Future, ThreadPoolExecutor, wait

import attrs

from ...spec.errors import ContractViolation
from ...spec.hashes import describe_hash, read_hashes
from ...spec.types import BlockHash

__all__ = ["TierJob", "TierJobs", "TierJobResult", "LOOKUP_HIT", "LOOKUP_MISS", "LOOKUP_RETRY"]

LOOKUP_HIT = "hit"
LOOKUP_MISS = "miss"
LOOKUP_RETRY = "retry"  # a store of the block is in flight (vLLM's RETRY)


@attrs.frozen
class TierJobResult:
    """``success`` when every block of the job landed (store) or verified (load).

    ``done``: the hashes that landed or were served; a partial load serves a subset
    (T1), a partial store announces a subset (T2).
    """

    job_id: int
    success: bool
    done: list[BlockHash]
    nbytes: int = 0


@attrs.define
class TierJob:
    job_id: int
    store: bool
    hashes: list[BlockHash]  # stores: the blocks to write; loads: the pinned blocks
    futures: list[Future[None]]
    refused: bool = False  # a store without room (M5.4), or a load that never started


class TierJobs:
    """The job bookkeeping of a tier (H1 job ids, T1 quarantine, vLLM's RETRY).

    A subclass provides ``lookup`` (M1 on its block table) and ``_finish`` (the manager
    calls of a job whose transfers all ended: M3, M6, M7)."""

    def __init__(self, payload_bytes: int, io_threads: int, thread_name: str) -> None:
        self.payload_bytes = payload_bytes
        self._pool = ThreadPoolExecutor(max_workers=io_threads, thread_name_prefix=thread_name)
        self._jobs: dict[int, TierJob] = {}
        self._storing: set[BlockHash] = set()
        self.quarantined: set[BlockHash] = set()

    def lookup(self, block_hashes: Iterable[BlockHash]) -> int:
        raise NotImplementedError

    def _finish(self, job: TierJob) -> TierJobResult:
        raise NotImplementedError

    def _unquarantined_prefix(self, hashes: list[BlockHash], hits: int) -> int:
        """T1: a quarantined block ends the prefix of ``hits`` ready hashes."""
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

    def _new_job(self, job_id: int, block_hashes: Iterable[BlockHash], buffers: Sized, what: str) -> list[BlockHash]:
        """H1: a new int job id; the hashes, read once, one buffer each (``what``: their name)."""
        if isinstance(job_id, bool) or not isinstance(job_id, int):
            raise TypeError(f"H1: job id must be an int, got {type(job_id).__name__}")
        if job_id in self._jobs:
            raise ValueError(f"H1: job {job_id} is still in flight")
        hashes = read_hashes(block_hashes)
        if len(buffers) != len(hashes):
            raise ValueError(f"{len(buffers)} {what} for {len(hashes)} hashes")
        return hashes

    def _refuse_quarantined(self, hashes: Sequence[BlockHash]) -> None:
        """T1: a quarantined block is never loaded."""
        for block_hash in hashes:
            if block_hash in self.quarantined:
                raise ContractViolation("T1", f"prepare_load of quarantined hash {describe_hash(block_hash)}")

    def get_finished(self) -> list[TierJobResult]:
        """Jobs whose every transfer ended; their manager calls (M3, M6, M7) happen here."""
        finished = [job for job in self._jobs.values() if all(f.done() for f in job.futures)]
        return [self._finish(job) for job in finished]

    def drain(self) -> None:
        """Wait for every transfer in flight (their results stay for ``get_finished``)."""
        wait([f for job in self._jobs.values() for f in job.futures])

    def has_pending_work(self) -> bool:
        return bool(self._jobs)

    def close(self) -> None:
        self.drain()
        self._pool.shutdown(wait=True)
