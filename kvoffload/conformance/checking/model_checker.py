"""The engine of ``check-exhaustive``: an explicit-state model checker (issue 15).

A *world* (``LockstepWorld``) holds the reference model and a target in lockstep. ``enabled()`` lists the
protocol-keeping calls of its state (computed from the MODEL: C1–C5 are properties of
the caller), ``apply(op)`` makes one call on both sides and judges it (raising
``ConformanceFailure``), ``probe()`` makes the target's hidden order observable and
judges it (the world's ``probe_ops``; it spends the world: the engine probes a state it drops, or a copy of one it
keeps), ``fingerprint()`` is the canonical key of the joint state (the world's ``state_key``: the
model's whole state plus the target's observable state, with interchangeable hashes
renamed: symmetry reduction), ``fork()`` is an independent copy (or ``None`` when the
target cannot be copied: then the engine rebuilds the state by replaying its path from a
fresh world), and ``render(index, name)`` writes a call of a failing path as source (its
runnable reproduction).

Breadth-first search over distinct fingerprints, as TLC or Stateright do: every
transition out of every reachable state (up to ``depth`` when given) is judged, each new
state is kept once, and a violation is reported as the SHORTEST call sequence reaching
it, read off the parent pointers and replayed on a fresh model and target (so the
reproduction is checked once more without copies). Soundness rests on two assumptions,
both stated in docs/model-checking.md: the target is deterministic in the calls it received, and
its behaviour depends on a hash only through equality and the relations the alphabet
models (every free hash shares one 16-byte head; the distinguished hash is that head, a
prefix of each), so renaming the free hashes maps behaviours onto behaviours. A level's
states are expanded by forked workers, one per core (``_expand_level``); the first failure
and the first finder of each state, in search order, are those of a search in one process.
"""

from __future__ import annotations

import abc
import multiprocessing
import os
import time
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

import attrs

from ..judge import Verdict
from ..reports.result import CallLog, ConformanceFailure
from .policy_state import shallow
from .symmetry import DISTINGUISHED, Relabel

__all__ = ["LockstepWorld", "Exploration", "explore"]

Op = TypeVar("Op", bound=Hashable)


