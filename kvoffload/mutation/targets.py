"""What each mutation target mutates and which conformance suites judge a mutant of it.

A target's files are copied into a scratch package (``scratch.py``) whose name is the
target's ``package``; imports of the copied siblings are rewritten to that package so a
mutant of ``policies/base.py`` is what the copied manager and policies run on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Suite", "Target", "TARGETS", "VLLM_CPU", "REFERENCE_POLICIES"]


@dataclass(frozen=True)
class Suite:
    """One default conformance run: ``kind`` ("manager" or "policy"), the policy mode, and
    the factory in the scratch package (``module:attribute``; ``cache_policy=`` for a vLLM
    manager built around a policy name)."""

    kind: str
    mode: str
    module: str
    attribute: str
    cache_policy: str | None = None

    @property
    def label(self) -> str:
        return f"{self.kind} --policy {self.mode} ({self.module}:{self.attribute})"


@dataclass(frozen=True)
class Target:
    """``source`` names where the originals are: ``"vllm"`` (the installed vLLM's
    ``v1/kv_offload/cpu`` directory, found by the vLLM python) or ``"kvoffload.spec"``.
    ``rewrites`` maps an import prefix of the original to the scratch package's.
    ``suites`` lists, per copied file, the runs that judge its mutants (cheapest first; the
    first violation kills). ``out_of_scope`` names functions the factory convention cannot
    reach, with the reason; their mutants are counted but not run."""

    name: str
    source: str
    package: str
    files: tuple[str, ...]
    rewrites: tuple[tuple[str, str], ...]
    suites: dict[str, tuple[Suite, ...]]
    needs_vllm: bool
    out_of_scope: dict[str, str] = field(default_factory=dict)


def _vllm_manager(mode: str) -> Suite:
    return Suite("manager", mode, "kvo_mut_vllm_cpu.manager", "CPUOffloadingManager", cache_policy=mode)


def _vllm_policy(mode: str) -> Suite:
    cls = {"lru": "LRUCachePolicy", "arc": "ARCCachePolicy"}[mode]
    return Suite("policy", mode, f"kvo_mut_vllm_cpu.policies.{mode}", cls)


_STATS = "metrics only (get_stats): no contract clause, the suite does not read them"
_ADMISSION = (
    "store_threshold >= 2 admission (_record_accesses): off under the factory convention "
    "f(num_blocks=, enable_events=), vLLM's default store_threshold=1"
)
_DEFAULTS = "CachePolicy's defaults for out-of-tree policies: LRU and ARC override both hooks"
_REGISTRY = "registry of out-of-tree policies: the factory convention names 'lru'/'arc' only"

VLLM_CPU = Target(
    name="vllm-cpu",
    source="vllm",
    package="kvo_mut_vllm_cpu",
    files=("manager.py", "policies/base.py", "policies/lru.py", "policies/arc.py", "policies/factory.py"),
    rewrites=(("vllm.v1.kv_offload.cpu.policies", "kvo_mut_vllm_cpu.policies"),),
    suites={
        "manager.py": (_vllm_manager("lru"), _vllm_manager("arc")),
        "policies/base.py": (_vllm_policy("lru"), _vllm_manager("lru"), _vllm_policy("arc"), _vllm_manager("arc")),
        "policies/lru.py": (_vllm_policy("lru"), _vllm_manager("lru")),
        "policies/arc.py": (_vllm_policy("arc"), _vllm_manager("arc")),
        "policies/factory.py": (_vllm_manager("lru"), _vllm_manager("arc")),
    },
    needs_vllm=True,
    out_of_scope={
        "manager.py:get_stats": _STATS,
        "manager.py:_record_accesses": _ADMISSION,
        "policies/factory.py:register_cache_policy": _REGISTRY,
        "policies/base.py:on_store_miss": _DEFAULTS,
        "policies/base.py:on_request_finished": _DEFAULTS,
    },
)

_MODEL_ONLY = (
    "the model's own introspection and self-check (items, check_invariants): not part of the "
    "CachePolicy interface (P1-P6), never called on a target"
)

REFERENCE_POLICIES = Target(
    name="reference-policies",
    source="kvoffload.spec",
    package="kvo_mut_spec",
    files=("lru.py", "arc.py"),
    rewrites=(("from .", "from kvoffload.spec."),),
    suites={
        "lru.py": (Suite("policy", "lru", "kvo_mut_spec.lru", "ReferenceLRUPolicy"),),
        "arc.py": (Suite("policy", "arc", "kvo_mut_spec.arc", "ReferenceARCPolicy"),),
    },
    needs_vllm=False,
    out_of_scope={
        f"{file}:{method}": _MODEL_ONLY
        for file in ("lru.py", "arc.py")
        for method in ("items", "check_invariants")
    },
)

TARGETS: dict[str, Target] = {target.name: target for target in (VLLM_CPU, REFERENCE_POLICIES)}
