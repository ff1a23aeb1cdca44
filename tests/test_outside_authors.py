"""The suite on managers written by outside authors from the contract alone (``outside_authors``):
their correct managers conform in both modes, and the bugs they planted are caught by what
a user runs (``kvoffload conform manager MODULE:FACTORY``, seed 0, the default budget).

Two of their ARC bugs live in deep states a run reaches by chance, and are judged over
seeds 0-4 (``BY_SEEDS``). Two refused stores that changed hidden state (``carol_clock``'s
``refused_sweep`` under ``--policy any``, ``bob_arc``'s ``ghost_on_refusal``) went unseen or
were seen by chance until I7 was judged on twins (``lockstep.twins``); now both are caught at
seed 0, as I7.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kvoffload.conformance.cli import conform
from kvoffload.conformance.runner import run_conformance
from outside_authors.alice_lru import bugs as alice_bugs
from outside_authors.alice_lru import manager as alice
from outside_authors.bob_arc import bugs as bob_bugs
from outside_authors.bob_arc import manager as bob
from outside_authors.carol_clock import bugs as carol_bugs
from outside_authors.carol_clock import manager as carol

#: (author, their manager's factory, the policy it is judged as)
CORRECT = [("alice_lru", alice.make_manager, "lru"), ("bob_arc", bob.make_manager, "arc"),
           ("carol_clock", carol.make_manager, "any")]

#: ARC's fractional p (A3's true division, A4's floor): deep states the manager machine's ARC
#: walks reach in most runs, not in every one; judged over seeds, as a user trying a few would.
BY_SEEDS = [("bob floordiv_p", bob_bugs.make_floordiv_p), ("bob unfloored_p", bob_bugs.make_unfloored_p)]

#: (bug, factory, policy, strict, clauses one of which is named first)
CAUGHT = [
    ("alice protect_new_only", alice_bugs.make_protect_new_only, "lru", False, {"M5"}),
    ("alice load_refreshes", alice_bugs.make_load_refreshes, "lru", False, {"M10", "L3"}),
    ("alice none_reorders", alice_bugs.make_none_reorders, "lru", False, {"L3", "I7", "M10"}),
    ("alice dup_unload", alice_bugs.make_dup_unload, "lru", True, {"M3"}),
    ("alice fail_leaks_block", alice_bugs.make_fail_leaks_block, "lru", False, {"I6", "M7", "I1"}),
    ("bob shallow_protect", bob_bugs.make_shallow_protect, "arc", False, {"M5"}),
    # refused stores that changed hidden state: ghost lists (ARC), reference bits (CLOCK);
    # unshrunk, the first failing example may show the ghosts' loss in a later victim first
    ("bob ghost_on_refusal", bob_bugs.make_ghost_on_refusal, "arc", False, {"I7", "A4", "M10"}),
    ("carol refused_sweep", carol_bugs.make_refused_sweep, "any", False, {"I7"}),
    # pins left by a refused prepare_load show first where a block cannot be evicted
    ("bob partial_load", bob_bugs.make_partial_load, "arc", True, {"I6", "M2", "I7", "A4"}),
    ("carol protect_new_only", carol_bugs.make_protect_new_only, "any", False, {"M5"}),
    ("carol dedup_loads", carol_bugs.make_dedup_loads, "any", True, {"M3", "M2", "I3"}),
    ("carol event_ring_order", carol_bugs.make_event_ring_order, "any", False, {"M6", "M8"}),
    ("carol evict_pending", carol_bugs.make_evict_pending, "any", False, {"I3"}),
]


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
@pytest.mark.parametrize(("author", "factory", "policy"), CORRECT, ids=[c[0] for c in CORRECT])
def test_M0_I8_a_correct_outside_manager_conforms(author: str, factory: object, policy: str, strict: bool) -> None:
    result = run_conformance("manager", factory, policy=policy, strict=strict)
    assert result.ok, result.report()


@pytest.mark.parametrize(("name", "factory", "policy", "strict", "clauses"), CAUGHT, ids=[c[0] for c in CAUGHT])
def test_M0_I8_an_outside_authors_bug_is_caught(name: str, factory: object, policy: str, strict: bool,
                                               clauses: set[str]) -> None:
    # shrinking off, as for the planted bugs: it only shortens the reproduction
    result = run_conformance("manager", factory, policy=policy, strict=strict, shrink=False)
    assert not result.ok, f"{name} was not caught: {result.summary()}"
    assert result.clause in clauses, result.report()


@pytest.mark.parametrize(("name", "factory"), BY_SEEDS, ids=[c[0] for c in BY_SEEDS])
def test_A3_A4_an_outside_authors_deep_arc_bug_is_caught_at_most_seeds(name: str, factory: object) -> None:
    """Caught at 3 or more of seeds 0-4 (before the ARC walks: floordiv_p at 2, unfloored_p at 1)."""
    verdicts = [run_conformance("manager", factory, policy="arc", seed=seed, shrink=False) for seed in range(5)]
    caught = [result.clause for result in verdicts if not result.ok]
    assert len(caught) >= 3, f"{name} caught at {len(caught)} of 5 seeds"
    assert set(caught) <= {"A4", "A3", "A5", "M10"}, caught


def test_M5_the_cli_on_an_outside_bug_exits_1_and_its_reproduction_fails_as_reported() -> None:
    """As a user runs it: ``conform manager outside_authors.alice_lru.bugs:make_protect_new_only``."""
    source = "outside_authors.alice_lru.bugs:make_protect_new_only"
    run = CliRunner().invoke(conform, ["manager", source, "--policy", "lru"])
    assert run.exit_code == 1, run.output
    assert "VIOLATES M5" in run.output
    result = run_conformance("manager", alice_bugs.make_protect_new_only, policy="lru", source=source)
    assert "from outside_authors.alice_lru.bugs import make_protect_new_only" in result.reproduction
    with pytest.raises(AssertionError, match="M5"):
        exec(compile(result.reproduction, "<reproduction>", "exec"), {})
