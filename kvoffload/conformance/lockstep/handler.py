"""Conformance of worker-side copy handlers to H1–H3 and E1 (any medium).

``check_handler(factory)`` drives a store handler and a load handler through the
``OffloadingHandler`` interface only, on random KV layouts, dtypes, block-size factors,
block ids and job interleavings, and reports the first clause it sees broken, with a
shrunk reproduction. ``kvoffload conform handler MODULE:FACTORY`` is the command line.

**Factory protocol.** ``factory(kv_caches, layout, gpu_block_size, block_size_factor,
num_blocks)``, called *positionally*, returns ``(store_handler, load_handler)``:

- ``kv_caches``: ``dict[str, torch.Tensor]``, the GPU KV cache (on ``device``);
- ``layout``: one of ``blocks``, ``kv_blocks``, ``layers_blocks``, ``layers_kv_blocks``,
  ``page`` (``kvoffload.impl.copy.layouts`` describes the shapes);
- ``gpu_block_size``: tokens per GPU block; ``block_size_factor``: ``f`` of H3;
- ``num_blocks``: how many offloaded blocks the medium holds.

The store handler takes ``(GPULoadStoreSpec, offloaded_spec)`` jobs, the load handler
``(offloaded_spec, GPULoadStoreSpec)``; ``offloaded_spec`` (default ``CPULoadStoreSpec``)
is built as ``offloaded_spec(block_ids)``. A factory that raises ``NotImplementedError``
for a layout skips that example. ``kvoffload.impl.copy.build_cpu_handlers`` is a factory.

What is checked: every valid job is accepted (H1) and reported exactly once, in
submission order per direction, as successful (H2); loaded bytes equal what was stored
(E1), from the right sub-block (H3); no GPU block outside a job changes (H2); after
``wait`` a load's bytes are in place (H2); bad specs — wrong or unknown medium, H3
length mismatch, ids out of range or negative, a job id in flight, a non-int job id —
raise or return ``False``, move no byte and are never reported (H1).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import click
from hypothesis import assume, given
from hypothesis import seed as hyp_seed
from hypothesis import strategies as st

from ...spec.types import CPULoadStoreSpec, GPULoadStoreSpec, LoadStoreSpec
from ..judge import invoke
from ..loading import load_factory
from ..runner import conformance_settings, seed_only_draws

__all__ = ["HandlerViolation", "HandlerConformanceResult", "check_handler", "handler", "LAYOUTS"]

LAYOUTS = ("blocks", "kv_blocks", "layers_blocks", "layers_kv_blocks", "page")

HandlerFactory = Callable[..., tuple[Any, Any]]
#: Builds the offloaded medium's spec from block ids (default ``CPULoadStoreSpec``).
OffloadedSpec = Callable[[Sequence[int]], LoadStoreSpec]


@attrs.frozen
class HandlerViolation:
    """One broken clause: what was expected vs what happened, and how to get there."""

    clause: str
    message: str
    reproduction: tuple[str, ...]

    def format(self) -> str:
        steps = "\n".join(f"    {i + 1}. {s}" for i, s in enumerate(self.reproduction))
        return f"{self.clause}: {self.message}\n  reproduction:\n{steps}"


@attrs.frozen
class HandlerConformanceResult:
    """``ok`` when no clause was broken in ``examples`` random scenarios."""

    factory: str
    examples: int
    violations: tuple[HandlerViolation, ...]

    @property
    def ok(self) -> bool:
        return not self.violations

    def __bool__(self) -> bool:
        return self.ok

    def format(self) -> str:
        if self.ok:
            return f"{self.factory}: conforms to H1–H3, E1 ({self.examples} examples)"
        return f"{self.factory}: VIOLATION\n" + "\n".join(v.format() for v in self.violations)


@attrs.define
class _ForeignSpec(LoadStoreSpec):
    """A medium no handler under test serves (H1 refusal)."""

    block_ids: list[int]

    @staticmethod
    def medium() -> str:
        return "NOWHERE"


def _random_tensors(draw: Any, layout: str, num_gpu: int, device: str) -> dict[str, Any]:
    """Small random KV tensors of ``layout`` filled with random bits (NaNs included)."""
    import torch

    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1), label="fill seed"))
    dtype = torch.int8 if layout == "page" else draw(
        st.sampled_from([torch.float16, torch.bfloat16, torch.float32, torch.int8]), label="dtype")
    inner = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2), label="block shape"))
    layers = draw(st.integers(1, 3), label="layers")
    shape = {
        "blocks": (num_gpu, *inner),
        "kv_blocks": (2, num_gpu, *inner),
        "layers_blocks": (layers, num_gpu, *inner),
        "layers_kv_blocks": (layers, 2, num_gpu, *inner),
        "page": (num_gpu, draw(st.integers(1, 24), label="page bytes")),
    }[layout]
    count = 1 if layout.startswith("layers") else draw(st.integers(1, 3), label="tensors")
    nbytes = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
    raw = (torch.randint(0, 256, (nbytes,), dtype=torch.uint8, generator=gen) for _ in range(count))
    return {f"layer.{i}": bits.view(dtype).reshape(shape).to(device) for i, bits in enumerate(raw)}


def _bad_specs(model: Any, draw: Any) -> None:
    """Offer one bad job to one handler; it must be refused with nothing moved (H1)."""
    f, n_gpu, n_off, off, gpu_spec = model.f, model.num_gpu, model.num_blocks, model.offloaded_spec, GPULoadStoreSpec
    gpu = list(range(f))
    # Built only when drawn: a medium's spec may refuse bad ids at construction.
    specs: dict[str, Callable[[], tuple[Any, Any]]] = {
        "store wrong medium": lambda: (off([0]), gpu_spec(gpu)),
        "load wrong medium": lambda: (gpu_spec(gpu), off([0])),
        "store foreign medium": lambda: (gpu_spec(gpu), _ForeignSpec([0])),
        "load foreign medium": lambda: (_ForeignSpec([0]), gpu_spec(gpu)),
        "store length": lambda: (gpu_spec(list(range(f + 1))), off([0])),
        "load too many": lambda: (off([0]), gpu_spec(list(range(f + 1)))),
        "load too few": lambda: (off([0, 1 % n_off]), gpu_spec(gpu)),  # m = k·f − f
        "store gpu out of range": lambda: (gpu_spec([n_gpu] * f), off([0])),
        "store offloaded out of range": lambda: (gpu_spec(gpu), off([n_off])),
        "load gpu out of range": lambda: (off([0]), gpu_spec([n_gpu - 1 - i for i in range(f - 1)] + [n_gpu])),
        "load offloaded out of range": lambda: (off([n_off]), gpu_spec(gpu)),
        "store negative": lambda: (gpu_spec(gpu), off([-1])),
        "load negative": lambda: (off([0]), gpu_spec([-1] + gpu[1:])),
        "non-int job id": lambda: (gpu_spec(gpu), off([0])),
        "job id in flight": lambda: (gpu_spec(gpu), off([0])),
    }
    kind = draw(st.sampled_from(list(specs)), label="bad kind")
    loading = kind.startswith("load")  # every other kind is offered to the store handler
    handler = model.load if loading else model.store
    job_id: Any = model.new_id()
    if kind == "non-int job id":
        job_id = draw(st.sampled_from([str(job_id), float(job_id) + 0.5, None]), label="bad job id")
    elif kind == "job id in flight":
        stores = [j for j in model.in_flight.values() if j.direction == "store"]
        if not stores:
            return
        job_id = stores[0].job_id
    spec = specs[kind]()
    # A refused job must not write anything: make sure the targets' expected contents
    # differ from the sources, by reading only blocks no in-flight job touches.
    _, gw, cr, cw = model.busy()
    if (gw or cw) if loading else (cr or cw):
        return  # keep it simple: only offer a bad job when nothing could race with it
    if not loading:
        model.refused_cpu_targets.update(range(n_off))
    model.steps.append(f"bad job ({kind}) id={job_id!r}: {spec!r}")
    accepted, error = invoke(handler.transfer_async, job_id, spec)  # raising refuses too
    if error is None and accepted is not False:
        model.fail("H1", f"a bad job ({kind}) was expected to be refused, got {accepted!r}")
    if kind != "job id in flight" and isinstance(job_id, int):
        model.refused.add(job_id)
    model.check_untouched("H1", f"after a refused job ({kind})")


def _wait(model: Any, chosen: set[int]) -> None:
    """``wait`` for the ``chosen`` jobs, each on its own handler: once it returns, a load's
    bytes are in place (H2)."""
    for handler, direction in ((model.store, "store"), (model.load, "load")):
        mine = {j for j in chosen if model.in_flight[j].direction == direction}
        model.steps.append(f"wait ({direction}) {sorted(mine)}")
        handler.wait(mine)
        if direction == "load":
            for j in sorted(mine):
                model.landed(model.in_flight[j])


def _store_step(model: Any, draw: Any) -> None:
    """A valid store: up to 3 offloaded blocks no job uses, from GPU blocks no job writes."""
    _, gw, cr, cw = model.busy()
    free_off = [c for c in range(model.num_blocks) if c not in cr | cw]
    free_gpu = [g for g in range(model.num_gpu) if g not in gw]
    k = draw(st.integers(0, min(len(free_off), len(free_gpu) // model.f, 3)), label="store k")
    cpu_ids = draw(st.permutations(free_off), label="store offloaded ids")[:k]
    gpu_ids = draw(st.permutations(free_gpu), label="store GPU ids")[: k * model.f]
    model.submit_store(gpu_ids, cpu_ids)


def _load_step(model: Any, draw: Any) -> None:
    """A valid load: up to 3 offloaded blocks no job writes, into m GPU blocks no job uses
    (k·f − f < m <= k·f: H3 reads the last m sub-blocks)."""
    gr, gw, _, cw = model.busy()
    ready = [c for c in range(model.num_blocks) if c not in cw]
    k = draw(st.integers(0, min(len(ready), 3)), label="load k")
    cpu_ids = draw(st.permutations(ready), label="load offloaded ids")[:k]
    idle_gpu = [g for g in range(model.num_gpu) if g not in gr | gw]
    lo, hi = max(0, k * model.f - model.f + 1), k * model.f
    if hi <= len(idle_gpu):
        m = draw(st.integers(lo, hi), label="load m")
        model.submit_load(cpu_ids, draw(st.permutations(idle_gpu), label="load GPU ids")[:m])


def _poll_step(model: Any, draw: Any) -> None:
    """Poll both handlers (``draw`` unused: the drain polls this way too)."""
    model.poll(model.store, "store")
    model.poll(model.load, "load")


def _wait_step(model: Any, draw: Any) -> None:
    ids = sorted(model.in_flight)
    _wait(model, set(draw(st.lists(st.sampled_from(ids), unique=True), label="wait ids")) if ids else set())


def _scramble_step(model: Any, draw: Any) -> None:
    """The model runner overwrites a GPU block no job uses (as compute would)."""
    import torch

    gr, gw, _, _ = model.busy()
    idle_gpu = [g for g in range(model.num_gpu) if g not in gr | gw]
    if idle_gpu:
        g = draw(st.sampled_from(idle_gpu), label="scrambled GPU block")
        model.steps.append(f"overwrite GPU block {g}")
        model.write_gpu(g, lambda v: torch.randint_like(v, 0, 256))


#: The steps a scenario draws, by name (the order is part of what a seed draws).
_STEPS: dict[str, Callable[[Any, Any], None]] = {
    "store": _store_step, "load": _load_step, "poll": _poll_step, "wait": _wait_step, "scramble": _scramble_step,
    "bad": _bad_specs,
}


def _drain_and_read_back(model: Any, every_block: list[list[int]]) -> None:
    """Wait for everything, then every job must be reported exactly once (H2); then read
    back every offloaded block: stores (E1, H3) and refusals (H1) show here."""
    from ...spec.handler_model import HandlerViolationError

    _wait(model, set(model.in_flight))
    for _ in range(200):
        _poll_step(model, None)
        if not model.in_flight:
            break
        time.sleep(0.005)
    if model.in_flight:
        model.fail("H2", f"jobs {sorted(model.in_flight)} were never reported, even after wait()")
    for cpu_ids in every_block:
        try:
            model.submit_load(cpu_ids, list(range(len(cpu_ids) * model.f)))
            model.load.wait({model.next_id})
            model.poll(model.load, "load")
        except HandlerViolationError as error:
            if error.clause == "E1" and set(cpu_ids) & model.refused_cpu_targets:
                raise HandlerViolationError("H1", f"{error.message}; a refused job may have written offloaded "
                                            "blocks", error.steps) from error
            raise
        if model.in_flight:
            model.poll(model.load, "load")


def _scenario(factory: HandlerFactory, draw: Any, layouts: Sequence[str], factors: Sequence[int], device: str,
              offloaded_spec: OffloadedSpec) -> None:
    from ...spec.handler_model import HandlerModel, HandlerViolationError

    layout = draw(st.sampled_from(list(layouts)), label="layout")
    f = draw(st.sampled_from(list(factors)), label="block_size_factor")
    num_gpu = draw(st.integers(2 * f + 1, 2 * f + 8), label="GPU blocks")
    num_off = draw(st.integers(2, 5), label="offloaded blocks")
    tensors = _random_tensors(draw, layout, num_gpu, device)
    shapes = {n: (tuple(t.shape), str(t.dtype)) for n, t in tensors.items()}
    steps = [f"factory(kv_caches={shapes}, layout={layout!r}, gpu_block_size=16, block_size_factor={f}, num_blocks={num_off})"]
    try:
        store, load = factory(tensors, layout, 16, f, num_off)
    except NotImplementedError:
        assume(False)
        return
    except Exception as error:
        raise HandlerViolationError("S3", f"the factory raised {error!r} on valid arguments", steps) from error
    model = HandlerModel(tensors, layout, f, num_off, store, load, offloaded_spec, steps)
    per_job = max(1, num_gpu // f - 1)
    # every offloaded block, split into runs that one job each moves (setup and read-back)
    every_block = [list(range(num_off))[first:first + per_job] for first in range(0, num_off, per_job)]

    # Setup: fill every offloaded block, so every later check knows what it must hold.
    for cpu_ids in every_block:
        gpu_ids = draw(st.permutations(range(num_gpu)), label="setup GPU ids")[: len(cpu_ids) * f]
        model.submit_store(gpu_ids, cpu_ids)
    model.poll(store, "store")

    for step in draw(st.lists(st.sampled_from(list(_STEPS)), min_size=1, max_size=10), label="operations"):
        _STEPS[step](model, draw)
        model.check_untouched("H2", f"after step {model.steps[-1]!r}, though no job wrote it")
    _drain_and_read_back(model, every_block)


def check_handler(factory: HandlerFactory, *, max_examples: int = 50, seed: int = 0, device: str = "cpu",
                  layouts: Sequence[str] = LAYOUTS, factors: Sequence[int] = (1, 2, 4),
                  offloaded_spec: OffloadedSpec = CPULoadStoreSpec, name: str | None = None,
                  shrink: bool = True) -> HandlerConformanceResult:
    """Run the handler properties on ``factory`` (module docstring: protocol, checks).

    ``shrink=False`` reports the first failing scenario as found (faster, longer
    reproduction); by default hypothesis shrinks it to a minimal one first.
    """
    from ...spec.handler_model import HandlerViolationError

    unknown = [layout for layout in layouts if layout not in LAYOUTS]
    if unknown:
        raise ValueError(f"unknown layout(s) {unknown}; expected some of {list(LAYOUTS)}")
    label = name or str(getattr(factory, "__qualname__", repr(factory)))
    runs = 0

    @hyp_seed(seed)
    @conformance_settings(max_examples, 1, shrink=shrink)
    @given(st.data())
    def prop(data: Any) -> None:
        nonlocal runs
        runs += 1
        _scenario(factory, data.draw, layouts, factors, device, offloaded_spec)

    try:
        with seed_only_draws():
            prop()
    except HandlerViolationError as error:
        violation = HandlerViolation(error.clause, error.message, tuple(error.steps))
        return HandlerConformanceResult(label, runs, (violation,))
    return HandlerConformanceResult(label, runs, ())


@click.command(name="handler")
@click.argument("target", metavar="MODULE:FACTORY")
@click.option("--max-examples", type=int, default=50, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--device", default="cpu", show_default=True, help="Where the GPU-side tensors live.")
@click.option("--layout", "layouts", multiple=True, type=click.Choice(LAYOUTS), help="Restrict layouts.")
@click.option("--spec", "spec_target", default=None, help="MODULE:CLASS of the offloaded medium's spec.")
@click.option("--no-shrink", is_flag=True, help="Report the first failing scenario unshrunk (faster).")
def handler(target: str, layouts: Sequence[str], spec_target: str | None, no_shrink: bool, **options: Any) -> None:
    """Check a store/load handler pair (H1–H3, E1). Exit 0 conforms, 1 violation, 2 unloadable."""
    try:
        factory = load_factory(target)
        spec_cls: OffloadedSpec = load_factory(spec_target) if spec_target else CPULoadStoreSpec
    except Exception as error:
        click.echo(f"cannot load {target}: {error}", err=True)
        sys.exit(2)
    # ``options``: --max-examples, --seed and --device, named as check_handler's keywords
    result = check_handler(factory, layouts=tuple(layouts) or LAYOUTS, offloaded_spec=spec_cls, name=target,
                           shrink=not no_shrink, **options)
    click.echo(result.format())
    sys.exit(0 if result.ok else 1)
