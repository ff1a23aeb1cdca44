"""The two ways a manager is called, timed on the same requests, answers compared.

**vLLM's interface** (``drive_per_key``): what vLLM's ``OffloadingConnector`` scheduler
(``offloading/scheduler.py``; 0.32 and 0.33 alike for these requests, 0.33 also holding the
manager's lock for the whole scheduler step, not taken here) does for a request, one
request after the other:
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

Every manager runs in a pass of its own over the same requests (nothing another manager
built alive in the heap while it is timed); every request's answer (hits, and a digest of
the keys to store and the evicted keys, or a refusal) is recorded, and the recorded answers
of managers that must agree are compared afterwards, request by request.

**Repeats** (``compare(repeat=N)``, the benches' ``--repeat``): the passes run in rounds,
every contender once per round in the same order, so that a slow spell of a shared machine
(one pass of the same floor read 471 and 572 ns per block in one run) falls on different
contenders in different rounds; each contender's figures are then the median of its
rounds, phase by phase, with the least and greatest total beside them. A contender must
answer every round as it did the first (the requests are the same): otherwise the run
fails naming the round and the request.
"""

from __future__ import annotations

import gc
import hashlib
import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .floor import FloorLRU, FloorLRUPerKey

__all__ = ["PHASES", "Contender", "Run", "VllmCalls", "compare", "contenders", "first_difference",
           "median_of", "spread_of", "vllm_calls", "warm"]

PHASES = ("lookup", "load", "store", "finish")
#: One request's answer: hits, then (keys to store, evicted keys), or ``None`` if refused.
Answer = tuple[int, "tuple[list[bytes], list[bytes]] | None"]
#: One request's answer as recorded: hits, then (how many keys to store, how many evicted,
#: a digest of both lists in order), or ``None`` if refused. Compact, so that the answers
#: a pass records keep none of its keys alive while the next pass is timed.
Recorded = tuple[int, "tuple[int, int, bytes] | None"]
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
    answers: list[Recorded] = field(default_factory=list)
    #: Total ns per block of each round this run is the median of (``median_run``); empty
    #: for a single pass.
    rounds: list[float] = field(default_factory=list)

    def per_block(self, phase: str | None = None) -> float:
        spent = sum(self.ns.values()) if phase is None else self.ns[phase]
        return spent / self.blocks if self.blocks else float("nan")

    def spread(self) -> str:
        """``spread_of`` the rounds' totals per block."""
        return spread_of(self.rounds)

    @property
    def hit_ratio(self) -> float:
        return self.hits / self.blocks if self.blocks else float("nan")


class VllmCalls:
    """The installed vLLM's lookup results and request contexts (imported on first use),
    and its name in the tables: ``label``, "vLLM 0.32" or "vLLM 0.33" (its release)."""

    def __init__(self, block_size: int = 16) -> None:
        from vllm.v1.kv_offload.base import LookupResult, ReqContext

        from kvoffload.impl.vllm import RELEASE  # ImportError for a vLLM our adapter does not speak

        self.results = (LookupResult.HIT, LookupResult.HIT_PENDING, LookupResult.MISS)
        self._context = ReqContext
        self.block_size = block_size
        self.label = f"vLLM {RELEASE}"

    def context(self, req_id: str, keys: Sequence[bytes]) -> Any:
        ctx = self._context(req_id=req_id)
        for index, key in enumerate(keys, start=1):
            ctx.set_offload_key_position(key, index * self.block_size)
        return ctx


def vllm_calls() -> VllmCalls | None:
    """``VllmCalls``, or ``None`` where vLLM's offloading interface does not import."""
    try:
        return VllmCalls()
    except ImportError:
        return None


def vllm_batch_manager(capacity: int, policy: str) -> Any:
    """vLLM's own ``CPUOffloadingManager`` of a release whose connector still called the
    batch API (0.19: ``lookup(block_hashes) -> int``), to be called as is. ``TypeError`` on
    0.32 and later (``num_chunks``), ``ImportError`` without vLLM."""
    from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager as VllmManager

    return VllmManager(block_size=16, num_blocks=capacity, cache_policy=policy)


