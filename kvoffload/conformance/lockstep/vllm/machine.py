"""Lockstep machine for a manager written against vLLM's per-key interface (K1–K7, K9).

It is the contract's ``ManagerMachine`` (M0–M10, I1–I8, L/A in exact mode) with the
target seen through ``VllmManagerView`` (K2), plus what only the per-key interface has:

- every sweep asks ``lookup(key, ctx)`` per key and expects HIT / HIT_PENDING / MISS (K1);
- requests that span several calls and end with ``on_request_finished`` (K5), whose
  ``prepare_store`` calls report store misses once per request (K6);
- failed stores' metadata-only events (K4), ``reset_cache`` (K7) and the usage gauges of ``get_stats()`` (K9);
- strict mode accepts the errors vLLM's interface documents (K3); badly typed calls are
  not made (vLLM's interface types keys statically only): M9's type checks are reported
  as skipped.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from ....spec.admission import DEFAULT_MAX_TRACKER_SIZE, ReferenceAdmission
from ....spec.errors import ContractViolation
from ....spec.clauses import implements
from ....spec.keyed import RequestAccess, group_index, request_finished
from ...judge import invoke, listed
from ..machine_base import TargetSetupError
from ..manager_machine import ManagerMachine
from ..twins import Call, Twins
from ..strategies import large_pool
from .adapter import through_adapter, VllmManagerView
from .detect import parameters, require_vllm
from .recorded import RecordingManager, apply_vllm_call, replaced

__all__ = ["OpenRequest", "VllmManagerMachine"]

#: How often (1 in N) a request is interrupted by ``reset_cache`` (K7) and continues after it.
RESET_INSIDE_ONE_IN = 4

#: The large arm (1 example in about N): a cache of a few hundred blocks and requests,
#: stores and evictions of more than 256 keys at once. Counts above 256 matter: CPython
#: shares int objects only from -5 to 256, so a target comparing sizes by identity
#: (``is``) or a bound overflowing at a byte behaves differently only there.
LARGE_ONE_IN = 8
LARGE_CAPACITIES = (300, 450, 600)
#: the least size of the large arm's batches, victims and groups
LARGE_BATCH = 257
#: N2: the thresholds judged besides the one given: vLLM's admission holds for every
#: ``store_threshold`` >= 2, and its tracker behaves differently at 2 and above it
ADMISSION_THRESHOLD_SPAN = 2
#: N2: 1 in N examples of an admission run sets ``store_threshold`` 1 with the run's tracker
#: size: admission is then off, and no key of an offer may stay unstored for the tracker
THRESHOLD_ONE_ONE_IN = 4


#: K9: vLLM's CPU manager's usage gauges and admission counter (``CPUOffloadingMetrics``), by what each counts.
K9_METRICS = {"usage": "vllm:kv_offload_cpu_cache_usage_perc", "write": "vllm:kv_offload_cpu_cache_write_usage_perc",
              "read": "vllm:kv_offload_cpu_cache_read_usage_perc", "skipped": "vllm:kv_offload_stores_skipped"}


def reported_metrics(stats: Any) -> dict[str, float]:
    """The K9 metrics ``stats`` (an ``OffloadingConnectorStats``, or ``None``) reports, unlabelled,
    by what each counts; read from its self-describing ``data`` (vLLM 0.32's and 0.33's layout)."""
    values = getattr(stats, "data", None)
    values = values.get("data") if isinstance(values, dict) else None
    if not isinstance(values, dict):
        return {}
    found = {metric: values.get(name, {}).get(()) for metric, name in K9_METRICS.items()}
    return {metric: float(value) for metric, value in found.items() if isinstance(value, (int, float))}


class OpenRequest:
    """One of the requests ``interleaved_requests`` keeps open at once: its variable in the
    reproduction, its ``ReqContext``, its key positions and what it observed (K5)."""

    def __init__(self, name: str, ctx: Any, positions: dict[bytes, int]) -> None:
        self.name, self.ctx, self.positions = name, ctx, positions
        self.access = RequestAccess()


@implements("K5")
def grouped_pool(pool: list[bytes]) -> list[bytes]:
    """K5: the pool as vLLM's ``OffloadKey``s of two KV cache groups (hash + 4-byte
    big-endian group index), interleaved: every fourth key from the second is the
    first group's key of the same block hash (one block, two groups)."""
    keys: list[bytes] = []
    for index, key in enumerate(pool):
        if index % 4 == 1:
            key = pool[index - 1]  # the twin: same hash, group 1
        keys.append(key + (index % 2).to_bytes(4, "big"))
    return list(dict.fromkeys(keys))


