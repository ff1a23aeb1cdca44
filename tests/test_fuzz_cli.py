"""``kvoffload fuzz``: exit codes, the example database, and that it finds a planted bug."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kvoffload.conformance.drivers.fuzz import FuzzRound, fuzz, fuzz_machines, plan_rounds
from kvoffload.spec import ReferenceManager


class LookupCountsPending(ReferenceManager):
    """M1 broken: pending blocks count as hits."""

    def lookup(self, block_hashes: Any) -> int:
        hits = 0
        for block_hash in block_hashes:
            if self.policy.get(block_hash) is None:
                break
            hits += 1
        return hits


def test_plans() -> None:
    rounds = plan_rounds("manager", "impl", None, False)
    policies = ["lru", "arc", "s3fifo", "sieve"]
    assert [(r.policy, r.strict) for r in rounds] == [(p, False) for p in policies] + [(p, True) for p in policies]
    assert [r.policy for r in plan_rounds("policy", "reference", "arc", True)] == ["arc"]
    assert [r.source for r in plan_rounds("manager", "impl", "sieve", True)] == ["kvoffload.impl.factories:sieve_manager"]
    assert [r.policy for r in plan_rounds("backend", "impl", None, False)] == ["any"]


def test_fuzz_finds_a_planted_bug_and_replays_it_from_the_database(tmp_path: Path) -> None:
    from hypothesis.database import DirectoryBasedExampleDatabase

    db = DirectoryBasedExampleDatabase(str(tmp_path / "db"))
    rounds = [FuzzRound("tests.test_fuzz_cli:LookupCountsPending", LookupCountsPending, "lru", False)]
    found = fuzz_machines("manager", rounds, seconds=30, database=db)  # a seed would disable the database
    assert not found.ok and found.result is not None
    assert "M1" in found.result.clauses, found.result.report()
    assert "Reproduction" in found.result.report()
    assert any((tmp_path / "db").rglob("*")), "the failure was not saved"
    again = fuzz_machines("manager", rounds, seconds=30, database=db)
    assert not again.ok and again.examples <= found.examples  # replayed first


def test_fuzz_command_clean_run_and_exit_codes(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "db")
    done = runner.invoke(fuzz, ["backend", "--minutes", "0.02", "--database", db, "--seed", "1", "--quiet"])
    assert done.exit_code == 0, done.output
    assert "steps/s" in done.output and "B2" in done.output
    assert runner.invoke(fuzz, ["manager", "--minutes", "0"]).exit_code == 2
    assert runner.invoke(fuzz, ["nonsense"]).exit_code == 2
    assert runner.invoke(fuzz, ["manager", "--target", "nosuch:thing", "--minutes", "0.01"]).exit_code == 2
    assert runner.invoke(fuzz, ["handler", "--target", "reference", "--minutes", "0.01"]).exit_code == 2
    assert runner.invoke(fuzz, ["backend", "--policy", "lru", "--minutes", "0.01"]).exit_code == 2
    found = runner.invoke(fuzz, ["manager", "--target", "tests.test_fuzz_cli:LookupCountsPending",
                                 "--policy", "lru", "--minutes", "0.5", "--database", db, "--quiet"])
    assert found.exit_code == 1, found.output
    assert "VIOLATES" in found.output and "regression test" in found.output


def test_fuzz_handler_round(tmp_path: Path) -> None:
    done = CliRunner().invoke(fuzz, ["handler", "--minutes", "0.02", "--seed", "3", "--quiet"])
    assert done.exit_code == 0, done.output
    assert "fuzz handler" in done.output
