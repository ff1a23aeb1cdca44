"""The conformance suite passes on the reference model in every mode."""

from __future__ import annotations

import pytest

from kvoffload.conformance import check_backend, check_manager, check_policy
from kvoffload.conformance import factories as f

MANAGERS = {"lru": f.reference_lru_manager, "arc": f.reference_arc_manager, "any": f.reference_arc_manager}
POLICIES = {"lru": f.reference_lru_policy, "arc": f.reference_arc_policy, "any": f.reference_lru_policy}
#: The full default budget (what the CLI runs) once per target kind, on its deepest mode
#: (ARC: ghost lists, fractional p); the other modes run a smaller budget to keep CI short.
FULL = {("manager", "arc", False), ("policy", "arc", False), ("backend", "-", False)}
SMALL_EXAMPLES = 40


def _examples(kind: str, policy: str, strict: bool) -> int | None:
    return None if (kind, policy, strict) in FULL else SMALL_EXAMPLES


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
@pytest.mark.parametrize("policy", ["lru", "arc", "any"])
def test_I1_reference_manager_conforms(policy: str, strict: bool) -> None:
    result = check_manager(MANAGERS[policy], policy=policy, strict=strict,
                           max_examples=_examples("manager", policy, strict))
    assert result.ok, result.report()
    assert result.steps > 0 and result.steps_per_second > 0


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
def test_B1_reference_backend_conforms(strict: bool) -> None:
    result = check_backend(f.reference_backend, strict=strict, max_examples=_examples("backend", "-", strict))
    assert result.ok, result.report()


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
@pytest.mark.parametrize("policy", ["lru", "arc", "any"])
def test_P1_reference_policy_conforms(policy: str, strict: bool) -> None:
    result = check_policy(POLICIES[policy], policy=policy, strict=strict,
                          max_examples=_examples("policy", policy, strict))
    assert result.ok, result.report()
