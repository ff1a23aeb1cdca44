"""Run a conformance machine against a target and turn the outcome into a result.

Runs are reproducible: hypothesis draws from a fixed seed (``seed``, default 0), keeps no
example database, and replays the shrunk failing example last, whose recorded call log
becomes the reproduction snippet.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from typing import Any

import hypothesis
from hypothesis import HealthCheck, Phase, Verbosity
from hypothesis.stateful import get_state_machine_test

from ..spec.clauses import clause_sort_key
from .backend_machine import BackendMachine
from .machine_base import ConformanceMachine, FactoryRef, RunStats, TargetSetupError
from .manager_machine import ManagerMachine
from .policy_machine import PolicyMachine
from .report import ConformanceFailure, ConformanceResult

__all__ = [
    "DEFAULT_BUDGET",
    "POLICY_MODES",
    "run_conformance",
    "check_manager",
    "check_backend",
    "check_policy",
    "machine_for",
]

#: (max_examples, steps per example) of a default run, per target kind.
DEFAULT_BUDGET: dict[str, tuple[int, int]] = {
    "manager": (150, 40),
    "backend": (60, 30),
    "policy": (300, 40),
}
POLICY_MODES = ("any", "lru", "arc")
MACHINES: dict[str, type[ConformanceMachine]] = {
    "manager": ManagerMachine,
    "backend": BackendMachine,
    "policy": PolicyMachine,
}
SMOKE_ARGUMENTS: dict[str, dict[str, Any]] = {
    "manager": {"num_blocks": 2, "enable_events": True},
    "backend": {"num_blocks": 2},
    "policy": {"cache_capacity": 2},
}


def machine_for(
    kind: str, factory: FactoryRef, policy: str = "any", strict: bool = False, stats: RunStats | None = None
) -> type[ConformanceMachine]:
    """A machine class bound to one target factory and mode (usable with hypothesis directly)."""
    base = MACHINES[kind]
    attributes = {
        "factory_ref": factory,
        "policy_mode": policy,
        "strict": strict,
        "stats": stats if stats is not None else RunStats(),
    }
    return type(f"{base.__name__}For{policy.capitalize()}{'Strict' if strict else ''}", (base,), attributes)


def _find_failure(error: BaseException) -> ConformanceFailure | None:
    if isinstance(error, ConformanceFailure):
        return error
    for inner in getattr(error, "exceptions", ()) or ():
        found = _find_failure(inner)
        if found is not None:
            return found
    for linked in (error.__cause__, error.__context__):
        if linked is not None and linked is not error:
            found = _find_failure(linked)
            if found is not None:
                return found
    return None


def _find_setup_error(error: BaseException) -> TargetSetupError | None:
    if isinstance(error, TargetSetupError):
        return error
    for inner in getattr(error, "exceptions", ()) or ():
        found = _find_setup_error(inner)
        if found is not None:
            return found
    return None


def run_conformance(
    kind: str,
    factory: Callable[..., Any],
    *,
    policy: str = "any",
    strict: bool = False,
    max_examples: int | None = None,
    steps: int | None = None,
    seed: int = 0,
    progress: bool = False,
    source: str | None = None,
    shrink: bool = True,
) -> ConformanceResult:
    """Check one target; raises ``TargetSetupError`` if the factory cannot build it,
    ``ValueError`` for bad arguments.

    ``shrink=False`` reports the first failing example as found, unshrunk: the same
    verdict and clause detection for a fraction of the time (the reproduction is longer).
    """
    if kind not in MACHINES:
        raise ValueError(f"kind={kind!r} is not one of {sorted(MACHINES)}")
    if policy not in POLICY_MODES:
        raise ValueError(f"policy={policy!r} is not one of {list(POLICY_MODES)}")
    default_examples, default_steps = DEFAULT_BUDGET[kind]
    max_examples = default_examples if max_examples is None else max_examples
    steps = default_steps if steps is None else steps
    if max_examples < 1 or steps < 1:
        raise ValueError("max_examples and steps must be at least 1")
    reference = FactoryRef.of(factory, source)
    try:
        factory(**SMOKE_ARGUMENTS[kind])
    except Exception as error:
        raise TargetSetupError(
            f"{reference.source}({', '.join(f'{k}={v!r}' for k, v in SMOKE_ARGUMENTS[kind].items())}) "
            f"raised {type(error).__name__}: {error}"
        ) from error
    label = f"{kind} {reference.source}"
    stats = RunStats(progress=progress, label=label)
    machine = machine_for(kind, reference, policy, strict, stats)
    settings = hypothesis.settings(
        max_examples=max_examples,
        stateful_step_count=steps,
        database=None,
        derandomize=False,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate] + ([Phase.shrink] if shrink else []),
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        print_blob=False,
    )
    test = hypothesis.seed(seed)(get_state_machine_test(machine, settings=settings))
    result = ConformanceResult(
        target=reference.source, kind=kind, policy=policy if kind != "backend" else "-", strict=strict,
        ok=True, seed=seed,
    )
    started = time.perf_counter()
    try:
        test()
    except Exception as error:
        setup = _find_setup_error(error)
        if setup is not None:
            raise setup from None
        failure = _find_failure(error)
        result.ok = False
        if failure is not None:
            result.clauses = failure.clauses
            result.message = failure.message
            result.reproduction = failure.reproduction
        else:
            result.clauses = ("?",)
            result.message = "the suite stopped on an unexpected error: " + "".join(
                traceback.format_exception_only(type(error), error)
            ).strip()
    finally:
        stats.done()
    result.seconds = time.perf_counter() - started
    result.steps = stats.steps
    result.examples = stats.examples
    result.clauses_exercised = tuple(sorted(stats.clauses, key=clause_sort_key))
    return result


def check_manager(factory: Callable[..., Any], **options: Any) -> ConformanceResult:
    """Check an ``OffloadingManager`` factory ``f(num_blocks=, enable_events=)``."""
    return run_conformance("manager", factory, **options)


def check_backend(factory: Callable[..., Any], **options: Any) -> ConformanceResult:
    """Check a ``Backend`` factory ``f(num_blocks=)``."""
    return run_conformance("backend", factory, **options)


def check_policy(factory: Callable[..., Any], **options: Any) -> ConformanceResult:
    """Check a ``CachePolicy`` factory ``f(cache_capacity=)`` (a policy class is one)."""
    return run_conformance("policy", factory, **options)
