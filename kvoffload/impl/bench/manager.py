"""``kvoffload bench manager``: the production manager beside the reference model (and
vLLM's own CPU offloading manager where ``vllm.v1.kv_offload`` imports).

Workload (the same requests go to every manager): requests whose hashes share
prefixes (a few "documents" reused by many requests, plus a unique tail per request),
32-byte hashes. Per request: ``lookup``; ``touch``; ``prepare_load`` of the hits; and
``prepare_store`` of the rest. Steady scenario: loads and stores complete right away.
Pressure scenario: loads and stores stay in flight (up to ~90% of the capacity pinned or
pending), so eviction must find idle victims among blocks it may not take.

Each manager (production, reference, vLLM's) runs in a pass of its own over the same
workload, timed with no other manager alive (the previous one dropped and collected),
and records its answer to every call. Up to ``--check-limit`` blocks of capacity the
reference runs too, and its recorded answers are compared with the production manager's
afterwards, call by call: the first difference (which call, what each answered) fails
the bench. Beyond it only the production manager (and vLLM's) runs.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import click

from .conventions import (CLOCK, collector_off, installed_vllm, median_of, prefill_requests, spread_of,
                          vllm_batch_manager, warm)
from .plotting import pyplot

OPS = ("lookup", "touch", "prepare_load", "complete_load", "prepare_store", "complete_store")


def _ints(text: str) -> list[int]:
    return [int(float(part)) for part in text.split(",") if part.strip()]


class Workload:
    """Requests with shared prefixes over a pool of 32-byte hashes (``suffix`` appended:
    ``b"\\0" * 4`` makes them vLLM ``OffloadKey`` s of KV-cache group 0). The hashes
    come from ``seed``: the same seed gives every pass the same requests."""

    def __init__(self, capacity: int, batch: int, seed: int | str, suffix: bytes = b"") -> None:
        self.rng = random.Random(seed)
        # Keys from a generator of their own: the choice of documents and prefix lengths
        # does not depend on how many keys were drawn.
        self._key_bytes = random.Random(f"keys/{seed}").randbytes
        self.batch = batch
        self.suffix = suffix
        docs = max(4, min(64, capacity // max(batch, 1)))
        self.docs = [[self._key() for _ in range(batch)] for _ in range(docs)]

    def _key(self) -> bytes:
        return self._key_bytes(32) + self.suffix

    def request(self) -> list[bytes]:
        doc = self.rng.choice(self.docs)
        shared = self.rng.randint(0, self.batch)
        return doc[:shared] + [self._key() for _ in range(self.batch - shared)]

    def requests(self, blocks: int) -> list[list[bytes]]:
        """Requests until ``blocks`` hashes in all."""
        out: list[list[bytes]] = []
        count = 0
        while count < blocks:
            out.append(self.request())
            count += len(out[-1])
        return out


def _clock_tick() -> int:
    """The cost of one reading of the benchmarks' clock (the least of a few samples)."""
    return min(-CLOCK() + CLOCK() for _ in range(16))


class Timer:
    """Nanoseconds and blocks per operation. The clock is the thread's CPU time
    (``conventions.CLOCK``, as the side-by-side tables): on a shared machine wall time
    mostly measures how long the process waited for a core. The cost of a reading of
    that clock is taken off each interval."""

    def __init__(self) -> None:
        self.ns = dict.fromkeys(OPS, 0)
        self.blocks = dict.fromkeys(OPS, 0)
        self.tick = _clock_tick()
        #: Total ns per block of each round this timer is the median of (``median_timer``).
        self.rounds: list[float] = []

    def run(self, op: str, call: Callable[[], Any], blocks: int) -> Any:
        start = CLOCK()
        result = call()
        self.ns[op] += max(CLOCK() - start - self.tick, 0)
        self.blocks[op] += blocks
        return result

    def per_block(self, op: str) -> float:
        return self.ns[op] / self.blocks[op] if self.blocks[op] else float("nan")

    def total(self) -> float:
        blocks = sum(self.blocks.values())
        return sum(self.ns.values()) / blocks if blocks else float("nan")

    def spread(self) -> str:
        """``spread_of`` the rounds' totals (``median_timer``)."""
        return spread_of(self.rounds)


