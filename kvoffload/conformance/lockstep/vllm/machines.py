"""The lockstep machines for vLLM-interface targets, by target kind (K1–K9)."""

from __future__ import annotations

from typing import Any, ClassVar

from ..machine_base import ConformanceMachine
from ..policy_machine import PolicyMachine
from .adapter import VllmPolicyView
from .machine import VllmManagerMachine
from .ranked import RankOrderManagerMachine

__all__ = ["VllmPolicyMachine", "vllm_machine"]


class VllmPolicyMachine(PolicyMachine):
    """``PolicyMachine`` (P1–P6, L1–L3, A1–A6) with the target seen through
    ``VllmPolicyView`` (K8)."""

    extra_imports = ("from kvoffload.conformance.lockstep.vllm import as_contract_policy",)
    #: N9 targets are driven here without positioned requests, where N9's order is L1's
    lru_order: ClassVar[str] = "recency"

    def build(self, **arguments: Any) -> Any:
        raw = super().build(**arguments)
        self.construct = f"as_contract_policy({self.construct})"
        self.exercised("K8")
        if self.lru_order == "request-rank":
            self.stats.skipped.add("N9 inside positioned requests (a policy is called here without request "
                                   "positions, where N9's order is L1's; judge its manager: conform manager)")
        return VllmPolicyView(raw)

    def fresh_target(self) -> Any:
        return VllmPolicyView(super().fresh_target())


def vllm_machine(kind: str, lru_order: str = "recency") -> type[ConformanceMachine]:
    """The machine that judges a vLLM-interface ``kind`` (manager or policy); a manager
    ranked by request (N9) gets ``RankOrderManagerMachine``."""
    if kind == "policy":
        return VllmPolicyMachine
    if kind != "manager":
        raise ValueError(f"interface='vllm' applies to managers and policies, not to a {kind}")
    return RankOrderManagerMachine if lru_order == "request-rank" else VllmManagerMachine
