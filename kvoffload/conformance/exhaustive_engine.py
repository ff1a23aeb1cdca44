"""The enumeration engine of ``check-exhaustive``: iterative-deepening DFS over call trees.

A *world* holds a model and a target in lockstep. ``apply(op)`` makes one call on both
sides and checks everything (raising ``ConformanceFailure``); ``enabled()`` lists the
protocol-keeping calls of the current state, computed from the MODEL only (C1–C5 are
properties of the caller, who knows what it asked for); ``key()`` is the canonical key of
the model's full state.

Soundness of the pruning. Nothing is merged for a target: the engine walks the full tree
of call sequences. A target's state is rebuilt for a sibling by constructing it afresh
and replaying the exact call history of the prefix (every call, the observation lookups
included), so the target sees precisely the sequence that is reported; the target is
assumed to be deterministic, and the replayed answers are checked again on the way.
Equal model states are only counted (``states``), never used to skip a subtree.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, Protocol, TypeVar

import attrs

from .report import ConformanceFailure

__all__ = ["World", "EnumerationResult", "enumerate_tree", "count_tree"]

Op = TypeVar("Op", bound=Hashable)


class World(Protocol[Op]):  # pragma: no cover - a protocol
    def enabled(self) -> list[Op]: ...
    def apply(self, op: Op) -> None: ...
    def key(self) -> Hashable: ...


@attrs.define
class EnumerationResult(Generic[Op]):
    """What one enumeration covered (the last depth it completed) or where it failed."""

    depth: int = 0  # the deepest bound completed without a failure
    sequences: int = 0  # call sequences of length 1..depth checked (tree nodes)
    maximal: int = 0  # sequences of length exactly ``depth`` (leaves)
    states: int = 0  # distinct model states reached (the initial state included)
    calls: int = 0  # calls made to the target, replays included
    seconds: float = 0.0
    failure: ConformanceFailure | None = None
    failing_path: list[Op] = attrs.field(factory=list)

    @property
    def ok(self) -> bool:
        return self.failure is None


class _Stats:
    def __init__(self) -> None:
        self.nodes = 0
        self.leaves = 0
        self.steps = 0
        self.states: set[Hashable] = set()


def enumerate_tree(
    make_world: Callable[[], World[Op]],
    depth: int,
    *,
    progress: Callable[[str], None] | None = None,
    label: str = "",
    iterative: bool = True,
) -> EnumerationResult[Op]:
    """Check every call sequence of length ``1..depth`` (iterative deepening).

    With ``iterative`` the bounds 1, 2, …, ``depth`` run in turn, so a failure is the
    shortest failing sequence (first in enumeration order among those). The counts are
    those of the last bound run.
    """
    result: EnumerationResult[Op] = EnumerationResult()
    started = time.perf_counter()
    last_report = [started]
    bounds = range(1, depth + 1) if iterative else range(depth, depth + 1)
    for bound in bounds:
        stats = _Stats()

        def tick(stats: _Stats = stats, bound: int = bound) -> None:
            now = time.perf_counter()
            if progress is not None and now - last_report[0] >= 2.0:
                last_report[0] = now
                elapsed = now - started
                progress(
                    f"  {label}depth {bound}: {stats.nodes} sequences, {len(stats.states)} states, "
                    f"{elapsed:.0f} s ({stats.nodes / max(elapsed, 1e-9):.0f} sequences/s)"
                )

        def rebuild(path: Sequence[Op]) -> World[Op]:
            world = make_world()
            for op in path:
                world.apply(op)
                stats.steps += 1
            return world

        def dfs(world: World[Op], path: list[Op], left: int) -> None:
            ops = world.enabled()
            for index, op in enumerate(ops):
                if index:
                    world = rebuild(path)
                path.append(op)
                try:
                    world.apply(op)
                except ConformanceFailure:
                    raise
                stats.steps += 1
                stats.nodes += 1
                stats.states.add(world.key())
                if left > 1:
                    dfs(world, path, left - 1)
                else:
                    stats.leaves += 1
                path.pop()
                if stats.nodes % 512 == 0:
                    tick()

        root = make_world()
        stats.states.add(root.key())
        path: list[Op] = []
        try:
            dfs(root, path, bound)
        except ConformanceFailure as failure:
            result.failure = failure
            result.failing_path = list(path)
            result.sequences, result.maximal, result.states = stats.nodes, stats.leaves, len(stats.states)
            result.calls += stats.steps
            result.seconds = time.perf_counter() - started
            return result
        result.depth = bound
        result.sequences, result.maximal, result.states = stats.nodes, stats.leaves, len(stats.states)
        result.calls += stats.steps
    result.seconds = time.perf_counter() - started
    return result


def count_tree(make_world: Callable[[], World[Op]], depth: int) -> tuple[int, int]:
    """(sequences of length 1..depth, distinct model states) of the model alone, no checks.

    ``make_world`` should build a model-only world; used by the tests to compare the
    enumeration with a hand computation.
    """
    world = make_world()
    seen: set[Hashable] = {world.key()}
    count = 0
    stack: list[tuple[list[Op], int]] = [([], depth)]
    while stack:
        path, left = stack.pop()
        world = make_world()
        for op in path:
            world.apply(op)
        for op in world.enabled():
            count += 1
            child = make_world()
            for step in (*path, op):
                child.apply(step)
            seen.add(child.key())
            if left > 1:
                stack.append(([*path, op], left - 1))
    return count, len(seen)


def stderr_progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
