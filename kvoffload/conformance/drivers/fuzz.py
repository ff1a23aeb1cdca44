"""``kvoffload fuzz {manager|backend|policy|handler}``: time-boxed stateful fuzzing
(README, "Fuzzing").

The suite's machines run round after round under *exploring* hypothesis settings (no
fixed seed unless ``--seed``, an example database that replays old failures first) until
the budget is spent; ``conform`` is the reproducible gate, ``fuzz`` the search that feeds
it. The database does not survive a fresh clone: a reproduction it prints becomes a
regression test under ``tests/``.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import click
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

from ...spec import POLICIES
from ..cli import INTERFACE_OPTION
from ..loading import builtin_source, load_factory
from ..lockstep.machine_base import FactoryRef, RunStats, TargetSetupError
from ..reports.result import ConformanceResult
from ..runner import conformance_settings, machine_for, run_machine, target_modes

__all__ = ["DEFAULT_DATABASE", "FuzzRound", "FuzzOutcome", "plan_rounds", "fuzz_machines", "fuzz_handler", "fuzz"]

DEFAULT_DATABASE = ".kvoffload-fuzz-db"
KINDS = ("manager", "backend", "policy", "handler")
#: (max_examples, steps per example) of one round; a round lasts a second or two.
ROUND_BUDGET: dict[str, tuple[int, int]] = {"manager": (25, 50), "backend": (40, 40), "policy": (25, 50)}


@attrs.frozen
class FuzzRound:
    """One mode a round runs in: which factory, which policy mode, strict or not."""

    source: str
    factory: Callable[..., Any]
    policy: str
    strict: bool


@attrs.define
class FuzzOutcome:
    """What a fuzz run did; ``result`` is the failing run's report, if any."""

    kind: str
    rounds: int = 0
    steps: int = 0
    examples: int = 0
    seconds: float = 0.0
    clauses: tuple[str, ...] = ()
    result: ConformanceResult | None = None
    handler_failure: str = ""

    @property
    def ok(self) -> bool:
        return self.result is None and not self.handler_failure

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        return (
            f"fuzz {self.kind}: {self.rounds} rounds, {self.examples} examples, {self.steps} steps in "
            f"{self.seconds:.1f} s ({self.steps_per_second:.0f} steps/s); clauses exercised: "
            f"{' '.join(self.clauses) or '-'}"
        )


def plan_rounds(kind: str, target: str, policy: str | None, strict: bool) -> list[FuzzRound]:
    """The modes to cycle through; raises ``click.UsageError`` for bad arguments."""
    if target not in ("impl", "reference"):
        return [FuzzRound(target, load_factory(target), "any" if kind == "backend" else (policy or "any"), strict)]
    if kind == "handler":
        raise click.UsageError(f"no built-in {target} target for {kind}")
    # one factory per exact policy, named after it (the backend has one for all), judged as ``policy`` or as its own
    names = ("any",) if kind == "backend" else tuple(POLICIES) if policy in (None, "any") else (policy,)
    loaded = [(builtin_source(kind, target, name), name) for name in names]
    stricts = [True] if strict else ([False, True] if kind == "manager" else [False])
    return [FuzzRound(source, load_factory(source), policy or name, st) for st in stricts for source, name in loaded]


def _fuzz_until(outcome: FuzzOutcome, seconds: float, progress: Any, run_round: Callable[[], str]) -> FuzzOutcome:
    """Rounds until ``seconds`` pass or one records a finding in ``outcome``; ``run_round``
    returns what the round's progress line (on ``progress``, if given) says."""
    started = time.perf_counter()
    while outcome.ok and time.perf_counter() < started + seconds:
        outcome.rounds += 1
        said = run_round()
        outcome.seconds = time.perf_counter() - started
        if progress is not None:
            progress.write(f"\r{said}, {outcome.seconds:.0f}/{seconds:.0f} s    ")
            progress.flush()
    if progress is not None:
        progress.write("\n")
    return outcome