def median_timer(timers: Sequence[Timer]) -> Timer:
    """Rounds of one manager over one configuration as one timer: each operation's median
    time (the rounds made the same calls: equal blocks), every round's total in ``rounds``."""
    out = Timer()
    out.blocks = dict(timers[0].blocks)
    out.ns = {op: int(median_of([t.ns[op] for t in timers])) for op in OPS}
    out.rounds = [t.total() for t in timers]
    return out


class _VllmPerKeyManager:
    """The installed vLLM's own ``CPUOffloadingManager`` (0.32 or 0.33) behind the batch
    API's calls, each made as its connector makes it.

    Keys are looked up one at a time (``lookup(key, ctx)`` until the first non-hit, as
    0.32's prefix lookup does; 0.33's also counts a pending key and retries the request
    later, the same answer where nothing is pending) with a request context passed to every
    call; each benchmark request gets a fresh context, opened by its lookup.
    """

    def __init__(self, capacity: int, policy: str) -> None:
        from vllm.v1.kv_offload.base import LookupResult, ReqContext
        from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager as VllmManager

        self._hit = LookupResult.HIT
        self._context_class = ReqContext
        self._requests = 0
        self.inner = VllmManager(num_chunks=capacity, cache_policy=policy)
        self._ctx = self._new_context()

    def _new_context(self) -> Any:
        self._requests += 1
        ctx = self._context_class(req_id=f"bench-{self._requests}")
        self.inner.on_new_request(ctx)
        return ctx

    def lookup(self, keys: list[bytes]) -> int:
        self._ctx = self._new_context()
        hits = 0
        for key in keys:
            if self.inner.lookup(key, self._ctx) is not self._hit:
                break
            hits += 1
        return hits

    def touch(self, keys: list[bytes]) -> None:
        self.inner.touch(keys, self._ctx)

    def prepare_load(self, keys: list[bytes]) -> Any:
        return self.inner.prepare_load(keys, self._ctx)

    def complete_load(self, keys: list[bytes]) -> None:
        self.inner.complete_load(keys, self._ctx)

    def prepare_store(self, keys: list[bytes]) -> Any:
        out = self.inner.prepare_store(keys, self._ctx)
        if out is None:
            return None
        return _StoreOutput(list(out.keys_to_store), list(out.evicted_keys))

    def complete_store(self, keys: list[bytes], success: bool = True) -> None:
        self.inner.complete_store(keys, self._ctx, success)


class _StoreOutput:
    """The two fields of a store decision the benchmark reads, under our names."""

    def __init__(self, to_store: list[bytes], evicted: list[bytes]) -> None:
        self.block_hashes_to_store = to_store
        self.block_hashes_evicted = evicted


#: vLLM's managers by interface generation: 0.32 and 0.33 per key, 0.19 through the batch API.
VLLM_GENERATIONS: tuple[tuple[str, Callable[[int, str], Any]], ...] = (
    ("per key", _VllmPerKeyManager), ("batch API", vllm_batch_manager))


def _vllm_builder(policy: str) -> tuple[str, Callable[[int], Any]] | None:
    """The interface the installed vLLM's own manager is driven through in the batch table
    (``VLLM_GENERATIONS``), and how to build it; ``None`` without vLLM, or with a release
    of neither layout."""
    for kind, make in VLLM_GENERATIONS:
        try:
            make(16, policy)
        except Exception:  # not installed, or not this layout: try the next, else no vLLM column
            continue
        return kind, lambda capacity: make(capacity, policy)
    return None


def vllm_label() -> str:
    """The vLLM column's heading: the installed release and the interface it is driven through."""
    found = _vllm_builder("lru")
    return "vLLM" if found is None else f"{installed_vllm()} ({found[0]})"


def _digest(keys: Sequence[bytes]) -> bytes:
    digest = hashlib.blake2b(digest_size=16)
    for key in keys:
        digest.update(key)
    return digest.digest()


def _normal(name: str, value: Any) -> Any:
    """A call's answer as recorded: compact (counts and digests of key lists), so that a
    pass's records keep none of its manager's keys alive during the next pass."""
    if name == "prepare_store":
        if value is None:
            return None
        to_store, evicted = list(value.block_hashes_to_store), list(value.block_hashes_evicted)
        return len(to_store), len(evicted), _digest(to_store), _digest(evicted)
    if name == "prepare_load":
        return len(value.block_ids)
    return value


