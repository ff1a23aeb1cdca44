"""vLLM-interface targets (issue 14, item 5): a printed reproduction runs as printed and
fails on the buggy manager, and, with its import pointed at the fixed manager, passes; and
strict mode accepts the errors vLLM's interface documents for protocol breaches (K3:
``AssertionError``, ``KeyError``, ``ValueError``), and only those."""

from __future__ import annotations

import contextlib
import io

import pytest

pytest.importorskip("vllm")

import outside_bugs  # noqa: E402
from kvoffload.conformance import check_manager  # noqa: E402
from kvoffload.conformance.runner import run_conformance  # noqa: E402

#: (bug factory in outside_bugs, the clause the report must name first)
BUGS = [("pending_is_miss", "K1"), ("restores_resident", "M5"), ("no_finish_recency", "L3"),
        ("reset_keeps_blocks", "K7")]


def _run(snippet: str) -> BaseException | None:
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(snippet, "<reproduction>", "exec"), {"__name__": "__reproduction__"})
    except BaseException as error:  # noqa: BLE001 - what the pasted test would report
        return error
    return None


@pytest.mark.parametrize(("bug", "clause"), BUGS, ids=[b for b, _ in BUGS])
def test_K2_reproduction_fails_on_the_bug_and_passes_once_fixed(bug: str, clause: str) -> None:
    result = run_conformance("manager", getattr(outside_bugs, bug), policy="lru", source=f"outside_bugs:{bug}")
    assert not result.ok and result.clause == clause, result.report()
    import_line = f"from outside_bugs import {bug}\n"
    assert import_line in result.reproduction, result.reproduction
    on_bug = _run(result.reproduction)
    assert isinstance(on_bug, AssertionError) and str(on_bug).startswith(clause), f"{on_bug!r}\n{result.reproduction}"
    fixed = result.reproduction.replace(import_line, f"from outside_manager import outside_lru as {bug}\n")
    on_fix = _run(fixed)
    assert on_fix is None, f"the reproduction fails on the fixed manager: {on_fix!r}\n{result.reproduction}"


def test_K8_policy_reproduction_fails_on_the_bug_and_passes_once_fixed() -> None:
    result = run_conformance("policy", outside_bugs.UnreversedLRU, policy="lru", source="outside_bugs:UnreversedLRU")
    assert not result.ok and result.clause in ("L2", "L3", "P4"), result.report()
    import_line = "from outside_bugs import UnreversedLRU\n"
    assert import_line in result.reproduction, result.reproduction
    on_bug = _run(result.reproduction)
    assert isinstance(on_bug, AssertionError) and str(on_bug).startswith(result.clause or ""), f"{on_bug!r}"
    fixed = result.reproduction.replace(
        import_line, "from vllm.v1.kv_offload.cpu.policies.lru import LRUCachePolicy as UnreversedLRU\n")
    assert _run(fixed) is None, result.reproduction


@pytest.mark.parametrize("error", [AssertionError, KeyError, ValueError])
def test_K3_strict_mode_accepts_the_documented_errors(error: type[Exception]) -> None:
    result = check_manager(outside_bugs.raising(error), policy="lru", strict=True, max_examples=60)
    assert result.ok, result.report()
    assert {"M2", "M3", "M9"} <= set(result.clauses_exercised)


def test_K3_strict_mode_refuses_an_undocumented_error() -> None:
    result = check_manager(outside_bugs.raising(RuntimeError), policy="lru", strict=True, shrink=False)
    assert not result.ok and result.clause in ("M2", "M3"), result.report()
    assert "RuntimeError" in result.message and "ContractViolation" in result.message