def installed_vllm() -> str:
    """The installed vLLM as the tables name it: "vLLM" and its release (``ImportError``
    without vLLM)."""
    from vllm import __version__

    return "vLLM " + ".".join(__version__.split(".")[:2])


def vllm_batch_release() -> str | None:
    """``installed_vllm()`` ("vLLM 0.19") where vLLM's own manager speaks the batch API,
    else ``None``."""
    try:
        vllm_batch_manager(1, "lru")
    except Exception:  # no vLLM, or one of the per-key generation
        return None
    return installed_vllm()


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
    """The floor (LRU), kvoffload, the installed vLLM's own manager through its interface;
    the floor, kvoffload, vLLM 0.19's own manager where that is installed (its connector
    called the batch API) and (``reference``) the reference model through the batch API.

    vLLM's LRU must give kvoffload's answers: both keep the installed vLLM's order (L1 on
    0.32; on 0.33 both rank an open request's keys by position, N9), vLLM's ARC is another
    algorithm. Under N9 the floor (L1) and the batch API (no requests: L1) may differ from
    kvoffload through vLLM's interface."""
    from kvoffload.impl import CPUOffloadingManager
    from kvoffload.spec import ReferenceManager
    from kvoffload.spec.rank_lru import detect_lru_order

    lru = policy == "lru"
    ranked = False  # kvoffload through vLLM's interface ranks by request (N9)
    out: list[Contender] = []
    if calls is not None:
        from kvoffload.impl.vllm import make_manager
        from kvoffload.impl.vllm.features import lru_order
        from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager as VllmManager

        results = calls.results
        ours = lru_order(policy)  # what make_manager(capacity, policy) keeps
        ranked = lru and ours == "request-rank"
        out += [
            Contender("floor (OrderedDict LRU)", "vLLM interface", lambda: FloorLRUPerKey(capacity, results),
                      lru and not ranked),
            Contender("kvoffload", "vLLM interface", lambda: make_manager(capacity, policy), True),
        ]
        if policy in ("lru", "arc"):  # vLLM's own manager has no S3-FIFO or SIEVE
            same_order = lru and detect_lru_order(VllmManager(num_chunks=1, cache_policy=policy)) == ours
            out.append(Contender(calls.label, "vLLM interface",
                                 lambda: VllmManager(num_chunks=capacity, cache_policy=policy), same_order))
    out += [
        Contender("floor (OrderedDict LRU)", "batch API", lambda: FloorLRU(capacity), lru),
        # ARC through vLLM's interface follows K5/K6 (request-level recency, store misses
        # reported first), which the batch API has no requests for: its answers may differ.
        Contender("kvoffload", "batch API", lambda: CPUOffloadingManager(capacity, policy=policy),
                  calls is None or (policy != "arc" and not ranked)),
    ]
    batch_release = vllm_batch_release() if calls is None and policy in ("lru", "arc") else None
    if batch_release is not None:  # 0.19: the batch API is vLLM's interface; its LRU keeps L1, as ours
        out.append(Contender(batch_release, "batch API", lambda: vllm_batch_manager(capacity, policy), lru))
    if reference:
        out.append(Contender("reference", "batch API", lambda: ReferenceManager(capacity, policy=policy), True))
    return out


def prefill_requests(capacity: int, seed: int = 0, key_bytes: int = 36) -> Iterator[list[bytes]]:
    """Untimed requests of ``key_bytes``-byte keys (36: vLLM's keys), unrelated to any
    workload's, every bench's prefill: twice ``capacity``, so the cache is full, so
    eviction happens from the start, and so are ARC's ghost lists (``capacity`` blocks
    evicted into B1), the state of a cache after a while in service. Filling only to
    capacity left ARC's ghost memory untouched, so the timed part paid the operating
    system's first touch of each ghost page (35-178 ns per stored block at 10^6, varying
    run to run), a start-up cost no long-running server pays again. The same keys for the
    same ``seed``, so every pass starts alike; made a request at a time (at 10^7 blocks the
    keys of the whole prefill would take gigabytes)."""
    make = random.Random(f"prefill/{seed}/{capacity}").randbytes
    chunk = min(_PREFILL_CHUNK, capacity)  # each request fits the cache
    for start in range(0, 2 * capacity, chunk):
        yield [make(key_bytes) for _ in range(min(chunk, 2 * capacity - start))]


