"""A small in-memory secondary tier for vLLM (bounded, LRU, synchronous) and bugs planted
in it, each a mistake a tier author makes; ``kvoffload conform tier`` must name the clause."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, ClassVar

from vllm.v1.kv_offload.base import LookupResult, Medium, OffloadingEvent, RequestOffloadingContext
from vllm.v1.kv_offload.tiering.base import JobResult, SecondaryTierManager


class MemoryTier(SecondaryTierManager):  # type: ignore[misc]
    """Up to ``num_blocks`` chunks in a dict, least recently used evicted first."""

    medium: ClassVar[Medium] = Medium.CPU

    def __init__(self, primary_kv_view: memoryview, num_blocks: int, enable_events: bool) -> None:
        super().__init__(None, primary_kv_view, "memory")
        self.rows = primary_kv_view.cast("B")
        self.capacity = num_blocks
        self.chunks: OrderedDict[bytes, Any] = OrderedDict()
        self.done: list[JobResult] = []
        self.events: list[OffloadingEvent] | None = [] if enable_events else None

    def row(self, chunk_id: Any) -> memoryview:
        size = self.block_size_bytes
        return self.rows[int(chunk_id) * size:(int(chunk_id) + 1) * size]

    def keep(self, chunk_id: Any) -> Any:
        return bytes(self.row(chunk_id))

    def lookup(self, key: bytes, req_context: Any) -> LookupResult:
        return LookupResult.HIT if key in self.chunks else LookupResult.MISS

    def submit_store(self, job: Any) -> None:
        for key, chunk_id in zip(job.keys, job.chunk_ids):
            if key in self.chunks:
                continue
            if len(self.chunks) >= self.capacity:
                gone, _ = self.chunks.popitem(last=False)
                self.announce([gone], removed=True)
            self.chunks[key] = self.keep(chunk_id)
            self.announce([key], removed=False)
        self.done.append(JobResult(job_id=job.job_id, success=True))

    def submit_load(self, job: Any) -> None:
        loaded = []
        for key, chunk_id in zip(job.keys, job.chunk_ids):
            if key in self.chunks:
                self.row(self.target(chunk_id))[:] = self.chunks[key]
                self.chunks.move_to_end(key)
                loaded.append(key)
        whole = len(loaded) == len(job.keys)
        self.done.append(JobResult(job_id=job.job_id, success=whole, successful_keys=None if whole else loaded))

    def target(self, chunk_id: Any) -> int:
        return int(chunk_id)

    def announce(self, keys: list[bytes], removed: bool) -> None:
        if self.events is not None:
            self.events.append(OffloadingEvent(keys=keys, medium=self.medium, removed=removed))

    def get_finished_jobs(self) -> Iterable[JobResult]:
        done, self.done = self.done, []
        return done

    def take_events(self) -> Iterable[OffloadingEvent]:
        events, self.events = self.events or [], [] if self.events is not None else None
        return events

    def on_new_request(self, req_context: Any) -> RequestOffloadingContext:
        return RequestOffloadingContext()

    def drain_jobs(self) -> None:
        return


class KeepsViews(MemoryTier):
    """Keeps a view of the store's row instead of its bytes (T10, then T8)."""

    def keep(self, chunk_id: Any) -> Any:
        return self.row(chunk_id)


class LoadsIntoNextRow(MemoryTier):
    """Writes a loaded chunk one row past its chunk id (T10)."""

    def target(self, chunk_id: Any) -> int:
        return int(chunk_id) + 1


class ReportsTwice(MemoryTier):
    """Forgets to clear its finished jobs (T9)."""

    def get_finished_jobs(self) -> Iterable[JobResult]:
        return list(self.done)


class AnnouncesStrangers(MemoryTier):
    """Names an evicted key by a key of its own making in the removed event (T11)."""

    def announce(self, keys: list[bytes], removed: bool) -> None:
        super().announce([k + b"!" for k in keys] if removed else keys, removed)


class AlwaysRetries(MemoryTier):
    """Answers ``RETRY`` to every lookup, as a tier whose lookup thread never delivers (T13)."""

    def lookup(self, key: bytes, req_context: Any) -> LookupResult:
        return LookupResult.RETRY


def _factory(cls: type[MemoryTier]) -> Any:
    def make(primary_kv_view: memoryview, workdir: str, num_blocks: int, enable_events: bool = False) -> MemoryTier:
        return cls(primary_kv_view, num_blocks, enable_events)

    make.__name__ = make.__qualname__ = f"make_{cls.__name__}"
    return make


make_memory_tier = _factory(MemoryTier)
make_keeps_views = _factory(KeepsViews)
make_loads_into_next_row = _factory(LoadsIntoNextRow)
make_reports_twice = _factory(ReportsTwice)
make_announces_strangers = _factory(AnnouncesStrangers)
make_always_retries = _factory(AlwaysRetries)