def fuzz_machines(
    kind: str,
    rounds: list[FuzzRound],
    *,
    seconds: float,
    database: ExampleDatabase | None,
    seed: int | None = None,
    progress: Any = None,
    interface: str = "auto",
) -> FuzzOutcome:
    """Run the suite's machine for ``kind`` round after round until ``seconds`` pass or a
    violation is found. Raises ``TargetSetupError`` if a factory cannot build its target.
    ``interface``: as ``conform``'s, detected per round's target by default (K1, N9)."""
    # each round's mode, its factory as a reproduction imports it, and how its target speaks
    bound = [(r, FactoryRef.of(r.factory, r.source), *target_modes(kind, r.factory, r.source, r.policy, interface))
             for r in rounds]
    settings = conformance_settings(*ROUND_BUDGET[kind], database=database)
    stats = RunStats()
    outcome = FuzzOutcome(kind)
    seeds = random.Random(seed) if seed is not None else None

    def run_round() -> str:
        fuzz_round, reference, speaks, lru_order = bound[(outcome.rounds - 1) % len(bound)]
        machine = machine_for(kind, reference, fuzz_round.policy, fuzz_round.strict, stats, speaks,
                              lru_order=lru_order)
        result = ConformanceResult(
            target=fuzz_round.source, kind=kind, policy=fuzz_round.policy if kind != "backend" else "-",
            strict=fuzz_round.strict, ok=True, seed=seed if seed is not None else -1,
        )
        run_machine(machine, settings, seeds.getrandbits(64) if seeds is not None else None, result,
                    "the target raised an unexpected error: ", full_traceback=True)
        outcome.result = None if result.ok else result
        mode = f"{fuzz_round.policy}{', strict' if fuzz_round.strict else ''}"
        return (f"fuzz {kind}: round {outcome.rounds} {fuzz_round.source} [{mode}]: {stats.steps} steps, "
                f"{stats.examples} examples, {len(stats.clauses)} clauses exercised")

    _fuzz_until(outcome, seconds, progress, run_round)
    outcome.steps, outcome.examples, outcome.clauses = stats.steps, stats.examples, stats.exercised()
    if outcome.result is not None:
        stats.record(outcome.result, outcome.seconds)
    return outcome


def fuzz_handler(
    factory: Callable[..., Any],
    *,
    seconds: float,
    seed: int | None = None,
    name: str = "handler",
    progress: Any = None,
) -> FuzzOutcome:
    """``check_handler`` with fresh seeds (10 examples a round) until ``seconds`` pass or a
    violation is found."""
    from ..lockstep.handler import check_handler

    seeds = random.Random(seed)
    outcome = FuzzOutcome("handler", clauses=("H1", "H2", "H3", "E1"))

    def run_round() -> str:
        round_seed = seeds.getrandbits(32)
        result = check_handler(factory, max_examples=10, seed=round_seed, name=name)
        outcome.examples += result.examples
        if not result.ok:
            outcome.handler_failure = f"(round seed {round_seed})\n" + result.format()
        return f"fuzz handler: round {outcome.rounds} (seed {round_seed}): {outcome.examples} examples"

    return _fuzz_until(outcome, seconds, progress, run_round)


def _database(path: str) -> ExampleDatabase:
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise click.UsageError(f"--database {path}: {error}") from None
    return DirectoryBasedExampleDatabase(path)


@click.command(name="fuzz", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("kind", type=click.Choice(KINDS))
@click.option("--target", default="impl", show_default=True, help="impl, reference, or MODULE:FACTORY.")
@click.option("--policy", type=click.Choice([*POLICIES, "any"]), default=None,
              help="Pin the policy mode (default: impl/reference cycle lru, arc, s3fifo and sieve exactly; others any).")
@click.option("--strict", is_flag=True, help="Strict mode only (default for impl managers: alternate).")
@click.option("--minutes", type=click.FloatRange(min=0, min_open=True), default=5.0, show_default=True,
              help="Time budget.")
@click.option("--database", default=DEFAULT_DATABASE, show_default=True,
              help="Example database directory (failures are replayed first next time).")
@click.option("--seed", type=int, default=None,
              help="Seed the rounds (default: random). Hypothesis neither reads nor writes the database when seeded.")
@INTERFACE_OPTION
@click.option("--quiet", is_flag=True, help="No progress line.")
def fuzz(kind: str, target: str, policy: str | None, strict: bool, minutes: float, database: str,
         seed: int | None, interface: str, quiet: bool) -> None:
    """Fuzz a component in lockstep with the reference model for a time budget.

    Exit 0: nothing found; 1: a violation, with its shrunk reproduction (make it a
    regression test in tests/); 2: bad arguments or an unbuildable factory.
    """
    seconds = minutes * 60.0
    progress = None if quiet else sys.stderr
    if interface != "auto" and kind in ("backend", "handler"):
        raise click.UsageError(f"--interface applies to manager and policy, not to {kind}")
    try:
        if kind == "handler":
            if policy is not None or strict:
                raise click.UsageError("--policy and --strict do not apply to handler")
            if target == "reference":
                raise click.UsageError("there is no reference copy handler; use --target impl or MODULE:FACTORY")
            name = builtin_source("handler", target)
            outcome = fuzz_handler(load_factory(name), seconds=seconds, seed=seed, name=name, progress=progress)
        else:
            if kind == "backend" and policy not in (None, "any"):
                raise click.UsageError("--policy does not apply to backend")
            rounds = plan_rounds(kind, target, policy, strict)
            outcome = fuzz_machines(kind, rounds, seconds=seconds, database=_database(database), seed=seed,
                                    progress=progress, interface=interface)
    except TargetSetupError as error:
        click.echo(f"Error: the factory could not build a {kind}: {error}", err=True)
        raise SystemExit(2) from None
    finding = outcome.result.report() if outcome.result is not None else outcome.handler_failure
    if finding:
        click.echo(finding)
        click.echo("Make this a regression test: paste the reproduction into a test under tests/.")
    click.echo(outcome.summary())
    raise SystemExit(0 if outcome.ok else 1)