def record(answer: Answer) -> Recorded:
    """The compact form of one request's answer (``Recorded``)."""
    hits, store = answer
    if store is None:
        return hits, None
    digest = hashlib.blake2b(digest_size=16)
    for key in store[0]:
        digest.update(key)
    digest.update(b"|evicted|")
    for key in store[1]:
        digest.update(key)
    return hits, (len(store[0]), len(store[1]), digest.digest())


def _describe(got: Recorded, want: Recorded, whom: str) -> str:
    if got[0] != want[0]:
        return f"hits {got[0]}, {whom} {want[0]}"
    if got[1] is None or want[1] is None:
        return f"store {'refused' if got[1] is None else 'accepted'}, {whom}'s " + (
            "refused" if want[1] is None else "accepted")
    (stored, evicted, _), (want_stored, want_evicted, _) = got[1], want[1]
    if (stored, evicted) != (want_stored, want_evicted):
        return f"{stored} keys to store and {evicted} evicted, {whom} {want_stored} and {want_evicted}"
    return f"other keys to store or evicted ({stored} and {evicted}, as many as {whom}'s)"


def first_difference(got: Sequence[Recorded], want: Sequence[Recorded], whom: str = "kvoffload") -> str | None:
    """Where the recorded answers ``got`` first differ from ``want`` (``whom``'s: kvoffload's,
    or a contender's own first round), and how; ``None`` where they are equal."""
    for number, (mine, theirs) in enumerate(zip(got, want)):
        if mine != theirs:
            return f"request {number}: {_describe(mine, theirs, whom)}"
    if len(got) != len(want):
        return f"{len(got)} answers, {whom} {len(want)}"
    return None


def warm(policy: str) -> None:
    """Every compiled entry point compiled or loaded from the cache (``runtime.wait``: also
    those the calls below do not reach, such as N9's, which a pass's prefill may not reach
    either: its first call would be timed), then the batch API's called once, untimed."""
    from kvoffload.impl import CPUOffloadingManager
    from kvoffload.impl.core import runtime
    from kvoffload.spec import BlockHash

    runtime.wait()

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


@contextmanager
def collector_off() -> Iterator[None]:
    """Python's cycle collector run once, then off, for a timed pass (as ``timeit``): a
    collection costs in proportion to every object alive, the bench's own records of
    answers included, and lands in whichever call allocates last; every pass of every
    table is timed alike. A caller that turned it off keeps it off."""
    collector_was_on = gc.isenabled()
    gc.collect()  # cycles the previous pass left, and this one's prefill garbage
    gc.disable()
    try:
        yield
    finally:
        if collector_was_on:
            gc.enable()


def run_pass(contender: Contender, requests: Sequence[list[bytes]], capacity: int,
             calls: VllmCalls | None, seed: int = 0) -> Run:
    """One contender alone: built and filled (untimed: ``prefill_requests``), then timed on
    ``requests``, its answers recorded (``record``). The collector runs before the timed
    part and is off during it, for every pass alike (``compare``)."""
    manager = contender.build()
    for number, keys in enumerate(prefill_requests(capacity, seed)):
        _drive(contender, manager, keys, calls, dict.fromkeys(PHASES, 0), f"prefill-{number}")
    run = Run(contender.label, contender.convention)
    with collector_off():
        for number, keys in enumerate(requests):
            tick = -CLOCK() + CLOCK()
            answer = _drive(contender, manager, keys, calls, run.ns, f"r{number}", tick)
            run.answers.append(record(answer))
            run.hits += answer[0]
            run.blocks += len(keys)
    return run


def spread_of(rounds: Sequence[float]) -> str:
    """" (least–greatest)" of several rounds' figures, "" for a single pass."""
    return f" ({min(rounds):.0f}–{max(rounds):.0f})" if len(rounds) > 1 else ""


