"""Lockstep state machine for an ``OffloadingManager`` (M0–M10, I1–I8).

Every call goes to the target and to the reference model through the judge
(``ManagerJudge``): answers, raised exceptions, evictions and events must agree. Block
ids are the target's own and never compared with the model's: I4 is checked on them
instead. Default mode keeps the caller protocol (C1–C5); strict mode adds
protocol-breaking and badly typed calls (M2, M3, M6, M7, M9). Every example that runs
to its end closes with a probe (``teardown``: every block evicted in one judged call),
so an order the target got wrong is seen even where no later victim showed it; every
refused or raising call, and under ``--policy any`` every lookup and load, is followed by
twins (``twins``: I7 and M10 on the target's hidden order, which ``--policy any`` does not
model). This module draws the calls and records them as a
reproduction; the verdicts are the judge's (and, for twins, ``twins.twin_verdict``'s).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from ..judge import EXACT_VICTIM_CLAUSE, ManagerJudge, Step, exception_kind, method_clause, probe_calls
from .machine_base import ConformanceMachine, strict_rule
from .strategies import ARG_KINDS, BAD_ELEMENTS, batches, fractional_ghosts, hash_pools, make_argument
from .twins import Call, ManagerProbe, Twins, apply_manager_call

__all__ = ["ManagerMachine"]

#: Mostly small capacities, so that evictions happen and ARC's ghost lists fill; a few up
#: to a few dozen. (hypothesis draws the ends of the tuple more often than the middle.)
CAPACITIES = (2, 3, 1, 2, 3, 4, 5, 3, 4, 6, 8, 16, 32, 4, 3)


class ManagerMachine(ConformanceMachine):
    kind = "manager"
    target_var = "m"
    #: the first lines of a twin's probe in a reproduction (``ManagerProbe``), and whether
    #: the lines a twin replays define names the rest uses (``twin_lines``)
    probe_prelude: ClassVar[tuple[str, ...]] = ()
    export_names: ClassVar[bool] = False

    # -- setup ------------------------------------------------------------------------
    @initialize(data=st.data())
    def setup(self, data: st.DataObject) -> None:
        capacity = self.draw_capacity(data)
        events_on = data.draw(st.booleans(), label="enable_events")
        # ARC: room for its residents and both ghost lists at unequal sizes (fractional p, A3)
        most = min(14, 3 * capacity + 2) if self.policy_mode == "arc" else min(12, 2 * capacity + 3)
        self.start(capacity, events_on, data.draw(hash_pools(min(capacity + 1, 10), most), label="pool"))

    def start(self, capacity: int, events_on: bool, pool: list[bytes]) -> None:
        """A target of ``capacity`` blocks, its judge, and the hashes the calls draw from
        (``setup``, and the scripted large example: ``lockstep.large``)."""
        self.capacity = capacity
        self.events_on = events_on
        self.pool: list[bytes] = pool
        self.target: Any = self.build(num_blocks=capacity, enable_events=events_on)
        self.judge = ManagerJudge(capacity, self.policy_mode, events_on, self.log.name, explain_m10=True)
        self.twins = self.make_twins()  # built only when a check needs one
        self.inflight: list[list[bytes]] = []

    def make_twins(self) -> Twins:
        """The twins of this example's target (``twin_check``), given the judge's calls."""
        return Twins(self.fresh_target, apply_manager_call)

    def draw_capacity(self, data: st.DataObject) -> int:
        """The target's ``num_blocks`` (a hook: a subclass may add larger arms)."""
        return data.draw(st.sampled_from(CAPACITIES), label="num_blocks")

    # -- model views --------------------------------------------------------------------
    @property
    def model(self) -> Any:
        return self.judge.model

    def ref(self, block_hash: bytes) -> int | None:
        return self.judge.ref(block_hash)

    def pending(self) -> list[bytes]:
        return [h for h in self.pool if self.ref(h) == -1]

    def ready(self) -> list[bytes]:
        ready = self.judge.ready_set()
        return [h for h in self.pool if h in ready]

    def absent(self) -> list[bytes]:
        return [h for h in self.pool if self.ref(h) is None]

    def forgotten(self) -> list[bytes]:
        """Pool hashes in none of the model's lists, its ARC ghost lists included."""
        ghosts = set(self.ghosts())
        return [h for h in self.absent() if h not in ghosts]

    def free_blocks(self) -> int:
        return int(self.model.backend.get_num_free_blocks())

    def ghosts(self) -> list[bytes]:
        """Pool hashes in the model's ARC ghost lists (B1, B2)."""
        policy = self.model.policy
        return [h for h in self.pool if h in getattr(policy, "b1", ()) or h in getattr(policy, "b2", ())]

    def draw_kind(self, data: st.DataObject, with_set: bool = False) -> str:
        return data.draw(st.sampled_from(ARG_KINDS + (("set",) if with_set else ())), label="shape")

    def draw_batch(self, data: st.DataObject, min_size: int = 0) -> list[bytes]:
        return data.draw(batches(self.pool, unique=not self.strict, min_size=min_size), label="hashes")

    # -- one call on both sides -----------------------------------------------------------
    def call(self, method: str, items: list[Any], shape: str, *, exercising: tuple[str, ...] = (),
             **keywords: Any) -> Step:
        """One call judged on target and model, recorded as ``var = m.method(...)``; the
        clauses ``exercising`` are exercised once it was judged."""
        self.step()
        self.call_line = len(self.log.lines)  # where this call's lines start (``twin_check``)
        extra = [h for h in self.pool if h not in items][:2]
        argument, source = make_argument(shape, items, self.log.name, extra)
        ordered = list(argument) if shape == "set" else list(items)
        keyword_source = "".join(f", {k}={v!r}" for k, v in keywords.items())
        var = self.log.var()
        start = self.history_length()
        step = self.judge.step(self.target, method, argument, ordered, var, shape, **keywords)
        self.span = (start, self.history_length())  # the judged call's place in the twins' history
        if shape == "oneshot":
            self.log.add(f"a = {source}")
            source = "a"
        call_source = f"m.{method}({source}{keyword_source})"
        model_error = None if step.early_stop else step.model[1]
        if model_error is None:
            self.log.add(f"{call_source}  # stops at the first miss" if step.early_stop else f"{var} = {call_source}")
            self.judged(step.verdict)
        else:
            expected = exception_kind(model_error).__name__
            # the clause first, as in every other failing line of a reproduction
            clause = getattr(model_error, "clause", "M9")
            detail = str(model_error).removeprefix(f"{clause}: ")
            self.log.add_raising(call_source, expected, f"{clause}: expected {expected} ({detail})")
            self.judged(step.verdict)
            self.exercised("M9", clause)
            self.sweep(("I7", "M9"), f"after {method} raised {expected}")
            self.twin_check(method)
        self.exercised(*exercising)
        return step

    def sweep(self, clauses: tuple[str, ...], why: str) -> None:
        """Look up every pool hash alone and compare with the model's ready set."""
        var = self.logged("s", f"[m.lookup([h]) for h in ({', '.join(map(self.log.name, self.pool))},)]")
        self.judged(self.judge.sweep(self.target, self.pool, clauses, why, var))

    def history_length(self) -> int:
        """How many calls the twins' history holds (``twin_history``)."""
        return len(self.judge.calls) if self.judge.calls is not None else 0

    def twin_history(self, method: str) -> tuple[Sequence[Call], tuple[Sequence[Call], list[str]]] | None:
        """What twins replay up to the end of the judged call (at ``self.span``), and what
        the twin without it makes in its place (calls, reproduction lines); ``None``: no
        twins here. The judge's calls (``explain_m10``), where it keeps them."""
        if self.judge.calls is None:
            return None
        return self.judge.calls[:self.span[1]], ([], [])

    def twin_check(self, method: str, clause: str = "I7", loaded: list[bytes] | None = None) -> None:
        """``clause`` on twins, targets of their own replaying the example with and without
        the last call (``twins``): it left the target's order as it was. I7 for a refused
        or raising call: the model cannot tell under ``--policy any``, and tells an exact
        policy's only when a later victim shows it. M10 for a lookup or a load
        (``m10_twins``); ``loaded``: the hashes the call pinned, which the twin without it
        has not. Each probe completes the loads in flight by the model's ref counts (strict
        mode completes loads the machine did not start)."""
        history = self.twin_history(method)
        if history is None:
            return
        pins = {h: int(block.ref_cnt) for h, block in self.model.blocks().items() if block.ref_cnt > 0}
        fresh, pending, absent = self.probe_keys(self.capacity), self.pending(), self.absent()
        with_it = ManagerProbe([[h] * count for h, count in pins.items()], pending, absent, fresh, self.probe_prelude)
        for h in loaded or ():
            pins[h] -= 1
        without = ManagerProbe([[h] * count for h, count in pins.items() if count], pending, absent, fresh,
                               self.probe_prelude)
        self.judge_twins(self.twins, history[0], (without, with_it), method, self.call_line, clause, self.span[0],
                         history[1], self.export_names)

    def m10_twins(self, method: str, step: Step, loaded: list[bytes] | None = None) -> None:
        """M10 under ``--policy any``, where the model adopts the target's victims: a lookup
        or a load (with its completion, which the probe makes) changed no order (a CLOCK
        that sets a reference bit on a hit, an LFU that counts loads). An exact policy's
        model sees that in the victims (and names M10: ``ManagerJudge.m10_culprit``)."""
        if self.judge.adopt is not None and step.model[1] is None and not step.early_stop:
            self.twin_check(method, "M10", loaded)

    # -- rules ------------------------------------------------------------------------------
    @rule(data=st.data())
    def lookup(self, data: st.DataObject) -> None:
        """M1 (and M10: ``m10_twins``)."""
        self.m10_twins("lookup", self.call("lookup", self.draw_batch(data), self.draw_kind(data),
                                           exercising=("M0", "M1")))

    @rule(data=st.data())
    def touch(self, data: st.DataObject) -> None:
        """M4 (its effect on the order shows in later evictions: L2, A3)."""
        self.call("touch", self.draw_batch(data), self.draw_kind(data), exercising=("M4", "P4"))

    @precondition(lambda self: bool(self.pending()))
    @rule(data=st.data())
    def touch_pending(self, data: st.DataObject) -> None:
        """M4 on stores in flight: L2 moves them, A3 keeps them in T1 (not a second use)."""
        self.call("touch", self.draw_with_others(data, self.pending(), self.pool), self.draw_kind(data))
        self.exercised("M4", "P4")

    @precondition(lambda self: self.policy_mode == "arc" and bool(self.ghosts() or self.absent()))
    @rule(data=st.data())
    def touch_ghost(self, data: st.DataObject) -> None:
        """ARC's own rule (A3, A4, A5): touches of the model's ghosts, or (three times in
        four) a walk through ARC's states (``_arc_walk``). One rule for both, so that the
        other policies' runs draw their rules as before (hypothesis picks a rule by its
        place among all of them)."""
        if self.ghosts() and (not self.absent() or data.draw(st.integers(0, 3), label="ghost touches") == 0):
            self._touch_ghosts(data)
        else:
            self._arc_walk(data)

    def _touch_ghosts(self, data: st.DataObject) -> None:
        """M4, A3: touches of the model's ARC ghosts move p (the victims show it later)."""
        items = self.draw_unique(data, self._ghost_candidates(data), "hashes", most=2)
        for _ in range(data.draw(st.integers(1, 3), label="repeats")):
            self.call("touch", items, self.draw_kind(data))
        self.exercised("M4", "P4")

    def _arc_walk(self, data: st.DataObject) -> None:
        """A3, A4, A5: a run of the calls that move ARC's lists and ``p``, nothing else, one
        hash each: store an absent hash (completed, or left pending so that T1 has nothing
        to evict and T2 gives a ghost to B2), promote a ready T1 block to T2, hit a ghost
        (a fractional step preferred). Single stores evict one block at a time, so each
        victim shows A4's T1/T2 choice against floor(p); the ghost lists grow to the
        unequal sizes that make p fractional, which the other rules seldom reach."""
        for _ in range(data.draw(st.integers(8, 24), label="walk")):
            move = data.draw(st.sampled_from(("store", "store", "pending", "promote", "ghost")), label="move")
            t1 = self.model.policy.t1
            t1_ready = [h for h in self.pool if h in t1 and self.ref(h) == 0] if move == "promote" else []
            if t1_ready:
                self.call("touch", [data.draw(st.sampled_from(t1_ready), label="hash")], "list")
            elif move == "ghost" and self.ghosts():
                self.call("touch", [data.draw(st.sampled_from(self._ghost_candidates(data)), label="hash")], "list")
            elif self.absent():
                h = data.draw(st.sampled_from(self.absent()), label="hash")
                if move == "pending":
                    self._prepare_store([h], None)
                else:
                    self._store_and_complete([h], None)
        if self.pending():
            self.call("complete_store", self.pending(), "list")

    def _ghost_candidates(self, data: st.DataObject) -> list[bytes]:
        """The ghosts to touch: three times in four those whose hit moves p by a non-whole
        step, when the model has any (``fractional_ghosts``): only a fractional p tells A3's
        true division and A4's floor(p) from a whole-number reading of them."""
        candidates = fractional_ghosts(self.model.policy, self.pool)
        if not candidates or data.draw(st.integers(0, 3), label="any ghost") == 3:
            candidates = self.ghosts()
        return candidates

    @precondition(lambda self: bool(self.absent()))
    @rule(data=st.data())
    def store_fresh(self, data: st.DataObject) -> None:
        """M5 of absent hashes only (evictions when full), completed at once (M6): fills the
        cache with ready blocks and the ARC ghost lists with victims."""
        absent = self.absent()
        items = self.draw_unique(data, absent, "hashes", most=min(3, len(absent)))
        self._store_and_complete(items, data, drawn_shape=True)

    def _store_and_complete(self, items: list[bytes], data: st.DataObject | None, drawn_shape: bool = False) -> None:
        """M5 of ``items``, then M6 of those it left pending (as a list, or a drawn shape):
        ready blocks at once (lists only without ``data``)."""
        self._prepare_store(items, data)
        stored = [h for h in items if self.ref(h) == -1]
        if stored:
            shape = self.draw_kind(data, with_set=True) if drawn_shape and data is not None else "list"
            # without ``success``: M6's default (True), on which vLLM 0.19's connector relies
            self.call("complete_store", stored, shape, exercising=("M6", "C3"))

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

    def _prepare_store(self, items: list[bytes], data: st.DataObject | None) -> None:
        """M5 of ``items`` (as a drawn shape; a list without ``data``), then a sweep if it
        refused or evicted."""
        shape = self.draw_kind(data) if data is not None else "list"
        step = self.call("prepare_store", items, shape, exercising=("M5",))
        if step.model[1] is not None:
            return
        output = step.target[0]
        if output is None:
            self.exercised("M5", "I6", "I7")
            self.sweep(("I7",), "after prepare_store returned None")
            self.twin_check("prepare_store")
            return
        evicted = list(output.block_hashes_evicted)
        if evicted:
            self.exercised("M5", "I3", "I6", EXACT_VICTIM_CLAUSE.get(self.policy_mode, "P5"))
            self.sweep(("M5",), "after prepare_store evicted " + ", ".join(map(self.log.name, evicted)))

    def _complete_store(self, data: st.DataObject, items: list[bytes]) -> None:
        success = data.draw(st.booleans(), label="success")
        clause = method_clause("complete_store", success)
        self.call("complete_store", items, self.draw_kind(data, with_set=True), exercising=(clause, "C3"),
                  success=success)
        self.sweep((clause,), f"after complete_store(success={success})")

    @precondition(lambda self: bool(self.pending()))
    @rule(data=st.data())
    def complete_store(self, data: st.DataObject) -> None:
        """M6/M7 on pending hashes (C3); one call may cover several stores, as a set."""
        self._complete_store(data, self.draw_unique(data, self.pending(), "hashes"))

    @precondition(lambda self: bool(self.ready()))
    @rule(data=st.data())
    def prepare_load(self, data: st.DataObject) -> None:
        """M2 on ready hashes (C1)."""
        self._prepare_load(data, self.draw_unique(data, self.ready(), "hashes", 0))

    def _prepare_load(self, data: st.DataObject, items: list[bytes]) -> None:
        step = self.call("prepare_load", items, self.draw_kind(data), exercising=("M2",))
        if step.model[1] is None:
            self.inflight.append(list(items))
            self.m10_twins("prepare_load (or the complete_load that ends it)", step, list(items))

    @precondition(lambda self: bool(self.inflight))
    @rule(data=st.data())
    def complete_load(self, data: st.DataObject) -> None:
        """M3 for a load in flight, with the same hashes (C2)."""
        items = self.inflight.pop(data.draw(st.integers(0, len(self.inflight) - 1), label="load"))
        self.call("complete_load", items, self.draw_kind(data), exercising=("M3", "C2"))

    @rule()
    def take_events(self) -> None:
        """M8, and I5 on the replayed events."""
        self.judged(self.judge.events(self.target, self.logged("ev", "list(m.take_events())")))
        self.exercised("M8", *(("I5",) if self.events_on else ()))

    # -- strict mode: protocol-breaking and badly typed calls ------------------------------
    @strict_rule
    def strict_prepare_load(self, data: st.DataObject) -> None:
        """M2 with absent, pending or repeated hashes (breaks C1, C5); often ready hashes
        listed twice (each occurrence pins once more: M2, M3)."""
        ready = self.ready()
        if bool(ready) and data.draw(st.booleans(), label="repeat ready"):
            items = data.draw(st.lists(st.sampled_from(ready), min_size=1, max_size=3), label="hashes")
            items = items + [items[0]]  # each occurrence pins once more
        else:
            items = self.draw_batch(data, min_size=1)
        self._prepare_load(data, items)

    @strict_rule
    def strict_complete_load(self, data: st.DataObject) -> None:
        """M3 without enough loads in flight (breaks C2)."""
        self.call("complete_load", self.draw_batch(data, min_size=1), self.draw_kind(data), exercising=("M3",))

    @strict_rule
    def strict_complete_store(self, data: st.DataObject) -> None:
        """M6/M7 with absent, ready or repeated hashes (breaks C3): ignored."""
        self._complete_store(data, self.draw_batch(data, min_size=1))

    @strict_rule
    def strict_bad_types(self, data: st.DataObject) -> None:
        """M9: an element that is not bytes, or a single bytes object as the argument."""
        method = data.draw(st.sampled_from(
            ("lookup", "touch", "prepare_store", "prepare_load", "complete_load", "complete_store")), label="method")
        items: list[Any] = list(self.draw_batch(data))
        source, make = data.draw(st.sampled_from(BAD_ELEMENTS), label="bad")
        position = data.draw(st.integers(0, len(items)), label="position")
        items.insert(position, make())
        shape = data.draw(st.sampled_from(("list", "tuple", "generator")), label="shape")
        self.call(method, items, shape, exercising=("M9",))

    # -- the end of an example -------------------------------------------------------------
    def close(self) -> None:
        """The end of every example that ran to its end (``teardown``): ``judge.probe_calls``
        (the model checker's probe), so that a recency, ghost or counter bug that has not yet
        changed a victim does not leave with its example; then the events are taken (M8, I5)."""
        for method, hashes, success in probe_calls(self.model, self.inflight, self.forgotten(),
                                                   self.probe_keys(self.capacity)):
            if method == "prepare_store":
                self._prepare_store(list(hashes), None)
            else:
                keywords: dict[str, Any] = {"success": success} if method == "complete_store" else {}
                self.call(method, list(hashes), "list", **keywords)
        self.inflight.clear()
        self.take_events()
        self.exercised("P5")

    def probe_keys(self, count: int) -> list[bytes]:
        """``count`` hashes outside the pool, no two alike in their first 8 bytes (I8 is
        the pool's to exercise)."""
        keys = (hashlib.blake2b(index.to_bytes(4, "big"), digest_size=32, person=b"kvo-probe").digest()
                for index in range(count + len(self.pool)))
        return [h for h in keys if h not in self.pool][:count]

    # -- invariants ----------------------------------------------------------------------
    @invariant()
    def no_aliasing(self) -> None:
        """I4: the block ids of live blocks never collide (checked once ``setup`` ran)."""
        self.judged(self.judge.aliasing())
        if self.judge.id_of:  # no block ids seen (specs without block_ids): I4 cannot be checked
            self.exercised("I4")
