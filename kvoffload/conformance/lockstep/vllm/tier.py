"""The lockstep machine for vLLM secondary tiers (T7–T13): ``kvoffload conform tier``.

A ``SecondaryTierManager`` (vLLM 0.32/0.33) is driven the way vLLM's tiering manager drives
it — requests and steps, lookups, store jobs that read rows of the primary buffer, loads
into rows right after a ``HIT`` (or later, from an older one), polls and drains — beside
``spec.secondary_tier.SecondaryTierModel``, which knows what the tier was given. The tier
is built by the user's factory, called with keywords
``f(primary_kv_view=, workdir=, num_blocks=, enable_events=)``: a memoryview of a real
``(rows, row_bytes)`` buffer, a fresh directory the example may fill (removed after it),
a capacity in chunks (a tier without one may ignore it) and whether to announce events.

Why a model of the caller and not of a tier: vLLM lets each tier keep what it likes, so
the judge cannot expect a key to be present; it can hold every answer to the bytes and
rows it handed over. A tier that serves the wrong bytes, writes a row it does not own,
reads a store's rows after reporting it, or loses a job fails here with the clause and a
reproduction that runs against the real vLLM classes. A tier whose I/O runs on threads may
answer one call sequence two ways (a poll sees a job or not yet); a failure that does not
repeat when hypothesis replays it is reported as first found (``first_failure``).
"""

from __future__ import annotations

import mmap
import shutil
import tempfile
import time
from collections.abc import Iterable
from typing import Any, ClassVar, NoReturn

import numpy as np
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule
from vllm.v1.kv_offload.base import LookupResult, ReqContext, ScheduleEndContext
from vllm.v1.kv_offload.tiering.base import TransferJob

from ....spec.secondary_tier import SecondaryTierModel, TierJob
from ...reports.result import ConformanceFailure
from ..machine_base import ConformanceMachine, TargetSetupError

__all__ = ["TierMachine", "ROWS", "ROW_BYTES"]

#: The primary buffer a run hands the tier: rows (chunk ids) and bytes per row.
ROWS = 10
ROW_BYTES = 4096  # a page: tiers that open their files with O_DIRECT need whole aligned pages
#: Distinct keys an example draws from (more than a small tier holds: it must evict).
KEYS = 8
#: Seconds an engine step lasts between ``on_schedule_end`` and the next lookups (a tier
#: that looks keys up on a thread, as vLLM's file-system tier does, answers by then).
STEP_SECONDS = 0.002
#: Seconds of steps a tier may answer ``RETRY`` for a key it must keep (T13) before that counts
#: as losing it (generous: a loaded machine may run a lookup thread late).
KEEP_SECONDS = 2.0
#: The source of the call that ends a step, in reproductions.
_END_OF_STEP = "t.on_schedule_end(ScheduleEndContext(new_req_ids=[], preempted_req_ids=[]))"
#: Answers a secondary tier may give (vLLM's docstring); anything else is T7.
_ANSWERS = (LookupResult.HIT, LookupResult.MISS, LookupResult.RETRY, LookupResult.HIT_PENDING)


def _key(i: int) -> bytes:
    """Key ``i``: a 32-byte block hash and group 0, as vLLM's ``make_offload_key`` packs it."""
    return bytes([i + 1]) * 32 + (0).to_bytes(4, "big")


class _Request:
    """One request in flight: its context and what the driver remembers of it."""

    def __init__(self, number: int) -> None:
        self.ctx = ReqContext(req_id=f"r{number}")
        self.hits: list[bytes] = []  # keys answered HIT (a later load may use them)
        self.retry: list[bytes] = []  # keys answered RETRY (asked again next step)
        self.promotions: list[bytes] = []  # hits to load when the step ends


def _clauses(message: str) -> list[str]:
    """The clause ids a model message starts with (``"T8, T10: …"``)."""
    return message.split(":", 1)[0].split(", ")


