"""``kvoffload check-exhaustive``: an explicit-state model checker (issues 8, 15).

Breadth-first search over every reachable joint state of the reference model and a target
(``model_checker``; hashes symmetry-reduced: ``symmetry``, where ``--distinguished 1``
keeps the shared 16-byte head apart and the default 0 lets the ARC capacity-3 space
complete), for every capacity ``1..C`` and each policy, judging every call out of every
state the way the lockstep suite does. Without ``--depth`` the search runs until no new
state appears: every reachable state of that scope is proved to conform; ``--depth N``
stops after N calls. A violation is reported as the shortest call sequence reaching it,
as a runnable snippet naming the clause.

Manager calls: ``manager_world``; CachePolicy calls alone (``--policies-only``):
``policy_world``. The hash alphabet defaults to the smallest size at which the
reduced state space stops growing (free hashes for every hash a state can hold, plus the
fresh ones a call can use): ``distinguished + residents + ghosts + longest call``, and for a
vLLM-interface manager the keys an open request may remember after their eviction
(``--request-calls`` offers of ``--store-max`` keys, K5).

Exit status: 0 every explored state conforms (summary printed), 1 a violation (clause and
the failing call sequence as a Python snippet), 2 bad arguments.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import attrs
import click

from .manager_world import ManagerWorld, manager_alphabet_text
from .policy_world import PolicyWorld, policy_alphabet_text
from ..cli import INTERFACE_OPTION
from ..loading import FactoryLoadError, builtin_source, call_source, load_factory
from ..lockstep.machine_base import TargetSetupError
from ..runner import target_modes
from .model_checker import Exploration, LockstepWorld, explore
from .policy_state import ghost_capacity
from ...spec import POLICIES
from .symmetry import DISTINGUISHED, hash_alphabet
from .vllm_world import REQUEST_CALLS, VllmManagerWorld, VllmPolicyWorld, vllm_calls_text

#: ``--distinguished``'s default: 0, every hash interchangeable, so that the literal ARC capacity-3
#: command completes (with the prefix hash the space outgrows minutes: README, "Model checking").
DEFAULT_DISTINGUISHED = 0
#: The exact policies the checker explores (``--policy``), and the groups it accepts.
POLICY_NAMES = tuple(POLICIES)
POLICY_GROUPS = {"both": ("lru", "arc"), "all": POLICY_NAMES}
#: The world of each (kind, interface): the contract's calls, or vLLM's through its adapter (K2).
WORLDS: dict[tuple[str, str], Callable[..., LockstepWorld[Any]]] = {
    ("manager", "contract"): ManagerWorld, ("manager", "vllm"): VllmManagerWorld,
    ("policy", "contract"): PolicyWorld, ("policy", "vllm"): VllmPolicyWorld,
}

__all__ = ["check_exhaustive", "ExhaustiveRun", "run_exhaustive", "resolve_target", "saturating_alphabet"]


@attrs.define
class ExhaustiveRun:
    """One search: a target, a policy, a capacity."""

    target: str
    kind: str  # "manager" or "policy"
    policy: str
    capacity: int
    depth: int | None
    hashes: int
    alphabet_text: str  # the calls and hashes explored
    result: Exploration[Any]

    @property
    def ok(self) -> bool:
        return self.result.ok

    def alphabet(self) -> str:
        return self.alphabet_text

    def summary(self) -> str:
        r = self.result
        scope = "all reachable states" if r.complete else f"to depth {self.depth} (not exhausted)"
        return (
            f"{self.kind} {self.target} policy={self.policy} capacity={self.capacity} hashes={self.hashes}: "
            f"{scope}: {r.states} states, {r.transitions} transitions, diameter {r.diameter}, "
            f"at most {r.max_hashes} hashes in a state, {r.seconds:.1f} s"
        )

    def report(self) -> str:
        r, failure = self.result, self.result.failure
        if failure is None:
            return self.summary()
        return (
            f"{self.target} (policy={self.policy}, capacity={self.capacity}) VIOLATES {', '.join(failure.clauses)} "
            f"after {len(r.failing_path)} calls\n{failure.message}\n\n"
            f"Reproduction (a shortest failing call sequence; paste and run it):\n\n{failure.reproduction}\n"
            f"(found after {r.states} states, {r.transitions} transitions, {r.seconds:.1f} s)"
        )


def saturating_alphabet(kind: str, policy: str, capacity: int, longest: int, distinguished: int = DISTINGUISHED) -> int:
    """The alphabet size past which the symmetry-reduced space cannot grow: room for every
    hash a state can hold (residents and ghosts: ``policy_state.ghost_capacity``) as free
    hashes, plus ``longest`` fresh ones for one call."""
    return distinguished + capacity + ghost_capacity(policy, capacity) + longest


def resolve_target(target: str, kind: str, policy: str) -> tuple[Callable[..., Any], str, list[str]]:
    """(factory called with the suite's keywords, its source form, imports). ``impl``'s manager:
    its core compiled first (the search times the compiled code, not its plain-Python twin)."""
    if target == "impl" and kind == "manager":
        from ...impl.core import runtime

        runtime.wait()
    module, _, name = builtin_source(kind, target, policy).partition(":")
    return load_factory(f"{module}:{name}"), name, [f"from {module} import {name.split('.')[0]}"]


def run_exhaustive(
    factory: Callable[..., Any],
    *,
    kind: str = "manager",
    policy: str = "lru",
    capacity: int = 1,
    depth: int | None = None,
    hashes: int | None = None,
    touch_max: int = 2,
    store_max: int = 2,
    max_pins: int = 1,
    distinguished: int = DISTINGUISHED,
    source: str = "make",
    imports: list[str] | None = None,
    progress: Callable[[str], None] | None = None,
    snapshots: bool = True,
    idle: bool = False,
    interface: str = "contract",
    request_calls: int = REQUEST_CALLS,
    admission: tuple[int, int] | None = None,
) -> ExhaustiveRun:
    """Explore the reachable states of one capacity and policy (to ``depth`` if given);
    ``interface="vllm"``: a target written against vLLM's interfaces (``vllm_world``; a
    manager's requests spanning calls make up to ``request_calls`` offers and loads, K5;
    ``admission``: ``(store_threshold, max_tracker_size)`` passed to its factory, N2)."""
    vllm_manager = (kind, interface) == ("manager", "vllm")
    if admission is not None and not vllm_manager:
        raise ValueError("N2: admission (--store-threshold) applies to managers written against vLLM's interface")
    if hashes is None:
        hashes = saturating_alphabet(kind, policy, capacity, max(touch_max, store_max, 1), distinguished)
        hashes += request_calls * store_max if vllm_manager else 0  # the keys an open request remembers (K5)
        hashes += admission[1] if admission else 0  # the keys N2's tracker remembers
    alphabet = hash_alphabet(hashes, min(distinguished, hashes))
    # the factory's keywords (``arguments``), and the world's own (``options``, besides ``LockstepWorld``'s)
    if kind == "manager":
        admits = {} if admission is None else {"store_threshold": admission[0], "max_tracker_size": admission[1]}
        arguments: dict[str, Any] = {"num_blocks": capacity, "enable_events": True, **admits}
        options: dict[str, Any] = {"store_max": store_max, "max_pins": max_pins}
        options.update({"request_calls": request_calls, "admission": admission} if vllm_manager else {})
        text = manager_alphabet_text(hashes, touch_max, store_max, max_pins, distinguished)
        text += vllm_calls_text(request_calls, admission) if vllm_manager else ""
    elif kind == "policy":
        arguments, options = {"cache_capacity": capacity}, {"idle": idle}
        text = policy_alphabet_text(hashes, touch_max, capacity, idle, distinguished)
    else:
        raise ValueError(f"kind={kind!r} is not 'manager' or 'policy'")
    make = functools.partial(WORLDS[kind, interface], functools.partial(factory, **arguments), capacity, policy,
                             alphabet, touch_max, call_source(source, arguments), imports,
                             distinguished=distinguished, **options)
    result: Exploration[Any] = explore(make, depth, progress=progress, label=f"{policy} c={capacity} ",
                                       snapshots=snapshots)
    return ExhaustiveRun(source, kind, policy, capacity, depth, hashes, text, result)


@click.command("check-exhaustive", context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.option("--depth", type=click.IntRange(1, 64), default=None,
              help="Stop after this many calls (default: every reachable state).")
@click.option("--capacity", type=click.IntRange(1, 4), required=True,
              help="Largest capacity C; every capacity 1..C is explored.")
@click.option("--policy", type=click.Choice([*POLICY_NAMES, *POLICY_GROUPS]), default="both",
              help="An exact policy, both (lru, arc) or all four.")
@click.option("--target", default="impl",
              help="impl (production), reference (the model against itself) or MODULE:FACTORY.")
@click.option("--policies-only", is_flag=True, help="Explore CachePolicy calls alone (P1-P6, L1-L3, A1-A6).")
@click.option("--hashes", type=click.IntRange(1, 24), default=None,
              help="Size of the hash alphabet (default: the size at which the state space stops growing).")
@click.option("--touch-max", type=click.IntRange(1, 4), default=2, help="Longest touch call.")
@click.option("--store-max", type=click.IntRange(1, 4), default=2, help="Longest prepare_store call.")
@click.option("--max-pins", type=click.IntRange(1, 3), default=1, help="Most loads in flight on one block.")
@click.option("--distinguished", type=click.IntRange(0, DISTINGUISHED), default=DEFAULT_DISTINGUISHED,
              help="1: keep h0, the 16-byte head every other hash starts with (a prefix: I8), apart; "
                   "0: every hash interchangeable (they still share their first 16 bytes), a smaller space.")
@click.option("--idle-only", is_flag=True,
              help="With --policies-only: every block idle (ref_cnt 0), nothing protected (a smaller space).")
@INTERFACE_OPTION
@click.option("--request-calls", type=click.IntRange(0, 3), default=REQUEST_CALLS,
              help="vLLM-interface managers: the most prepare_store/prepare_load calls of a request spanning calls "
                   "(K5); 0: every call a request of its own (a smaller space).")
@click.option("--store-threshold", type=click.IntRange(min=1), default=1,
              help="2 or more: pass store_threshold and --max-tracker-size to a vLLM-interface manager's factory and "
                   "explore its admission (N2); 1 with --max-tracker-size: both passed, admission off.")
@click.option("--max-tracker-size", type=click.IntRange(1, 4), default=None,
              help="N2's offer tracker (its keys are part of the state, so it is small)  [default with "
                   "--store-threshold 2 or more: 2]")
@click.option("--replay", is_flag=True, help="Rebuild states by replaying their path instead of copying the target.")
@click.option("--quiet", is_flag=True, help="No progress lines.")
def check_exhaustive(depth: int | None, capacity: int, policy: str, target: str, policies_only: bool, idle_only: bool,
                     interface: str, store_threshold: int, max_tracker_size: int | None, replay: bool, quiet: bool,
                     **search: Any) -> None:
    """Prove every reachable state conforms (or every state within --depth calls).

    Exit status 0: all conform; 1: a violation (clause and shortest call sequence
    printed); 2: bad arguments.
    """
    # ``search``: --hashes, --touch-max, --store-max, --max-pins, --distinguished and --request-calls, as
    # ``run_exhaustive`` takes them
    kind = "policy" if policies_only else "manager"
    if idle_only and not policies_only:
        raise click.UsageError("--idle-only needs --policies-only (a manager's blocks are pending while stored)")
    if target not in ("impl", "reference") and ":" not in target:
        raise click.UsageError(f"--target {target!r} is not impl, reference or MODULE:FACTORY")
    if target not in ("impl", "reference") and policy in POLICY_GROUPS:
        raise click.UsageError(f"with --target MODULE:FACTORY name the policy to compare with: "
                               f"--policy {'|'.join(POLICY_NAMES)}")
    started = time.perf_counter()
    progress = None if quiet else functools.partial(click.echo, err=True)
    runs: list[ExhaustiveRun] = []
    # N2's (store_threshold, max_tracker_size) for the factory, or None (neither passed)
    admission = None if store_threshold < 2 and max_tracker_size is None else (store_threshold, max_tracker_size or 2)
    for name in POLICY_GROUPS.get(policy, (policy,)):
        try:
            factory, source, imports = resolve_target(target, kind, name)
            speaks = target_modes(kind, factory, target, name, interface)[0]
        except (FactoryLoadError, TargetSetupError) as error:
            raise click.UsageError(str(error)) from None
        if admission is not None and (kind, speaks) != ("manager", "vllm"):
            raise click.UsageError("--store-threshold (N2) applies to managers written against vLLM's interface")
        for cap in range(1, capacity + 1):
            try:
                run = run_exhaustive(factory, kind=kind, policy=name, capacity=cap, depth=depth, source=source,
                                     imports=imports, progress=progress, snapshots=not replay, idle=idle_only,
                                     interface=speaks, admission=admission, **search)
            except TypeError as error:  # the factory does not take the suite's keywords
                click.echo(f"Error: the factory could not build a {kind}: {error}", err=True)
                raise SystemExit(2) from None
            runs.append(run)
            click.echo(run.report())  # the summary, or the violation and its reproduction
            if not run.ok:
                raise SystemExit(1)
    scope = "every reachable state" if all(r.result.complete for r in runs) else f"every state within {depth} calls"
    click.echo(f"alphabet: {runs[-1].alphabet()}")
    click.echo(
        f"{target} conforms ({'policies' if policies_only else 'managers'}, interface={speaks}, policy={policy}, "
        f"capacities 1..{capacity}, {scope}): "
        f"{sum(r.result.states for r in runs)} states, {sum(r.result.transitions for r in runs)} transitions, "
        f"diameter {max(r.result.diameter for r in runs)}, {time.perf_counter() - started:.1f} s"
    )
    raise SystemExit(0)