class LockstepWorld(abc.ABC, Generic[Op]):
    """What every world shares (the module docstring says what a world does): the hash
    alphabet ``pool`` (``pool[:fixed]`` distinguished: ``symmetry``), the calls so far, and
    a failure carrying them as a snippet, hashes named as in its message."""

    var = "x"  # the target's name in the reproduction
    model: Any
    exact = False  # True: the fingerprint holds the target's whole state (see ``settle``)
    last: tuple[Any, ...] = ()  # the call that led to this state (names the clause of ``observe``)
    labels: Relabel | None = None  # the renaming of the last ``fingerprint``

    needs: tuple[str, ...] = ()  # the imports every reproduction of this world makes

    def __init__(self, build: Callable[[], Any], capacity: int, policy: str, hashes: list[bytes], touch_max: int = 2,
                 construct: str = "make()", imports: list[str] | None = None,
                 distinguished: int = DISTINGUISHED) -> None:
        self.capacity = capacity
        self.policy = policy
        self.pool = hashes
        self.touch_max = touch_max
        self.fixed = distinguished  # pool[:fixed] keep their names (h0, the shared head: I8)
        self.construct = construct
        self.imports = [*self.needs, *(imports or [])]
        self.target: Any = build()
        self.history: list[Op] = []
        self.copyable = True  # fork() still copies (False once a copy failed: states are rebuilt by replay)
        self.observing = True  # False once probing: the probe judges victims and events, its states are spent
        self._log: CallLog | None = None  # the reproduction's names, built on the way to a failure

    # what each world supplies: its calls, its key and copy, what it observes, a call's source form
    @abc.abstractmethod
    def enabled(self) -> list[Op]: ...
    @abc.abstractmethod
    def apply(self, op: Op) -> None: ...
    @abc.abstractmethod
    def probe_ops(self) -> list[Op]:
        """``probe``'s calls, from this state."""
    @abc.abstractmethod
    def state_key(self, name: Relabel) -> Hashable:
        """``fingerprint``'s key, hashes renamed by ``name``."""
    @abc.abstractmethod
    def copy_parts(self) -> None:
        """Replace what this shallow copy shares with its original by copies (``fork``)."""
    @abc.abstractmethod
    def in_state(self) -> set[bytes]: ...
    @abc.abstractmethod
    def observe(self, *last: Any) -> None: ...
    @abc.abstractmethod
    def render(self, index: int, name: Callable[[object], str]) -> str:
        """The source form of ``history[index]``, hashes named by ``name``."""

    def fork(self) -> LockstepWorld[Op] | None:
        """An independent copy, or ``None`` if the target cannot be copied (never again after
        that: the engine rebuilds states by replay)."""
        if not self.copyable:
            return None
        new = shallow(self)
        new.history, new._log = list(self.history), None
        try:
            new.copy_parts()
        except Exception:  # a target that cannot be copied is rebuilt by replay instead
            self.copyable = False
            return None
        return new

    def memento(self, copy: Callable[[LockstepWorld[Op]], LockstepWorld[Op]]) -> Any:
        """What ``restore`` brings this world back to: by default a copy of it (``copy``: a
        ``fork``, or a replay of its path), kept untouched; a world that can undo calls in
        place keeps less."""
        return copy, copy(self)

    def unchanged(self, memento: Any) -> bool:
        """Whether the calls since ``memento(...)`` left this world's state exactly as it was, told
        without keying it (``_expand`` then forgets the call). ``False``: it cannot tell cheaply."""
        return False

    def restore(self, memento: Any) -> None:
        """Undo every call made since ``memento(...)`` was taken (``_expand``): by default
        this world becomes a copy of the one kept."""
        copy, kept = memento
        twin = copy(kept)
        vars(self).clear()
        vars(self).update(vars(twin))

    def forgotten(self) -> tuple[bytes, ...]:
        """The alphabet's hashes the model does not hold: touching them is a no-op for the
        model, and changes the order of a target still remembering one (``probe``)."""
        in_state = self.in_state()
        return tuple(h for h in self.pool if h not in in_state)

    def fingerprint(self) -> Hashable:
        """The canonical key of the joint state (``state_key``) under a fresh renaming (``symmetry.Relabel``),
        kept as ``labels``: two states with one key are one state up to renaming, and the same state when
        their ``labels`` agree too."""
        self.labels = Relabel(self.pool[: self.fixed])
        return self.state_key(self.labels)

    def probe(self) -> None:
        """Make the target's hidden order observable, judged against the model (this world
        is spent: the engine probes a copy, or a state it drops): calls that are no-ops
        or drains for the model (touching hashes it no longer holds shows a target still
        remembering one), then one eviction of every block, so a recency bug that has not
        yet changed a victim is seen now, with those calls in the reproduction (``probe_ops``)."""
        self.observing = False
        for op in self.probe_ops():
            self.apply(op)

    def forget_last(self) -> None:
        """Drop the last call from the path: it left the state as it was (``_expand``)."""
        self.history.pop()
        self._log = None

    def _names(self) -> CallLog:
        """The reproduction's log (alphabet, then the calls): a message naming hashes
        with it agrees with the snippet. Extended by the calls since it was last asked for."""
        log = self._log = self._log or CallLog.naming(self.var, self.pool, self.imports)
        for index in range(len(log.lines), len(self.history)):
            log.add(self.render(index, log.name))
        return log

    def _name(self, h: object) -> str:
        return self._names().name(h)

    def reproduction(self, check: str = "") -> str:
        return self._names().render(self.construct, f"# the failing check:\nassert {check}" if check else "")

    def settle(self) -> None:
        """A new state: the model's invariants (a function of its state: once per state)
        and, when ``exact``, the pure queries ``apply`` left to it (they cannot differ
        between two arrivals at one fingerprint), checked to leave the key unchanged."""
        self.model.check_invariants()
        if self.exact:
            before = self.fingerprint()
            self.observe(*self.last)
            if self.fingerprint() != before:
                clause, query = ("M1", "lookup") if hasattr(self.target, "lookup") else ("P1", "get")
                self.judged(Verdict((clause,), f"the {query}s of every hash after the last call changed the "
                                    f"target's state ({query} is pure)"))

    def judged(self, verdict: Verdict | None) -> None:
        if verdict is not None:
            raise ConformanceFailure(verdict.clauses, verdict.message, self.reproduction(verdict.check))


