"""``check_vllm_tier``: a run of ``TierMachine`` (``kvoffload conform tier``, T7–T13) and its
result, as ``runner.run_conformance`` runs the other machines. vLLM is imported only when a
run starts: this module is importable without it."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

from hypothesis.errors import HypothesisDeprecationWarning

from ...reports.result import ConformanceFailure, ConformanceResult
from ...runner import DEFAULT_BUDGET, conformance_settings, run_machine
from ..machine_base import FactoryRef, RunStats, TargetSetupError
from .detect import VllmUnavailable, require_vllm

__all__ = ["check_vllm_tier"]


def check_vllm_tier(
    factory: Callable[..., Any],
    *,
    max_examples: int | None = None,
    steps: int | None = None,
    seed: int = 0,
    progress: bool = False,
    source: str | None = None,
    shrink: bool = True,
) -> ConformanceResult:
    """Check a vLLM secondary tier (``SecondaryTierManager``, T7–T13), built by
    ``factory(primary_kv_view=, workdir=, num_blocks=, enable_events=)``; needs vLLM
    (``TargetSetupError`` naming what to install otherwise). A failure that did not repeat
    when replayed (a tier doing its I/O on threads) is reported as first found, unshrunk."""
    try:
        require_vllm()
    except VllmUnavailable as error:
        raise TargetSetupError(str(error)) from error
    from .tier import TierMachine

    default_examples, default_steps = DEFAULT_BUDGET["tier"]
    reference = FactoryRef.of(factory, source)
    stats = RunStats(progress=progress, label=f"tier {reference.source}")
    first_failure: list[ConformanceFailure] = []
    machine = type("TierMachineForTarget", (TierMachine,), {
        "factory_ref": reference, "stats": stats, "first_failure": first_failure})
    result = ConformanceResult(target=reference.source, kind="tier", policy="-", strict=False, ok=True, seed=seed,
                               interface="vllm")
    started = time.perf_counter()
    settings = conformance_settings(max_examples or default_examples, steps or default_steps, shrink=shrink)
    try:
        with warnings.catch_warnings():
            # A tier may use ``random`` in its calls (vLLM's file-system tier names temporary
            # files so); hypothesis warns of that as if a strategy did.
            warnings.simplefilter("ignore", HypothesisDeprecationWarning)
            run_machine(machine, settings, seed, result, "the suite stopped on an unexpected error: ",
                        full_traceback=False)
    finally:
        stats.done()
    if not result.ok and result.clauses == ("?",) and first_failure:
        first = first_failure[0]
        result.clauses, result.reproduction = first.clauses, first.reproduction
        result.message = first.message + " (it did not repeat when replayed: the example is shown as first found)"
    stats.record(result, time.perf_counter() - started)
    if result.ok and "T8" not in stats.clauses:
        stats.skipped.add("T8 (no load served a key: the tier never answered HIT, or every load failed; "
                          "no loaded bytes were checked)")
    result.clauses_skipped = tuple(sorted(stats.skipped))
    return result
