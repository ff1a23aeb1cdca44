"""Run a conformance machine against a target and turn the outcome into a result.

Runs are reproducible: hypothesis draws from a fixed seed (``seed``, default 0), keeps no
example database, and replays the shrunk failing example last, whose recorded call log
becomes the reproduction snippet.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import hypothesis
from hypothesis import HealthCheck, Phase, Verbosity
from hypothesis.database import ExampleDatabase
from hypothesis.errors import Flaky
from hypothesis.stateful import get_state_machine_test as _untyped_state_machine_test

from ..spec import POLICIES
from .loading import call_source
from .lockstep.backend_machine import BackendMachine
from .lockstep.large import run_large_example
from .lockstep.machine_base import ConformanceMachine, FactoryRef, RunStats, TargetSetupError
from .lockstep.manager_machine import ManagerMachine
from .lockstep.policy_machine import PolicyMachine
from .lockstep.vllm.detect import (
    INTERFACES, LRU_ORDERS, VllmUnavailable, detect_interface, detect_lru_order, require_vllm,
)
from .lockstep.vllm.machines import vllm_machine
from .reports.result import ConformanceFailure, ConformanceResult

# hypothesis 6.15x ships this function unannotated; one typed name for the suite's callers.
state_machine_test: Callable[..., Any] = _untyped_state_machine_test

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
    "tier": (300, 40),
}
#: ``any`` (victims judged by eligibility, then adopted) or an exact reference policy.
POLICY_MODES = ("any", *POLICIES)
MACHINES: dict[str, type[ConformanceMachine]] = {
    "manager": ManagerMachine,
    "backend": BackendMachine,
    "policy": PolicyMachine,
}
#: What a hypothesis ``Flaky`` error means here: an example replayed (to shrink it, or to
#: check a failure) went another way, because the target answered its calls another way.
NOT_REPEATABLE = ("the target answered the same calls two ways when an example was replayed (a random policy, or "
                  "state that the targets its factory builds share): the suite needs a deterministic target; seed "
                  "its randomness from its arguments. Hypothesis said: ")
SMOKE_ARGUMENTS: dict[str, dict[str, Any]] = {
    "manager": {"num_blocks": 2, "enable_events": True},
    "backend": {"num_blocks": 2},
    "policy": {"cache_capacity": 2},
}


def machine_for(
    kind: str,
    factory: FactoryRef,
    policy: str = "any",
    strict: bool = False,
    stats: RunStats | None = None,
    interface: str = "contract",
    admission: tuple[int, int | None] = (1, None),
    lru_order: str = "recency",
) -> type[ConformanceMachine]:
    """A machine class bound to one target factory and mode (usable with hypothesis directly);
    ``interface="vllm"``: the target is written against vLLM's interfaces (K1–K9);
    ``admission``: ``(store_threshold, max_tracker_size)`` passed to a vLLM manager's
    factory and applied by the model when the threshold is 2 or more (N2); ``lru_order``:
    ``recency`` (L1) or ``request-rank`` (N9) for a vLLM-interface target with ``policy="lru"``."""
    base = MACHINES[kind]
    attributes: dict[str, Any] = {
        "factory_ref": factory,
        "policy_mode": policy,
        "strict": strict,
        "stats": stats if stats is not None else RunStats(),
    }
    if interface == "vllm":
        base = vllm_machine(kind, lru_order if policy == "lru" else "recency")
        attributes["lru_order"] = lru_order
    if admission[0] >= 2:
        if interface != "vllm" or kind != "manager":
            raise ValueError("store_threshold >= 2 (N2) applies to managers written against vLLM's interface")
        attributes.update(store_threshold=admission[0], max_tracker_size=admission[1])
    return type(f"{base.__name__}For{policy.capitalize()}{'Strict' if strict else ''}", (base,), attributes)


E = TypeVar("E", bound=BaseException)


def find_exception(error: BaseException, cls: type[E]) -> E | None:
    """``error`` or the first ``cls`` inside it (exception groups, causes, contexts)."""
    seen: set[int] = set()
    stack = [error]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, cls):
            return current
        stack.extend(getattr(current, "exceptions", ()) or ())
        stack.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None


def require_choice(name: str, value: str, choices: Iterable[str]) -> None:
    """``ValueError`` unless ``value`` (the argument ``name``) is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not one of {list(choices)}")