@attrs.define
class Exploration(Generic[Op]):
    """What one search covered, or the shortest failing path it found."""

    states: int = 0  # distinct joint states (fingerprints), the initial one included
    transitions: int = 0  # calls judged (state, enabled call) pairs
    diameter: int = 0  # the deepest BFS level holding a new state
    complete: bool = False  # True: no new state left (every reachable state visited)
    max_hashes: int = 0  # most distinct hashes any state held (the alphabet actually used)
    seconds: float = 0.0
    failure: ConformanceFailure | None = None
    failing_path: list[Op] = attrs.field(factory=list)

    @property
    def ok(self) -> bool:
        return self.failure is None


def _path_to(parents: dict[Hashable, tuple[Hashable, Any] | None], key: Hashable) -> list[Any]:
    """The calls from the initial state to ``key``, read off the parent pointers."""
    path: list[Any] = []
    while (link := parents[key]) is not None:
        key, op = link
        path.append(op)
    return path[::-1]


def _rebuild(make_world: Callable[[], LockstepWorld[Op]], path: list[Op]) -> LockstepWorld[Op]:
    world = make_world()
    for op in path:
        world.apply(op)
    return world


def _confirm(make_world: Callable[[], LockstepWorld[Op]], path: list[Op], found: ConformanceFailure) -> ConformanceFailure:
    """The failure as a fresh model and target, replaying ``path``, report it: the
    reproduction then owes nothing to copies. If the replay conforms, the target is not
    deterministic or did not copy faithfully; that is said, with the original failure."""
    try:
        world = _rebuild(make_world, path)
        world.settle()
        world.probe()
    except ConformanceFailure as failure:
        return failure
    return ConformanceFailure(
        found.clauses,
        f"{found.message} [NOTE: replaying this path on a fresh target did not fail again: the target is "
        "not deterministic, or its copy (deepcopy) is not faithful; rerun with --replay]",
        found.reproduction,
    )


#: What ``_expand`` finds in a run of a level's states, in search order: the new states as (frontier index,
#: call, key), the calls judged, and the failure that ended the run: (index, call, its arguments: they pickle).
Run = tuple[list[tuple[int, Any, Hashable]], int, tuple[int, Any, tuple[Any, ...]] | None]
#: Levels with fewer states are expanded in this process (forking workers would cost more than it saves).
PARALLEL_MIN = 32
_LEVEL: tuple[Any, Any, Any] = (None, None, None)  # the level being expanded: forked workers inherit it


def _expand(start: int, stop: int) -> Run:
    """Judge every call out of states ``start:stop`` of the level (``_LEVEL``), in search order (``Run``).
    Each target state's hidden state is probed: when it merges into a known state (unless its key holds it
    all: ``exact``), and when new (the states kept are rebuilt by ``explore``: this copy is spent).
    An ``exact`` world makes each call on itself, with a ``memento`` of its state taken beforehand: a call that
    leaves the state as it was, hash for hash (a refused store, a touch of absent hashes: about half of them), is
    forgotten and costs nothing more (told without a key where the world can: ``unchanged``); one that changes it is
    undone (``restore``: in place where the world can, cheaper than a copy).
    Equal keys alone would not do: they may rename hashes (a touch swapping two pending blocks), and the calls
    listed for the state would then not be its canonical ones."""
    frontier, parents, copy_of = _LEVEL
    found: list[tuple[int, Any, Hashable]] = []
    seen: set[Hashable] = set()
    transitions = 0
    for index in range(start, stop):
        key, world = frontier[index]
        labels = world.labels if world.fingerprint() == key else None  # (always equal: each key is its state's)
        in_place = world.exact  # the calls made on ``world`` itself
        memento = world.memento(lambda w: copy_of(w, key)) if in_place else None  # ``world``'s state, kept
        for op in world.enabled():
            transitions += 1
            child = world if in_place else copy_of(world, key)
            try:
                child.apply(op)
                if child is world and world.unchanged(memento):  # the same state, byte for byte: no key needed
                    world.forget_last()
                    continue
                child_key = child.fingerprint()
                if child is world and child_key == key and world.labels == labels:  # the same state, hash for hash
                    world.forget_last()
                    continue
                new = child_key not in parents and child_key not in seen
                if new:
                    child.settle()
                if new or not child.exact:  # a target's hidden state, once, before it merges
                    child.probe()
            except ConformanceFailure as failure:
                if child is world:  # ``explore`` still copies the states found before it from here
                    world.restore(memento)
                return found, transitions, (index, op, (failure.clauses, failure.message, failure.reproduction))
            if child is world:
                world.restore(memento)  # back to ``key``'s state for the next call (``explore`` copies it too)
            if new:
                seen.add(child_key)
                found.append((index, op, child_key))
    return found, transitions, None


