"""``kvoffload simulate``: E1 and E2 end to end with injected faults (README, "End-to-end
simulation").

A scheduler loop drives a manager and a worker drives copy handlers on CPU tensors with a
block-size factor (H3), over prefix-sharing hash chains; transfers fail, stores abort, and
work completes out of order. Every load is compared byte for byte with what its hash was
stored with (E1); at the end a refill of ``capacity`` fresh hashes must evict exactly the
ready blocks (E2). Every manager call also goes through the judge (``JudgedManager``).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import random
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import click

from ..judge import JudgedManager, Verdict
from ..reports.result import CallLog
from ...spec import POLICIES, CPULoadStoreSpec, GPULoadStoreSpec, OffloadingManager, PrepareStoreOutput
from ...spec.clauses import implements
from ..cli import INTERFACE_OPTION
from ..loading import builtin_source, load_factory
from ..lockstep.machine_base import TargetSetupError
from ..lockstep.vllm.adapter import VllmManagerView
from ..runner import target_modes

__all__ = ["SimulationConfig", "SimulationReport", "FaultyHandler", "run_simulation", "manager_factory", "simulate"]


@attrs.frozen
class SimulationConfig:
    requests: int = 400
    seed: int = 0
    capacity: int = 8  # offloaded blocks
    factor: int = 2  # GPU blocks per offloaded block (H3)
    gpu_blocks: int = 48
    layers: int = 2
    block_shape: tuple[int, ...] = (4, 2, 8)  # tokens, heads, head dim
    store_fail_rate: float = 0.1  # transfers the worker reports failed
    load_fail_rate: float = 0.1
    abort_rate: float = 0.1  # stores completed with success=False after a good copy
    roots: int = 4
    max_request_blocks: int = 6
    #: how the judge compares victims: "lru"/"arc" exactly, "any" (a third party's
    #: policy) only their eligibility (M5.3, I3)
    judge_policy: str = "any"


@attrs.define
class SimulationReport:
    requests: int = 0
    lookups: int = 0
    touches: int = 0
    loads: int = 0
    blocks_loaded: int = 0
    stores: int = 0
    blocks_stored: int = 0
    evictions: int = 0
    refusals: int = 0
    failed_store_transfers: int = 0
    failed_load_transfers: int = 0
    aborted_stores: int = 0
    partial_first_block_loads: int = 0  # H3: loads starting inside an offloaded block
    max_in_flight: int = 0
    corrupt: int = 0
    leaked: int = 0
    ready_at_end: int = 0
    notes: list[str] = attrs.field(factory=list)
    judged_calls: int = 0
    violation: Verdict | None = None  # the judge's first verdict on the manager's calls

    @property
    def ok(self) -> bool:
        return self.corrupt == 0 and self.leaked == 0 and self.violation is None

    def format(self) -> str:
        lines = [
            f"requests: {self.requests} ({self.lookups} lookups, {self.touches} touches)",
            f"block operations: {self.blocks_stored + self.blocks_loaded + self.evictions} "
            f"({self.blocks_stored} stored in {self.stores} stores, "
            f"{self.blocks_loaded} GPU blocks loaded in {self.loads} loads of which "
            f"{self.partial_first_block_loads} start inside a block, {self.evictions} evicted, "
            f"{self.refusals} stores refused)",
            f"faults injected: {self.failed_store_transfers + self.failed_load_transfers + self.aborted_stores} "
            f"({self.failed_store_transfers} failed store transfers, "
            f"{self.failed_load_transfers} failed load transfers, {self.aborted_stores} aborted stores); "
            f"most jobs in flight at once: {self.max_in_flight}",
            f"corrupt loads: {self.corrupt}",
            f"leaked blocks: {self.leaked} (ready at the end: {self.ready_at_end})",
        ]
        lines += [f"note: {note}" for note in self.notes[:10]]
        if self.violation is None:
            lines.append(f"lockstep with the model: {self.judged_calls} manager calls judged, all conform")
        else:
            lines.append(f"lockstep with the model: VIOLATES {', '.join(self.violation.clauses)} after "
                         f"{self.judged_calls} manager calls: {self.violation.message}")
        lines.append("E1, E2: OK" if self.corrupt == 0 and self.leaked == 0 else "E1/E2 VIOLATED")
        return "\n".join(lines)


class FaultyHandler:
    """Wraps a handler; jobs chosen to fail are not copied and are reported ``False``.

    Keeps H2's order per direction: results are collected in submission order.
    """

    def __init__(self, inner: Any, fail_rate: float, rng: random.Random) -> None:
        self.inner, self.fail_rate, self.rng = inner, fail_rate, rng
        self._order: deque[int] = deque()
        self._results: dict[int, bool] = {}
        self.failed: set[int] = set()
        self.reported: dict[int, bool] = {}  # finished jobs not collected yet

    def transfer_async(self, job_id: int, spec: Any) -> bool:
        if self.rng.random() < self.fail_rate:
            self.failed.add(job_id)
            self._results[job_id] = False
        elif not self.inner.transfer_async(job_id, spec):
            return False
        self._order.append(job_id)
        return True

    def wait(self, job_ids: set[int]) -> None:
        self.inner.wait(job_ids - self.failed)

    def collect(self, job: int) -> bool:
        """Wait for ``job`` and return its success (jobs finished before it wait for their own call)."""
        self.wait({job})
        self._results.update(self.inner.get_finished())
        while self._order and self._order[0] in self._results:
            finished = self._order.popleft()
            self.reported[finished] = self._results.pop(finished)
        if job not in self.reported:
            raise AssertionError(f"H2: job {job} not reported after wait")
        return self.reported.pop(job)


class _Simulation:
    """One run's state: the scheduler side (requests, the judged manager) and the worker
    side (GPU tensors, the two faulty handlers, the jobs in flight)."""

    def __init__(self, target: JudgedManager, config: SimulationConfig, build: Callable[..., tuple[Any, Any]]) -> None:
        import torch

        self.torch, self.target, self.config = torch, target, config
        self.rng = random.Random(config.seed)
        self.report = SimulationReport()
        self.kv = {f"layer{i}": torch.zeros((2, config.gpu_blocks, *config.block_shape)) for i in range(config.layers)}
        raw_store, raw_load = build(self.kv, "kv_blocks", config.block_shape[0], config.factor, config.capacity)
        self.store = FaultyHandler(raw_store, config.store_fail_rate, random.Random(config.seed + 1))
        self.load = FaultyHandler(raw_load, config.load_fail_rate, random.Random(config.seed + 2))
        self.job_ids = itertools.count(1)
        self.busy: set[int] = set()
        self.seen: set[bytes] = set()
        self.pending_stores: list[tuple[int, list[bytes]]] = []
        self.pending_loads: list[tuple[int, list[bytes], list[int], int]] = []
        self.content = functools.cache(self._content)

    def _content(self, block_hash: bytes, layer: int, sub: int) -> Any:
        """What sub-block ``sub`` of ``block_hash`` holds in ``layer``: a function of the three alone."""
        seed = int.from_bytes(hashlib.sha256(block_hash + bytes([layer, sub])).digest()[:8], "little")
        return self.torch.randn((2, *self.config.block_shape), generator=self.torch.Generator().manual_seed(seed))

    def finish_store(self, job: int, hashes: list[bytes]) -> None:
        success = self.store.collect(job)
        if not success:
            self.report.failed_store_transfers += 1
        elif self.rng.random() < self.config.abort_rate:
            success = False
            self.report.aborted_stores += 1
        self.target.complete_store(set(hashes), success=success)  # C3: a set, as vLLM passes

    def finish_load(self, job: int, hashes: list[bytes], gpu_ids: list[int], skip: int) -> None:
        f = self.config.factor
        if self.load.collect(job):
            for sub, gpu_id in enumerate(gpu_ids, start=skip):
                self.check_loaded(gpu_id, hashes[sub // f], sub % f)
            self.report.blocks_loaded += len(gpu_ids)
        else:
            self.report.failed_load_transfers += 1  # the blocks count as not loaded; recompute
        self.busy.difference_update(gpu_ids)
        self.target.complete_load(hashes)  # C2: once per prepare_load, same hashes

    def check_loaded(self, gpu_id: int, block_hash: bytes, sub: int) -> None:
        """E1: loaded GPU block ``gpu_id`` holds sub-block ``sub`` of ``block_hash`` in every layer."""
        for layer, tensor in enumerate(self.kv.values()):
            if not self.torch.equal(tensor[:, gpu_id], self.content(block_hash, layer, sub)):
                self.report.corrupt += 1
                if len(self.report.notes) < 10:
                    self.report.notes.append(f"E1: GPU block {gpu_id} (sub-block {sub} of {block_hash[:6].hex()}…, "
                                             f"layer {layer}) does not hold what the hash was stored with")

    def finish_some(self, all_of_them: bool = False) -> None:
        """Complete jobs in a random order across directions; all of them, or stop at a coin flip."""
        while (self.pending_loads or self.pending_stores) and (all_of_them or self.rng.random() >= 0.5):
            index = self.rng.randrange(len(self.pending_loads) + len(self.pending_stores))
            if index < len(self.pending_loads):
                self.finish_load(*self.pending_loads.pop(index))
            else:
                self.finish_store(*self.pending_stores.pop(index - len(self.pending_loads)))
            if not all_of_them and self.rng.random() < 0.5:
                return

    def free_gpu(self, count: int) -> list[int]:
        """``count`` idle GPU blocks, finishing the oldest loads while too few are idle."""
        while len(self.busy) + count > self.config.gpu_blocks and self.pending_loads:
            self.finish_load(*self.pending_loads.pop(0))
        return self.rng.sample(sorted(set(range(self.config.gpu_blocks)) - self.busy), count)

    def request(self) -> None:
        """One scheduler step: look a request's chain up, load its hits, touch it, store it."""
        config, report, rng = self.config, self.report, self.rng
        report.requests += 1
        length = rng.randint(1, config.max_request_blocks)
        request = chain(rng.randrange(config.roots), [rng.randrange(2) for _ in range(length)])
        self.seen.update(request)
        if rng.random() < 0.2:  # a random lookup of unrelated hashes
            report.lookups += 1
            self.target.lookup(iter([rng.randbytes(32) for _ in range(rng.randint(0, 3))]))
        report.lookups += 1
        hits = self.target.lookup(iter(request))
        if hits and rng.random() < 0.8:
            self.start_load(request[:hits])
        if rng.random() < 0.5:
            report.touches += 1
            self.target.touch(request)
        self.start_store(request)
        report.max_in_flight = max(report.max_in_flight, len(self.pending_loads) + len(self.pending_stores))
        self.finish_some()

    def start_load(self, hashes: list[bytes]) -> None:
        """Load the hits into scribbled GPU blocks, maybe from inside the first block (H3)."""
        f = self.config.factor
        spec = self.target.prepare_load(hashes)
        skip = self.rng.randrange(f)
        self.report.partial_first_block_loads += skip > 0
        gpu_ids = self.free_gpu(len(hashes) * f - skip)
        self.busy.update(gpu_ids)
        for tensor in self.kv.values():  # scribble, so a missed copy cannot pass
            tensor[:, gpu_ids] = float("nan")
        job = next(self.job_ids)
        assert isinstance(spec, CPULoadStoreSpec)
        if not self.load.transfer_async(job, (spec, GPULoadStoreSpec(gpu_ids))):
            raise AssertionError("H1: a valid load was refused")
        self.pending_loads.append((job, hashes, gpu_ids, skip))
        self.report.loads += 1

    def start_store(self, request: list[bytes]) -> None:
        """Offer the request to ``prepare_store``; copy what it accepts out of fresh GPU blocks."""
        f, report = self.config.factor, self.report
        output = self.target.prepare_store(request)
        if output is None or not output.block_hashes_to_store:
            report.refusals += output is None
            return
        to_store = list(output.block_hashes_to_store)
        report.evictions += len(output.block_hashes_evicted)
        gpu_ids = self.free_gpu(len(to_store) * f)
        for index, gpu_id in enumerate(gpu_ids):
            for layer, tensor in enumerate(self.kv.values()):
                tensor[:, gpu_id] = self.content(to_store[index // f], layer, index % f)
        job = next(self.job_ids)
        if not self.store.transfer_async(job, (GPULoadStoreSpec(gpu_ids), output.store_spec)):
            raise AssertionError("H1: a valid store was refused")
        # The copy happens now (the model computes on; these GPU blocks get reused);
        # completion is reported to the manager later.
        self.store.wait({job})
        self.pending_stores.append((job, to_store))
        report.stores += 1
        report.blocks_stored += len(to_store)

    def refill(self) -> None:
        """E2 through the public API: nothing is in flight, so every ready block is idle and
        evictable. The largest fresh batch that prepare_store accepts is free + ready."""
        list(self.target.take_events())
        cap, report = self.config.capacity, self.report
        ready = report.ready_at_end = sum(self.target.lookup([block_hash]) for block_hash in self.seen)
        for size in range(cap, -1, -1):
            fresh = [b"\xfe\xed" + size.to_bytes(2, "little") + i.to_bytes(28, "little") for i in range(size)]
            refill = self.target.prepare_store(fresh)
            if refill is None:
                continue
            report.leaked = cap - size
            evicted = set(refill.block_hashes_evicted)
            if len(evicted) != ready or not evicted <= self.seen:
                report.notes.append(f"E2: a refill of {size} evicted {len(evicted)} blocks but {ready} hashes were "
                                    "ready")
                report.leaked = max(report.leaked, abs(len(evicted) - ready))
            self.target.complete_store(fresh, success=False)
            return


def chain(root: int, labels: list[int]) -> list[bytes]:
    """A request's prefix-sharing hashes: each hashes its parent's and its own label."""
    hashes = itertools.accumulate(labels, lambda parent, label: hashlib.sha256(parent + bytes([label])).digest(),
                                  initial=bytes([root]) * 32)
    return list(hashes)[1:]  # the root first


@implements("E1", "E2")
def run_simulation(
    manager: OffloadingManager,
    config: SimulationConfig = SimulationConfig(),
    build_handlers: Callable[..., tuple[Any, Any]] | None = None,
) -> SimulationReport:
    """Drive ``manager`` (``config.capacity`` blocks) and copy handlers; report E1/E2 and
    the judge's first verdict (victims compared as ``config.judge_policy`` says).
    ``build_handlers`` has ``build_cpu_handlers``'s signature (ours by default)."""
    target = JudgedManager(manager, config.capacity, config.judge_policy, CallLog.naming("m", ()).name)
    run = _Simulation(target, config, build_handlers or load_factory(builtin_source("handler", "impl")))
    try:
        for _ in range(config.requests):
            run.request()
        run.finish_some(all_of_them=True)
    except Exception as error:  # a manager already judged wrong may break the caller's protocol
        if target.verdict is None:
            raise
        run.report.notes.append(f"the run stopped after the violation: {type(error).__name__}: {error}")
    else:
        run.refill()
    run.report.judged_calls, run.report.violation = target.judged_calls, target.verdict
    return run.report


class _VllmCPUManager(VllmManagerView):
    """A vLLM-interface manager as the simulation drives it (K2): its ``CPULoadStoreSpec``
    (vLLM 0.32/0.33's has no ``medium()``) handed to the copy handlers as the contract's,
    with the same block ids."""

    def prepare_load(self, block_hashes: Iterable[bytes], ctx: Any = None) -> CPULoadStoreSpec:
        return CPULoadStoreSpec(super().prepare_load(block_hashes, ctx).block_ids)

    def prepare_store(self, block_hashes: Iterable[bytes], ctx: Any = None) -> PrepareStoreOutput | None:
        out = super().prepare_store(block_hashes, ctx)
        if out is None:
            return None
        spec: Any = out.store_spec  # vLLM's: ``block_ids`` without ``medium()``
        return PrepareStoreOutput(out.block_hashes_to_store, CPULoadStoreSpec(spec.block_ids), out.block_hashes_evicted)


def manager_factory(target: str, policy: str, interface: str = "auto") -> Callable[[int], OffloadingManager]:
    """``impl``, ``reference`` or ``MODULE:FACTORY`` (``f(num_blocks=, enable_events=)``); a
    manager written against vLLM's interface (``interface``, detected by default: K1) is
    driven through the adapter ``conform`` uses (K2: ``_VllmCPUManager``)."""
    factory = load_factory(builtin_source("manager", target, policy))
    vllm = target_modes("manager", factory, target, policy, interface)[0] == "vllm"
    view: Callable[[Any], Any] = _VllmCPUManager if vllm else (lambda manager: manager)
    return lambda capacity: view(factory(num_blocks=capacity, enable_events=True))


@click.command(name="simulate", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--manager", "target", default="impl", show_default=True, help="impl, reference, or MODULE:FACTORY.")
@click.option("--handlers", default="impl", show_default=True,
              help="impl, or MODULE:FACTORY with build_cpu_handlers's signature returning (store, load).")
@click.option("--policy", type=click.Choice(list(POLICIES)), default="lru", show_default=True,
              help="impl/reference: the policy built and judged exactly; MODULE:FACTORY: victims judged by "
                   "eligibility only.")
@click.option("--requests", type=click.IntRange(min=1), default=400, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--capacity", type=click.IntRange(min=1), default=8, show_default=True, help="Offloaded blocks.")
@click.option("--factor", type=click.IntRange(min=1), default=2, show_default=True,
              help="GPU blocks per offloaded block (H3).")
@INTERFACE_OPTION
def simulate(target: str, handlers: str, policy: str, requests: int, seed: int, capacity: int, factor: int,
             interface: str) -> None:
    """End to end (E1, E2): scheduler + worker on CPU tensors, with injected faults.

    Exit 0: no corrupt load, no leaked block, every manager call conforms (lockstep
    with the model); 1: otherwise; 2: bad arguments.
    """
    try:
        make = manager_factory(target, policy, interface)
    except TargetSetupError as error:
        raise click.UsageError(str(error)) from None
    build_handlers = load_factory(builtin_source("handler", handlers))
    config = SimulationConfig(requests=requests, seed=seed, capacity=capacity, factor=factor,
                              gpu_blocks=max(48, 2 * 6 * factor + 8),
                              judge_policy=policy if target in ("impl", "reference") else "any")
    try:
        manager = make(capacity)
    except Exception as error:
        click.echo(f"Error: the factory could not build a manager: {type(error).__name__}: {error}", err=True)
        raise SystemExit(2) from None
    click.echo(f"simulate --manager {target} --handlers {handlers} --policy {policy} --requests {requests} "
               f"--seed {seed} --capacity {capacity} --factor {factor}")
    report = run_simulation(manager, config, build_handlers)
    click.echo(report.format())
    raise SystemExit(0 if report.ok else 1)
