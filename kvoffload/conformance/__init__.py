"""The conformance suite: lockstep stateful testing of any manager, backend, policy or
handler against the reference model in ``kvoffload.spec``.

Python: ``check_manager(factory, policy="any", strict=False, max_examples=None,
steps=None, seed=0) -> ConformanceResult`` (and ``check_backend``, ``check_policy``).
pytest: subclass ``ManagerConformance``/``BackendConformance``/``PolicyConformance``
from ``kvoffload.conformance.pytest_support``. Copy handlers: ``check_handler``;
tiers: ``check_tier``, ``check_shared_table``; a vLLM secondary tier (T7–T13):
``check_vllm_tier``. CLI: ``kvoffload conform manager
MODULE:FACTORY [--policy lru|arc|any] [--strict] [--interface auto|contract|vllm]``;
targets written against vLLM's own interfaces are detected and judged by
``kvoffload.conformance.lockstep.vllm`` (K1–K9; needs vLLM).
"""

from .lockstep.adopting import AdoptingPolicy
from .lockstep.handler import check_handler
from .lockstep.machine_base import FactoryRef, RunStats, TargetSetupError
from .reports.result import ConformanceFailure, ConformanceResult
from .runner import (
    DEFAULT_BUDGET,
    POLICY_MODES,
    check_backend,
    check_manager,
    check_policy,
    machine_for,
    run_conformance,
)
from .lockstep.strategies import OneShot, hash_pools
from .lockstep.tiers import check_shared_table, check_tier
from .lockstep.vllm import as_contract_manager, as_contract_policy
from .lockstep.vllm.tier_run import check_vllm_tier

__all__ = [
    "AdoptingPolicy",
    "ConformanceFailure",
    "ConformanceResult",
    "DEFAULT_BUDGET",
    "FactoryRef",
    "OneShot",
    "POLICY_MODES",
    "RunStats",
    "TargetSetupError",
    "as_contract_manager",
    "as_contract_policy",
    "check_backend",
    "check_handler",
    "check_manager",
    "check_policy",
    "check_shared_table",
    "check_tier",
    "check_vllm_tier",
    "hash_pools",
    "machine_for",
    "run_conformance",
]
