"""The shared Redis tier (T1, T3–T6): one block table on a Redis server, many clients.

``RedisBlockTable`` is an ``OffloadingManager`` (M1–M10, exact LRU) whose whole state
lives on the server, namespaced by the KV layout digest (T3); each call is one
server-side script (T6, :mod:`.redis_scripts`). Each client has an id; its pins and
pending blocks carry leases of ``lease_ms`` (T4), reclaimed by whichever client's next
call finds them expired. ``RedisTier`` adds the bytes: stores and loads are jobs run on a
small thread pool; a record is staged under a key of its own (a plain ``SET``) and moved
into the block's slot by ``complete_store`` only while the writer still holds the block
(T4), and every read is verified (T1, T5).

The server must run with ``--maxmemory-policy noeviction``: our policy decides
evictions, and a server that drops keys on its own would lose blocks the table still
counts. ``RedisBlockTable`` checks the setting at start.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import redis

from ...spec.errors import ContractViolation
from ...spec.hashes import describe_hash, read_hashes
from ...spec.interfaces import OffloadingManager
from ...spec.types import BlockHash, BlockIdsLoadStoreSpec, OffloadingEvent, PrepareStoreOutput
from .jobs import TierJob, TierJobResult, TierJobs
from .records import RecordError, copy_bytes, pack_header, record_size, verify_record
from .redis_scripts import PRELUDE, SCRIPTS

__all__ = ["RedisLoadStoreSpec", "RedisBlockTable", "RedisTier"]

Clock = Callable[[], int]


class RedisLoadStoreSpec(BlockIdsLoadStoreSpec):
    """Slots of a Redis tier's namespace; ``medium() == "REDIS"``."""

    @staticmethod
    def medium() -> str:
        return "REDIS"


def _new_client_id() -> str:
    return f"{os.getpid()}-{secrets.token_hex(4)}"


