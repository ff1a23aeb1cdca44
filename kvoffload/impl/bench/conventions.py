"""The two ways a manager is called, timed on the same requests, answers compared.

**vLLM's interface** (``drive_per_key``): what vLLM 0.32's ``OffloadingConnector``
scheduler does for a request (``offloading/scheduler.py``), one request after the other:
``on_new_request(ctx)``; ``lookup(key, ctx)`` per key from the front until the first
non-``HIT`` (``_maximal_prefix_lookup``); ``prepare_load(hit keys, ctx)`` and, when the
worker reports the load, ``complete_load(set(hit keys), ctx)``; after the prefill
``prepare_store(the keys after the hits, ctx)`` and ``complete_store(set(keys_to_store),
ctx)``; ``on_request_finished(ctx)``. The request context carries each key's end-token
position, as the connector sets it. Building the context, slicing and the sets are the
connector's own work: untimed.

**The batch API** (``drive_batch``): the same requests through the contract's calls
(``lookup``, ``prepare_load``/``complete_load``, ``prepare_store``/``complete_store``),
with ``touch(keys)`` where vLLM updates recency (the request's end): the same answers.

Every request's answer (hits, keys to store, evicted keys, or a refusal) is recorded, so
managers that must agree can be compared call for call.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .floor import FloorLRU, FloorLRUPerKey

__all__ = ["PHASES", "Contender", "Run", "VllmCalls", "compare", "contenders", "vllm_calls"]

PHASES = ("lookup", "load", "store", "finish")
#: One request's answer: hits, then (keys to store, evicted keys), or ``None`` if refused.
Answer = tuple[int, "tuple[list[bytes], list[bytes]] | None"]
_PREFILL_CHUNK = 4096
#: The benchmarks' clock: this thread's CPU time (``compare`` says why).
CLOCK = time.thread_time_ns


@dataclass
class Run:
    """One manager driven through one convention: nanoseconds by phase, answers."""

    label: str
    convention: str
    ns: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PHASES, 0))
    blocks: int = 0
    hits: int = 0
    answers: list[Answer] = field(default_factory=list)

    def per_block(self, phase: str | None = None) -> float:
        spent = sum(self.ns.values()) if phase is None else self.ns[phase]
        return spent / self.blocks if self.blocks else float("nan")

    @property
    def hit_ratio(self) -> float:
        return self.hits / self.blocks if self.blocks else float("nan")


class VllmCalls:
    """vLLM 0.32's lookup results and request contexts (imported on first use)."""

    def __init__(self, block_size: int = 16) -> None:
        from vllm.v1.kv_offload.base import LookupResult, ReqContext

        self.results = (LookupResult.HIT, LookupResult.HIT_PENDING, LookupResult.MISS)
        self._context = ReqContext
        self.block_size = block_size

    def context(self, req_id: str, keys: Sequence[bytes]) -> Any:
        ctx = self._context(req_id=req_id)
        for index, key in enumerate(keys, start=1):
            ctx.set_offload_key_position(key, index * self.block_size)
        return ctx


def vllm_calls() -> VllmCalls | None:
    """``VllmCalls``, or ``None`` where vLLM 0.32's offloading interface does not import."""
    try:
        return VllmCalls()
    except ImportError:
        return None


def _store_answer(out: Any) -> tuple[list[bytes], list[bytes]] | None:
    """Keys to store and evicted keys of any manager's store output (untimed)."""
    if out is None:
        return None
    if isinstance(out, tuple):  # the floor
        return list(out[0]), list(out[2])
    if hasattr(out, "keys_to_store"):  # vLLM's PrepareStoreOutput
        return list(out.keys_to_store), list(out.evicted_keys)
    return list(out.block_hashes_to_store), list(out.block_hashes_evicted)


