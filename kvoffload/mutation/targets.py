"""What each mutation target mutates and which conformance suites judge a mutant of it.

A target's files are copied into a scratch package (``scratch.py``) whose name is the
target's ``package``; imports of the copied siblings are rewritten to that package so a
mutant of ``policies/base.py`` is what the copied manager and policies run on.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["Suite", "Target", "TARGETS", "VLLM_CPU", "VLLM033_CPU", "VLLM_CPU_MC", "VLLM033_CPU_MC",
           "VLLM019_CPU", "VLLM033_TIERS", "REFERENCE_POLICIES", "mutant_key"]


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
    #: N2: >= 2 builds the manager with vLLM's store admission and judges it (``--store-threshold``)
    store_threshold: int = 1
    max_tracker_size: int | None = None
    #: > 0: the model checker instead (``check-exhaustive``, every reachable state of capacities 1..N)
    capacity: int = 0
    #: the model checker's requests spanning calls (K5): their most offers and loads (managers)
    request_calls: int = 2
    #: > 0: a manager of vLLM 0.19's signature, ``(block_size, num_blocks, cache_policy, ...)``
    block_size: int = 0

    @property
    def label(self) -> str:
        if self.capacity:
            scope = "--policies-only " if self.kind == "policy" else f"--request-calls {self.request_calls} "
            return (f"check-exhaustive {scope}--capacity {self.capacity} --policy {self.mode}{self.admission} "
                    f"({self.module}:{self.attribute})")
        return f"{self.kind} --policy {self.mode}{self.admission} ({self.module}:{self.attribute})"

    @property
    def admission(self) -> str:
        """The options of N2's admission run, or nothing."""
        if self.store_threshold < 2 and not self.max_tracker_size:
            return ""
        return f" --store-threshold {self.store_threshold}" + (
            f" --max-tracker-size {self.max_tracker_size}" if self.max_tracker_size else "")


def mutant_key(target_name: str, file: str, mutation: Any) -> str:
    """A mutant's stable name: target, file, position, operator and occurrence."""
    line, column = mutation.start_pos
    # the occurrence too: NumberReplacer makes two mutants (+1, -1) at one position
    return f"{target_name}|{file}|{line}:{column}|{mutation.operator_name}#{mutation.occurrence}"


@dataclass(frozen=True)
class Target:
    """``source`` names where the originals are: ``"vllm"`` (the installed vLLM's
    ``v1/kv_offload/cpu`` directory, found by the vLLM python) or ``"kvoffload.spec"``.
    ``rewrites`` maps an import prefix of the original to the scratch package's.
    ``suites`` lists, per copied file, the runs that judge its mutants (cheapest first; the
    first violation kills). ``out_of_scope`` names functions the factory convention cannot
    reach, with the reason; their mutants are counted but not run. ``vllm_version``: the
    vLLM release the originals must come from (a mutant's key names its line in that
    release's file, so two releases never share a target)."""

    name: str
    source: str
    package: str
    files: tuple[str, ...]
    rewrites: tuple[tuple[str, str], ...]
    suites: dict[str, tuple[Suite, ...]]
    needs_vllm: bool
    out_of_scope: dict[str, str] = field(default_factory=dict)
    vllm_version: str = ""
    #: the target whose hand classifications (``classified``) of what a mutant is (equivalent,
    #: unreachable) apply: the same originals, judged by another engine
    classified_as: str = ""
    #: for vLLM originals: the directory of ``vllm/v1/kv_offload`` they are under
    directory: str = "cpu"


def _vllm_manager(mode: str, store_threshold: int = 1, max_tracker_size: int | None = None) -> Suite:
    return Suite("manager", mode, "kvo_mut_vllm_cpu.manager", "CPUOffloadingManager", cache_policy=mode,
                 store_threshold=store_threshold, max_tracker_size=max_tracker_size)


#: The admission suite (N2): threshold 2 and a tracker smaller than the suite's key pools,
#: so that offers are pushed out of it too (vLLM's ``_record_accesses``).
_ADMISSION_SUITE = _vllm_manager("lru", store_threshold=2, max_tracker_size=6)


def _vllm_policy(mode: str) -> Suite:
    cls = {"lru": "LRUCachePolicy", "arc": "ARCCachePolicy"}[mode]
    return Suite("policy", mode, f"kvo_mut_vllm_cpu.policies.{mode}", cls)


_STATS = "metrics only (get_stats): no contract clause, the suite does not read them"
_DEFAULTS = "CachePolicy's defaults for out-of-tree policies: LRU and ARC override both hooks"
_REGISTRY = "registry of out-of-tree policies: the factory convention names 'lru'/'arc' only"

VLLM_CPU = Target(
    name="vllm-cpu",
    source="vllm",
    package="kvo_mut_vllm_cpu",
    files=("manager.py", "policies/base.py", "policies/lru.py", "policies/arc.py", "policies/factory.py"),
    rewrites=(("vllm.v1.kv_offload.cpu.policies", "kvo_mut_vllm_cpu.policies"),),
    suites={
        "manager.py": (_vllm_manager("lru"), _vllm_manager("arc"), _ADMISSION_SUITE),
        "policies/base.py": (_vllm_policy("lru"), _vllm_manager("lru"), _vllm_policy("arc"), _vllm_manager("arc")),
        "policies/lru.py": (_vllm_policy("lru"), _vllm_manager("lru")),
        "policies/arc.py": (_vllm_policy("arc"), _vllm_manager("arc")),
        "policies/factory.py": (_vllm_manager("lru"), _vllm_manager("arc")),
    },
    needs_vllm=True,
    out_of_scope={
        "manager.py:get_stats": _STATS,
        "policies/factory.py:register_cache_policy": _REGISTRY,
        "policies/base.py:on_store_miss": _DEFAULTS,
        "policies/base.py:on_request_finished": _DEFAULTS,
    },
    vllm_version="0.32",
)

