"""The vLLM-interface lockstep machines inherit every rule of the contract's machines: a
plain method of the same name in a subclass silently removes a hypothesis rule (a helper once
hid ``store_fresh`` by accident). Two are dropped on purpose, each by a method saying why:
``strict_bad_types`` (vLLM's interface does not check key types at run time, K3) and
``store_fresh`` (vLLM stores only inside a request; the request rules store fresh keys)."""

from __future__ import annotations

import inspect

import pytest
from hypothesis.stateful import RULE_MARKER

from kvoffload.conformance.lockstep.manager_machine import ManagerMachine
from kvoffload.conformance.lockstep.policy_machine import PolicyMachine
from kvoffload.conformance.lockstep.vllm.machine import VllmManagerMachine
from kvoffload.conformance.lockstep.vllm.machines import VllmPolicyMachine
from kvoffload.conformance.lockstep.vllm.ranked import RankOrderManagerMachine


def rule_names(machine: type) -> set[str]:
    return {name for name, member in inspect.getmembers(machine) if getattr(member, RULE_MARKER, None) is not None}


@pytest.mark.parametrize(
    ("base", "machine", "dropped"),
    [
        (ManagerMachine, VllmManagerMachine, {"strict_bad_types", "store_fresh"}),
        (ManagerMachine, RankOrderManagerMachine, {"strict_bad_types", "store_fresh"}),
        (PolicyMachine, VllmPolicyMachine, set()),
    ],
)
def test_vllm_machines_keep_every_contract_rule(base: type, machine: type, dropped: set[str]) -> None:
    assert base is PolicyMachine or "store_fresh" in rule_names(base)
    assert rule_names(base) - rule_names(machine) == dropped
