"""The reference model of a vLLM secondary tier as its caller sees it (T7–T13).

A tier behind vLLM's CPU tier chooses its own capacity and evictions, so no model can say
which keys it still holds. What the caller *can* know is everything the tier was given:
which keys its store jobs carried, which primary rows each job may touch and until when,
and which bytes every row held. That is this model. It answers the questions the judge
asks of every call: may this ``HIT`` be (T7)? are these loaded bytes the key's (T8)? is
this job result one owed (T9)? is every row the tier may not write still as it was (T10)?
are these events about keys the tier was given (T11)? could this store have failed (T12)?
must this key still be there (T13)?

Rows are integers ``0 … rows-1`` of the primary buffer, keys are bytes, and the bytes of
a key are ``payload_of(key, row_bytes)``: a key is a content hash, so every store of it
carries the same bytes, and bytes of the wrong key are told apart from the right ones.
After a job is reported its rows are scribbled over (``scribble``), as vLLM's next user of
them would: a tier that read them late then serves the scribble, and the model names it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from .clauses import implements
from .tiers import payload_of

__all__ = ["SecondaryTierModel", "TierJob"]


@dataclass(frozen=True)
class TierJob:
    """A submitted job: ``store`` (rows read) or ``load`` (rows written)."""

    job_id: int
    kind: str
    keys: tuple[bytes, ...]
    rows: tuple[int, ...]
    #: a load submitted right after ``HIT`` for each of its keys, nothing between (T8); a store
    #: of at most the capacity's keys submitted with no job in flight (T12)
    owed: bool = False


class SecondaryTierModel:
    """What the caller of one tier knows: keys given, jobs in flight, every row's bytes."""

    def __init__(self, rows: int, row_bytes: int, capacity: int) -> None:
        self.row_bytes = row_bytes
        self.capacity = capacity
        #: the bytes each row holds, for rows no load in flight may write (T10)
        self.expected: dict[int, bytes] = {row: bytes(row_bytes) for row in range(rows)}
        self.carried: set[bytes] = set()
        self.in_flight: dict[int, TierJob] = {}
        self.reported: set[int] = set()
        #: scribbled bytes → the row they were written into, and when (a late read is named by them)
        self.scribbles: dict[bytes, tuple[int, str]] = {}
        #: the serial of the scribble that last gave each row back (``free_rows``)
        self.released: dict[int, int] = {}
        #: what each row held when a load job took it (a row left unwritten is named so)
        self.before: dict[int, bytes] = {}
        #: keys whose store job was reported successful since the tier was built (T13)
        self.kept: set[bytes] = set()
        #: each key's last announcement in the events taken so far: removed (True) or stored
        self.announced: dict[bytes, bool] = {}

    def payload(self, key: bytes) -> bytes:
        return payload_of(key, self.row_bytes)

    def free_rows(self, count: int) -> list[int] | None:
        """``count`` rows no job in flight holds, or ``None``: the longest free first, so a
        load seldom lands in the row its key was stored from (a tier that kept a view of
        that row then serves another row's later bytes, and is named for it)."""
        busy = {row for job in self.in_flight.values() for row in job.rows}
        free = sorted((row for row in self.expected if row not in busy), key=lambda row: (self.released.get(row, 0), row))
        return free[:count] if len(free) >= count else None

    def submit_store(self, job_id: int, keys: Sequence[bytes], rows: Sequence[int]) -> list[tuple[int, bytes]]:
        """A store job of ``keys`` from ``rows``: the rows' bytes to write before submitting."""
        owed = not self.in_flight and len(keys) <= self.capacity  # T12
        self.carried.update(keys)
        self.in_flight[job_id] = TierJob(job_id, "store", tuple(keys), tuple(rows), owed)
        writes = [(row, self.payload(key)) for key, row in zip(keys, rows)]
        self.expected.update(writes)
        return writes

    def submit_load(self, job_id: int, keys: Sequence[bytes], rows: Sequence[int], owed: bool) -> None:
        """A load job of ``keys`` into ``rows`` (``owed``: right after their ``HIT``s, T8)."""
        self.in_flight[job_id] = TierJob(job_id, "load", tuple(keys), tuple(rows), owed)
        for row in rows:
            self.before[row] = self.expected.pop(row)  # the tier writes it until the job is reported

    @implements("T7")
    def hit_allowed(self, key: bytes) -> str | None:
        """T7: why ``HIT`` for ``key`` is wrong, or ``None``."""
        if key in self.carried:
            return None
        return "T7: lookup answered HIT for a key no store job submitted to this tier carried"

    @implements("T9", "T12")
    def finish(self, job_id: int, success: bool, successful: Collection[bytes] | None) -> tuple[TierJob | None, str | None]:
        """A job result: the job and what is wrong with the result (``None``: nothing)."""
        job = self.in_flight.pop(job_id, None)
        if job is not None and job.kind == "store" and success:
            self.kept.update(job.keys)
        if job is None:
            again = job_id in self.reported
            return None, (f"T9: get_finished_jobs reported job {job_id} "
                          f"{'a second time' if again else 'which was never submitted'}")
        self.reported.add(job_id)
        if successful is not None and not set(successful) <= set(job.keys):
            return job, f"T8: successful_keys of job {job_id} name keys the job did not carry"
        if job.kind == "load" and job.owed and not success:
            return job, (f"T8: load job {job_id} failed, though lookup had just answered HIT for each of its "
                         f"keys and nothing was called between")
        if job.kind == "store" and job.owed and not success:
            return job, (f"T12: store job {job_id} of {len(job.keys)} key(s) failed, though no other job was in "
                         f"flight and the tier was built for {self.capacity}")
        return job, None

    @implements("T8")
    def served(self, job: TierJob, success: bool, successful: Collection[bytes] | None) -> list[tuple[bytes, int]]:
        """The ``(key, row)`` pairs of a reported load whose bytes the judge must check (T8)."""
        if job.kind != "load":
            return []
        keys = set(job.keys) if success else set(successful or ())
        return [(key, row) for key, row in zip(job.keys, job.rows) if key in keys]

    def wrong_bytes(self, key: bytes, row: int, found: bytes) -> str | None:
        """T8: why ``found`` (row ``row`` after loading ``key``) is not ``key``'s bytes, or ``None``."""
        if found == self.payload(key):
            return None
        origin = self.scribbles.get(found)
        if origin is not None and origin[0] != row:  # another row's later bytes: read late
            return (f"T8, T10: row {row} holds what the caller wrote {origin[1]}, not the loaded key's bytes "
                    f"(the tier read a store's rows after the job was reported, or kept a view of them)")
        if found == self.before.get(row):
            return (f"T8: row {row} was not written: it holds what it held before the load (the job reported "
                    f"it loaded; or the tier copied it from a view of this very row)")
        other = next((k for k in self.carried if self.payload(k) == found), None)
        if other is not None:
            return f"T8: row {row} holds the bytes of another key, not the loaded key's"
        return f"T8: row {row} does not hold the loaded key's bytes (the job reported it loaded)"

    def scribble(self, job: TierJob, serial: int) -> list[tuple[int, bytes]]:
        """A reported job's rows, taken back: new bytes for each (the next user's)."""
        writes = []
        for row in job.rows:
            fill = payload_of(b"scribble:%d:%d" % (serial, row), self.row_bytes)
            self.scribbles[fill] = (row, f"into row {row} after job {job.job_id} was reported")
            writes.append((row, fill))
        self.expected.update(writes)
        self.released.update((row, serial) for row in job.rows)
        return writes

    @implements("T10")
    def changed_rows(self, current: Iterable[tuple[int, bytes]]) -> str | None:
        """T10: the first row the tier may not write whose bytes changed, or ``None``."""
        for row, found in current:
            want = self.expected.get(row)
            if want is not None and found != want:
                holder = next((j for j in self.in_flight.values() if row in j.rows), None)
                during = f" while store job {holder.job_id} was reading it" if holder else ""
                return f"T10: row {row} of the primary buffer changed{during}; no load in flight may write it"
        return None

    @implements("T13")
    def must_keep(self) -> list[bytes]:
        """T13: keys the tier must answer ``HIT`` with nothing in flight: stored successfully
        since it was built, when it was never given more than its capacity's distinct keys."""
        if self.in_flight or len(self.carried) > self.capacity:
            return []
        return sorted(self.kept)

    def rebuilt(self) -> None:
        """The tier was shut down and built again: it may have dropped everything (T12)."""
        self.kept.clear()
        self.announced.clear()  # a new instance: its events start afresh

    def unreported(self) -> list[int]:
        """Jobs not yet reported (T9: none once ``drain_jobs`` returned and results were taken)."""
        return sorted(self.in_flight)

    @implements("T11")
    def event_fault(self, keys: Sequence[bytes], removed: bool, metadata_only: bool = False) -> str | None:
        """T11: why an event about ``keys`` is wrong, or ``None``; the announcement is
        remembered (``announced_removed``) unless it is metadata only (no public change)."""
        strangers = [key for key in keys if key not in self.carried]
        if strangers:
            what = "removed" if removed else "stored"
            return (f"T11: take_events announced as {what} {len(strangers)} key(s) no store job submitted to "
                    f"the tier carried")
        if not metadata_only:
            self.announced.update((key, removed) for key in keys)
        return None

    def announced_removed(self) -> list[bytes]:
        """Keys whose last announcement, in event order, is a removal (T11)."""
        return [key for key, removed in self.announced.items() if removed]
