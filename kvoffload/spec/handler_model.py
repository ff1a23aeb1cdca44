"""The executable reference model of copy handlers (H1–H3, E1): the oracle that
``kvoffload.conformance``'s ``check_handler`` drives a store and a load handler against.

Needs torch (imported by nothing else of ``kvoffload.spec``). Written from CONTRACT.md
alone — it shares no code with ``kvoffload.impl.copy`` — so a bug in the production index
arithmetic cannot hide in the check. The model owns the KV tensors (it plays vLLM's
model runner), remembers what every GPU block and every offloaded sub-block must hold,
and drives the handlers only through the ``OffloadingHandler`` interface.

Which jobs may run together is what vLLM's connector guarantees: no job reads a block
that an in-flight job writes, no two in-flight jobs write one block, and the model
never writes a GPU block that an in-flight job reads or writes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
import torch

from .clauses import implements
from .types import GPULoadStoreSpec, LoadStoreSpec

__all__ = ["BLOCK_DIM", "HandlerViolationError", "Job", "HandlerModel"]

#: Where each layout keeps its num_blocks dimension (CONTRACT H1 "every layer's KV
#: tensor"; the layout names of ``kvoffload conform handler``).
BLOCK_DIM = {"blocks": 0, "kv_blocks": 1, "layers_blocks": 1, "layers_kv_blocks": 2, "page": 0}


class HandlerViolationError(Exception):
    """A clause was broken; ``steps`` reproduce it (raised inside a hypothesis example)."""

    def __init__(self, clause: str, message: str, steps: list[str]) -> None:
        super().__init__(f"{clause}: {message}")
        self.clause, self.message, self.steps = clause, message, list(steps)


@attrs.define
class Job:
    """An accepted job: direction, and what its completion must show."""

    job_id: int
    direction: str  # "store" or "load"
    gpu_reads: set[int] = attrs.field(factory=set)
    gpu_writes: set[int] = attrs.field(factory=set)
    cpu_reads: set[int] = attrs.field(factory=set)  # offloaded block ids
    cpu_writes: set[int] = attrs.field(factory=set)
    # load: GPU block -> (expected content per tensor, sub-block it came from)
    expect: dict[int, tuple[list[torch.Tensor], int]] = attrs.field(factory=dict)
    # load: every sub-block of the offloaded blocks read, to tell H3 from E1
    candidates: dict[int, list[torch.Tensor]] = attrs.field(factory=dict)


class HandlerModel:
    """Expected contents plus the bookkeeping of in-flight jobs and reports."""

    def __init__(
        self,
        tensors: dict[str, torch.Tensor],
        layout: str,
        factor: int,
        num_blocks: int,
        store: Any,
        load: Any,
        offloaded_spec: Callable[[Sequence[int]], LoadStoreSpec],
        steps: list[str],
    ) -> None:
        self.tensors, self.layout, self.f, self.num_blocks = tensors, layout, factor, num_blocks
        self.store, self.load, self.offloaded_spec, self.steps = store, load, offloaded_spec, steps
        self.block_dim = BLOCK_DIM[layout]
        self.num_gpu = next(iter(tensors.values())).shape[self.block_dim]
        # Byte views: comparisons are bit-exact whatever the dtype (NaNs included).
        self.gpu_expected = {n: t.view(torch.uint8).clone() for n, t in tensors.items()}
        self.cpu_expected: dict[int, list[torch.Tensor]] = {}  # sub-block -> content per tensor
        self.in_flight: dict[int, Job] = {}
        self.reported: set[int] = set()
        self.refused: set[int] = set()
        self.refused_cpu_targets: set[int] = set()
        self.next_id = 0

    # -- helpers ---------------------------------------------------------------------

    def fail(self, clause: str, message: str) -> None:
        raise HandlerViolationError(clause, message, self.steps)

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def block(self, name: str, gpu_block: int) -> torch.Tensor:
        return self.tensors[name].view(torch.uint8).select(self.block_dim, gpu_block)

    def content(self, gpu_block: int) -> list[torch.Tensor]:
        return [self.block(n, gpu_block).clone() for n in self.tensors]

    def same(self, a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
        return all(torch.equal(x, y) for x, y in zip(a, b))

    def busy(self) -> tuple[set[int], set[int], set[int], set[int]]:
        """(gpu read, gpu written, cpu read, cpu written) by in-flight jobs."""
        gr: set[int] = set()
        gw: set[int] = set()
        cr: set[int] = set()
        cw: set[int] = set()
        for job in self.in_flight.values():
            gr |= job.gpu_reads
            gw |= job.gpu_writes
            cr |= job.cpu_reads
            cw |= job.cpu_writes
        return gr, gw, cr, cw

    def write_gpu(self, gpu_block: int, make: Callable[[torch.Tensor], torch.Tensor]) -> None:
        """The model runner overwrites a GPU block (as compute would)."""
        for name, tensor in self.tensors.items():
            view = self.block(name, gpu_block)
            view.copy_(make(view))
            self.gpu_expected[name].select(self.block_dim, gpu_block).copy_(view)

    @implements("H2")
    def check_untouched(self, clause: str, why: str) -> None:
        """Every GPU block no in-flight load writes holds what the model expects (H2)."""
        _, writes, _, _ = self.busy()
        for name, tensor in self.tensors.items():
            actual = tensor.view(torch.uint8)
            expected = self.gpu_expected[name]
            for b in range(self.num_gpu):
                if b not in writes and not torch.equal(
                    actual.select(self.block_dim, b), expected.select(self.block_dim, b)
                ):
                    self.fail(clause, f"GPU block {b} of {name!r} changed {why}")

    # -- submitting --------------------------------------------------------------------

    @implements("H1")
    def submit(self, handler: Any, job: Job, spec: tuple[LoadStoreSpec, LoadStoreSpec], what: str) -> None:
        self.steps.append(f"{job.direction} job {job.job_id}: {what}")
        try:
            accepted = handler.transfer_async(job.job_id, spec)
        except Exception as error:
            self.fail("H1", f"a valid {job.direction} ({what}) was refused: {error!r}")
        if accepted is not True:
            self.fail("H1", f"a valid {job.direction} ({what}) returned {accepted!r}, expected True")
        self.in_flight[job.job_id] = job

    @implements("H3")
    def submit_store(self, gpu_ids: list[int], cpu_ids: list[int]) -> None:
        job = Job(self.new_id(), "store", gpu_reads=set(gpu_ids), cpu_writes=set(cpu_ids))
        spec = (GPULoadStoreSpec(gpu_ids), self.offloaded_spec(cpu_ids))
        self.submit(self.store, job, spec, f"GPU {gpu_ids} -> offloaded {cpu_ids}")
        # H3: GPU block i lands in sub-block dst[i // f]·f + i % f. Nothing reads these
        # sub-blocks before the job is reported, so the model can update them now.
        for i, g in enumerate(gpu_ids):
            self.cpu_expected[cpu_ids[i // self.f] * self.f + i % self.f] = self.content(g)

    @implements("H3")
    def submit_load(self, cpu_ids: list[int], gpu_ids: list[int]) -> None:
        job = Job(self.new_id(), "load", gpu_writes=set(gpu_ids), cpu_reads=set(cpu_ids))
        sequence = [c * self.f + j for c in cpu_ids for j in range(self.f)]
        skip = len(sequence) - len(gpu_ids)  # H3: read the last m sub-blocks
        for g, sub in zip(gpu_ids, sequence[skip:]):
            job.expect[g] = (self.cpu_expected[sub], sub)
        job.candidates = {sub: self.cpu_expected[sub] for sub in sequence}
        spec = (self.offloaded_spec(cpu_ids), GPULoadStoreSpec(gpu_ids))
        self.submit(self.load, job, spec, f"offloaded {cpu_ids} -> GPU {gpu_ids} (skip {skip})")

    # -- completion --------------------------------------------------------------------

    @implements("E1", "H3")
    def landed(self, job: Job) -> None:
        """A load's bytes must be in place: exact (E1), from the right sub-block (H3)."""
        for g, (content, sub) in job.expect.items():
            actual = self.content(g)
            if self.same(actual, content):
                continue
            wrong = [s for s, c in job.candidates.items() if s != sub and self.same(actual, c)]
            if wrong:
                self.fail(
                    "H3",
                    f"load job {job.job_id} put sub-block {wrong[0]} into GPU block {g}, "
                    f"expected sub-block {sub}",
                )
            self.fail("E1", f"load job {job.job_id}: GPU block {g} differs from sub-block {sub} as stored")
        for g, (content, _) in job.expect.items():
            for name, c in zip(self.tensors, content):
                self.gpu_expected[name].select(self.block_dim, g).copy_(c)

    @implements("H1", "H2")
    def poll(self, handler: Any, direction: str) -> list[int]:
        try:
            results = handler.get_finished()
        except Exception as error:
            self.fail("H2", f"{direction} get_finished() raised {error!r}")
        done: list[int] = []
        for entry in results:
            job_id, success = entry
            if job_id in self.refused:
                self.fail("H1", f"refused job {job_id} was reported by get_finished as {entry!r}")
            if job_id in self.reported:
                self.fail("H2", f"job {job_id} was reported twice (again as {entry!r})")
            job = self.in_flight.get(job_id)
            if job is None or job.direction != direction:
                self.fail("H2", f"{direction} get_finished reported job {job_id!r}, which it never accepted")
                raise AssertionError  # unreachable; for the type checker
            older = [j for j in self.in_flight.values() if j.direction == direction and j.job_id < job_id]
            if older:
                self.fail(
                    "H2",
                    f"{direction} job {job_id} was reported before the earlier job {older[0].job_id} "
                    "(jobs of one direction complete in submission order)",
                )
            if success is not True:
                self.fail("H2", f"valid {direction} job {job_id} was reported as {entry!r}")
            if direction == "load":
                self.landed(job)
            del self.in_flight[job_id]
            self.reported.add(job_id)
            done.append(job_id)
        self.steps.append(f"get_finished ({direction}) -> {done}")
        return done