def drive_per_key(manager: Any, keys: list[bytes], calls: VllmCalls, ns: dict[str, int], ctx: Any,
                  tick: int = 0) -> Answer:
    """The connector's calls for one request (module docstring); adds the CPU time of
    each phase to ``ns``, less ``tick`` (one reading of the clock) per interval."""
    hit = calls.results[0]
    clock = CLOCK
    start = clock()
    manager.on_new_request(ctx)
    lookup, hits = manager.lookup, 0
    looked = clock()
    for key in keys:
        if lookup(key, ctx) is not hit:
            break
        hits += 1
    ns["lookup"] += clock() - looked - tick
    ns["finish"] += looked - start - tick
    if hits:
        loaded = keys[:hits]
        loaded_set = set(loaded)
        start = clock()
        manager.prepare_load(loaded, ctx)
        manager.complete_load(loaded_set, ctx)
        ns["load"] += clock() - start - tick
    answer: tuple[list[bytes], list[bytes]] | None = ([], [])
    if hits < len(keys):
        rest = keys[hits:]
        start = clock()
        out = manager.prepare_store(rest, ctx)
        ns["store"] += clock() - start - tick
        answer = _store_answer(out)
        if answer is not None and answer[0]:
            stored = set(answer[0])
            start = clock()
            manager.complete_store(stored, ctx)
            ns["store"] += clock() - start - tick
    start = clock()
    manager.on_request_finished(ctx)
    ns["finish"] += clock() - start - tick
    return hits, answer


def drive_batch(manager: Any, keys: list[bytes], ns: dict[str, int], tick: int = 0) -> Answer:
    """The same request through the batch calls (module docstring); adds the CPU time
    of each phase to ``ns``, less ``tick`` per interval."""
    clock = CLOCK
    start = clock()
    hits = manager.lookup(keys)
    ns["lookup"] += clock() - start - tick
    if hits:
        loaded = keys[:hits]
        start = clock()
        manager.prepare_load(loaded)
        manager.complete_load(loaded)
        ns["load"] += clock() - start - tick
    answer: tuple[list[bytes], list[bytes]] | None = ([], [])
    if hits < len(keys):
        rest = keys[hits:]
        start = clock()
        out = manager.prepare_store(rest)
        ns["store"] += clock() - start - tick
        answer = _store_answer(out)
        if answer is not None and answer[0]:
            start = clock()
            manager.complete_store(answer[0])
            ns["store"] += clock() - start - tick
    start = clock()
    manager.touch(keys)
    ns["finish"] += clock() - start - tick
    return hits, answer


@dataclass
class Contender:
    """A manager to build and the convention it is driven through."""

    label: str
    convention: str  # "vLLM interface" or "batch API"
    build: Callable[[], Any]
    #: Whether its answers must equal those of kvoffload through the same policy.
    must_agree: bool


def contenders(capacity: int, policy: str, calls: VllmCalls | None, reference: bool) -> list[Contender]:
    """The floor (LRU), kvoffload, vLLM 0.32 through its interface; the floor, kvoffload and
    (``reference``) the reference model through the batch API."""
    from kvoffload.impl import CPUOffloadingManager
    from kvoffload.spec import ReferenceManager

    lru = policy == "lru"
    out: list[Contender] = []
    if calls is not None:
        from kvoffload.impl.vllm import make_manager
        from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager as VllmManager

        results = calls.results
        out += [
            Contender("floor (OrderedDict LRU)", "vLLM interface", lambda: FloorLRUPerKey(capacity, results), lru),
            Contender("kvoffload", "vLLM interface", lambda: make_manager(capacity, policy), True),
        ]
        if policy in ("lru", "arc"):  # vLLM's own manager has no S3-FIFO or SIEVE
            out.append(Contender("vLLM 0.32", "vLLM interface",
                                 lambda: VllmManager(num_chunks=capacity, cache_policy=policy), lru))
    out += [
        Contender("floor (OrderedDict LRU)", "batch API", lambda: FloorLRU(capacity), lru),
        # ARC through vLLM's interface follows K5/K6 (request-level recency, store misses
        # reported first), which the batch API has no requests for: its answers may differ.
        Contender("kvoffload", "batch API", lambda: CPUOffloadingManager(capacity, policy=policy),
                  calls is None or policy != "arc"),
    ]
    if reference:
        out.append(Contender("reference", "batch API", lambda: ReferenceManager(capacity, policy=policy), True))
    return out