class RedisBlockTable(OffloadingManager):
    """The block table of ``num_blocks`` slots in namespace ``digest`` on ``server`` (T3–T6)."""

    medium = "REDIS"

    def __init__(
        self,
        server: redis.Redis,
        num_blocks: int,
        digest: bytes,
        *,
        client_id: str | None = None,
        lease_ms: int = 30_000,
        clock: Clock | None = None,
        enable_events: bool = False,
        block_size: int = 16,
    ) -> None:
        self.server = server
        self.prefix = f"kvo:{digest.hex()}:"
        self.client_id = client_id or _new_client_id()
        if "|" in self.client_id:
            raise ValueError(f"T4: client_id={self.client_id!r} must not contain '|'")
        self.lease_ms = int(lease_ms)
        self.clock = clock
        self.enable_events = bool(enable_events)
        self.block_size = block_size
        self._events: list[OffloadingEvent] = []
        self._scripts = {name: server.register_script(PRELUDE + body) for name, body in SCRIPTS.items()}
        policy = server.config_get("maxmemory-policy").get("maxmemory-policy")
        if policy != "noeviction":
            raise ValueError(f"S4: the Redis server runs maxmemory-policy={policy!r}; the tier needs 'noeviction'")
        capacity = int(self._call("init", num_blocks))
        if capacity != num_blocks:
            raise ValueError(f"S4: namespace {self.prefix} holds {capacity} blocks, not num_blocks={num_blocks}")
        self.num_blocks = num_blocks

    def _call(self, name: str, *args: Any) -> Any:
        now = self.clock() if self.clock is not None else 0
        return self._scripts[name](keys=[self.prefix], args=[now, *args])

    # -- M1, M4 -------------------------------------------------------------------------
    def lookup(self, block_hashes: Iterable[BlockHash]) -> int:
        hashes = read_hashes(block_hashes)
        return int(self._call("lookup", *hashes)) if hashes else 0

    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        hashes = read_hashes(block_hashes)
        if hashes:
            self._call("touch", *hashes)

    # -- M2, M3 -------------------------------------------------------------------------
    def prepare_load(self, block_hashes: Iterable[BlockHash]) -> RedisLoadStoreSpec:
        hashes = read_hashes(block_hashes)
        if not hashes:
            return RedisLoadStoreSpec([])
        try:
            slots = self._call("prepare_load", self.lease_ms, self.client_id, *hashes)
        except redis.ResponseError as error:
            raise self._violation(error, hashes) from None
        return RedisLoadStoreSpec([int(s) for s in slots])

    def complete_load(self, block_hashes: Iterable[BlockHash], strict: bool = True) -> None:
        """M3; ``strict=False`` (T4): release only the pins this client still holds."""
        hashes = read_hashes(block_hashes)
        if not hashes:
            return
        try:
            self._call("complete_load", self.client_id, int(strict), *hashes)
        except redis.ResponseError as error:
            raise self._violation(error, list(dict.fromkeys(hashes)), one_based=True) from None

    @staticmethod
    def _violation(error: redis.ResponseError, hashes: list[BlockHash], one_based: bool = False) -> ContractViolation:
        words = str(error).split()
        clause = next((w for w in words if w in ("M2", "M3")), None)
        if clause is None:
            return ContractViolation("T6", f"the server refused the call: {error}")
        index = int(words[-1]) - (1 if one_based else 0)
        what = "prepare_load of " + words[words.index(clause) + 1] if clause == "M2" else "complete_load without a pin on"
        return ContractViolation(clause, f"{what} hash {describe_hash(hashes[index])}")

    # -- M5, M6, M7 ---------------------------------------------------------------------
    def prepare_store(self, block_hashes: Iterable[BlockHash]) -> PrepareStoreOutput | None:
        hashes = read_hashes(block_hashes)
        if not hashes:
            return PrepareStoreOutput([], RedisLoadStoreSpec([]), [])
        answer = self._call("prepare_store", self.lease_ms, self.client_id, *hashes)
        if answer is None:
            return None
        to_store, slots, evicted = ([BlockHash(bytes(h)) for h in part] for part in answer)
        if self.enable_events and evicted:
            self._queue_event(evicted, removed=True)
        return PrepareStoreOutput(to_store, RedisLoadStoreSpec([int(s) for s in slots]), evicted)

    def stage(self, block_hash: BlockHash, record: memoryview | bytes) -> None:
        """Stage the record of a block this client holds pending: a plain ``SET`` (the fast path)
        with a TTL of one lease, so a writer that dies leaves nothing behind (T4).
        ``complete_store`` moves it into the block's slot atomically, if the lease still holds."""
        staged = self.prefix.encode() + b"w:" + self.client_id.encode() + b"|" + bytes(block_hash)
        self.server.set(staged, record, px=self.lease_ms)

    def complete_store(self, block_hashes: Iterable[BlockHash], success: bool = True) -> None:
        if not isinstance(success, bool):
            raise TypeError(f"M9: success must be a bool, got {type(success).__name__}")
        self.finish_store(block_hashes, success, need_record=False)

    def finish_store(self, block_hashes: Iterable[BlockHash], success: bool, need_record: bool = True) -> list[BlockHash]:
        """M6/M7 on the blocks this client still holds pending; returns those (T4).

        ``need_record``: a block whose staged record is missing is a failed store (T2).
        """
        hashes = read_hashes(block_hashes)
        if not hashes:
            return []
        answer = self._call("complete_store", self.client_id, int(success), int(need_record), *hashes)
        done = [BlockHash(bytes(h)) for h in answer]
        if success and self.enable_events and done:
            self._queue_event(done, removed=False)
        return done

    # -- M8 and audits ------------------------------------------------------------------
    def take_events(self) -> Iterable[OffloadingEvent]:
        events, self._events = self._events, []
        return events

    def _queue_event(self, block_hashes: list[BlockHash], removed: bool) -> None:
        self._events.append(OffloadingEvent(list(block_hashes), self.block_size, self.medium, removed))

    def stats(self) -> tuple[int, int, int]:
        """(free slots, present blocks, live leases), after reclaiming expired leases (E2, T4)."""
        free, present, leases = self._call("stats")
        return int(free), int(present), int(leases)

    def get_num_free_blocks(self) -> int:
        return self.stats()[0]

    def blocks_ref_counts(self) -> dict[BlockHash, int]:
        """Every present hash and its ref_cnt (an audit; not atomic with other calls)."""
        raw: dict[bytes, bytes] = self.server.hgetall(self.prefix + "st")  # type: ignore[assignment]
        return {BlockHash(bytes(h)): int(rc) for h, rc in raw.items()}

    def slot_key(self, slot: int) -> str:
        return f"{self.prefix}b:{slot}"