def workers() -> int:
    """The processes a level is expanded in: the cores this process may run on, where workers
    can be forked with that count known (Linux); 1 elsewhere (macOS and Windows lack
    ``os.sched_getaffinity``, and forking is unsafe or absent there)."""
    if not hasattr(os, "sched_getaffinity") or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return len(os.sched_getaffinity(0))


def _expand_level(frontier: list[tuple[Hashable, LockstepWorld[Op]]], parents: dict[Hashable, Any],
                  copy_of: Callable[..., LockstepWorld[Op]]) -> list[Run]:
    """A level's ``Run``s in search order: one in this process, or a few per core, expanded by forked
    workers each on its own copy of ``parents`` (a state two runs find is reported by both)."""
    global _LEVEL
    _LEVEL = (frontier, parents, copy_of)
    jobs = workers()
    size = -(-len(frontier) // (4 * jobs))  # a few runs per worker: a slow run does not idle the rest
    try:
        if jobs < 2 or len(frontier) < PARALLEL_MIN:
            return [_expand(0, len(frontier))]
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            return pool.starmap(_expand, [(start, min(start + size, len(frontier)))
                                          for start in range(0, len(frontier), size)], chunksize=1)
    finally:
        _LEVEL = (None, None, None)


def explore(
    make_world: Callable[[], LockstepWorld[Op]],
    depth: int | None = None,
    *,
    progress: Callable[[str], None] | None = None,
    label: str = "",
    snapshots: bool = True,
) -> Exploration[Op]:
    """BFS over the reachable joint states (to ``depth`` calls when given), each level over every core.

    ``snapshots``: expand a state from ``fork()`` copies; off (or when ``fork`` returns
    ``None``), every transition rebuilds its source state by replaying the parent chain.
    """
    result: Exploration[Op] = Exploration()
    started = time.perf_counter()
    root = make_world()
    parents: dict[Hashable, tuple[Hashable, Any] | None] = {root.fingerprint(): None}
    frontier: list[tuple[Hashable, LockstepWorld[Op]]] = [(root.fingerprint(), root)]
    result.max_hashes = len(root.in_state())

    def copy_of(world: LockstepWorld[Op], key: Hashable) -> LockstepWorld[Op]:
        """``world`` (the state ``key``) forked, or rebuilt by replaying its path."""
        return (world.fork() if snapshots else None) or _rebuild(make_world, _path_to(parents, key))

    try:  # whichever way the search ends, ``finally`` states what it covered
        # the search is at level ``diameter`` while a frontier is left: each level makes the next
        while frontier and (depth is None or result.diameter < depth):
            following: list[tuple[Hashable, LockstepWorld[Op]]] = []
            for found, transitions, failed in _expand_level(frontier, parents, copy_of):
                result.transitions += transitions
                for index, op, child_key in found:
                    if child_key not in parents:  # the first run to find a state is its parent
                        key, world = frontier[index]
                        parents[child_key] = (key, op)
                        child = copy_of(world, key)
                        child.apply(op)
                        following.append((child_key, child))
                        result.max_hashes = max(result.max_hashes, len(child.in_state()))
                if failed is not None:  # the first failure in search order
                    index, op, failure = failed
                    result.failing_path = [*_path_to(parents, frontier[index][0]), op]
                    result.failure = _confirm(make_world, result.failing_path, ConformanceFailure(*failure))
                    return result
            if progress is not None:
                progress(f"  {label}level {result.diameter + 1}: {len(parents)} states, "
                         f"{result.transitions} transitions, {time.perf_counter() - started:.0f} s")
            frontier = following
            result.diameter += bool(frontier)
        result.complete = not frontier
        return result
    finally:
        result.states, result.seconds = len(parents), time.perf_counter() - started
