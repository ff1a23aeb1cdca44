"""The kill test of one mutant: the conformance suite at its default settings.

Each suite is ``run_conformance(kind, factory, policy=mode)`` (with ``store_threshold`` for
the admission suite, N2) with the default budget,
seed 0 and the interface detected from the target, as ``kvoffload conform`` runs it; only
shrinking is off (``shrink=False``: the same verdict and clauses, found the same way, for
a fraction of the time — the shrunk reproduction is not needed to call a mutant killed).
A suite with a ``capacity`` (the ``*-mc`` targets) is the model checker instead:
``check-exhaustive`` through vLLM's interface over every reachable state of capacities
1..``capacity``, the first violation killing the mutant.
Exit status: 0 every suite conforms (the mutant survived), 1 a violation (killed),
2 the target could not be built or the suite crashed on it (killed, reported as such).
"""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Callable
from typing import Any

from .targets import TARGETS, Suite

__all__ = ["judge", "suite_factory"]


def suite_factory(suite: Suite) -> Callable[..., Any]:
    """The target factory of ``suite``, imported from the (mutated) scratch package."""
    built: Any = getattr(importlib.import_module(suite.module), suite.attribute)
    policy_name = suite.cache_policy
    if policy_name is None:
        return built  # type: ignore[no-any-return]

    def make_manager(num_blocks: int, enable_events: bool = False, **admission: int) -> Any:
        # admission: store_threshold / max_tracker_size of the N2 suite, as vLLM takes them
        if suite.block_size:  # vLLM 0.19: (block_size, num_blocks, ...)
            return built(suite.block_size, num_blocks, cache_policy=policy_name, enable_events=enable_events)
        return built(num_blocks, cache_policy=policy_name, enable_events=enable_events, **admission)

    return make_manager


def _lockstep(suite: Suite) -> tuple[tuple[str, ...], str, str]:
    """The lockstep suite on ``suite``: (clauses broken, message, what ran) — no clause: conforms."""
    from ..conformance.lockstep.vllm.tier_run import check_vllm_tier
    from ..conformance.runner import run_conformance

    if suite.kind == "tier":
        tier = check_vllm_tier(suite_factory(suite), shrink=False)
        return () if tier.ok else tier.clauses, tier.message, f"{tier.steps} steps"
    result = run_conformance(suite.kind, suite_factory(suite), policy=suite.mode, shrink=False,
                             store_threshold=suite.store_threshold, max_tracker_size=suite.max_tracker_size)
    clauses = () if result.ok else tuple(result.clauses)
    return clauses, result.message, f"{result.steps} steps, interface={result.interface}"


def _model_checked(suite: Suite) -> tuple[tuple[str, ...], str, str]:
    """``check-exhaustive`` on ``suite``'s target through vLLM's interface, capacities
    1..``suite.capacity``: (clauses broken, message, what ran), as ``_lockstep``."""
    from ..conformance.checking.exhaustive import run_exhaustive

    states = 0
    for capacity in range(1, suite.capacity + 1):
        admission = (suite.store_threshold, suite.max_tracker_size) if suite.max_tracker_size else None
        run = run_exhaustive(suite_factory(suite), kind=suite.kind, policy=suite.mode, capacity=capacity,
                             interface="vllm", distinguished=0, request_calls=suite.request_calls,
                             admission=admission)
        states += run.result.states
        if run.result.failure is not None:
            return tuple(run.result.failure.clauses), run.result.failure.message, ""
    return (), "", f"{states} states"


def judge(target_name: str, file: str) -> int:
    """Run the suites of ``file`` until one finds a violation; print one line per suite."""
    for suite in TARGETS[target_name].suites[file]:
        try:
            clauses, message, ran = (_model_checked if suite.capacity else _lockstep)(suite)
        except Exception:  # noqa: BLE001 - a mutant that breaks construction is caught too
            print(f"CRASH {suite.label}\n{traceback.format_exc(limit=6)}")
            return 2
        if clauses:
            print(f"VIOLATES {', '.join(clauses)} {suite.label}")
            print(message[:600])
            return 1
        print(f"conforms {suite.label} ({ran})")
    return 0
