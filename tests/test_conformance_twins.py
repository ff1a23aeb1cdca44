"""I7 judged on twins (``kvoffload.conformance.lockstep.twins``): a refused or raising call
must leave the target's hidden order as it was, which the model cannot see under
``--policy any``. The targets are an outside author's CLOCK manager and its
``refused_sweep`` bug (``tests/outside_authors/carol_clock``), whose BUGS.md gives the
calls used here."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kvoffload.conformance.cli import conform
from kvoffload.conformance.judge import Verdict
from kvoffload.conformance.lockstep.twins import (
    NOT_DETERMINISTIC, ManagerProbe, Twins, apply_manager_call, twin_lines, twin_verdict,
)
from kvoffload.conformance.runner import NOT_REPEATABLE, run_conformance
from outside_authors.carol_clock import bugs as carol_bugs
from outside_authors.carol_clock import manager as carol
from outside_authors.carol_clock.bugs import _SweepingClock
from outside_authors.carol_clock.manager import ClockPolicy

A, B, X, Y, Z = (bytes([n]) * 16 for n in range(1, 6))
#: BUGS.md's sequence: a and b stored and touched, then a store that needs two blocks where
#: only b can go (a is in the input): refused, and the buggy CLOCK cleared b's bit on its way
CALLS: list[tuple[str, list[Any], dict[str, Any]]] = [
    ("prepare_store", [A, B], {}), ("complete_store", [A, B], {}), ("touch", [A, B], {}),
    ("prepare_store", [A, X, Y], {}),
]
PROBE = ManagerProbe([], [], [X, Y], [Z])


def twins(factory: Any) -> Twins:
    """Twins of a ``factory(2)`` manager."""
    return Twins(functools.partial(factory, 2), apply_manager_call)


class Locked:
    """A manager that cannot be deep-copied (it holds a lock): judged on replays alone."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.lock = inner, threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def name(h: object) -> str:
    return {A: "a", B: "b", X: "x", Y: "y", Z: "z"}.get(h, repr(h))  # type: ignore[call-overload]


def test_I7_twins_tell_a_refused_store_that_cleared_reference_bits() -> None:
    """On copies of a shadow and on replays (a target that cannot be copied) alike."""
    for pair in (twins(carol_bugs.make_refused_sweep), twins(lambda n: Locked(carol_bugs.make_refused_sweep(n)))):
        verdict = twin_verdict(pair, CALLS, (PROBE, PROBE), "prepare_store", name)
        assert isinstance(verdict, Verdict) and verdict.clauses == ("I7",)
        assert "on a twin that never made it" in verdict.message
    locked = twins(lambda n: Locked(carol.make_manager(n)))
    assert twin_verdict(twins(carol.make_manager), CALLS, (PROBE, PROBE), "prepare_store", name) is None
    assert twin_verdict(locked, CALLS, (PROBE, PROBE), "prepare_store", name) is None and not locked.copying


def test_I7_twins_are_not_judged_on_a_target_that_answers_one_history_two_ways() -> None:
    builds = iter(range(100))  # every other build is the buggy one: no history answers one way
    factories = (carol.make_manager, carol_bugs.make_refused_sweep)

    def alternating() -> Any:
        return factories[next(builds) % 2](2)

    replays = Twins(alternating, apply_manager_call)
    replays.copying = False  # (one shadow, copied, would be one target: the replays are what is tested)
    assert twin_verdict(replays, CALLS, (PROBE, PROBE), "prepare_store", name) == NOT_DETERMINISTIC


def test_I7_twin_lines_replay_the_calls_before_the_judged_one_on_both_targets() -> None:
    lines = ["r1 = m.touch([h0])", "try:\n    m.lookup([1])\nexcept TypeError:\n    pass", "r2 = m.prepare_store([h1])"]
    assert twin_lines(lines, 2, "make(num_blocks=2)", ["def probe(t): ..."]) == [
        "def replay(m):  # the example's calls before the judged one",
        "    r1 = m.touch([h0])",
        "    try:\n        m.lookup([1])\n    except TypeError:\n        pass",
        "replay(m)", "twin = make(num_blocks=2)", "replay(twin)", "r2 = m.prepare_store([h1])", "def probe(t): ...",
    ]
    assert twin_lines(lines[2:], 0, "make()", []) == ["twin = make()", "r2 = m.prepare_store([h1])"]