class VllmManagerMachine(ManagerMachine):
    extra_imports = ("from kvoffload.conformance.lockstep.vllm import as_contract_manager",)
    #: N2: ``store_threshold`` >= 2 is passed to the factory and the model admits as N2 says
    store_threshold: ClassVar[int] = 1
    max_tracker_size: ClassVar[int | None] = None
    #: L1 (``recency``) or N9 (``request-rank``, ``RankOrderManagerMachine``) with --policy lru
    lru_order: ClassVar[str] = "recency"
    #: twins replay the manager's own calls (``recorded``); their probes' calls are requests
    #: of their own, and the lines a twin replays open requests that later lines name
    probe_prelude = ("m.request = None  # each call a request of its own",)
    export_names = True
    #: a positioned request's offers are cut to what fits without eviction (K5): its
    #: provisional order is judged only under N9
    cuts_positioned_offers: ClassVar[bool] = True

    #: this example runs the large arm (``draw_capacity``)
    large: bool = False

    @initialize(data=st.data())
    def setup(self, data: st.DataObject) -> None:
        self.threshold = self.store_threshold
        if self.store_threshold >= 2:  # N2 at the given threshold or one of the next ones
            self.threshold = data.draw(st.integers(self.store_threshold, self.store_threshold + ADMISSION_THRESHOLD_SPAN),
                                       label="store_threshold")
        super().setup(data)
        self.pool = grouped_pool(large_pool(3 * self.capacity) if self.large else self.pool)
        if self.threshold >= 2:
            self.judge.admission = ReferenceAdmission(self.threshold,
                                                      self.max_tracker_size or DEFAULT_MAX_TRACKER_SIZE)
            self.exercised("N2")
        elif self.store_threshold >= 2:  # the threshold-1 arm (``draw_capacity``)
            self.judge.threshold_one = True
            self.exercised("N2")

    def draw_capacity(self, data: st.DataObject) -> int:
        """Mostly the small capacities; now and then the large arm (``LARGE_CAPACITIES``); in an
        admission run, now and then threshold 1 (``THRESHOLD_ONE_ONE_IN``), in the large arm
        when the run's tracker is smaller than that arm's offers (N2)."""
        # a seeded coin, not integers(1, N): hypothesis' small-range draws follow its
        # mutations of earlier examples, which left the arm out of whole runs
        arm = random.Random(data.draw(st.integers(0, 2**32 - 1), label="arm seed"))
        self.large = arm.randrange(LARGE_ONE_IN) == 0
        if self.threshold >= 2 and arm.randrange(THRESHOLD_ONE_ONE_IN) == 0:
            self.threshold = 1  # N2: admission off whatever the tracker's size (no draw: the seeds keep their calls)
            # only an offer longer than the tracker shows one kept at threshold 1: the large arm's
            # are, when the tracker is smaller (a coin here would rarely land: hypothesis reuses
            # a few dozen arm seeds in a run)
            self.large = self.large or (self.max_tracker_size or DEFAULT_MAX_TRACKER_SIZE) < LARGE_BATCH
        if self.large:
            capacity: int = data.draw(st.sampled_from(LARGE_CAPACITIES), label="num_blocks")
            return capacity
        return super().draw_capacity(data)

    def build(self, **arguments: Any) -> Any:
        if self.store_threshold >= 2:  # N2, as vLLM's CPUOffloadingManager takes it
            known = parameters(self.factory_ref.factory)  # None: unknown, the call will tell
            if known is not None and not any(p.name == "store_threshold" or p.kind is p.VAR_KEYWORD for p in known):
                raise TargetSetupError(f"{self.factory_ref.source} takes no store_threshold keyword: "
                                       "--store-threshold (N2) needs a factory that passes it to the manager")
            arguments["store_threshold"] = self.threshold
            if self.max_tracker_size is not None:
                arguments["max_tracker_size"] = self.max_tracker_size
        # twins are judged here but under N2's admission, N9's ranks and in the large arm (``twin_history``)
        twins = self.store_threshold < 2 and self.lru_order != "request-rank" and not self.large
        self.recorder = RecordingManager(super().build(**arguments), require_vllm().ReqContext, twins)
        self.k6_touched: list[bytes] = []  # the store misses the last prepare_store reported (K6)
        self.construct = f"as_contract_manager({self.construct})"
        self.stats.skipped.add("M9 (bad types: vLLM's interface types keys statically only)")
        self.open_request: RequestAccess | None = None
        self.positions: dict[bytes, int] = {}  # the open request's key positions (K5)
        self.store_candidates: list[bytes] = []  # the last prepare_store's absent, admitted keys (N2)
        self.finished_requests = 0
        self.resets_inside = 0  # requests a reset_cache fell inside (K7)
        self.ghost_store_misses = 0  # K6 reports that moved ARC's p
        self.turn_requests = 0  # requests ``interleaved_requests`` opened (their names)
        self.current: OpenRequest | None = None  # the one of them the next calls belong to
        return VllmManagerView(self.recorder)

    def make_twins(self) -> Twins:
        """Twins replaying the manager's own calls (``recorded``), each with its contexts."""
        return Twins(lambda: VllmManagerView(self.fresh_target()), apply_vllm_call)

    def history_length(self) -> int:
        return len(self.recorder.calls)

    def twin_history(self, method: str) -> tuple[Sequence[Call], tuple[Sequence[Call], list[str]]] | None:
        """The manager's calls up to the end of the judged one; a twin without it still
        opens its requests, and in place of a ``prepare_store`` touches the store misses it
        reported (K6: also when it refuses). None under N2's admission (an offer counts,
        stored or not), N9 (a request's first access ranks its keys) and in the large arm
        (its sizes are what it judges; replaying its thousands of calls at each check is not);
        under ``--policy any`` none inside a request with key positions either: N9 lets a
        policy rank such a request's keys as the request observes them, loads included, and
        ``any`` does not know whether the target's policy is one that does."""
        if not self.recorder.recording or (self.judge.adopt is not None and self.positions):
            return None
        start, end = self.span
        touched = self.k6_touched if method == "prepare_store" else []
        lines = [f"twin.touch({listed(self.log.name, touched)})  # K6: what the store may change though it refuses"] \
            if touched else []
        return self.recorder.calls[:end], (replaced(self.recorder.calls[start:end], touched), lines)

    def blame(self, ids: tuple[str, ...], message: str) -> tuple[tuple[str, ...], str]:
        ids = through_adapter(ids)
        if ids and ids[0] in ("L3", "A4", "M10"):
            # exact victims also depend on the per-key interface's recency rules
            ids = (ids[0], *(["K5"] if self.finished_requests else []), *(["K7"] if self.resets_inside else []),
                   *(["K6"] if self.ghost_store_misses else []), *ids[1:])
        return super().blame(ids, message)

    # -- K1: per-key lookups ----------------------------------------------------------------
    def sweep(self, clauses: tuple[str, ...], why: str) -> None:
        """Ask ``lookup(key, ctx)`` for every pool key (K1); the judge compares the answers.
        Twins do not replay a sweep (nor do the contract machine's): it reads, and each
        key's lookup opens a request, so the replays would be mostly sweeps."""
        self.step()
        var = self.log.var("s")
        self.log.add(f"{var} = [m.key_lookup(h) for h in ({', '.join(map(self.log.name, self.pool))},)]")
        self.exercised("K1")
        recording, self.recorder.recording = self.recorder.recording, False
        try:
            self.judged(self.judge.key_sweep(self.target, self.pool, clauses, why, var))
        finally:
            self.recorder.recording = recording

    def probe_keys(self, count: int) -> list[bytes]:
        """``ManagerMachine.probe_keys`` as ``OffloadKey``s of the first KV cache group (K5)."""
        return [h[:28] + bytes(4) for h in super().probe_keys(count)]

    # -- K6: store misses are observed first ----------------------------------------------------
    def call(self, method: str, items: list[Any], shape: str, **keywords: Any) -> Any:
        if method == "prepare_store":
            # keys only (no badly typed calls here); N2: keys not admitted are no store misses (K6) nor observed (K5)
            absent = self.store_candidates = self.judge.store_candidates(items)
            fresh = absent if self.open_request is None else self.open_request.new_store_misses(absent)
            self.k6_touched = list(fresh)
            if fresh:
                self.ghost_store_misses += len(set(fresh) & set(self.ghosts()))
                if self.ghost_store_misses:  # p moved (K6): the judge's M10 replay cannot model it
                    self.judge.calls = None
                self.judge.store_misses(fresh)
                self.exercised("K6")
        self.before_call(method, items)
        return super().call(method, items, shape, **keywords)

    def before_call(self, method: str, items: list[Any]) -> None:
        """What the model learns of a call before it is judged (N9 hooks in here)."""

    # -- K6 steering: ghosts stored again ------------------------------------------------------------
    @precondition(lambda self: bool(self.ghosts()))
    @rule(data=st.data())
    def store_ghosts(self, data: st.DataObject) -> None:
        """K6, A3: store ARC ghosts again (each moves p), promote a ready T1 block to T2
        (so both lists can give victims) and store fresh keys into the full cache: the
        victims then show whether p moved."""
        for _ in range(data.draw(st.integers(1, 3), label="rounds")):
            ghosts = self.ghosts()
            if ghosts:
                self._store_and_complete(self.draw_unique(data, ghosts, "ghosts", most=min(2, len(ghosts))), data)
            ready = self.ready()
            if ready:
                self.call("touch", [data.draw(st.sampled_from(ready), label="promoted")], "list")
        absent = self.forgotten()
        if absent:
            self._prepare_store([data.draw(st.sampled_from(absent), label="fresh")], data)

    # -- K5: requests spanning several calls ------------------------------------------------------
    @rule(data=st.data())
    def finished_request(self, data: st.DataObject) -> None:
        """K5, K6: one request loads some ready keys, offers a batch to prepare_store
        (maybe twice), and finishes; its end updates recency (LRU: a touch; ARC: K5).
        Its keys may carry end-token positions (K5); a ``reset_cache`` may fall inside
        it, after which it goes on (K7)."""
        access = self._open()
        self.positions = self._draw_positions(data)
        if bool(self.ready()) and data.draw(st.booleans(), label="load"):
            self._request_load(access, data)
        self._request_stores(access, data)
        if self._reset_inside(data):
            before = list(access.observed)
            access = self.open_request = RequestAccess()  # K7: what it observed before is forgotten
            self._others_store(data, before)
            if data.draw(st.booleans(), label="goes on"):
                self._request_stores(access, data)
        self._finish(access)
        # Recency shows only in later victims: often store fresh keys into the cache at
        # once, so that the request's keys compete for eviction while the order is new.
        self._store_fresh_rounds(data, data.draw(st.integers(1 if self.positions else 0, 3), label="then store"),
                                 2, "fresh")

    @implements("K5")
    def _finish(self, access: RequestAccess) -> None:
        """K5: ``on_request_finished`` of the open request on the target; the model applies
        its recency (LRU: a touch of its keys in request order; ARC: K5's moves)."""
        self.open_request = None  # later calls are requests of their own
        self.call_or_fail("K5", "on_request_finished", self.target.finish_request, source="m.finish_request()")
        request_finished(self.model.policy, access, self.positions)
        self.finished_requests += 1
        self.judge.calls = None  # no M10 explanation: its replay does not model K5's recency
        self.exercised("K5")

    @precondition(lambda self: self.strict and self.finished_requests > 0)
    @rule(data=st.data())
    def strict_finish_again(self, data: st.DataObject) -> None:
        """K5, K3: the request finished last is finished again (vLLM's scheduler never
        does: ``finished_signaled``). It may raise K3's errors; either way nothing
        changes: the model applies nothing. Fresh keys stored before it are newer than
        that request's keys, so a target that applies its recency again reorders them,
        and fresh stores after it take victims that show whether it did."""
        self._store_fresh_rounds(data, data.draw(st.integers(1, 2), label="stores before"), 2, "fresh before")
        self.step()
        self.log.add("m.finish_again()")
        _, error = invoke(self.target.finish_again)
        if error is not None and not isinstance(error, ContractViolation):  # K3's errors arrive converted
            self.fail(("K3", "K5"), f"on_request_finished of a finished request raised {error!r}")
        self.judge.calls = None
        self.exercised("K5", "K3")
        self._store_fresh_rounds(data, data.draw(st.integers(1, 3), label="then store"), 2, "fresh")

    # -- K5: several requests open at once -----------------------------------------------------
    #: What an open request does next in ``interleaved_requests`` (stores twice as often: they evict)
    turns: ClassVar[tuple[str, ...]] = ("store", "store", "load", "unpin", "others", "touch", "reset")

    @rule(data=st.data())
    def interleaved_requests(self, data: st.DataObject) -> None:
        """K5: one to three requests open at once, each on its own ``ReqContext``, as vLLM's
        scheduler interleaves them. In turn they store (evicting), load (pinning), complete
        loads, touch, see ``reset_cache`` (K7), or let requests of their own store beside them; then they finish in a
        drawn order and fresh keys are stored, so that the recency each end applied shows
        in the victims. A manager that keeps what a request observed anywhere but in that
        request's context, or applies one request's end to another's keys, fails here."""
        self._fill(data)
        opened = [self._open_turns(data) for _ in range(data.draw(st.integers(1, 3), label="requests"))]
        for _ in range(data.draw(st.integers(2, 7), label="rounds")):
            request = data.draw(st.sampled_from(opened), label="request")
            self._enter(request)
            action = data.draw(st.sampled_from(self.turns), label="action")
            getattr(self, f"_turn_{action}")(request, data, opened)
        for request in data.draw(st.permutations(opened), label="finish order"):
            self._enter(request)
            self._finish(request.access)
            self.current, self.positions = None, {}
        for _ in range(data.draw(st.integers(0, 2), label="then store")):
            self._turn_others(None, data, opened)
        self.exercised("K5")

    def _open_turns(self, data: st.DataObject) -> OpenRequest:
        """A new request of ``interleaved_requests``, without key positions, made current."""
        self.turn_requests += 1
        name = f"rq{self.turn_requests}"
        self._open(name)
        request = self.current = OpenRequest(name, self.target.request, {})
        self._enter(request)
        return request

    def _enter(self, request: OpenRequest | None) -> None:
        """Make ``request`` the one the next calls belong to (``None``: calls of their own)."""
        if request is not self.current:
            self.log.add(f"m.request = {request.name if request is not None else None}")
        self.current = request
        self.target.request = request.ctx if request is not None else None
        self.open_request = request.access if request is not None else None
        self.positions = request.positions if request is not None else {}

    def _fill(self, data: st.DataObject) -> None:
        """Store fresh keys (completed) until the cache is full: the requests' stores then evict."""
        while self.free_blocks() > 0:
            absent = self.absent()
            if not absent or not data.draw(st.sampled_from((True, True, True, False)), label="fill"):
                return
            self._store_and_complete([data.draw(st.sampled_from(absent), label="filler")], data)

    def _turn_store(self, request: OpenRequest, data: st.DataObject, _opened: list[OpenRequest]) -> None:
        """The request offers a batch, mostly of absent keys (stored, evicting when full),
        sometimes with present ones; its stores mostly complete at once, sometimes fail or
        stay pending."""
        absent = self.absent()
        items = self.draw_batch(data, min_size=1)
        if absent and data.draw(st.sampled_from((True, True, True, False)), label="fresh"):
            fresh = self.draw_unique(data, absent, "fresh keys", most=min(3, len(absent)))
            items = list(dict.fromkeys(fresh + items[:data.draw(st.integers(0, 1), label="present")]))
        stored = self._offer(request.access, items, data)
        outcome = data.draw(st.sampled_from(("complete", "complete", "fail", "pending")), label="outcome")
        if stored and outcome != "pending":
            self.call("complete_store", stored, "list", success=outcome == "complete")

    def _turn_load(self, request: OpenRequest, data: st.DataObject, _opened: list[OpenRequest]) -> None:
        """The request loads ready keys: pinned while in flight (N9: ranked by it meanwhile)."""
        self._request_load(request.access, data)

    def _turn_unpin(self, _request: OpenRequest, data: st.DataObject, _opened: list[OpenRequest]) -> None:
        """A load in flight completes: its keys are evictable again (N9: at their ranks)."""
        if self.inflight:
            index = data.draw(st.integers(0, len(self.inflight) - 1), label="load")
            self.call("complete_load", self.inflight.pop(index), "list")

    def _turn_touch(self, _request: OpenRequest, data: st.DataObject, _opened: list[OpenRequest]) -> None:
        """``touch`` inside the request (P4: its first key last; N9: fresh numbers)."""
        self.call("touch", self.draw_unique(data, self.pool, "hashes", most=3), "list")

    def _turn_others(self, request: OpenRequest | None, data: st.DataObject,
                     _opened: list[OpenRequest]) -> None:
        """Requests of their own store fresh keys (completed) while the open ones wait: their
        victims show what the open requests' calls did to the order."""
        self._enter(None)
        self._store_fresh_rounds(data, data.draw(st.integers(1, 2), label="other stores"), 3, "others' keys")
        self._enter(request)

    def _turn_reset(self, request: OpenRequest, data: st.DataObject, opened: list[OpenRequest]) -> None:
        """``reset_cache`` inside the open requests (K7): each forgets what it observed
        (N9: it draws a new number at its next access, of the new generation). Then the
        request stores again, others fill the cache and store more: the victims show
        whether its end applies anything from before the reset."""
        if not hasattr(self.target.manager, "reset_cache"):
            return
        self.reset_cache()
        self.resets_inside += 1
        for each in opened:
            each.access = RequestAccess()
        self.open_request = request.access  # the request whose turn this is stays current
        self._turn_store(request, data, opened)
        self._enter(None)
        self._fill(data)
        self._turn_others(request, data, opened)

    # -- the large arm: sizes above 256 -----------------------------------------------------------
    @precondition(lambda self: self.large)
    @rule(data=st.data())
    def large_request(self, data: st.DataObject) -> None:
        """M5, K5, L3/A4 at sizes above 256: one request offers up to the whole free cache
        in one ``prepare_store`` (hundreds of chunks allocated at once), mostly keys of
        group 0 and up to 24 of group 1, in shuffled order with shuffled positions (every
        key, group 0's only, or none), and finishes; its stores complete; then one store
        of fresh keys evicts 257 or more of the cache's idle blocks at once, leaving one
        to hundreds: the survivors show the order the request's end applied (K5)."""
        shuffle = random.Random(data.draw(st.integers(0, 2**32 - 1), label="large shuffle"))
        free = self.free_blocks()
        mode = "none"
        if free >= LARGE_BATCH:  # positioned requests are judged without eviction inside them (K5)
            mode = shuffle.choice(("first group", "all", "none"))  # hypothesis favours the ends
        size = free if mode != "none" else self.capacity - shuffle.randint(0, 8)
        items = self._large_offer(shuffle, size)
        access = self._open()
        self.positions = self._large_positions(shuffle, items, mode)
        stored = self._offer(access, items, data)
        self._finish(access)
        if stored:
            self.call("complete_store", stored, "list", success=True)
        # 257 victims or more; the survivors (anywhere from one to hundreds) show the order
        victims = shuffle.randint(LARGE_BATCH, max(LARGE_BATCH, len(stored) - 1))
        absent = self.absent()
        fresh = shuffle.sample(absent, min(len(absent), self.free_blocks() + victims))
        if fresh:
            self._store_and_complete(fresh, data)

    def _large_offer(self, shuffle: random.Random, size: int) -> list[bytes]:
        """``size`` absent keys, 1 to 24 of group 1 and the rest (257 or more when they fit)
        of group 0, shuffled: a group over 256 keys, and a group without positions in
        "first group" mode."""
        absent = self.absent()
        first = [h for h in absent if group_index(h) == 0]
        second = [h for h in absent if group_index(h) != 0]
        others = min(len(second), shuffle.randint(1, max(1, min(24, size - LARGE_BATCH))))
        items = shuffle.sample(first, min(len(first), max(0, size - others))) + shuffle.sample(second, others)
        shuffle.shuffle(items)
        return items

    def _large_positions(self, shuffle: random.Random, items: list[bytes], mode: str) -> dict[bytes, int]:
        """K5: distinct shuffled end-token positions for every key, group 0's only, or none."""
        if mode == "none":
            return {}
        keys = items if mode == "all" else [h for h in items if group_index(h) == 0]
        return self._set_positions(dict(zip(keys, shuffle.sample(range(len(self.pool)), len(keys)))))

    def _request_stores(self, access: RequestAccess, data: st.DataObject) -> None:
        """One or two ``prepare_store`` calls of the open request, observed for K5/K6."""
        for _ in range(data.draw(st.integers(1, 2), label="stores")):
            items = self.draw_batch(data, min_size=1)
            if self.positions and self.cuts_positioned_offers:
                items = self._without_eviction(items)
            self._offer(access, items, data)

    def _request_load(self, access: RequestAccess, data: st.DataObject) -> None:
        """The open request loads some ready keys (pinned while in flight; observed, K5)."""
        ready = self.ready()
        if ready:
            items = self.draw_unique(data, ready, "hashes")
            self._prepare_load(data, items)
            access.loaded(items)

    def _offer(self, access: RequestAccess, items: list[bytes], data: st.DataObject) -> list[bytes]:
        """``prepare_store`` of ``items`` in the open request, its observations recorded
        in ``access`` (K5, K6); the keys it stored, still pending."""
        ready_now = [h for h in items if h in self.judge.ready_set()]
        self._prepare_store(items, data)
        stored = [h for h in self.store_candidates if self.ref(h) == -1]
        access.offered(self.store_candidates, ready_now, stored, offer=items)
        return stored

    def _open(self, name: str = "") -> RequestAccess:
        """A new request that the next calls belong to (K5): a ``ReqContext`` on the target
        (in the reproduction, also the variable ``name`` when given)."""
        self.log.add(f"{name} = m.request = m.context()" if name else "m.request = m.context()")
        self.target.request = self.target.context()
        self.open_request = RequestAccess()
        return self.open_request

    def _set_positions(self, positions: dict[bytes, int]) -> dict[bytes, int]:
        """K5: the open request's end-token positions, given to the target (and logged)."""
        self.log.add(f"m.set_positions({{{', '.join(f'{self.log.name(h)}: {p}' for h, p in positions.items())}}})")
        self.target.set_positions(positions)
        self.recorder.positions(self.target.request, positions)
        self.exercised("K5")
        return positions

    @implements("K5")
    def _draw_positions(self, data: st.DataObject) -> dict[bytes, int]:
        """K5: no positions, one per key, or one for each key of the first group only;
        equal positions across groups are allowed (vLLM gives a block's keys in every
        group the same end token)."""
        # "all" twice: only then does vLLM order across groups (order_request_keys)
        mode = data.draw(st.sampled_from(("none", "all", "first group", "all")), label="positions")
        if mode == "none":
            return {}
        keys = self.pool if mode == "all" else [h for h in self.pool if group_index(h) == group_index(self.pool[0])]
        return self._set_positions({h: data.draw(st.integers(0, len(self.pool)), label="position") for h in keys})

    def _without_eviction(self, items: list[bytes]) -> list[bytes]:
        """A positioned request's offer cut to what fits without eviction: vLLM 0.33's LRU
        ranks a positioned request's keys provisionally before it finishes (K5), which
        only victims inside the request could show."""
        free = self.free_blocks()
        kept: list[bytes] = []
        for h in items:
            if self.ref(h) is None:
                if free == 0:
                    continue
                free -= 1
            kept.append(h)
        return kept

    def _others_store(self, data: st.DataObject, before: list[bytes]) -> None:
        """Other requests store (and complete) keys while this one is open, first often
        the keys it observed ``before`` the reset: those are present again when it
        finishes, and only K7 says its end leaves them alone."""
        rounds = data.draw(st.integers(0, 2), label="other requests")
        if not rounds:
            return
        held, self.open_request = self.open_request, None
        self.log.add("held, m.request = m.request, None")
        request, self.target.request = self.target.request, None
        again: bool = data.draw(st.booleans(), label="others store its keys")
        if before and again:
            self._store_and_complete(before[:self.capacity], data)
        self._store_fresh_rounds(data, rounds, 3, "others' keys")
        self.log.add("m.request = held")
        self.target.request, self.open_request = request, held

    @implements("K7")
    def _reset_inside(self, data: st.DataObject) -> bool:
        """K7: now and then ``reset_cache`` (and 0.33's ``on_reset_flushed``) while the
        request is open; the pre-reset loads are never completed (the fence)."""
        if not hasattr(self.target.manager, "reset_cache"):
            return False
        if data.draw(st.integers(1, RESET_INSIDE_ONE_IN), label="reset inside") != RESET_INSIDE_ONE_IN:
            return False
        self.reset_cache()  # K7 exercised there
        self.resets_inside += 1
        return True

    def _store_fresh_rounds(self, data: st.DataObject, rounds: int, most: int, label: str) -> None:
        """Up to ``rounds`` stores of absent keys (at most ``most`` each), completed at once:
        the victims they take show the order the calls before them left (L3, K5, N9)."""
        for _ in range(rounds):
            absent = self.absent()
            if not absent:
                return
            self._store_and_complete(self.draw_unique(data, absent, label, most=min(most, len(absent))), data)

    # -- K4: metadata-only events; K9: the usage gauges ----------------------------------------------
    @rule()
    def take_events(self) -> None:
        """M8, I5 on the announced events; K4 on the metadata-only ones; K9 on ``get_stats()``
        (here, so that no rule is added: the seeded draws stay as they were)."""
        super().take_events()
        errors = self.target.metadata_only_errors
        if self.target.metadata_only_events:
            self.exercised("K4")
        if errors:
            self.fail("K4", errors[0])
        self.stats_metrics()

    @implements("K9")
    def stats_metrics(self) -> None:
        """K9: the usage gauges of vLLM's CPU manager a target reports in ``get_stats()`` are
        the model's shares of blocks pending (write), being read (read) and either (usage);
        its ``stores_skipped`` counts the absent keys admission refused since the last call (N2)."""
        if not callable(getattr(self.target.manager, "get_stats", None)):
            return
        # a step of the reproduction only with admission on: stores_skipped counts since the last call;
        # otherwise it changes nothing a clause reads
        source = "m.get_stats()" if self.judge.admission is not None else ""
        stats = self.call_or_fail("K9", "get_stats()", self.target.get_stats, source=source)
        skipped, self.judge.skipped_offers = self.judge.skipped_offers, 0  # counted since this call
        reported = reported_metrics(stats)
        if not reported:
            return  # None (metrics off), or none of vLLM's CPU metrics
        self.exercised("K9")
        refs = [int(block.ref_cnt) for block in self.judge.model.blocks().values()]
        pending, read = refs.count(-1), sum(1 for ref in refs if ref > 0)
        capacity = self.capacity
        expected = {"write": pending / capacity, "read": read / capacity, "usage": (pending + read) / capacity,
                    "skipped": skipped}
        for metric, value in reported.items():
            if abs(value - expected[metric]) > 1e-9:
                state = (f"admission refused {skipped} absent key(s) since the last get_stats()" if metric == "skipped"
                         else f"{pending} of the {capacity} blocks are pending and {read} being read")
                name = K9_METRICS[metric]
                self.fail("K9", f"get_stats() reports {name} = {value!r}, but {state}: {expected[metric]!r}",
                          f"abs(m.get_stats().data['data'][{name!r}][()] - {expected[metric]!r}) < 1e-9")

    # -- K7: reset_cache ------------------------------------------------------------------------------
    @precondition(lambda self: hasattr(self.target.manager, "reset_cache"))
    @rule()
    def reset_cache(self) -> None:
        """K7: every block is dropped, in-flight ones included; the free count is the
        capacity again; no event announces it; pre-reset jobs are never completed."""
        self.take_events()
        self.call_or_fail("K7", "reset_cache", self.target.reset_cache, source="m.reset_cache()")
        self.judge.reset()
        self.inflight.clear()
        self.exercised("K7")
        self.sweep(("K7",), "after reset_cache")

    # -- not made against vLLM's interface ---------------------------------------------------------
    def strict_bad_types(self, data: st.DataObject) -> None:
        """Not a rule here: vLLM's interface does not check key types at run time (K3)."""

    def store_fresh(self, data: st.DataObject) -> None:
        """Not a rule here: vLLM's connector stores only for a request (K5, K6); the request
        rules store fresh keys through ``_store_fresh_rounds``."""
