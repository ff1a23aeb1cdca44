"""``kvoffload check-exhaustive``: bounded exhaustive lockstep checking (issue 8).

Enumerates EVERY protocol-keeping call sequence (C1–C5) of length ``1..N`` over a tiny
hash alphabet, for every capacity ``1..C`` and each policy, and checks on each step what
the lockstep conformance suite checks (answers, ``None`` vs not, evictions in order,
events with ``removed``, exceptions, lookups of every alphabet hash, the model's
``check_invariants()``, I4 on the target's block ids). The hash alphabet: h0 (32 bytes),
h1 (shares h0's first 8 bytes: a 64-bit fingerprint collision), h2 (h0's first 16 bytes:
a prefix of h0, I8), and with ``--hashes 4`` an unrelated h3.

Manager call alphabet per step (``exhaustive_manager``): touch(1..T distinct hashes,
ordered), prepare_store(1..min(C+1, |H|) distinct hashes, ordered, one-shot argument),
complete_store(non-empty subset of pending hashes, success True|False, one-shot),
prepare_load(non-empty subset of ready hashes), complete_load(a load in flight),
take_events(). Observed after every step: lookup([h]) for h in H, lookup(H),
lookup(reversed(H)). Events are on.

Policy call alphabet (``--policies-only``, ``exhaustive_policy``): insert(absent h,
ref_cnt −1|0|1), set a present block's ref_cnt, touch(1..T ordered), remove(present h),
evict(0, ∅) and evict(n ∈ 1..C+1, ∅ or {h}). Observed: get(h) for h in H, P6.

No pruning for a target: the full tree of sequences is walked; a sibling's target state
is rebuilt by constructing the target afresh and replaying the exact call history (see
``exhaustive_engine``). Distinct model states (canonical key of the model's full state:
blocks and ref counts, policy lists/order, p, free count, loads in flight, queued events)
are counted, never merged.

Exit status: 0 every sequence conforms (summary printed), 1 a violation (clause and the
failing call sequence as a Python snippet), 2 bad arguments.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import attrs
import click

from .exhaustive_engine import EnumerationResult, World, enumerate_tree, stderr_progress
from .exhaustive_manager import ManagerWorld, hash_alphabet, manager_alphabet_text
from .exhaustive_policy import PolicyWorld, policy_alphabet_text
from .loading import FactoryLoadError, load_factory

__all__ = ["check_exhaustive", "ExhaustiveRun", "run_exhaustive", "resolve_target"]


@attrs.define
class ExhaustiveRun:
    """One enumeration: a target, a policy, a capacity."""

    target: str
    kind: str  # "manager" or "policy"
    policy: str
    capacity: int
    depth: int
    hashes: int
    touch_max: int
    result: EnumerationResult[Any]

    @property
    def ok(self) -> bool:
        return self.result.ok

    def alphabet(self) -> str:
        text = manager_alphabet_text if self.kind == "manager" else policy_alphabet_text
        return text(self.hashes, self.touch_max, self.capacity)

    def summary(self) -> str:
        r = self.result
        rate = r.sequences / r.seconds if r.seconds > 0 else 0.0
        return (
            f"{self.kind} {self.target} policy={self.policy} capacity={self.capacity}: depth {r.depth}/{self.depth} "
            f"complete, {r.sequences} sequences ({r.maximal} of length {r.depth}), {r.states} distinct model states, "
            f"{r.calls} steps incl. replays, {r.seconds:.1f} s ({rate:.0f} sequences/s)"
        )

    def report(self) -> str:
        r = self.result
        if r.ok:
            return self.summary()
        failure = r.failure
        assert failure is not None
        return (
            f"{self.target} (policy={self.policy}, capacity={self.capacity}) VIOLATES {', '.join(failure.clauses)} "
            f"at depth {len(r.failing_path)}\n{failure.message}\n\n"
            f"Reproduction (the shortest failing call sequence; paste and run it):\n\n{failure.reproduction}\n"
            f"(after {r.sequences} sequences at depth {len(r.failing_path)}, {r.seconds:.1f} s)"
        )


def resolve_target(target: str, kind: str, policy: str) -> tuple[Callable[..., Any], str, list[str]]:
    """(factory called with the suite's keywords, its source form, imports)."""
    if target == "impl":
        module = "kvoffload.impl.factories"
        name = f"{policy}_{'manager' if kind == 'manager' else 'policy'}"
    elif target == "reference":
        module = "kvoffload.conformance.factories"
        name = f"reference_{policy}_{'manager' if kind == 'manager' else 'policy'}"
    else:
        module, _, name = target.partition(":")
    factory = load_factory(f"{module}:{name}")
    return factory, f"{name}", [f"from {module} import {name.split('.')[0]}",
                                "from kvoffload.spec import BlockStatus"]


def run_exhaustive(
    factory: Callable[..., Any],
    *,
    kind: str = "manager",
    policy: str = "lru",
    capacity: int = 1,
    depth: int = 3,
    hashes: int = 3,
    touch_max: int = 2,
    source: str = "make",
    imports: list[str] | None = None,
    progress: Callable[[str], None] | None = None,
    iterative: bool = True,
) -> ExhaustiveRun:
    """Enumerate every sequence of length 1..depth for one capacity and policy."""
    alphabet = hash_alphabet(hashes)
    make: Callable[[], Any]
    if kind == "manager":
        construct = f"{source}(num_blocks={capacity}, enable_events=True)"
        build = functools.partial(factory, num_blocks=capacity, enable_events=True)
        make = functools.partial(ManagerWorld, build, capacity, policy, alphabet, touch_max, construct, imports)
    elif kind == "policy":
        construct = f"{source}(cache_capacity={capacity})"
        build = functools.partial(factory, cache_capacity=capacity)
        make = functools.partial(PolicyWorld, build, capacity, policy, alphabet, touch_max, construct, imports)
    else:
        raise ValueError(f"kind={kind!r} is not 'manager' or 'policy'")
    world_maker: Callable[[], World[Any]] = make
    result: EnumerationResult[Any] = enumerate_tree(
        world_maker, depth, progress=progress, label=f"{policy} c={capacity} ", iterative=iterative
    )
    return ExhaustiveRun(source, kind, policy, capacity, depth, hashes, touch_max, result)


@click.command("check-exhaustive", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--depth", type=click.IntRange(1, 12), required=True, help="Longest call sequence (N).")
@click.option("--capacity", type=click.IntRange(1, 3), required=True,
              help="Largest capacity C; every capacity 1..C is enumerated.")
@click.option("--policy", type=click.Choice(["lru", "arc", "both"]), default="both", show_default=True)
@click.option("--target", default="impl", show_default=True,
              help="impl (production), reference (the model against itself) or MODULE:FACTORY.")
@click.option("--policies-only", is_flag=True, help="Enumerate CachePolicy calls alone (P1-P6, L1-L3, A1-A6).")
@click.option("--hashes", type=click.IntRange(1, 4), default=3, show_default=True, help="Size of the hash alphabet.")
@click.option("--touch-max", type=click.IntRange(1, 4), default=2, show_default=True,
              help="Longest touch sequence.")
@click.option("--quiet", is_flag=True, help="No progress lines.")
def check_exhaustive(depth: int, capacity: int, policy: str, target: str, policies_only: bool,
                     hashes: int, touch_max: int, quiet: bool) -> None:
    """Check EVERY protocol-keeping call sequence up to --depth, lockstep with the model.

    Exit status 0: all conform; 1: a violation (clause and call sequence printed);
    2: bad arguments.
    """
    kind = "policy" if policies_only else "manager"
    policies = ["lru", "arc"] if policy == "both" else [policy]
    if target not in ("impl", "reference") and ":" not in target:
        raise click.UsageError(f"--target {target!r} is not impl, reference or MODULE:FACTORY")
    if target not in ("impl", "reference") and policy == "both":
        raise click.UsageError("with --target MODULE:FACTORY name the policy to compare with: --policy lru|arc")
    started = time.perf_counter()
    progress = None if quiet else stderr_progress
    runs: list[ExhaustiveRun] = []
    for name in policies:
        try:
            factory, source, imports = resolve_target(target, kind, name)
        except FactoryLoadError as error:
            raise click.UsageError(str(error)) from None
        for cap in range(1, capacity + 1):
            try:
                run = run_exhaustive(factory, kind=kind, policy=name, capacity=cap, depth=depth, hashes=hashes,
                                     touch_max=touch_max, source=source, imports=imports, progress=progress)
            except TypeError as error:  # the factory does not take the suite's keywords
                click.echo(f"Error: the factory could not build a {kind}: {error}", err=True)
                raise SystemExit(2) from None
            runs.append(run)
            if not run.ok:
                click.echo(run.report())
                raise SystemExit(1)
            if not quiet:
                click.echo(run.summary())
    total = time.perf_counter() - started
    sequences = sum(r.result.sequences for r in runs)
    states = sum(r.result.states for r in runs)
    click.echo(f"alphabet: {runs[-1].alphabet()}")
    click.echo(
        f"{target} conforms ({kind}s, policy={policy}, capacities 1..{capacity}, depth {depth}): "
        f"{sequences} sequences, {states} distinct model states, {total:.1f} s "
        f"({sequences / max(total, 1e-9):.0f} sequences/s)"
    )
    raise SystemExit(0)


if __name__ == "__main__":  # python -m kvoffload.conformance.exhaustive (before the CLI registers it)
    check_exhaustive()