def test_I7_conform_any_reports_the_refused_sweep_and_its_reproduction_fails_as_reported(tmp_path: Path) -> None:
    """As a user runs it: the CLI names I7, and the printed snippet, run on its own, fails
    its last assert with the same message."""
    source = "outside_authors.carol_clock.bugs:make_refused_sweep"
    run = CliRunner().invoke(conform, ["manager", source, "--policy", "any"])
    assert run.exit_code == 1, run.output
    assert "VIOLATES I7" in run.output
    reproduction = run.output.split("paste and run it):\n\n", 1)[1].rsplit("\n(", 1)[0]
    assert "twin = make_refused_sweep(" in reproduction
    script = tmp_path / "reproduction.py"
    script.write_text(reproduction)
    tests = str(Path(__file__).parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])}
    ran = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert ran.returncode == 1 and "AssertionError: I7:" in ran.stderr, ran.stderr


class _BuildParity:
    """Managers whose eviction order depends on how many were built before them: a target
    that answers one call sequence two ways from one example's replay to the next."""

    built = 0

    @classmethod
    def make(cls, num_blocks: int, enable_events: bool = False) -> Any:
        cls.built += 1
        factory = carol.make_manager if cls.built % 2 else carol_bugs.make_refused_sweep
        return factory(num_blocks, enable_events=enable_events)


def test_I7_a_target_that_is_not_deterministic_is_told_so_not_judged_as_breaking_a_clause() -> None:
    """It conforms (twins that found it out say so under "skipped"; a shadow that agrees with
    itself settles every check), or hypothesis finds it out replaying an example and the
    run stops saying why: never a clause. Which of these happens depends on the order of
    builds, so the test asks only for that."""
    _BuildParity.built = 0
    result = run_conformance("manager", _BuildParity.make, policy="any")
    assert result.ok or (result.clause == "?" and result.message.startswith(NOT_REPEATABLE)), result.report()


class Clock(ClockPolicy):
    """carol's CLOCK policy as a ``CachePolicy`` factory of its own (``cache_capacity=``).
    Written as her manager's internal policy, it reverses ``touch``'s argument, which P4
    lets a caller pass as any iterable: given here as a list, as her manager does."""

    def __init__(self, cache_capacity: int) -> None:
        super().__init__()

    def touch(self, hashes: Any) -> None:
        super().touch(list(hashes))


class SweepingClock(_SweepingClock, Clock):
    """Her ``refused_sweep`` policy, wrapped the same way: ``evict`` clears reference bits
    on its way round before it finds too few victims and returns ``None``."""


def test_I7_policy_twins_tell_a_refused_evict_that_cleared_reference_bits() -> None:
    """``conform policy --policy any``: her CLOCK conforms; the sweeping one breaks I7 on
    a refused ``evict``, which no model of CLOCK could have shown."""
    assert run_conformance("policy", Clock, policy="any").ok
    result = run_conformance("policy", SweepingClock, policy="any", shrink=False)
    assert result.clause == "I7", result.report()
    assert "p.evict(" in result.reproduction and "twin = SweepingClock(" in result.reproduction
    with pytest.raises(AssertionError, match="I7: evict changed the target's order"):
        exec(compile(result.reproduction, "<reproduction>", "exec"), {})


class _LookupMarks(carol.ClockOffloadingManager):
    """Her CLOCK manager with a bug of ours: a lookup hit sets the reference bit (a hit
    taken for a use), which M10 forbids and no model of CLOCK can see under ``any``."""

    def lookup(self, hashes: Any) -> int:
        keys = list(hashes)
        hits = super().lookup(keys)
        self.policy.touch(keys[:hits])
        return int(hits)


class _CompletedLoadMarks(carol.ClockOffloadingManager):
    """Ours too: a completed load sets the reference bit (M10: a load is not a use)."""

    def complete_load(self, hashes: Any) -> None:
        keys = list(hashes)
        super().complete_load(keys)
        self.policy.touch(keys)


def make_lookup_marks(num_blocks: int, enable_events: bool = False) -> Any:
    return _LookupMarks(num_blocks, enable_events)


def make_completed_load_marks(num_blocks: int, enable_events: bool = False) -> Any:
    return _CompletedLoadMarks(num_blocks, enable_events)


@pytest.mark.parametrize(("factory", "method"), [(make_lookup_marks, "lookup"),
                                                 (make_completed_load_marks, "prepare_load")])
def test_M10_twins_tell_a_lookup_or_load_that_changes_the_order_under_any(factory: Any, method: str) -> None:
    """The completed load is caught at the load that it ends (the probe completes it)."""
    result = run_conformance("manager", factory, policy="any", shrink=False)
    assert result.clause == "M10" and result.message.startswith(f"M10: {method}"), result.report()
    with pytest.raises(AssertionError, match="M10: "):
        exec(compile(result.reproduction, "<reproduction>", "exec"), {})