@contextlib.contextmanager
def seed_only_draws() -> Iterator[None]:
    """Draws that depend on the seed alone, not on what else is imported.

    Hypothesis 6.13x+ mixes "local constants" into its draws: literals read from every
    loaded module that is not a library (``sys.modules``; an editable install of this
    package or the user's own code counts). The same ``--seed`` then draws different
    calls after the caller imports one more module, or on another version of our own
    code, so a reproduction by seed would not reproduce and a planted bug caught at a
    seed in one test order could escape in another. For the suite's runs the local pool
    is empty (hypothesis' own global constants stay). Private hypothesis API: where it
    is missing (another version), nothing is changed."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants

        original, cache = providers._get_local_constants, providers.CONSTANTS_CACHE
    except (ImportError, AttributeError):  # pragma: no cover - no local constants, or another layout
        yield
        return
    empty = Constants()
    providers._get_local_constants = lambda: empty
    cache.cache.clear()  # its entries hold the local pool they were built with
    try:
        yield
    finally:
        providers._get_local_constants = original
        cache.cache.clear()


def run_machine(machine: type[ConformanceMachine], settings: hypothesis.settings, seed: int | None,
                result: ConformanceResult, unexpected: str, *, full_traceback: bool) -> None:
    """One hypothesis run of ``machine`` (seeded unless ``seed`` is ``None``; draws that
    depend on the seed alone: ``seed_only_draws``); what it raised goes into ``result``.

    A ``TargetSetupError`` is re-raised (exit 2: the target could not be built). A
    ``ConformanceFailure`` gives the clauses, message and reproduction; anything else is
    reported under clause ``?`` with ``unexpected`` and the error (its whole traceback
    when ``full_traceback``: a fuzzing finding must be debuggable from the log alone).
    """
    test = state_machine_test(machine, settings=settings)
    if seed is not None:
        test = hypothesis.seed(seed)(test)
    try:
        with seed_only_draws():
            test()
    except Exception as error:
        record_error(error, result, unexpected, full_traceback)


def record_error(error: Exception, result: ConformanceResult, unexpected: str, full_traceback: bool) -> None:
    """What a run raised, into ``result`` (``run_machine``); a ``TargetSetupError`` is re-raised."""
    setup = find_exception(error, TargetSetupError)
    if setup is not None:
        raise setup from None
    result.ok = False
    failure = find_exception(error, ConformanceFailure)
    if failure is not None:
        result.clauses, result.message = failure.clauses, failure.message
        result.reproduction = failure.reproduction
        return
    lines = (traceback.format_exception if full_traceback else traceback.format_exception_only)(error)
    result.clauses = ("?",)
    flaky = find_exception(error, Flaky) is not None  # (hypothesis' own words speak of its draws)
    result.message = (NOT_REPEATABLE if flaky else unexpected) + "".join(lines).strip()


def run_large(machine: type[ConformanceMachine], result: ConformanceResult) -> None:
    """After a passing run of a contract-interface manager, the scripted example at sizes
    above 256 (``lockstep.large``; vLLM-interface machines have a large arm of their own)."""
    if not (result.ok and issubclass(machine, ManagerMachine) and result.interface == "contract"):
        return
    try:
        run_large_example(machine)
    except TargetSetupError as error:  # a manager built for small caches only: said, not failed
        machine.stats.skipped.add(f"sizes above 256 (the factory refused the large example's cache: {error})")
    except Exception as error:
        record_error(error, result, "the large example stopped on an unexpected error: ", False)


def conformance_settings(
    max_examples: int,
    steps: int,
    *,
    shrink: bool = True,
    database: ExampleDatabase | None = None,
) -> hypothesis.settings:
    """The suite's hypothesis settings. With a ``database`` (fuzzing), saved failures are
    replayed first; without one, runs are reproducible from the seed alone."""
    phases = [Phase.explicit] + ([Phase.reuse] if database is not None else []) + [Phase.generate]
    return hypothesis.settings(
        max_examples=max_examples,
        stateful_step_count=steps,
        database=database,
        derandomize=False,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=phases + ([Phase.shrink] if shrink else []),
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        print_blob=False,
    )


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
    interface: str = "auto",
    store_threshold: int = 1,
    max_tracker_size: int | None = None,
    lru_order: str = "auto",
) -> ConformanceResult:
    """Check one target; raises ``TargetSetupError`` if the factory cannot build it,
    ``ValueError`` for bad arguments.

    ``store_threshold`` >= 2 (vLLM-interface managers): the factory is called with that
    keyword (and ``max_tracker_size`` when given) and the model admits stores as N2 says;
    each example draws the threshold from ``store_threshold`` to two above it.

    ``lru_order`` (``auto``, ``recency``, ``request-rank``): the LRU order a vLLM-interface
    target is judged by with ``policy="lru"`` (L1 or N9); ``auto`` detects it, reported.

    ``shrink=False`` reports the first failing example as found, unshrunk: the same
    verdict and clause detection for a fraction of the time (the reproduction is longer).
    """
    require_choice("kind", kind, sorted(MACHINES))
    require_choice("policy", policy, POLICY_MODES)
    default_examples, default_steps = DEFAULT_BUDGET[kind]
    max_examples = default_examples if max_examples is None else max_examples
    steps = default_steps if steps is None else steps
    if max_examples < 1 or steps < 1:
        raise ValueError("max_examples and steps must be at least 1")
    reference = FactoryRef.of(factory, source)
    interface, lru_order = target_modes(kind, factory, reference.source, policy, interface, lru_order)
    stats = RunStats(progress=progress, label=f"{kind} {reference.source}")
    if type(store_threshold) is not int or store_threshold < 0:
        raise ValueError(f"N2: store_threshold={store_threshold!r} must be a non-negative integer")
    if max_tracker_size is not None and (type(max_tracker_size) is not int or max_tracker_size < 1):
        raise ValueError(f"N2: max_tracker_size={max_tracker_size!r} must be a positive integer")
    machine = machine_for(kind, reference, policy, strict, stats, interface, (store_threshold, max_tracker_size),
                          lru_order)
    result = ConformanceResult(
        target=reference.source, kind=kind, policy=policy if kind != "backend" else "-", strict=strict,
        ok=True, seed=seed, interface=interface, lru_order=lru_order,
    )
    started = time.perf_counter()
    try:
        run_machine(machine, conformance_settings(max_examples, steps, shrink=shrink), seed, result,
                    "the suite stopped on an unexpected error: ", full_traceback=False)
        run_large(machine, result)
    finally:
        stats.done()
    stats.record(result, time.perf_counter() - started)
    if kind == "manager" and "I4" not in stats.clauses:
        stats.skipped.add("I4 (the target's specs have no block_ids: aliasing cannot be checked)")
    result.clauses_skipped = tuple(sorted(stats.skipped))
    return result


def target_modes(kind: str, factory: Callable[..., Any], source: str, policy: str, interface: str = "auto",
                 lru_order: str = "auto") -> tuple[str, str]:
    """``(interface, lru_order)`` of the target ``factory`` builds, as given or detected: how
    ``conform``, ``fuzz``, ``simulate`` and ``check-exhaustive`` all tell a vLLM-interface
    target (K1) and its LRU order (N9, ``resolve_lru_order``).

    The target is built once with the smoke arguments (``TargetSetupError``, exit 2, if it
    cannot be); ``interface``: ``"contract"`` or ``"vllm"`` as given, or detected on it
    (``"auto"``). vLLM targets need vLLM importable: ``TargetSetupError`` saying so
    otherwise (K1)."""
    arguments = SMOKE_ARGUMENTS[kind]
    try:
        built = factory(**arguments)
    except Exception as error:
        raise TargetSetupError(f"{call_source(source, arguments)} raised {type(error).__name__}: {error}") from error
    require_choice("interface", interface, INTERFACES)
    if interface == "auto":
        interface = detect_interface(kind, built)
    if interface == "vllm":
        if kind not in ("manager", "policy"):
            raise ValueError(f"interface='vllm' applies to managers and policies, not to a {kind}")
        try:
            require_vllm()
        except VllmUnavailable as error:
            raise TargetSetupError(str(error)) from error
    return interface, resolve_lru_order(built, interface, policy, lru_order)


def resolve_lru_order(target: Any, interface: str, policy: str, lru_order: str) -> str:
    """N9: the LRU order the target is judged by: ``recency`` (L1) or ``request-rank``
    (N9, vLLM-interface targets with ``policy="lru"`` only), as given or detected
    (``auto``); ``-`` when no LRU order is judged."""
    require_choice("lru_order", lru_order, LRU_ORDERS)
    if policy != "lru":
        if lru_order != "auto":
            raise ValueError(f"N9: lru_order={lru_order!r} applies with policy='lru' only")
        return "-"
    if lru_order == "request-rank" and interface != "vllm":
        raise ValueError("N9: lru_order='request-rank' applies to targets written against vLLM's interface")
    if lru_order == "auto":
        return detect_lru_order(target) if interface == "vllm" else "recency"
    return lru_order


def check_manager(factory: Callable[..., Any], **options: Any) -> ConformanceResult:
    """Check an ``OffloadingManager`` factory ``f(num_blocks=, enable_events=)``."""
    return run_conformance("manager", factory, **options)


def check_backend(factory: Callable[..., Any], **options: Any) -> ConformanceResult:
    """Check a ``Backend`` factory ``f(num_blocks=)``."""
    return run_conformance("backend", factory, **options)


def check_policy(factory: Callable[..., Any], **options: Any) -> ConformanceResult:
    """Check a ``CachePolicy`` factory ``f(cache_capacity=)`` (a policy class is one)."""
    return run_conformance("policy", factory, **options)