class TierMachine(ConformanceMachine):
    """Lockstep of a vLLM ``SecondaryTierManager`` and ``SecondaryTierModel`` (T7–T13)."""

    kind = "tier"
    #: the first failure of the run (a threaded tier's may not repeat when replayed)
    first_failure: ClassVar[list[ConformanceFailure]]

    def __init__(self) -> None:
        super().__init__()
        self.log.imports = [
            "import mmap",
            "import tempfile",
            "import time",
            "import numpy as np",
            "from vllm.v1.kv_offload.base import LookupResult, ReqContext, ScheduleEndContext",
            "from vllm.v1.kv_offload.tiering.base import TransferJob",
            "from kvoffload.spec.tiers import payload_of",
            *self.factory_ref.import_lines(),
            "",
            f"buffer = np.frombuffer(mmap.mmap(-1, {ROWS * ROW_BYTES}), np.uint8).reshape({ROWS}, {ROW_BYTES})"
            "  # the primary tier's rows (page-aligned, as vLLM's shared region)",
            f"def put(row, key): buffer[row] = np.frombuffer(payload_of(key, {ROW_BYTES}), np.uint8)",
            "workdir = tempfile.mkdtemp()",
            "def scribble(serial, row):  # the caller reuses a reported job's row",
            f"    buffer[row] = np.frombuffer(payload_of(b'scribble:%d:%d' % (serial, row), {ROW_BYTES}), np.uint8)",
        ]
        self.tier: Any = None
        self.failed = False
        self.workdir = ""
        self.serial = 0

    def command(self) -> str:
        return f"kvoffload conform tier {self.factory_ref.source}"

    def fail(self, clauses: str | Iterable[str], message: str, check: str = "") -> NoReturn:
        self.failed = True
        try:
            super().fail(clauses, message, check)
        except ConformanceFailure as failure:
            if not self.first_failure:
                self.first_failure.append(failure)
            raise

    @initialize(num_blocks=st.integers(1, 5), events=st.booleans())
    def start(self, num_blocks: int, events: bool) -> None:
        self.buffer = np.frombuffer(mmap.mmap(-1, ROWS * ROW_BYTES), np.uint8).reshape(ROWS, ROW_BYTES)
        self.model = SecondaryTierModel(ROWS, ROW_BYTES, num_blocks)
        self.keys = [_key(i) for i in range(KEYS)]
        self.workdir = tempfile.mkdtemp(prefix="kvoffload-tier-")
        arguments = {"primary_kv_view": memoryview(self.buffer.data), "workdir": self.workdir,
                     "num_blocks": num_blocks, "enable_events": events}
        self.construct = self.factory_ref.call({"num_blocks": num_blocks, "enable_events": events}).replace(
            "(", "(primary_kv_view=memoryview(buffer), workdir=workdir, ", 1)
        self.arguments = arguments
        try:
            self.tier = self.factory_ref.factory(**arguments)
        except Exception as error:
            raise TargetSetupError(f"{self.factory_ref.source}(num_blocks={num_blocks}, ...) raised {error!r}") from error
        self.requests = 0
        self.req = self._new_request()
        self.other = self._new_request("other")  # two requests in flight, as a scheduler has many

    def _restart(self) -> None:
        """T12: the drained tier shut down and built again over the same directory (an
        engine restarted; vLLM's file-system tier serves what it stored before)."""
        self.call_or_fail("T12", "shutdown", self.tier.shutdown, source="t.shutdown()")
        self.tier = None
        self.exercised("T12")
        self.log.add(f"t = {self.construct}")
        self.tier = self.call_or_fail("T12", "building the tier again over the same directory",
                                      lambda: self.factory_ref.factory(**self.arguments))
        self.model.rebuilt()
        self.req, self.other = self._new_request(), self._new_request("other")

    # -- requests and steps -------------------------------------------------------------

    def _new_request(self, var: str = "ctx") -> _Request:
        """A new request, ``var`` in the reproduction (``ctx``: the current one)."""
        self.requests += 1
        request = _Request(self.requests)
        self.log.add(f"{var} = ReqContext(req_id='r{self.requests}')")
        self.call_or_fail("T9", "on_new_request", self.tier.on_new_request, request.ctx,
                          source=f"t.on_new_request({var})")
        return request

    def _switch(self) -> None:
        """The other request becomes the current one (``ctx`` in the reproduction)."""
        self.req, self.other = self.other, self.req
        self.log.add("ctx, other = other, ctx")

    @property
    def ctx(self) -> ReqContext:
        return self.req.ctx

    @rule()
    def next_request(self) -> None:
        """The current request finishes and a new one arrives; the older of the two in flight
        becomes the current one (so that each finishes in turn, some of their keys shared)."""
        self.call_or_fail("T9", "on_request_finished", self.tier.on_request_finished, self.ctx,
                          source="t.on_request_finished(ctx)")
        self.req = self._new_request()
        self._switch()

    @rule(data=st.data())
    def end_step(self, data: st.DataObject) -> None:
        """The step ends as vLLM's tiering manager ends it: finished jobs taken, the step's
        promotions (hits to load at the step's end: other calls came between, so they may
        fail) submitted as one load, then ``on_schedule_end``. An engine step's time passes,
        and the keys answered ``RETRY`` in this request are asked again, as vLLM's scheduler
        asks a waiting request's."""
        self.poll()
        for _ in range(2):  # one load per request, as vLLM batches each request's promotions
            promotions, self.req.promotions = self.req.promotions, []
            if promotions:
                self._load(promotions, owed=False)
            self._switch()
        self._end_of_step(log=True)
        retry, self.req.retry = self.req.retry, []
        self._lookups(data, retry)

    def _end_of_step(self, log: bool) -> None:
        """``on_schedule_end``, then an engine step's time (logged as two lines when ``log``)."""
        end = ScheduleEndContext(new_req_ids=[], preempted_req_ids=[])
        self.call_or_fail("T9", "on_schedule_end", self.tier.on_schedule_end, end, source=(
            f"{_END_OF_STEP}; time.sleep({STEP_SECONDS})" if log else ""))
        time.sleep(STEP_SECONDS)

    @rule(data=st.data())
    def touch(self, data: st.DataObject) -> None:
        keys = self.draw_unique(data, self.keys, "keys", 1, 3)
        self.call_or_fail("T9", "touch", self.tier.touch, keys, self.ctx, source=f"t.touch({self._names(keys)}, ctx)")

    # -- lookups, stores, loads ---------------------------------------------------------

    @rule(data=st.data())
    def request(self, data: st.DataObject) -> None:
        """A request's chunks as vLLM's tiering manager handles them: looked up in order up to
        the first that is not a ``HIT``; the hits loaded at once (T8); the rest, computed,
        stored (cascaded) in one job."""
        # Requests share prefixes, as prompts do: chunks from the start of one of two chains,
        # so what one request stores the next finds (hits, loads, evictions under them).
        if data.draw(st.booleans(), label="the other request"):
            self._switch()
        start = data.draw(st.sampled_from([0, 0, 0, KEYS // 2]), label="chain")
        keys = self.keys[start:start + data.draw(st.integers(1, 4), label="chunks")]
        store_rest = data.draw(st.booleans(), label="store the rest")
        hits = self._lookups(data, keys, prefix=True)
        rest = keys[len(hits):]
        if rest and store_rest:
            self._store(rest)

    def _lookups(self, data: st.DataObject, keys: list[bytes], prefix: bool = False) -> list[bytes]:
        """Lookups of ``keys`` (up to the first non-``HIT`` with ``prefix``); the hits, loaded at
        once when drawn. (Every draw is made whatever the tier answers: a threaded tier's
        answers vary from run to run, and hypothesis replays draws.)"""
        when = data.draw(st.sampled_from(["now", "at the step's end", "never"]), label="load the hits")
        hits = []
        for key in keys:
            if self._lookup(key):
                hits.append(key)
            elif prefix:
                break
        if hits and when == "now":
            self._load(hits, owed=True)
        elif when != "never":
            self.req.promotions.extend(k for k in hits if k not in self.req.promotions)
        return hits

    def _lookup(self, key: bytes) -> bool:
        self.exercised("T7")
        answer = self.call_or_fail("T7", "lookup", self.tier.lookup, key, self.ctx)
        self.step()
        self.log.add(f"t.lookup({self.log.name(key)}, ctx)  # {getattr(answer, 'name', answer)}")
        if answer not in _ANSWERS:
            self.fail("T7", f"lookup answered {answer!r}, not a LookupResult")
        if answer is LookupResult.RETRY:
            self.req.retry.append(key)
        if answer is not LookupResult.HIT:
            return False
        fault = self.model.hit_allowed(key)
        if fault:
            self.fail("T7", fault)
        self.req.hits.append(key)
        return True

    @rule(data=st.data())
    def store(self, data: st.DataObject) -> None:
        """A store job of any keys (some may be in the tier already: it skips those)."""
        self._store(self.draw_unique(data, self.keys, "keys", 1, 3))

    def _store(self, keys: list[bytes]) -> None:
        rows = self.model.free_rows(len(keys))
        if rows is None:
            return
        job_id = self._job_id()
        for row, payload in self.model.submit_store(job_id, keys, rows):
            self.buffer[row] = np.frombuffer(payload, np.uint8)
        self.log.add("; ".join(f"put({row}, {self.log.name(key)})" for row, key in zip(rows, keys)))
        job = TransferJob(job_id=job_id, keys=list(keys), chunk_ids=np.array(rows, dtype=np.int64),
                          is_promotion=False, req_context=self.ctx)
        self.call_or_fail("T9", "submit_store", self.tier.submit_store, job, source=(
            f"t.submit_store(TransferJob({job_id}, {self._names(keys)}, np.array({rows}), False, ctx))"))

    @rule(data=st.data())
    def load_earlier_hits(self, data: st.DataObject) -> None:
        """A load of keys answered ``HIT`` earlier in this request (it may fail: calls came between)."""
        picks = data.draw(st.lists(st.integers(0, KEYS - 1), min_size=1, max_size=3, unique=True), label="hits")
        hits = list(dict.fromkeys(self.req.hits))  # (draws must not depend on answers: see _lookups)
        if hits:
            self._load(list(dict.fromkeys(hits[i % len(hits)] for i in picks)), owed=False)

    def _load(self, keys: list[bytes], owed: bool) -> None:
        rows = self.model.free_rows(len(keys))
        if rows is None:
            return
        job_id = self._job_id()
        self.model.submit_load(job_id, keys, rows, owed)
        job = TransferJob(job_id=job_id, keys=list(keys), chunk_ids=np.array(rows, dtype=np.int32),
                          is_promotion=True, req_context=self.ctx)
        self.call_or_fail("T9", "submit_load", self.tier.submit_load, job, source=(
            f"t.submit_load(TransferJob({job_id}, {self._names(keys)}, np.array({rows}), True, ctx))"))

    # -- results, drains, events --------------------------------------------------------

    @rule()
    def poll(self) -> None:
        self.exercised("T9")
        results = self.call_or_fail("T9", "get_finished_jobs", lambda: list(self.tier.get_finished_jobs()),
                                    source="done = list(t.get_finished_jobs())")
        for result in results:
            self._judge_result(result)

    def _judge_result(self, result: Any) -> None:
        successful = getattr(result, "successful_keys", None)
        successful = None if successful is None else [bytes(k) for k in successful]
        job, fault = self.model.finish(result.job_id, bool(result.success), successful)
        if fault:
            self.fail(_clauses(fault), fault)
        assert job is not None
        for key, row in self.model.served(job, bool(result.success), successful):
            self.exercised("T8")
            wrong = self.model.wrong_bytes(key, row, self.buffer[row].tobytes())
            if wrong:
                self.fail(_clauses(wrong), wrong, f"buffer[{row}].tobytes() == payload_of({self.log.name(key)}, {ROW_BYTES})")
        self._take_back(job)

    def _take_back(self, job: TierJob) -> None:
        """The caller reuses a reported job's rows at once (T10): new bytes in each."""
        self.serial += 1
        for row, fill in self.model.scribble(job, self.serial):
            self.buffer[row] = np.frombuffer(fill, np.uint8)
        self.log.add("; ".join(f"scribble({self.serial}, {row})" for row in job.rows))

    @rule(restart=st.integers(0, 7))
    def drain(self, restart: int = 1) -> None:
        """Every job drained and judged (T9); now and then (``restart == 0``) the engine then
        restarts (``_restart``)."""
        self.call_or_fail("T9", "drain_jobs", self.tier.drain_jobs, source="t.drain_jobs()")
        self.poll()
        left = self.model.unreported()
        if left:
            self.fail("T9", f"drain_jobs returned, then get_finished_jobs did not report job(s) {left}")
        if self.arguments["enable_events"]:
            self._settled_events()
        self._kept()
        if restart == 0:
            self._restart()

    def _kept(self) -> None:
        """T13, with nothing in flight: a new request finds every key the tier must keep,
        asked again a step later while it answers ``RETRY`` (for up to ``KEEP_SECONDS``)."""
        keys = self.model.must_keep()
        if not keys:
            return
        self.exercised("T13")
        self.call_or_fail("T9", "on_request_finished", self.tier.on_request_finished, self.ctx,
                          source="t.on_request_finished(ctx)")
        self.req = self._new_request()
        asked, rounds = self._names(keys), 0
        deadline = time.monotonic() + KEEP_SECONDS
        while True:
            rounds += 1
            answers = {key: self.call_or_fail("T7", "lookup", self.tier.lookup, key, self.ctx) for key in keys}
            keys = [key for key, answer in answers.items() if answer is LookupResult.RETRY]
            lost = [key for key, answer in answers.items() if answer not in (LookupResult.HIT, LookupResult.RETRY)]
            if lost or not keys or time.monotonic() > deadline:
                break
            self._end_of_step(log=False)
        self.step()
        self.log.add("\n".join((  # the rounds as the judge asked them: keys still at RETRY, a step later
            f"keys = {asked}",
            f"for _ in range({rounds}):",
            f"    answers = [t.lookup(k, ctx) for k in keys]  # the last: {[a.name for a in answers.values()]}",
            "    if LookupResult.RETRY not in answers or any(a not in (LookupResult.HIT, LookupResult.RETRY) "
            "for a in answers):",
            "        break",
            "    keys = [k for k, a in zip(keys, answers) if a is LookupResult.RETRY]",
            f"    {_END_OF_STEP}; time.sleep({STEP_SECONDS})")))
        if lost or keys:
            self.fail("T13", f"a tier never given more than its capacity's keys answered "
                             f"{'MISS' if lost else f'RETRY for {KEEP_SECONDS} s of steps'} for {len(lost or keys)} key(s) "
                             f"it had reported stored, with nothing in flight")

    def _settled_events(self) -> None:
        """T11 with nothing in flight and every event taken: a key the events last announced
        removed is not answered ``HIT``."""
        self.take_events()
        for key in self.model.announced_removed():
            if self._lookup(key):
                self.fail("T11", "with no job in flight and every event taken, lookup answered HIT for a key the "
                                 "tier's events last announced removed")

    @rule()
    def take_events(self) -> None:
        self.exercised("T11")
        events = self._judge_events("events")
        again = self._judge_events("again")  # (events of jobs that finished meanwhile may come)
        if any(e is f for e in events for f in again):
            self.fail("T11", "take_events returned an event it had returned before")

    def _judge_events(self, name: str) -> list[Any]:
        events: list[Any] = self.call_or_fail("T11", "take_events", lambda: list(self.tier.take_events()),
                                              source=f"{name} = list(t.take_events())")
        for event in events:
            fault = self.model.event_fault([bytes(k) for k in event.keys], bool(event.removed),
                                           bool(getattr(event, "metadata_only", False)))
            if fault:
                self.fail("T11", fault)
        return events

    @invariant()
    def rows_untouched(self) -> None:
        """T10 after every call: rows the tier may not write are as the caller left them."""
        if self.tier is None:
            return
        self.exercised("T10")
        fault = self.model.changed_rows((row, self.buffer[row].tobytes()) for row in list(self.model.expected))
        if fault:
            self.fail("T10", fault)

    def teardown(self) -> None:
        """The example's end: everything drained and judged, unless a step already failed
        (hypothesis tears down after a failure too; its verdict stands)."""
        try:
            if self.tier is not None and not self.failed:
                self.drain()
                self.rows_untouched()
        finally:
            if self.tier is not None:
                self.tier.shutdown()
                self.tier = None
            shutil.rmtree(self.workdir, ignore_errors=True)

    # -- helpers ------------------------------------------------------------------------

    def _job_id(self) -> int:
        self.serial += 1
        return self.serial

    def _names(self, keys: list[bytes]) -> str:
        return "[" + ", ".join(self.log.name(key) for key in keys) + "]"