class RedisTier(TierJobs):
    """Jobs of bytes over a ``RedisBlockTable`` (T1, T4, T5): the Redis counterpart of ``DiskTier``."""

    medium = "REDIS"

    def __init__(self, table: RedisBlockTable, payload_bytes: int, digest: bytes, *, io_threads: int = 4) -> None:
        super().__init__(payload_bytes, io_threads, "kvoffload-redis")
        self.table = table
        self.digest = digest

    def lookup(self, block_hashes: Iterable[BlockHash]) -> int:
        """M1 and T1; a server that cannot be reached answers a miss."""
        hashes = read_hashes(block_hashes)
        try:
            hits = self.table.lookup(hashes)
        except redis.ConnectionError:
            return 0
        return self._unquarantined_prefix(hashes, hits)

    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        try:
            self.table.touch(block_hashes)
        except redis.ConnectionError:
            pass  # a recency hint (M4); lost with the server

    def _write(self, block_hash: BlockHash, payload: memoryview | bytes) -> None:
        record = memoryview(bytearray(record_size(self.payload_bytes)))
        copy_bytes(record[record_size(0) :], memoryview(payload).cast("B"))
        pack_header(record, self.digest, block_hash, self.payload_bytes)
        self.table.stage(block_hash, record)

    def _read(self, slot: int, block_hash: BlockHash, out: memoryview) -> None:
        record = self.table.server.get(self.table.slot_key(slot))
        if not isinstance(record, bytes):
            raise RecordError(f"T5: slot {slot} holds no record")
        payload = verify_record(memoryview(record), self.digest, block_hash, self.payload_bytes)
        copy_bytes(memoryview(out).cast("B"), payload)

    def submit_store(
        self, job_id: int, block_hashes: Iterable[BlockHash], payloads: Sequence[memoryview | bytes]
    ) -> PrepareStoreOutput | None:
        """M5, then one checked write per new block (T2, T4)."""
        hashes = self._new_job(job_id, block_hashes, payloads, "payloads")
        first = {h: i for i, h in reversed(list(enumerate(hashes)))}
        try:
            output = self.table.prepare_store(hashes)
        except redis.ConnectionError:
            output = None  # a failed job; blocks it may have allocated are reclaimed by lease (T4)
        if output is None:
            self._jobs[job_id] = TierJob(job_id, True, [], [], refused=True)
            return None
        self.quarantined.difference_update(output.block_hashes_evicted)
        to_store = output.block_hashes_to_store
        futures = [self._pool.submit(self._write, h, payloads[first[h]]) for h in to_store]
        self._storing.update(to_store)
        self._jobs[job_id] = TierJob(job_id, True, to_store, futures)
        return output

    def submit_load(self, job_id: int, block_hashes: Iterable[BlockHash], outs: Sequence[memoryview]) -> None:
        """M2 (pins under a lease, T5), then one verified read per block (T1)."""
        hashes = self._new_job(job_id, block_hashes, outs, "destinations")
        self._refuse_quarantined(hashes)
        try:
            slots = self.table.prepare_load(hashes).block_ids
        except redis.ConnectionError:
            self._jobs[job_id] = TierJob(job_id, False, hashes, [], refused=True)
            return
        futures = [self._pool.submit(self._read, int(s), h, o) for h, s, o in zip(hashes, slots, outs)]
        self._jobs[job_id] = TierJob(job_id, False, hashes, futures)

    def _finish(self, job: TierJob) -> TierJobResult:
        del self._jobs[job.job_id]
        ok = [f.exception() is None for f in job.futures]
        if job.refused and not job.store:  # the load never started: the server was unreachable
            return TierJobResult(job.job_id, False, [], 0)
        done = [h for h, good in zip(job.hashes, ok) if good]
        failed = [h for h, good in zip(job.hashes, ok) if not good]
        size = self.payload_bytes
        try:
            if job.store:
                self._storing.difference_update(job.hashes)
                landed = self.table.finish_store(done, success=True)  # M6 (T4: still ours)
                self.table.finish_store(failed, success=False)  # T2 → M7
                success = not job.refused and len(landed) == len(job.hashes)
                return TierJobResult(job.job_id, success, landed, len(landed) * size)
            self.quarantined.update(failed)  # T1
            self.table.complete_load(job.hashes, strict=False)  # M3 on the pins still held (T4)
        except redis.RedisError:
            # The server is gone: the job failed; the leases reclaim its blocks (T4).
            return TierJobResult(job.job_id, False, [] if job.store else done, 0)
        return TierJobResult(job.job_id, not failed, done, len(done) * size)

