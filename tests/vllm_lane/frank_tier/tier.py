"""FrankTier: a bounded, file-backed secondary tier for vLLM 0.33 KV offloading.

One preallocated file in ``workdir`` holds ``num_blocks`` slots; in-memory
metadata keeps chunks in LRU order. A chunk is pending while its store is in
flight and pinned while loads read it; only ready, unpinned chunks that the
store job does not itself name are evicted. Stores are all-or-nothing per job;
loads copy every present key. Two I/O threads do the copies. See BUGS.md.
"""

import contextlib
import logging
import os
import queue
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import ClassVar

from vllm.v1.kv_offload.base import (
    Locality,
    LookupResult,
    Medium,
    OffloadingEvent,
    OffloadKey,
    ReqContext,
    RequestOffloadingContext,
)
from vllm.v1.kv_offload.tiering.base import (
    JobId,
    JobResult,
    SecondaryTierManager,
    TransferJob,
)

logger = logging.getLogger(__name__)

_STOP = object()  # worker sentinel


@dataclass
class _Chunk:
    slot: int
    ready: bool = False  # False while the store writing it is in flight
    readers: int = 0  # loads in flight that read this slot


class FrankTier(SecondaryTierManager):
    medium: ClassVar[Medium] = Medium.STORAGE
    num_io_threads: ClassVar[int] = 2

    def __init__(
        self,
        offloading_spec,
        primary_kv_view: memoryview,
        tier_type: str,
        workdir: str,
        num_blocks: int,
        enable_events: bool = False,
    ) -> None:
        super().__init__(offloading_spec, primary_kv_view, tier_type)
        if num_blocks < 0:
            raise ValueError(f"num_blocks must be >= 0, got {num_blocks}")
        self.locality = Locality.LOCAL
        self.num_blocks = int(num_blocks)
        bs = self.block_size_bytes
        # Flat byte view of the primary tier: row r is bytes [r*bs, (r+1)*bs).
        self._flat = primary_kv_view.cast("B")
        self._num_rows = len(self._flat) // bs if bs else 0

        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._chunks: OrderedDict[OffloadKey, _Chunk] = OrderedDict()  # LRU first
        self._free: list[int] = list(range(self.num_blocks - 1, -1, -1))
        self._finished: list[JobResult] = []
        self._inflight = 0
        self._events: list[OffloadingEvent] | None = [] if enable_events else None
        self._closed = False

        os.makedirs(workdir, exist_ok=True)
        self._fd, self._path = tempfile.mkstemp(
            prefix="frank-", suffix=".kv", dir=workdir
        )
        os.ftruncate(self._fd, self.num_blocks * bs)

        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._worker, name=f"frank-io-{i}", daemon=True)
            for i in range(self.num_io_threads)
        ]
        for t in self._threads:
            t.start()

    # ------------------------------------------------------------ queries
    def lookup(self, key: OffloadKey, req_context: ReqContext) -> LookupResult:
        with self._lock:
            chunk = None if self._closed else self._chunks.get(key)
            if chunk is None:
                return LookupResult.MISS
            return LookupResult.HIT if chunk.ready else LookupResult.RETRY

    def touch(self, keys: Collection[OffloadKey], req_context: ReqContext):
        # Walk back to front so the first key (the prefix) ends most recent.
        with self._lock:
            for key in reversed(list(keys)):
                if key in self._chunks:
                    self._chunks.move_to_end(key)

    def on_new_request(self, req_context: ReqContext) -> RequestOffloadingContext:
        return RequestOffloadingContext()

    def on_request_finished(self, req_context: ReqContext) -> None:
        return  # no per-request state

    def get_num_chunks(self) -> int:
        with self._lock:
            return len(self._chunks)

    # ------------------------------------------------------------ stores
    def submit_store(self, job_metadata: TransferJob) -> None:
        keys = list(job_metadata.keys)
        chunk_ids = self._check_job(keys, job_metadata.chunk_ids)
        job_id = job_metadata.job_id
        with self._lock:
            if self._closed:
                self._finished.append(JobResult(job_id, success=False))
                return
            plan = self._plan_store(keys, chunk_ids)
            if not plan:  # everything already present (or pending)
                self._finished.append(JobResult(job_id, True, transfer_bytes=0))
                return
            slots = self._allocate(len(plan), protected=set(keys))
            if slots is None:
                logger.warning("frank: no space for store job %s", job_id)
                self._finished.append(JobResult(job_id, success=False))
                return
            items = []
            for (key, cid), slot in zip(plan, slots):
                self._chunks[key] = _Chunk(slot)  # pending, most recent
                items.append((key, slot, cid))
            self._inflight += 1
            self._tasks.put((self._run_store, job_id, items))

    def _plan_store(self, keys, chunk_ids) -> list[tuple[OffloadKey, int]]:
        """(key, primary row) for each key not yet present, first occurrence."""
        plan, seen = [], set()
        for key, cid in zip(keys, chunk_ids):
            if key in self._chunks or key in seen:
                continue
            seen.add(key)
            plan.append((key, cid))
        return plan

    def _allocate(self, n: int, protected: set) -> list[int] | None:
        """n free slots, evicting LRU chunks if needed; None (no change) if
        not enough chunks can be evicted."""
        need = n - len(self._free)
        if need > 0:
            victims = self._pick_victims(need, protected)
            if victims is None:
                return None
            for key in victims:
                self._remove(key)
            self._emit(victims, removed=True)
        return [self._free.pop() for _ in range(n)]

    def _pick_victims(self, need: int, protected: set) -> list[OffloadKey] | None:
        victims = []
        for key, chunk in self._chunks.items():  # least recent first
            if key not in protected and self._evictable(chunk):
                victims.append(key)
                if len(victims) == need:
                    return victims
        return None

    def _evictable(self, chunk: _Chunk) -> bool:
        return chunk.ready and chunk.readers == 0

    def _remove(self, key: OffloadKey) -> None:
        chunk = self._chunks.pop(key)
        self._free.append(chunk.slot)

    def _run_store(self, job_id: JobId, items) -> None:
        start, ok = time.monotonic(), True
        try:
            for _key, slot, cid in items:
                self._write_slot(slot, cid)
        except Exception:
            logger.exception("frank: store job %s failed", job_id)
            ok = False
        with self._lock:
            keys = [key for key, _, _ in items]
            for key in keys:
                if key not in self._chunks:
                    continue
                if ok:
                    self._chunks[key].ready = True
                else:
                    self._remove(key)  # roll back; it was never announced
            if ok:
                self._emit(keys, removed=False)
            nbytes = len(items) * self.block_size_bytes if ok else None
            self._finish(JobResult(job_id, ok, None, time.monotonic() - start, nbytes))

    # ------------------------------------------------------------ loads
    def submit_load(self, job_metadata: TransferJob) -> None:
        keys = list(job_metadata.keys)
        chunk_ids = self._check_job(keys, job_metadata.chunk_ids)
        job_id = job_metadata.job_id
        with self._lock:
            if self._closed:
                self._finished.append(JobResult(job_id, success=False))
                return
            plan = []  # (key, slot or None if not loadable, primary row)
            for key, cid in zip(keys, chunk_ids):
                chunk = self._chunks.get(key)
                if chunk is not None and chunk.ready:
                    chunk.readers += 1  # pin until the copy is done
                    plan.append((key, chunk.slot, cid))
                else:
                    plan.append((key, None, cid))
            self._inflight += 1
            self._tasks.put((self._run_load, job_id, plan))

    def _run_load(self, job_id: JobId, plan) -> None:
        start, loaded = time.monotonic(), []
        for key, slot, cid in plan:
            if slot is None:
                continue
            try:
                self._read_slot(slot, cid)
                loaded.append(key)
            except Exception:
                logger.exception("frank: load of a chunk in job %s failed", job_id)
        self._finish_load(job_id, plan, loaded, start)

    def _finish_load(self, job_id: JobId, plan, loaded, start: float) -> None:
        with self._lock:
            for key, slot, _ in plan:
                chunk = self._chunks.get(key) if slot is not None else None
                if chunk is not None and chunk.slot == slot and chunk.readers > 0:
                    chunk.readers -= 1
            ok = len(loaded) == len(plan)
            partial = None if ok or not loaded else tuple(loaded)
            nbytes = len(loaded) * self.block_size_bytes
            self._finish(
                JobResult(job_id, ok, partial, time.monotonic() - start, nbytes)
            )

    # ------------------------------------------------------------ I/O
    def _write_slot(self, slot: int, row: int) -> None:
        bs = self.block_size_bytes
        src, off, done = self._flat[row * bs : (row + 1) * bs], slot * bs, 0
        while done < bs:
            n = os.pwrite(self._fd, src[done:], off + done)
            if n <= 0:
                raise OSError(f"short write to slot {slot}")
            done += n

    def _read_slot(self, slot: int, row: int) -> None:
        bs = self.block_size_bytes
        dst, off, done = self._flat[row * bs : (row + 1) * bs], slot * bs, 0
        while done < bs:
            n = os.preadv(self._fd, [dst[done:]], off + done)
            if n <= 0:
                raise OSError(f"short read from slot {slot}")
            done += n

    def _worker(self) -> None:
        while True:
            item = self._tasks.get()
            if item is _STOP:
                return
            fn, *args = item
            try:
                fn(*args)
            except Exception:  # never let a worker die silently
                logger.exception("frank: I/O task crashed")

    # ------------------------------------------------------------ jobs/events
    def _check_job(self, keys: list, chunk_ids) -> list[int]:
        ids = [int(c) for c in chunk_ids]
        if len(ids) != len(keys):
            raise ValueError(f"{len(keys)} keys but {len(ids)} chunk_ids")
        for cid in ids:
            if not 0 <= cid < self._num_rows:
                raise ValueError(f"chunk id {cid} outside [0, {self._num_rows})")
        return ids

    def _finish(self, result: JobResult) -> None:  # caller holds the lock
        self._finished.append(result)
        self._inflight -= 1
        self._idle.notify_all()

    def _emit(self, keys: list, removed: bool) -> None:  # caller holds the lock
        if self._events is not None and keys:
            self._events.append(
                OffloadingEvent(
                    keys=list(keys),
                    medium=self.medium,
                    removed=removed,
                    locality=self.locality,
                    ownership=self.tier_type,
                    removal_expected=True,
                )
            )

    def get_finished_jobs(self) -> Iterable[JobResult]:
        with self._lock:
            done, self._finished = self._finished, []
        return done

    def has_pending_work(self) -> bool:
        with self._lock:
            return self._inflight > 0 or bool(self._finished)

    def take_events(self) -> Iterable[OffloadingEvent]:
        if self._events is None:
            return []
        with self._lock:
            events, self._events = self._events, []
        return events

    def drain_jobs(self) -> None:
        with self._idle:
            self._idle.wait_for(lambda: self._inflight == 0)

    def shutdown(self) -> None:
        """Finish queued jobs, stop and join the I/O threads, drop the file."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for _ in self._threads:
                self._tasks.put(_STOP)  # after every queued task
        for t in self._threads:
            t.join()
        os.close(self._fd)
        with contextlib.suppress(OSError):
            os.unlink(self._path)


def make_tier(
    primary_kv_view: memoryview,
    workdir: str,
    num_blocks: int,
    enable_events: bool = False,
) -> FrankTier:
    return FrankTier(
        offloading_spec=None,
        primary_kv_view=primary_kv_view,
        tier_type="frank",
        workdir=workdir,
        num_blocks=num_blocks,
        enable_events=enable_events,
    )
