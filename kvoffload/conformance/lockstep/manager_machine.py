"""Lockstep state machine for an ``OffloadingManager`` (M0–M10, I1–I8).

Every call goes to the target and to the reference model; answers, raised exceptions,
evictions and events must agree. Block ids are the target's own and never compared with
the model's: I4 is checked on them instead. Default mode keeps the caller protocol
(C1–C5); strict mode adds protocol-breaking and badly typed calls (M2, M3, M6, M7, M9).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from ...spec import ReferenceManager
from ...spec.types import PrepareStoreOutput
from .adopting import AdoptingPolicy
from ..judge import EXACT_VICTIM_CLAUSE, confusable, event_blame, exception_kind, replay_events, victim_blame, victim_fault
from ..reports.result import ConformanceFailure
from .machine_base import ConformanceMachine, Outcome, invoke
from .strategies import ARG_KINDS, BAD_ELEMENTS, ONE_SHOT_KINDS, OneShot, batches, hash_pools, make_argument

__all__ = ["ManagerMachine"]

METHOD_CLAUSE = {
    "lookup": "M1",
    "prepare_load": "M2",
    "complete_load": "M3",
    "touch": "M4",
    "prepare_store": "M5",
    "complete_store": "M6",
    "take_events": "M8",
}
#: Mostly small capacities, so that evictions happen and ARC's ghost lists fill; a few up
#: to a few dozen. (hypothesis draws the ends of the tuple more often than the middle.)
CAPACITIES = (2, 3, 1, 2, 3, 4, 5, 3, 4, 6, 8, 16, 32, 4, 3)


class _TouchingManager(ReferenceManager):
    """The model with one M10 bug: ``touching`` (a method name) also touches the policy.

    Used only to explain an exact-mode victim mismatch: if this manager, replaying the
    example's calls, evicts what the target evicted, the target broke M10."""

    touching = ""

    def _touched(self, method: str, block_hashes: Any, **keywords: Any) -> Any:
        hashes = list(block_hashes)
        result = getattr(super(), method)(hashes, **keywords)
        if keywords.get("success", True):
            self.policy.touch(hashes)
        return result

    def prepare_load(self, block_hashes: Any) -> Any:
        if self.touching == "prepare_load":
            return self._touched("prepare_load", block_hashes)
        return super().prepare_load(block_hashes)

    def complete_load(self, block_hashes: Any) -> None:
        if self.touching == "complete_load":
            return self._touched("complete_load", block_hashes)  # type: ignore[no-any-return]
        return super().complete_load(block_hashes)

    def complete_store(self, block_hashes: Any, success: bool = True) -> None:
        if self.touching == "complete_store":
            return self._touched("complete_store", block_hashes, success=success)  # type: ignore[no-any-return]
        return super().complete_store(block_hashes, success)