def builders(policy: str, check: bool, with_vllm: bool) -> dict[str, Callable[[int], Any]]:
    """How to build each manager of the per-operation table, by name."""
    from kvoffload.impl import CPUOffloadingManager
    from kvoffload.spec import ReferenceManager

    out: dict[str, Callable[[int], Any]] = {"impl": lambda c: CPUOffloadingManager(c, policy=policy)}
    if check:
        out["ref"] = lambda c: ReferenceManager(c, policy=policy)
    found = _vllm_builder(policy) if with_vllm else None  # vLLM has no S3-FIFO or SIEVE
    if found is not None:
        out["vllm"] = found[1]
    return out


def prefill(manager: Any, capacity: int, seed: int) -> None:
    """``conventions.prefill_requests`` of 32-byte hashes through the batch API, each
    store completed (untimed): the same hashes for every pass of the same ``seed`` and
    capacity, every manager alike."""
    for hashes in prefill_requests(capacity, seed, key_bytes=32):
        out = manager.prepare_store(hashes)
        manager.complete_store(out.block_hashes_to_store)


@dataclass
class Pass:
    """One manager's pass over one configuration: its timer and its recorded answers,
    one ``(operation, answer)`` per call (``_normal``)."""

    timer: Timer
    calls: list[tuple[str, Any]] = field(default_factory=list)
    #: ``memory_bytes()`` after the pass, for managers that measure it (ours).
    memory: dict[str, int] | None = None


def run_config(manager: Any, capacity: int, batch: int, scenario: str, blocks_budget: int,
               seed: int) -> Pass:
    """Drive one manager through one configuration, alone; time and record every call.

    The calls follow the manager's own answers (hits, keys to store); two managers that
    answer alike get the same calls, and the first call where they differ is what
    ``first_disagreement`` reports. The workload's seed names the configuration, so that
    each configuration's requests are new keys to the manager that ran the previous one.
    """
    done = Pass(Timer())
    work = Workload(capacity, batch, f"{seed}/{batch}/{scenario}")

    def call(op: str, args: Sequence[Any], blocks: int) -> Any:
        method = getattr(manager, op)
        result = done.timer.run(op, lambda: method(*args), blocks)
        done.calls.append((op, _normal(op, result)))
        return result

    loads: list[list[bytes]] = []
    stores: list[list[bytes]] = []
    in_flight = 0
    limit = int(capacity * 0.9) if scenario == "pressure" else 0
    driven = 0
    while driven < blocks_budget:
        hashes = work.request()
        hits = call("lookup", (hashes,), len(hashes))
        call("touch", (hashes,), len(hashes))
        if hits:
            call("prepare_load", (hashes[:hits],), hits)
            loads.append(hashes[:hits])
            in_flight += hits
        rest = hashes[hits:]
        if rest:
            out = call("prepare_store", (rest,), len(rest))
            if out is not None and out.block_hashes_to_store:
                stores.append(out.block_hashes_to_store)
                in_flight += len(out.block_hashes_to_store)
        while in_flight > limit and (loads or stores):
            if loads:
                done_load = loads.pop(0)
                call("complete_load", (done_load,), len(done_load))
                in_flight -= len(done_load)
            if stores:
                done_store = stores.pop(0)
                call("complete_store", (done_store,), len(done_store))
                in_flight -= len(done_store)
        driven += len(hashes)
    for done_load in loads:
        call("complete_load", (done_load,), len(done_load))
    for done_store in stores:
        call("complete_store", (done_store,), len(done_store))
    return done


def first_disagreement(got: Sequence[tuple[str, Any]], want: Sequence[tuple[str, Any]],
                       who: str = "the reference", whom: str = "the production manager") -> str | None:
    """The first call at which ``who``'s recorded answers ``got`` differ from ``whom``'s
    ``want`` (the production manager's, or a first round's): which call, what each
    answered; ``None`` if equal."""
    for number, (mine, theirs) in enumerate(zip(got, want)):
        if mine != theirs:
            return (f"call {number}: {who}'s {mine[0]} answered {mine[1]!r}, "
                    f"{whom}'s {theirs[0]} answered {theirs[1]!r}")
    if len(got) != len(want):
        return f"{who} made {len(got)} calls, {whom} {len(want)}"
    return None