#: vLLM 0.33's files of the same names (request-rank LRU, N9; ``on_request_access``), judged
#: by the same suites through 0.33's interface: its python imports the 0.33 overlay
#: (``.ci/vllm033_overlay.sh``: ``PYTHONPATH`` and ``VLLM_TARGET_DEVICE=cpu``).
VLLM033_CPU = replace(VLLM_CPU, name="vllm033-cpu", vllm_version="0.33")

#: vLLM 0.19's files (its connector called the contract's batch API: judged through it, as a
#: third party's manager and policy are), over the lane's 0.32 environment (``.ci/vllm_overlay.sh
#: 0.19``). LRU only: 0.19's ARC breaks I6 as shipped (README, "A bug nobody planted"), so every
#: mutant of it would be "killed" by that; ``arc.py`` is imported from vLLM, not copied.
_VLLM019_MANAGER = Suite("manager", "lru", "kvo_mut_vllm019.manager", "CPUOffloadingManager", cache_policy="lru",
                         block_size=16)
_VLLM019_POLICY = Suite("policy", "lru", "kvo_mut_vllm019.policies.lru", "LRUCachePolicy")
VLLM019_CPU = Target(
    name="vllm019-cpu",
    source="vllm",
    package="kvo_mut_vllm019",
    files=("manager.py", "policies/abstract.py", "policies/lru.py"),
    rewrites=(("vllm.v1.kv_offload.cpu.policies.abstract", "kvo_mut_vllm019.policies.abstract"),
              ("vllm.v1.kv_offload.cpu.policies.lru", "kvo_mut_vllm019.policies.lru")),
    suites={
        "manager.py": (_VLLM019_MANAGER,),
        "policies/abstract.py": (_VLLM019_POLICY, _VLLM019_MANAGER),
        "policies/lru.py": (_VLLM019_POLICY, _VLLM019_MANAGER),
    },
    needs_vllm=True,
    vllm_version="0.19",
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


def _checked(suite: Suite) -> tuple[Suite, ...]:
    """``suite``'s target and policy judged by the model checker, every reachable state (issue
    15): policies LRU to capacity 3, ARC to 2; managers, whose requests span calls (K5), to 2,
    ARC's requests making one offer or load (vLLM's LRU manager at 3 takes ~4 min, its ARC
    manager at 2 with two offers per request much longer). Admission (N2): every call a request
    of its own, the tracker of 1 key (an offer of two, one tracked, fills it) and of 2 (which
    of two keys it pushes out), at threshold 2; at 3 with a tracker of 1 (a key offered once or
    twice is not stored yet: a tracker built only at threshold 2 escapes the runs at 2); and at
    1 with a tracker of 1 (admission off)."""
    if suite.kind == "policy":
        return (replace(suite, capacity=3 if suite.mode == "lru" else 2),)
    if suite.store_threshold >= 2:
        return tuple(replace(suite, capacity=2, request_calls=0, store_threshold=threshold, max_tracker_size=size)
                     for threshold, size in ((2, 1), (2, 2), (3, 1), (1, 1)))
    return (replace(suite, capacity=2, request_calls=2 if suite.mode == "lru" else 1),)


def _arc_manager(suite: Suite) -> bool:
    """The model checker's costliest suite (vLLM's ARC manager: minutes), run last."""
    return suite.kind == "manager" and suite.mode == "arc"


def _model_checked(target: Target) -> Target:
    """``target``'s mutants judged by ``check-exhaustive`` instead of the lockstep suite (its
    suites as ``_checked`` scopes them, the ARC manager's last), the same classifications."""
    suites = {file: tuple(sorted((s for run in runs for s in _checked(run)), key=_arc_manager))
              for file, runs in target.suites.items()}
    return replace(target, name=f"{target.name}-mc", suites=suites, classified_as=target.name)


#: vLLM's files judged by the model checker (``check-exhaustive`` through vLLM's interface, K1, K2, K6, K7, K8)
VLLM_CPU_MC = _model_checked(VLLM_CPU)
VLLM033_CPU_MC = _model_checked(VLLM033_CPU)

#: vLLM 0.33's file-system secondary tier (``tiering/fs``) and the async lookups it is built on,
#: judged by ``kvoffload conform tier`` (T7–T13; ``tier_factories.fs_tier``). Its C helpers
#: (``vllm.fs_io_C``) are not in vllm-cpu: the Python paths of ``fs/io.py`` are the ones run.
_FS_TIER = Suite("tier", "any", "kvoffload.mutation.tier_factories", "fs_tier")
VLLM033_TIERS = Target(
    name="vllm033-tiers",
    source="vllm",
    package="kvo_mut_vllm_tiering",
    files=("fs/manager.py", "fs/io.py", "fs/thread_pool.py", "async_lookup.py"),
    rewrites=(("vllm.v1.kv_offload.tiering.fs.", "kvo_mut_vllm_tiering.fs."),
              ("vllm.v1.kv_offload.tiering.async_lookup", "kvo_mut_vllm_tiering.async_lookup")),
    suites={file: (_FS_TIER,) for file in ("fs/manager.py", "fs/io.py", "fs/thread_pool.py", "async_lookup.py")},
    needs_vllm=True,
    vllm_version="0.33",
    directory="tiering",
)

TARGETS: dict[str, Target] = {target.name: target for target in (VLLM_CPU, VLLM033_CPU, VLLM_CPU_MC, VLLM033_CPU_MC,
                                                                  VLLM019_CPU, REFERENCE_POLICIES, VLLM033_TIERS)}