class ManagerMachine(ConformanceMachine):
    kind = "manager"
    target_var = "m"

    # -- setup ------------------------------------------------------------------------
    @initialize(data=st.data())
    def setup(self, data: st.DataObject) -> None:
        capacity = data.draw(st.sampled_from(CAPACITIES), label="num_blocks")
        events = data.draw(st.booleans(), label="enable_events")
        self.pool: list[bytes] = data.draw(hash_pools(min(capacity + 1, 10), min(12, 2 * capacity + 3)), label="pool")
        self.capacity = capacity
        self.events_on = events
        self.target: Any = self.build(num_blocks=capacity, enable_events=events)
        self.adopt: AdoptingPolicy | None = None
        if self.policy_mode in EXACT_VICTIM_CLAUSE:
            self.model = ReferenceManager(capacity, policy=self.policy_mode, enable_events=events)
        else:
            self.adopt = AdoptingPolicy(capacity)
            self.model = ReferenceManager(capacity, policy=self.adopt, enable_events=events)
        self.inflight: list[list[bytes]] = []
        self.id_of: dict[bytes, tuple[int, str]] = {}  # target block id and its source
        self.medium: str | None = None
        self.event_meta: tuple[Any, Any] | None = None
        self.replayed: set[bytes] = set()
        self.calls: list[tuple[str, list[Any], dict[str, Any]]] = []  # for explaining mismatches (M10)
        self.failed_since_take: set[bytes] = set()  # hashes whose store failed since take_events

    # -- model views --------------------------------------------------------------------
    def ref(self, block_hash: bytes) -> int | None:
        block = self.model.policy.get(block_hash)
        return None if block is None else int(block.ref_cnt)

    def ready_set(self) -> set[bytes]:
        return {h for h, block in self.model.blocks().items() if block.ref_cnt >= 0}

    def pending(self) -> list[bytes]:
        return [h for h in self.pool if self.ref(h) == -1]

    def ready(self) -> list[bytes]:
        return [h for h in self.pool if (self.ref(h) is not None and self.ref(h) >= 0)]  # type: ignore[operator]

    def ghosts(self) -> list[bytes]:
        """Pool hashes in the model's ARC ghost lists (B1, B2)."""
        policy = self.model.policy
        return [h for h in self.pool if h in getattr(policy, "b1", ()) or h in getattr(policy, "b2", ())]

    def draw_kind(self, data: st.DataObject, with_set: bool = False) -> str:
        kinds = ARG_KINDS + (("set",) if with_set else ())
        return data.draw(st.sampled_from(kinds), label="shape")

    def draw_batch(self, data: st.DataObject, min_size: int = 0) -> list[bytes]:
        return data.draw(batches(self.pool, unique=not self.strict, min_size=min_size), label="hashes")

    # -- one call on both sides -----------------------------------------------------------
    def call(
        self, method: str, items: list[Any], shape: str, hook: Any = None, **keywords: Any
    ) -> tuple[Outcome, Outcome, str, str, list[Any]]:
        """Call target then model (``hook(target_outcome)`` runs between); record the call.

        Returns (model outcome, target outcome, result variable, argument source, the
        items in the order the target's argument yields them)."""
        self.step()
        extra = [h for h in self.pool if h not in items][:2]
        argument, source = make_argument(shape, items, self.log.name, extra)
        ordered = list(argument) if shape == "set" else list(items)
        keyword_source = "".join(f", {k}={v!r}" for k, v in keywords.items())
        target_out = invoke(getattr(self.target, method), argument, **keywords)
        if hook is not None:
            hook(target_out)
        model_out = invoke(getattr(self.model, method), list(ordered), **keywords)
        self.calls.append((method, list(ordered), dict(keywords)))
        var = self.log.var()
        if shape == "oneshot":
            arg_var = self.log.var("a")
            self.log.add(f"{arg_var} = {source}")
            source = arg_var
        else:
            arg_var = ""
        call_source = f"m.{method}({source}{keyword_source})"
        if model_out[1] is not None:
            expected = exception_kind(model_out[1]).__name__
            # the clause first, as in every other failing line of a reproduction
            clause = getattr(model_out[1], "clause", "M9")
            detail = str(model_out[1]).removeprefix(f"{clause}: ")
            self.log.add(
                f"try:\n    {call_source}\nexcept {expected}:\n    pass  # expected\n"
                f"else:\n    raise AssertionError({f'{clause}: expected {expected} ({detail})'!r})"
            )
        else:
            self.log.add(f"{var} = {call_source}")
        if isinstance(argument, OneShot) and argument.reiterated:
            self.fail(
                "M0",
                f"{method} iterated its one-shot hashes argument a second time (M0: read it at most once)",
                f"not {arg_var}.reiterated",
            )
        self.judge_exceptions(method, model_out, target_out, ordered, shape, call_source)
        return model_out, target_out, var, source, ordered

    def judge_exceptions(
        self, method: str, model_out: Outcome, target_out: Outcome, items: list[Any], shape: str, call_source: str
    ) -> None:
        clause = METHOD_CLAUSE[method]
        model_error, target_error = model_out[1], target_out[1]
        if model_error is None and target_error is not None:
            hint = f" (the argument was a one-shot {shape}: M0)" if shape in ONE_SHOT_KINDS else ""
            self.fail(
                (clause, "M0") if hint else clause,
                f"{method} raised {target_error!r} on a call the contract allows; the model returned "
                f"{model_out[0]!r}{hint}",
            )
        if model_error is not None:
            expected_kind = exception_kind(model_error)
            expected_clause = getattr(model_error, "clause", "M9")
            if target_error is None:
                if method == "lookup" and expected_kind is TypeError:
                    position = next(i for i, h in enumerate(items) if not isinstance(h, bytes))
                    hits = self.model.lookup(items[:position])
                    if hits < position and target_out[0] == hits:
                        # M1: it may stop reading at the first miss, before the bad element
                        self.log.lines[-1] = f"{self.log.lines[-1].split(chr(10))[1].strip()}  # stops at the first miss"
                        return
                self.fail(
                    (expected_clause, "M9"),
                    f"{method} returned {target_out[0]!r} where the contract expects "
                    f"{expected_kind.__name__} ({model_error}) and no change (M9)",
                )
            if exception_kind(target_error) is not expected_kind:
                self.fail(
                    (expected_clause, "M9"),
                    f"{method} raised {target_error!r}, but the contract expects a {expected_kind.__name__} "
                    f"({model_error})",
                )
            self.exercised("M9", expected_clause)
            self.sweep(("I7", "M9"), f"after {method} raised {expected_kind.__name__}")

    # -- checks shared by rules -------------------------------------------------------------
    def m10_culprit(self, evicted: list[bytes]) -> str | None:
        """The method whose touching the policy (an M10 bug) explains the target's victims."""
        for method in ("prepare_load", "complete_load", "complete_store"):
            shadow = _TouchingManager(self.capacity, policy=self.policy_mode, enable_events=self.events_on)
            shadow.touching = method
            out: Outcome = (None, None)
            for name, items, keywords in self.calls:
                out = invoke(getattr(shadow, name), list(items), **keywords)
            value = out[0]
            if isinstance(value, PrepareStoreOutput) and list(value.block_hashes_evicted) == evicted:
                return method
        return None

    # -- checks shared by rules -------------------------------------------------------------
    def refine(self, clauses: tuple[str, ...], block_hash: bytes) -> tuple[str, ...]:
        """Put I8 first when the confused hash looks like a present one."""
        present = self.model.blocks()
        if any(confusable(block_hash, other) for other in present):
            return ("I8", *clauses)
        return clauses

    def sweep(self, clauses: tuple[str, ...], why: str) -> None:
        """Look up every pool hash alone and compare with the model's ready set."""
        self.step()
        ready = self.ready_set()
        expected = [1 if h in ready else 0 for h in self.pool]
        got: list[Any] = []
        var = self.log.var("s")
        self.log.add(f"{var} = [m.lookup([h]) for h in ({', '.join(map(self.log.name, self.pool))},)]")
        for h in self.pool:
            value, error = invoke(self.target.lookup, [h])
            if error is not None:
                self.fail("M1", f"lookup([{h!r}]) raised {error!r} ({why})")
            got.append(value)
        if got != expected:
            index = next(i for i, (a, b) in enumerate(zip(got, expected)) if a != b)
            h = self.pool[index]
            state = {None: "absent", -1: "pending"}.get(self.ref(h), "ready")
            found = self.refine(clauses, h) if got[index] else clauses
            if got[index] and self.ref(h) == -1:
                found = ("M1", *clauses)  # pending blocks end the prefix
            self.fail(
                found,
                f"{why}, lookup([{self.log.name(h)}]) returned {got[index]!r}, but {self.log.name(h)} is {state}",
                f"{var} == {expected!r}",
            )

    def check_victims(
        self, evicted: list[bytes], protected: set[bytes], need: int, blocks_before: dict[Any, int], var: str
    ) -> None:
        """M5.3, I3 (``judge.victim_fault``)."""
        fault = victim_fault(evicted, blocks_before, protected, need, self.log.name, var)
        if fault is not None:
            self.fail(*fault)

    def check_store_output(self, value: Any, var: str) -> None:
        """M5.5: a ``PrepareStoreOutput`` (or ``None``); anything else is reported as M5
        with the call that returned it, not as an error of the suite."""
        fields = ("block_hashes_to_store", "store_spec", "block_hashes_evicted")
        missing = [name for name in fields if not hasattr(value, name)]
        lists_ok = not missing and all(
            isinstance(getattr(value, name), (list, tuple)) for name in ("block_hashes_to_store", "block_hashes_evicted"))
        if missing or not lists_ok:
            self.fail("M5", f"prepare_store returned {value!r} ({type(value).__name__}), not a PrepareStoreOutput "
                      f"with lists block_hashes_to_store and block_hashes_evicted and a store_spec, nor None",
                      f"{var} is None or all(hasattr({var}, f) for f in {fields!r})")

    # -- rules ------------------------------------------------------------------------------
    @rule(data=st.data())
    def lookup(self, data: st.DataObject) -> None:
        """M1."""
        items = self.draw_batch(data)
        model_out, target_out, var, _, _ = self.call("lookup", items, self.draw_kind(data))
        self.exercised("M0", "M1")
        if model_out[1] is None and target_out[0] != model_out[0]:
            clauses: tuple[str, ...] = ("M1",)
            if isinstance(target_out[0], int) and target_out[0] > model_out[0]:
                miss = items[model_out[0]]
                alone, _ = invoke(self.target.lookup, [miss])
                if alone == 1 and self.ref(miss) is None:
                    clauses = self.refine(clauses, miss)
            self.fail(clauses, f"lookup returned {target_out[0]!r}, the model {model_out[0]!r} "
                      "(the longest prefix of present, ready hashes)", f"{var} == {model_out[0]!r}")

    @rule(data=st.data())
    def touch(self, data: st.DataObject) -> None:
        """M4 (its effect on the order shows in later evictions: L2, A3)."""
        self.call("touch", self.draw_batch(data), self.draw_kind(data))
        self.exercised("M4", "P4")

    @precondition(lambda self: bool(self.pending()))
    @rule(data=st.data())
    def touch_pending(self, data: st.DataObject) -> None:
        """M4 on stores in flight: L2 moves them, A3 keeps them in T1 (not a second use)."""
        items = data.draw(st.lists(st.sampled_from(self.pending()), min_size=1, max_size=2, unique=True), label="hashes")
        others = data.draw(st.lists(st.sampled_from(self.pool), max_size=2, unique=True), label="others")
        self.call("touch", list(dict.fromkeys(items + others)), self.draw_kind(data))
        self.exercised("M4", "P4")

    @precondition(lambda self: self.policy_mode == "arc" and bool(self.ghosts()))
    @rule(data=st.data())
    def touch_ghost(self, data: st.DataObject) -> None:
        """M4, A3: touches of the model's ARC ghosts move p (the victims show it later)."""
        items = data.draw(st.lists(st.sampled_from(self.ghosts()), min_size=1, max_size=2, unique=True), label="hashes")
        for _ in range(data.draw(st.integers(1, 2), label="repeats")):
            self.call("touch", items, self.draw_kind(data))
        self.exercised("M4", "P4")

    @precondition(lambda self: any(self.ref(h) is None for h in self.pool))
    @rule(data=st.data())
    def store_fresh(self, data: st.DataObject) -> None:
        """M5 of absent hashes only (evictions when full), completed at once (M6): fills the
        cache with ready blocks and the ARC ghost lists with victims."""
        absent = [h for h in self.pool if self.ref(h) is None]
        items = data.draw(st.lists(st.sampled_from(absent), min_size=1, max_size=min(3, len(absent)), unique=True),
                          label="hashes")
        self._prepare_store(items, data)
        stored = [h for h in items if self.ref(h) == -1]
        if stored:
            self.call("complete_store", stored, self.draw_kind(data, with_set=True), success=True)
            self.exercised("M6", "C3")

    @rule(data=st.data())
    def prepare_store(self, data: st.DataObject) -> None:
        """M5 (and I3, I6, I7, L3/A4 on the victims)."""
        self._prepare_store(self.draw_batch(data, min_size=1), data)

    @rule(data=st.data())
    def store_and_complete(self, data: st.DataObject) -> None:
        """M5 then M6/M7 on what it returned, as a request's store would go (C3)."""
        self._prepare_store(self.draw_batch(data, min_size=1), data)
        pending = self.pending()
        if pending:
            self._complete_store(data, pending)

    def _prepare_store(self, items: list[bytes], data: st.DataObject) -> None:
        blocks_before = {h: int(b.ref_cnt) for h, b in self.model.blocks().items()}
        to_store = list(dict.fromkeys(h for h in items if h not in blocks_before))
        free = self.model.backend.get_num_free_blocks()
        need = max(0, len(to_store) - free)
        protected = set(items)
        evictable = sum(1 for h, r in blocks_before.items() if r == 0 and h not in protected)
        must_refuse = need > evictable

        def adopt(target_out: Outcome) -> None:
            if self.adopt is None:
                return
            out, error = target_out
            self.adopt.next_victims = None
            if error is None and out is not None:
                evicted = list(out.block_hashes_evicted)
                try:  # invalid victims are reported after the call is recorded
                    self.check_victims(evicted, protected, need, blocks_before, "")
                except ConformanceFailure:
                    return
                self.adopt.next_victims = evicted

        model_out, target_out, var, _, _ = self.call("prepare_store", items, self.draw_kind(data), adopt)
        self.exercised("M5")
        if model_out[1] is not None:
            return
        model_value, target_value = model_out[0], target_out[0]
        if target_value is None:
            if not must_refuse:
                self.fail(
                    "I6",
                    f"prepare_store returned None, but it could store: {len(to_store)} new hashes, "
                    f"{free} free blocks and {evictable} ready idle blocks outside the input",
                    f"{var} is not None",
                )
            self.exercised("M5", "I6", "I7")
            self.sweep(("I7",), "after prepare_store returned None")
            return
        self.check_store_output(target_value, var)
        evicted = list(target_value.block_hashes_evicted)
        self.check_victims(evicted, protected, need, blocks_before, var)
        if model_value is None:  # only reachable with exact policies
            self.fail("M5", "prepare_store stored although no eviction could satisfy it (M5.4)", f"{var} is None")
        got_to_store = list(target_value.block_hashes_to_store)
        if got_to_store != list(model_value.block_hashes_to_store):
            expected = "[" + ", ".join(map(self.log.name, model_value.block_hashes_to_store)) + "]"
            got = "[" + ", ".join(map(self.log.name, got_to_store)) + "]"
            self.fail("M5", f"block_hashes_to_store is {got}, the contract expects {expected} "
                      "(M5.1: the absent hashes, first occurrence order)",
                      f"list({var}.block_hashes_to_store) == {expected}")
        if self.adopt is None and evicted != list(model_value.block_hashes_evicted):
            clause = EXACT_VICTIM_CLAUSE[self.policy_mode]
            expected = "[" + ", ".join(map(self.log.name, model_value.block_hashes_evicted)) + "]"
            culprit = self.m10_culprit(evicted)
            if culprit is not None:
                self.fail(
                    ("M10", clause),
                    f"prepare_store evicted [{', '.join(map(self.log.name, evicted))}], "
                    f"{self.policy_mode.upper()} evicts {expected}; the target's victims are those of a "
                    f"manager whose {culprit} touches the policy (M10: only touch, stores, evictions and "
                    "failed stores change the policy's order)",
                    f"list({var}.block_hashes_evicted) == {expected}",
                )
            self.fail(
                victim_blame(self.policy_mode),
                f"prepare_store evicted [{', '.join(map(self.log.name, evicted))}], "
                f"{self.policy_mode.upper()} evicts {expected} "
                + {"A4": "(A4; or the T1/T2 order, ghosts or p diverged earlier: A1, A3, A5)",
                   "L3": "(L3: least recently used first; L2: touch order)",
                   "F5": "(F5; or the S/M order, counters or ghosts diverged earlier: F2, F4, F6)",
                   "V5": "(V5; or the visited bits or the hand diverged earlier: V4, V6)"}[clause],
                f"list({var}.block_hashes_evicted) == {expected}",
            )
        if need:
            self.exercised("M5", "I3", "I6", EXACT_VICTIM_CLAUSE.get(self.policy_mode, "P5"))
        for victim in evicted:
            self.id_of.pop(victim, None)
        spec = target_value.store_spec
        ids = getattr(spec, "block_ids", None)
        medium = spec.medium() if hasattr(spec, "medium") else None
        if self.medium is None:
            self.medium = medium
        elif medium != self.medium:
            self.fail("B4", f"store spec medium {medium!r} differs from earlier {self.medium!r}",
                      f"{var}.store_spec.medium() == {self.medium!r}")
        if ids is not None:
            if len(ids) != len(to_store):
                self.fail("M5", f"store_spec addresses {len(ids)} blocks for {len(to_store)} hashes to store (M5.5)",
                          f"len({var}.store_spec.block_ids) == {len(to_store)}")
            for index, h in enumerate(got_to_store):
                self.id_of[h] = (int(ids[index]), f"{var}.store_spec.block_ids[{index}]")
            # B4: a CPU block id addresses the backend's buffer, so it lies in [0, capacity)
            # (vLLM 0.32's CPU spec has no medium(); its class name says CPU).
            if medium == "CPU" or type(spec).__name__.startswith("CPU"):
                outside = [int(i) for i in ids if not 0 <= int(i) < self.capacity]
                if outside:
                    self.fail("B4", f"store_spec addresses block {outside[0]}, outside [0, {self.capacity})",
                              f"all(0 <= int(i) < {self.capacity} for i in {var}.store_spec.block_ids)")
        if evicted:
            self.sweep(("M5",), "after prepare_store evicted " + ", ".join(map(self.log.name, evicted)))

    def _complete_store(self, data: st.DataObject, items: list[bytes]) -> None:
        success = data.draw(st.booleans(), label="success")
        failing = set() if success else {h for h in items if self.ref(h) == -1}
        self.call("complete_store", items, self.draw_kind(data, with_set=True), success=success)
        self.failed_since_take.update(failing)  # M7: these must never show up as stored
        clause = "M6" if success else "M7"
        self.exercised(clause, "C3")
        for h in items:
            if self.ref(h) is None:
                self.id_of.pop(h, None)
        self.sweep((clause,), f"after complete_store(success={success})")

    @precondition(lambda self: any(self.ref(h) == -1 for h in self.pool))
    @rule(data=st.data())
    def complete_store(self, data: st.DataObject) -> None:
        """M6/M7 on pending hashes (C3); one call may cover several stores, as a set."""
        pending = self.pending()
        items = data.draw(st.lists(st.sampled_from(pending), min_size=1, max_size=len(pending), unique=True), label="hashes")
        self._complete_store(data, items)

    @precondition(lambda self: bool(self.ready()))
    @rule(data=st.data())
    def prepare_load(self, data: st.DataObject) -> None:
        """M2 on ready hashes (C1)."""
        ready = self.ready()
        items = data.draw(st.lists(st.sampled_from(ready), max_size=len(ready), unique=True), label="hashes")
        self._prepare_load(data, items)

    def _prepare_load(self, data: st.DataObject, items: list[bytes]) -> None:
        model_out, target_out, var, _, _ = self.call("prepare_load", items, self.draw_kind(data))
        self.exercised("M2")
        if model_out[1] is not None:
            return
        self.inflight.append(list(items))
        ids = getattr(target_out[0], "block_ids", None)
        if ids is None:
            return
        if len(ids) != len(items):
            self.fail("M2", f"the load spec addresses {len(ids)} blocks for {len(items)} hashes",
                      f"len({var}.block_ids) == {len(items)}")
        for index, h in enumerate(items):
            known = self.id_of.get(h)
            if known is not None and int(ids[index]) != known[0]:
                self.fail(self.refine(("M2",), h),
                          f"prepare_load addressed {self.log.name(h)} as block {int(ids[index])}, "
                          f"but its store spec said block {known[0]}",
                          f"{var}.block_ids[{index}] == {known[1]}")

    @precondition(lambda self: bool(self.inflight))
    @rule(data=st.data())
    def complete_load(self, data: st.DataObject) -> None:
        """M3 for a load in flight, with the same hashes (C2)."""
        index = data.draw(st.integers(0, len(self.inflight) - 1), label="load")
        items = self.inflight.pop(index)
        self.call("complete_load", items, self.draw_kind(data))
        self.exercised("M3", "C2")

    @rule()
    def take_events(self) -> None:
        """M8, and I5 on the replayed events."""
        self.step()
        var = self.log.var("ev")
        self.log.add(f"{var} = list(m.take_events())")
        try:
            target_events = list(self.target.take_events())
        except Exception as error:
            self.fail("M8", f"take_events raised {error!r}")
        model_events = list(self.model.take_events())
        self.exercised("M8")
        view = [(list(e.block_hashes), bool(e.removed)) for e in target_events]
        expected = [(list(e.block_hashes), bool(e.removed)) for e in model_events]
        if not self.events_on and view:
            self.fail("M8", "events are off, but take_events yielded events", f"{var} == []")
        for event in target_events:
            meta = (event.block_size, event.medium)
            if self.event_meta is None:
                self.event_meta = meta
            elif meta != self.event_meta:
                self.fail("M8", f"event block_size/medium {meta!r} differ from earlier {self.event_meta!r}")
        failed, self.failed_since_take = self.failed_since_take, set()
        if view != expected:
            def render(events: list[tuple[list[Any], bool]]) -> str:
                return "[" + ", ".join(f"([{', '.join(map(self.log.name, hs))}], {rm})" for hs, rm in events) + "]"

            rendered = render(expected)
            self.fail(
                event_blame(view, expected, self.ready_set(), failed),
                f"take_events yielded {len(view)} event(s) {render(view)}; the contract expects {rendered}",
                f"[(list(e.block_hashes), e.removed) for e in {var}] == {rendered}",
            )
        replay_events(self.replayed, view)
        if self.events_on:
            self.exercised("I5")
            if self.replayed != self.ready_set():
                self.fail("I5", "replaying the events does not give the ready set")

    # -- strict mode: protocol-breaking and badly typed calls ------------------------------
    @precondition(lambda self: self.strict)
    @rule(data=st.data())
    def strict_prepare_load(self, data: st.DataObject) -> None:
        """M2 with absent, pending or repeated hashes (breaks C1, C5); often ready hashes
        listed twice (each occurrence pins once more: M2, M3)."""
        ready = self.ready()
        repeat: bool = bool(ready) and data.draw(st.booleans(), label="repeat ready")
        if repeat:
            items = data.draw(st.lists(st.sampled_from(ready), min_size=1, max_size=3), label="hashes")
            self._prepare_load(data, items + [items[0]])
            return
        self._prepare_load(data, self.draw_batch(data, min_size=1))

    @precondition(lambda self: self.strict)
    @rule(data=st.data())
    def strict_complete_load(self, data: st.DataObject) -> None:
        """M3 without enough loads in flight (breaks C2)."""
        self.call("complete_load", self.draw_batch(data, min_size=1), self.draw_kind(data))
        self.exercised("M3")

    @precondition(lambda self: self.strict)
    @rule(data=st.data())
    def strict_complete_store(self, data: st.DataObject) -> None:
        """M6/M7 with absent, ready or repeated hashes (breaks C3): ignored."""
        self._complete_store(data, self.draw_batch(data, min_size=1))

    @precondition(lambda self: self.strict)
    @rule(data=st.data())
    def strict_bad_types(self, data: st.DataObject) -> None:
        """M9: an element that is not bytes, or a single bytes object as the argument."""
        method = data.draw(st.sampled_from(
            ("lookup", "touch", "prepare_store", "prepare_load", "complete_load", "complete_store")), label="method")
        items: list[Any] = list(self.draw_batch(data))
        source, make = data.draw(st.sampled_from(BAD_ELEMENTS), label="bad")
        position = data.draw(st.integers(0, len(items)), label="position")
        items.insert(position, make())
        shape = data.draw(st.sampled_from(("list", "tuple", "generator")), label="shape")
        self.call(method, items, shape)
        self.exercised("M9")

    # -- invariants ----------------------------------------------------------------------
    @invariant()
    def no_aliasing(self) -> None:
        """I4: the block ids of live blocks never collide."""
        if not hasattr(self, "model"):
            return
        owners: dict[int, tuple[bytes, str]] = {}
        for h in self.model.blocks():
            known = self.id_of.get(h)
            if known is None:
                continue
            other = owners.setdefault(known[0], (h, known[1]))
            if other[0] != h:
                self.fail(("I4", "I8") if confusable(h, other[0]) else ("I4",),
                          f"{self.log.name(h)} and {self.log.name(other[0])} are both present and share block {known[0]}",
                          f"{known[1]} != {other[1]}")
        if self.id_of:  # no block ids seen (specs without block_ids): I4 cannot be checked
            self.exercised("I4")