def median_of(values: Sequence[float]) -> float:
    """The median (the lower middle value of an even count: a figure one round measured)."""
    return sorted(values)[(len(values) - 1) // 2]


def median_run(rounds: Sequence[Run]) -> Run:
    """One contender's rounds over the same requests as one run: each phase's median, the
    first round's answers (the others were held to them), every round's total in ``rounds``."""
    first = rounds[0]
    run = Run(first.label, first.convention, blocks=first.blocks, hits=first.hits, answers=first.answers)
    run.ns = {phase: int(median_of([r.ns[phase] for r in rounds])) for phase in PHASES}
    run.rounds = [r.per_block() for r in rounds]
    return run


def _rounds(chosen: Sequence[Contender], requests: Sequence[list[bytes]], capacity: int,
            calls: VllmCalls | None, repeat: int) -> tuple[list[list[Run]], list[str]]:
    """``repeat`` rounds of one pass per contender (the reference's answers, its only use,
    in the first round alone); each later round's answers held to the first's. Returns
    every contender's runs and, for each that answered a round otherwise, where."""
    runs: list[list[Run]] = [[] for _ in chosen]
    unstable = []
    for number in range(repeat):
        for contender, mine in zip(chosen, runs):
            if number and contender.label == "reference":
                continue
            run = run_pass(contender, requests, capacity, calls)
            if number:
                where = first_difference(run.answers, mine[0].answers, "round 1")
                if where is not None:
                    unstable.append(f"{contender.label} ({contender.convention}) answered round {number + 1} "
                                    f"unlike round 1, at {where}")
                run.answers = []  # held to the first round's: not kept
            mine.append(run)
    return runs, unstable


def compare(
    requests: Sequence[list[bytes]],
    capacity: int,
    policy: str,
    calls: VllmCalls | None,
    reference: bool,
    chosen: Sequence[Contender] | None = None,
    repeat: int = 1,
) -> tuple[list[Run], list[str]]:
    """Each contender (``contenders``, or ``chosen``) in a pass of its own over
    ``requests`` (``run_pass``); the previous pass's manager is gone and collected before
    the next is built, so no manager is timed with another's structures in the heap or
    the CPU caches, or with another's garbage to collect. The passes run one after the
    other, so a load change on a shared machine may fall on one pass more than another:
    compare figures of one run, and repeat a run to see the noise.

    Time is the thread's CPU time (``CLOCK``): on a shared machine wall time mostly
    measures how long the process waited for a core. One reading of that clock costs
    about a microsecond, so the cost of a reading, sampled before every request, is
    taken off each timed interval. The garbage collector is off while timing (as
    ``timeit`` does), in every pass.

    Returns the runs and, for each run whose recorded answers differ from kvoffload's
    through vLLM's interface (or through the batch API without vLLM), its label, and
    where it must agree, the first request that differs and how; "(may differ)" is
    appended where it is allowed to differ (another algorithm).

    ``repeat`` > 1: that many rounds (module docstring), each run the median of its
    contender's rounds; a contender that answered a round unlike its first is listed too,
    with the round and the request, and never "(may differ)"."""
    warm(policy)
    chosen = contenders(capacity, policy, calls, reference) if chosen is None else chosen
    # each pass's manager is freed when run_pass returns
    rounds, differs = _rounds(chosen, requests, capacity, calls, repeat)
    runs = [median_run(mine) if len(mine) > 1 else mine[0] for mine in rounds]
    # kvoffload through vLLM's interface leads; every other run is held to kvoffload of
    # its own convention (the batch API's kvoffload to the lead).
    lead = next(run for run in runs if run.label == "kvoffload")
    leads = {run.convention: run for run in reversed(runs) if run.label == "kvoffload"}
    for contender, run in zip(chosen, runs):
        own = lead if run.label == "kvoffload" else leads.get(run.convention, lead)
        where = None if run is lead else first_difference(run.answers, own.answers)
        if where is not None:
            name = f"{run.label} ({run.convention})"
            differs.append(f"{name} at {where}" if contender.must_agree else f"{name} (may differ)")
    return runs, differs
