"""Managers outside authors wrote for vLLM's per-key interface, from vLLM's own sources
and the contract, without reading this project, and the bugs each author planted in
theirs: ``dave_lru`` (vLLM 0.32, LRU, ``dave_lru/BUGS.md``) and ``erin_sieve`` (vLLM
0.33, a SIEVE policy of its own, judged with ``--policy any``, ``erin_sieve/BUGS.md``).
The suite judges them as they are: each correct manager conforms in the default mode,
every planted bug is caught with the clause named, and a refusal with a side effect on
SIEVE's hidden order is caught on twins (I7) with a reproduction that runs.

Strict mode is not asked of it: like vLLM 0.32's own manager, which its author matched on
purpose, it gives each duplicate key of one ``prepare_store`` a block (a C5 breach the
contract answers with M5.1 in strict mode)."""

from __future__ import annotations

import pytest

pytest.importorskip("vllm")
try:  # the author's module imports 0.32's metrics classes (0.33 still has them)
    from dave_lru import bugs, manager
    from erin_sieve import bugs as erin_bugs, manager as erin_manager
except ImportError as error:  # pragma: no cover - depends on the installed release
    pytest.skip(f"the authors' managers need vLLM 0.32 or 0.33: {error}", allow_module_level=True)

from kvoffload.conformance import check_manager  # noqa: E402
from kvoffload.conformance.runner import run_conformance  # noqa: E402
from vllm_helpers import run_reproduction  # noqa: E402

#: Each author's manager module, bugs module and the policy mode it is judged in.
AUTHORS = {"dave_lru": (manager, bugs, "lru"), "erin_sieve": (erin_manager, erin_bugs, "any")}
#: (author, bug, clauses one of which is named first)
CAUGHT = [
    ("dave_lru", "store_recency", {"L3", "K5"}),
    ("dave_lru", "failed_store_leak", {"K9", "I6", "M7"}),
    ("dave_lru", "offer_unshielded", {"M5"}),
    ("dave_lru", "load_pin_flag", {"K9", "I3", "M3"}),
    ("dave_lru", "finish_tail_first", {"L3", "K5"}),
    ("erin_sieve", "refusal_clears_bits", {"I7"}),  # only twins see it: --policy any holds no SIEVE order
    ("erin_sieve", "pending_evictable", {"I3"}),
    ("erin_sieve", "failed_store_announced", {"M7"}),
    ("erin_sieve", "failed_store_leaks", {"M5", "I6", "M7"}),
    ("erin_sieve", "reset_keeps_hand", {"I4", "M5", "K7"}),
]


@pytest.mark.parametrize("author", sorted(AUTHORS))
def test_K1_K9_the_outside_authors_managers_conform(author: str) -> None:
    module, _, policy = AUTHORS[author]
    result = check_manager(module.make_manager, policy=policy)
    assert result.ok, result.report()
    assert result.interface == "vllm"


@pytest.mark.parametrize(("author", "bug", "clauses"), CAUGHT, ids=[f"{a}-{b}" for a, b, _ in CAUGHT])
def test_K1_K9_the_outside_authors_bugs_are_caught(author: str, bug: str, clauses: set[str]) -> None:
    _, module, policy = AUTHORS[author]
    result = check_manager(getattr(module, f"make_{bug}"), policy=policy, shrink=False)
    assert not result.ok, f"{bug} was not caught: {result.summary()}"
    assert result.clause in clauses, result.report()


def test_I7_K6_a_refusal_that_moves_sieves_hand_reproduces_on_twins() -> None:
    """The reproduction replays the example on a second manager, which touches the store
    misses in place of the refused store (K6 lets a refusal do that much), and compares the
    two through a probe: it fails on the bug and passes on the author's correct manager."""
    source = "erin_sieve.bugs:make_refusal_clears_bits"
    result = run_conformance("manager", erin_bugs.make_refusal_clears_bits, policy="any", source=source)
    assert not result.ok and result.clause == "I7", result.report()
    import_line = "from erin_sieve.bugs import make_refusal_clears_bits\n"
    assert import_line in result.reproduction and "twin = as_contract_manager(" in result.reproduction
    on_bug = run_reproduction(result.reproduction)
    assert isinstance(on_bug, AssertionError) and str(on_bug).startswith("I7"), f"{on_bug!r}\n{result.reproduction}"
    fixed = result.reproduction.replace(import_line, "from erin_sieve.manager import make_manager as "
                                                      "make_refusal_clears_bits\n")
    assert run_reproduction(fixed) is None, result.reproduction