def manager_passes(name: str, build: Callable[[int], Any], capacity: int,
                   configs: Sequence[tuple[int, str, int]], seed: int) -> list[Pass]:
    """One manager alone through ``configs`` (batch, scenario, blocks) in order, built
    and filled first (untimed); each configuration timed with the collector off
    (``conventions.collector_off``), as every pass of the side-by-side table. The manager
    is dropped on return."""
    manager = build(capacity)
    prefill(manager, capacity, seed)
    measure = getattr(manager, "memory_bytes", None)
    passes = []
    for batch, scenario, budget in configs:
        with collector_off():
            passes.append(run_config(manager, capacity, batch, scenario, budget, seed))
        passes[-1].memory = measure() if measure is not None else None
    return passes


def _plot(results: list[dict[str, Any]], path: str) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    keys = sorted({(r["policy"], r["scenario"], r["batch"]) for r in results})
    for policy, scenario, batch in keys:
        rows = sorted(
            (r for r in results if (r["policy"], r["scenario"], r["batch"]) == (policy, scenario, batch)),
            key=lambda r: r["capacity"],
        )
        ax.plot([r["capacity"] for r in rows], [r["timers"]["impl"].total() for r in rows],
                marker="o", label=f"impl {policy} {scenario} b={batch}")
        checked = [r for r in rows if "ref" in r["timers"]]
        if checked:
            ax.plot([r["capacity"] for r in checked], [r["timers"]["ref"].total() for r in checked],
                    linestyle="--", marker="x", label=f"reference {policy} {scenario} b={batch}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("capacity (blocks)")
    ax.set_ylabel("ns per block (all operations)")
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _vllm_agrees(policy: str) -> bool:
    """Whether vLLM's own manager must give the production manager's answers in the batch
    table: its LRU of the batch generation (0.19), which keeps L1 as ours does. (0.32's and
    0.33's are held to ours in the side-by-side table, through their own interface; every
    vLLM ARC is another algorithm.)"""
    found = _vllm_builder(policy)
    return policy == "lru" and found is not None and found[0] == "batch API"


def _result(capacity: int, policy: str, config: tuple[int, str, int], passes: dict[str, Pass],
            vllm_held: bool = False) -> dict[str, Any]:
    """One row of the per-operation table from the passes of its configuration
    (``vllm_held``: vLLM's answers were compared with the production manager's)."""
    batch, scenario, _ = config
    memory = passes["impl"].memory or {"state": 0, "hashes": 0}
    return {
        "capacity": capacity,
        "batch": batch,
        "policy": policy,
        "scenario": scenario,
        "timers": {name: one.timer for name, one in passes.items()},
        "state_bytes_per_block": memory["state"] / capacity,
        "ghost_bytes_per_block": memory.get("ghosts", 0) / capacity,
        "hash_bytes_per_block": memory["hashes"] / capacity,
        "checked": "ref" in passes,
        "agreed": len(passes["impl"].calls) if "ref" in passes else 0,
        "vllm_agreed": len(passes["impl"].calls) if vllm_held else 0,
    }


def _warm_passes(batches: list[int], scenarios: list[str], policies: list[str], seed: int,
                 build: dict[str, Callable[[int], Any]] | None) -> None:
    """One untimed pass of the production manager (``builders``' or ``build``'s ``impl``)
    through every configuration at a small capacity, per policy, before anything is timed:
    without it the first timed pass paid for the process's first calls at full size (its
    prepare_load up to ~30% dearer than the same pass run second)."""
    if not batches or not scenarios:
        return
    capacity = 8 * max(batches)
    configs = [(batch, scenario, 8 * batch) for batch in batches for scenario in scenarios]
    for policy in policies:
        make = (build if build is not None else builders(policy, False, False))["impl"]
        manager_passes("warm", make, capacity, configs, seed + 1)


def _batch_configs(console: Any, caps: list[int], batches: list[int], policies: list[str],
                   scenarios: list[str], blocks_budget: int, check_limit: int, seed: int,
                   with_vllm: bool, build: dict[str, Callable[[int], Any]] | None = None,
                   repeat: int = 1) -> list[dict[str, Any]]:
    """The per-operation table's configurations: every manager (``builders``, or
    ``build``) in passes of its own (``manager_passes``), then the reference's recorded
    answers compared with the production manager's; raises ``ClickException`` at the
    first call where they differ. vLLM's manager (another implementation, whose ARC is
    another algorithm) is timed on the same workload and not compared here.

    ``repeat`` > 1: the whole sweep (every capacity and policy) runs that many rounds, so
    that a slow spell of the machine falls on other configurations in other rounds (the
    reference in the first round alone: its answers are its use); each figure is the median
    of its rounds (``median_timer``), and a manager that answers a round unlike its first
    fails the bench."""
    _warm_passes(batches, scenarios, policies, seed, build)
    sweep = [(capacity, policy, _configs(capacity, batches, scenarios, blocks_budget))
             for capacity in caps for policy in policies]
    sweep = [(capacity, policy, configs) for capacity, policy, configs in sweep if configs]
    rounds: list[list[dict[str, list[Pass]]]] = [[] for _ in sweep]
    for number in range(repeat):
        for (capacity, policy, configs), mine in zip(sweep, rounds):
            makers = build if build is not None else builders(policy, capacity <= check_limit, with_vllm)
            makers = {name: make for name, make in makers.items() if not (number and name == "ref")}
            mine.append({name: manager_passes(name, make, capacity, configs, seed) for name, make in makers.items()})
            if number == 0:
                _hold_to_production(mine[0], capacity, policy, configs)
            else:
                _hold_to_first_round(mine, capacity, policy, configs)
            console.print(f"[dim]done: capacity {capacity:,} {policy}"
                          f"{f', round {number + 1} of {repeat}' if repeat > 1 else ''}[/dim]")
    return [row for (capacity, policy, configs), mine in zip(sweep, rounds)
            for row in _results(capacity, policy, configs, mine)]


def _configs(capacity: int, batches: list[int], scenarios: list[str], blocks_budget: int) -> list[tuple[int, str, int]]:
    """A capacity's configurations: each sees roughly the same number of blocks, at least a
    few requests, and at large capacities enough to leave the caches."""
    return [(batch, scenario, max(blocks_budget, 8 * batch))
            for batch in batches if batch * 4 <= capacity for scenario in scenarios]


def _hold_to_first_round(rounds: list[dict[str, list[Pass]]], capacity: int, policy: str,
                         configs: Sequence[tuple[int, str, int]]) -> None:
    """A later round's passes must make the first round's calls and get its answers (the
    same workload); raises ``ClickException`` at the first call that differs. The later
    round's records are dropped once held (its timers are what it adds)."""
    if len(rounds) < 2:
        return
    first, last = rounds[0], rounds[-1]
    for name, passes in last.items():
        for config, earlier, later in zip(configs, first[name], passes):
            where = first_disagreement(later.calls, earlier.calls, f"round {len(rounds)}", "round 1")
            if where is not None:
                raise click.ClickException(f"{name} answered round {len(rounds)} unlike round 1 at capacity "
                                           f"{capacity:,} {policy} batch {config[0]} {config[1]}, {where}")
            later.calls = []


def _held(policy: str, passes: dict[str, list[Pass]]) -> dict[str, str]:
    """The managers whose answers must be the production manager's, by name: the reference,
    and vLLM 0.19's LRU (``_vllm_agrees``)."""
    held = {"ref": "the reference"} if "ref" in passes else {}
    if "vllm" in passes and _vllm_agrees(policy):
        held["vllm"] = vllm_label()
    return held


def _hold_to_production(passes: dict[str, list[Pass]], capacity: int, policy: str,
                        configs: Sequence[tuple[int, str, int]]) -> None:
    """The held managers' recorded answers (``_held``) compared with the production
    manager's, configuration by configuration; ``ClickException`` at the first call that differs."""
    held = _held(policy, passes)
    for number, config in enumerate(configs):
        for name, who in held.items():
            where = first_disagreement(passes[name][number].calls, passes["impl"][number].calls, who)
            if where is not None:
                raise click.ClickException(
                    f"{who} disagrees with the production manager at capacity {capacity:,} "
                    f"{policy} batch {config[0]} {config[1]}, {where}")


def _results(capacity: int, policy: str, configs: Sequence[tuple[int, str, int]],
             rounds: list[dict[str, list[Pass]]]) -> list[dict[str, Any]]:
    """One row per configuration (``_result``), its timers the median of the rounds."""
    held = _held(policy, rounds[0])
    results = []
    for number, config in enumerate(configs):
        by_name = {name: runs[number] for name, runs in rounds[0].items()}
        if len(rounds) > 1:
            by_name = {name: Pass(median_timer([r[name][number].timer for r in rounds if name in r]),
                                  one.calls, one.memory) for name, one in by_name.items()}
        results.append(_result(capacity, policy, config, by_name, "vllm" in held))
    return results


def _side_by_side(console: Any, capacities: list[int], batch: int, policies: list[str], blocks: int,
                  check_limit: int, seed: int, repeat: int = 1) -> None:
    """The table users should read first: ns per block through vLLM's interface and
    through the batch API, every manager beside the floor, answers compared."""
    from .conventions import compare, vllm_calls
    from .interface import Comparison, print_comparisons

    calls = vllm_calls()
    comparisons = []
    for capacity in capacities:
        requests = Workload(capacity, batch, seed, suffix=bytes(4)).requests(blocks)
        for policy in policies:
            runs, differs = compare(requests, capacity, policy, calls, capacity <= min(check_limit, 100_000),
                                    repeat=repeat)
            comparisons.append(Comparison(f"shared prefixes, {batch}/request", capacity, policy, runs, differs,
                                          sum(map(len, requests))))
            console.print(f"[dim]done: side by side, capacity {capacity:,} {policy}[/dim]")
    print_comparisons(console, f"kvoffload bench manager — ns per block, {blocks:,} blocks per configuration, "
                               "steady (each request's loads and stores complete before the next)", comparisons)


def _batch_row(r: dict[str, Any], with_vllm: bool) -> list[str]:
    """One row of the per-operation table."""
    impl, ref, vllm = r["timers"]["impl"], r["timers"].get("ref"), r["timers"].get("vllm")
    cells = []
    for op in OPS:
        value = impl.per_block(op)
        if ref is not None and impl.ns[op]:
            cells.append(f"{value:.0f} (×{ref.per_block(op) / value:.0f})")
        else:
            cells.append(f"{value:.0f}")
    row = [f"{r['capacity']:,}", r["policy"], str(r["batch"]), r["scenario"], *cells,
           f"{impl.total():.0f}{impl.spread()}"]
    row += [f"{ref.total():.0f}", f"×{ref.total() / impl.total():.1f}"] if ref else ["—", "—"]
    if with_vllm:
        row += [f"{vllm.total():.0f}", f"×{vllm.total() / impl.total():.1f}"] if vllm else ["—", "—"]
    row.append(f"{r['state_bytes_per_block']:.1f}")
    row.append(f"{r['ghost_bytes_per_block']:.1f}")
    row.append(f"{r['hash_bytes_per_block']:.1f}")
    return row


def _print_batch_table(console: Any, results: list[dict[str, Any]], with_vllm: bool) -> None:
    """The per-operation table of the batch API (production vs reference, vs vLLM)."""
    from rich.table import Table

    table = Table(title="kvoffload bench manager — ns per block: production (speed-up vs reference)")
    for column in ("capacity", "policy", "batch", "scenario", *OPS, "all ops", "reference", "speed-up"):
        table.add_column(column, justify="right")
    if with_vllm:
        table.add_column(vllm_label(), justify="right")
        table.add_column("vs vLLM", justify="right")
    table.add_column("state B/block", justify="right")
    table.add_column("+ghosts", justify="right")
    table.add_column("hashes B/block", justify="right")
    for r in results:
        table.add_row(*_batch_row(r, with_vllm))
    console.print(table)


@click.command(name="manager")
@click.option("--capacities", default="1e3,1e4,1e5,1e6,1e7", show_default=True,
              help="Comma-separated capacities in blocks.")
@click.option("--batch-sizes", default="16,256,4096", show_default=True,
              help="Comma-separated hashes per request.")
@click.option("--policies", default="lru,arc", show_default=True)
@click.option("--scenarios", default="steady,pressure", show_default=True)
@click.option("--blocks", "blocks_budget", default=60_000, show_default=True,
              help="Hashes driven through each configuration.")
@click.option("--check-limit", default=1_000_000, show_default=True,
              help="Largest capacity at which the reference runs and answers are compared.")
@click.option("--quick", is_flag=True, help="CI size: small capacities and budget (< 1 min).")
@click.option("--seed", default=0, show_default=True)
@click.option("--plot", "plot_path", default=None, type=click.Path(dir_okay=False),
              help="Also write a PNG plot (needs matplotlib).")
@click.option("--no-cold-start", is_flag=True,
              help="Skip the cold/warm start table (`kvoffload bench cold-start`, one run each).")
@click.option("--interface-capacities", default="1e4,1e5,1e6", show_default=True,
              help="Capacities of the side-by-side table (vLLM's interface and the batch API vs the floor).")
@click.option("--interface-batch", default=256, show_default=True,
              help="Keys per request in the side-by-side table.")
@click.option("--interface-only", is_flag=True,
              help="Only the side-by-side table (skip the per-operation batch table).")
@click.option("--repeat", default=1, show_default=True, type=click.IntRange(1, 99),
              help="Rounds of every pass, in turn; each figure the median of its rounds, the least and "
                   "greatest beside 'all' (the reference's answers: first round only).")
def command(
    capacities: str,
    batch_sizes: str,
    policies: str,
    scenarios: str,
    blocks_budget: int,
    check_limit: int,
    quick: bool,
    seed: int,
    plot_path: str | None,
    no_cold_start: bool,
    interface_capacities: str,
    interface_batch: int,
    interface_only: bool,
    repeat: int,
) -> None:
    """Every manager through vLLM's interface and the batch API beside the plain-Python
    floor; then the production manager per operation vs the reference model (and vLLM)."""
    from rich.console import Console

    if plot_path:  # fail before the run, not after it
        pyplot()
    if quick:
        capacities, batch_sizes, blocks_budget = "1e3,1e4,1e5", "16,256", min(blocks_budget, 8_000)
        interface_capacities = "1e4"
    caps, batches = _ints(capacities), _ints(batch_sizes)
    policy_list = [p.strip() for p in policies.split(",") if p.strip()]
    scenario_list = [s.strip() for s in scenarios.split(",") if s.strip()]
    console = Console(width=max(Console().width, 200))
    with_vllm = _vllm_builder("lru") is not None
    if not with_vllm:
        console.print("vllm.v1.kv_offload is not importable here: no vLLM column (no vLLM figure is "
                      "assumed or invented; install vLLM to compare with its own manager)")

    for policy in policy_list:  # every entry point compiled, the batch API's called once
        warm(policy)

    _side_by_side(console, _ints(interface_capacities), interface_batch, policy_list, blocks_budget,
                  check_limit, seed, repeat)
    if interface_only:
        return
    results = _batch_configs(console, caps, batches, policy_list, scenario_list, blocks_budget,
                             check_limit, seed, with_vllm, repeat=repeat)
    _print_batch_table(console, results, with_vllm)
    if repeat > 1:
        console.print(f"Repeated: the whole sweep ran {repeat} rounds; every figure is the median of its rounds, "
                      "operation by operation ('all ops': their sum per block, the least and greatest round in "
                      "brackets); the reference ran the first round alone.")
    agreed = sum(r["agreed"] for r in results)
    checked = sum(1 for r in results if r["checked"])
    console.print(f"Answers of production and reference agreed on {agreed:,} calls "
                  f"({checked} of {len(results)} configurations compared on every call).")
    vllm_agreed = [r["vllm_agreed"] for r in results if r["vllm_agreed"]]
    if vllm_agreed:
        configs = f"{len(vllm_agreed)} configuration{'s' if len(vllm_agreed) > 1 else ''}"
        console.print(f"{vllm_label()}'s own LRU gave the production manager's answers on {sum(vllm_agreed):,} "
                      f"calls ({configs} compared on every call); vLLM's ARC is another algorithm and is not compared.")
    console.print(
        "Memory per block of capacity: 'state' = the manager's structures for its blocks (hash-table "
        "share for blocks, ref counts, recency stamps, heaps, free stack, list tags, meta); '+ghosts' "
        "= ARC's ghost index (hash-table share for the 2x capacity ghost nodes, B1/B2 links, ghost "
        "free list and list tags), reported apart, not hidden; 'hashes' = stored hashes (key rows of blocks "
        "and ghosts, Python objects of live blocks). Per-batch scratch buffers are not per block."
    )
    if not no_cold_start:  # the table of `kvoffload bench cold-start`, one run each
        from .coldstart import load_average, measure, print_figures

        load = load_average()
        print_figures(measure(runs=1), load)
    if plot_path:
        _plot(results, plot_path)
        console.print(f"plot written to {plot_path}")