def prefill_requests(capacity: int) -> list[list[bytes]]:
    """Untimed requests of fresh 36-byte keys that fill a cache of ``capacity`` blocks."""
    keys = [os.urandom(36) for _ in range(capacity)]
    return [keys[i : i + _PREFILL_CHUNK] for i in range(0, capacity, _PREFILL_CHUNK)]


def _warm(policy: str) -> None:
    """Every compiled entry point once (compiled or loaded from the cache), untimed."""
    from kvoffload.impl import CPUOffloadingManager

    from kvoffload.spec import BlockHash

    manager = CPUOffloadingManager(8, policy=policy)
    keys: list[bytes] = [BlockHash(b"w" * 36), BlockHash(b"v" * 36)]
    drive_batch(manager, keys, dict.fromkeys(PHASES, 0))
    drive_batch(manager, keys, dict.fromkeys(PHASES, 0))
    manager.prepare_store([BlockHash(b"u" * 36)])
    manager.complete_store([BlockHash(b"u" * 36)], success=False)


def _drive(contender: Contender, manager: Any, keys: list[bytes], calls: VllmCalls | None,
           ns: dict[str, int], req_id: str, tick: int = 0) -> Answer:
    if contender.convention == "vLLM interface":
        assert calls is not None
        return drive_per_key(manager, keys, calls, ns, calls.context(req_id, keys), tick)
    return drive_batch(manager, keys, ns, tick)


def compare(
    requests: Sequence[list[bytes]],
    capacity: int,
    policy: str,
    calls: VllmCalls | None,
    reference: bool,
) -> tuple[list[Run], list[str]]:
    """Each contender built and filled to capacity (untimed), then all driven on
    ``requests`` interleaved: request by request, every contender in turn (the order
    rotating), so a load change on a shared machine falls on all of them alike.

    Time is the thread's CPU time (``CLOCK``): on a shared machine wall time mostly
    measures how long the process waited for a core. One reading of that clock costs
    about a microsecond, so the cost of a reading, sampled before every request of
    every contender, is taken off each timed interval. The garbage collector is off
    while timing (as ``timeit`` does): its pauses fall on whoever runs when the
    benchmark's own garbage triggers one.

    Returns the runs and the labels of the runs whose answers differ from kvoffload's
    through vLLM's interface (or through the batch API without vLLM), "(may differ)"
    appended where they are allowed to (another algorithm)."""
    _warm(policy)
    prefill = prefill_requests(capacity)
    chosen = contenders(capacity, policy, calls, reference)
    managers = []
    for contender in chosen:
        manager = contender.build()
        for number, keys in enumerate(prefill):
            _drive(contender, manager, keys, calls, dict.fromkeys(PHASES, 0), f"prefill-{number}")
        managers.append(manager)
    del prefill
    runs = [Run(c.label, c.convention) for c in chosen]
    gc.collect()
    gc.disable()
    try:
        for number, keys in enumerate(requests):
            for offset in range(len(chosen)):
                i = (number + offset) % len(chosen)
                tick = -CLOCK() + CLOCK()
                answer = _drive(chosen[i], managers[i], keys, calls, runs[i].ns, f"r{number}", tick)
                runs[i].answers.append(answer)
                runs[i].hits += answer[0]
                runs[i].blocks += len(keys)
    finally:
        gc.enable()
    # kvoffload through vLLM's interface leads; every other run is held to kvoffload of
    # its own convention (the batch API's kvoffload to the lead).
    lead = next(run for run in runs if run.label == "kvoffload")
    leads = {run.convention: run for run in reversed(runs) if run.label == "kvoffload"}
    differs = []
    for contender, run in zip(chosen, runs):
        own = lead if run.label == "kvoffload" else leads.get(run.convention, lead)
        if run is not lead and run.answers != own.answers:
            differs.append(f"{run.label} ({run.convention})" + ("" if contender.must_agree else " (may differ)"))
    return runs, differs
