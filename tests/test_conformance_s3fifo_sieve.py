"""The conformance suite's exact modes for S3-FIFO (F1–F7) and SIEVE (V1–V6): the
reference passes them, and a policy that orders victims otherwise is caught."""

from __future__ import annotations

import pytest

from kvoffload.conformance import check_manager, check_policy
from kvoffload.conformance import factories as f
from kvoffload.impl import factories as impl

EXAMPLES = 40


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
@pytest.mark.parametrize("policy", ["s3fifo", "sieve"])
def test_F5_V5_reference_manager_conforms_in_exact_mode(policy: str, strict: bool) -> None:
    factory = f.reference_s3fifo_manager if policy == "s3fifo" else f.reference_sieve_manager
    result = check_manager(factory, policy=policy, strict=strict, max_examples=EXAMPLES)
    assert result.ok, result.report()


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
@pytest.mark.parametrize("policy", ["s3fifo", "sieve"])
def test_F5_V5_components_conform_in_exact_mode(policy: str, strict: bool) -> None:
    factory = impl.s3fifo_policy if policy == "s3fifo" else impl.sieve_policy
    result = check_policy(factory, policy=policy, strict=strict, max_examples=EXAMPLES)
    assert result.ok, result.report()


@pytest.mark.parametrize(
    ("factory", "policy", "clause"),
    [
        (f.reference_lru_policy, "sieve", "V5"),
        (f.reference_sieve_policy, "s3fifo", "F5"),
        (f.reference_s3fifo_policy, "lru", "L3"),
    ],
    ids=["lru-as-sieve", "sieve-as-s3fifo", "s3fifo-as-lru"],
)
def test_F5_V5_a_different_victim_order_is_caught(factory: object, policy: str, clause: str) -> None:
    result = check_policy(factory, policy=policy, max_examples=200)
    assert not result.ok and result.clause == clause, result.report()


def test_V5_manager_with_another_policy_is_caught() -> None:
    result = check_manager(f.reference_lru_manager, policy="sieve", max_examples=200)
    assert not result.ok and result.clause in {"V5", "M10"}, result.report()
