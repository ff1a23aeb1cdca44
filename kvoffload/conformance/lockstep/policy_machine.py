"""State machine for a ``CachePolicy`` (P1–P6; L1–L3, A1–A6, F1–F7 or V1–V6 exactly).

The machine owns the blocks and sets their ``ref_cnt`` to -1, 0 or k; the policy must
never change them (P6). With an exact ``policy`` victims are compared in order with the
reference policy; with ``"any"`` they are checked against P5 and adopted. The target is
observed only through its answers, but the machine knows the model's state and steers
towards where order bugs show (full caches, pending and ghost touches, trimmed ghost
lists: ``cycle``, ``ladder``, ``touch_ghost``), and closes every example that runs to
its end with a probe (``teardown``: every block idle, then all evicted in one call).
``.ci/planted_seeds.py`` checks that the planted bugs are caught at seeds 0-9.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from ...spec import POLICIES, BlockStatus, make_reference_policy
from .adopting import AdoptingPolicy
from ..judge import EXACT_VICTIM_CLAUSE, judge_evict, judge_gets, judge_ref_counts, policy_call
from .machine_base import ConformanceMachine
from .strategies import ARG_KINDS, OneShot, batches, fractional_ghosts, hash_pools, make_argument
from .twins import Call, PolicyProbe, Twins, apply_policy_call

__all__ = ["PolicyMachine"]

#: Small capacities first: ARC's deep states (both ghost lists full, fractional ``p``)
#: need a few dozen calls at capacity 3 or 4; capacity 1 cannot order anything.
#: (hypothesis draws the ends of the tuple more often than the middle.)
CAPACITIES = (3, 2, 4, 3, 1, 2, 3, 4, 5, 6, 8, 16, 3, 4)

#: Per exact mode: the clauses of insert, touch and remove (the eviction order's, and those
#: a wrong victim points at, live in the judge: ``EXACT_VICTIM_CLAUSE``, ``victim_blame``).
CLAUSES: dict[str, dict[str, str]] = {
    "lru": {"insert": "L1", "touch": "L2", "remove": "P3"},
    "arc": {"insert": "A1", "touch": "A3", "remove": "A6"},
    "s3fifo": {"insert": "F2", "touch": "F4", "remove": "F7"},
    "sieve": {"insert": "V2", "touch": "V4", "remove": "V6"},
}


#: Swarm testing: each example switches off up to three of these rules (drawn in
#: ``setup``), so that runs differ in the mix of calls, not only in their arguments; some
#: deep states are reached only without a rule that keeps undoing them (e.g. ``remove``
#: emptying T2, ``set_ref_cnt`` pinning the blocks a drain needs). Shrinks to all on.
SWARM_RULES = ("store", "set_ref_cnt", "remove", "touch_pending", "evict_full", "cycle", "drain", "ladder")


class PolicyMachine(ConformanceMachine):
    kind = "policy"
    target_var = "p"

    @initialize(data=st.data())
    def setup(self, data: st.DataObject) -> None:
        self.capacity = data.draw(st.sampled_from(CAPACITIES), label="cache_capacity")
        # Room for T1/T2 and both ghost lists (up to 3x capacity hashes in play).
        self.pool: list[bytes] = data.draw(
            hash_pools(min(self.capacity + 1, 10), min(14, self.capacity * 3 + 2)), label="pool")
        self.target: Any = self.build(cache_capacity=self.capacity)
        self.model: Any = (make_reference_policy(self.policy_mode, self.capacity) if self.policy_mode in POLICIES
                           else AdoptingPolicy(self.capacity))
        self.blocks: dict[bytes, BlockStatus] = {}  # present hash -> its block, named blk<block_id> in the log
        #: id(block) -> every block made so far (its id: the count before it), the ref_cnt the machine set (P6)
        self.refs: dict[int, tuple[BlockStatus, int]] = {}
        self.calls: list[Call] = []  # what the target was told, for its twins (``twins.apply_policy_call``)
        self.twins = Twins(self.fresh_target, apply_policy_call)
        self.switched_off: frozenset[str] = frozenset(
            data.draw(st.sets(st.sampled_from(SWARM_RULES), max_size=3), label="swarm_off"))

    def on(self, rule_name: str) -> bool:
        """Whether this example's swarm draw keeps ``rule_name`` (``SWARM_RULES``)."""
        return rule_name not in getattr(self, "switched_off", ())

    def present(self) -> list[bytes]:
        return [h for h in self.pool if h in self.blocks]

    def absent(self) -> list[bytes]:
        return [h for h in self.pool if h not in self.blocks]

    def pending(self) -> list[bytes]:
        return [h for h in self.present() if self.blocks[h].ref_cnt == -1]

    def _eligible_count(self) -> int:
        return sum(block.ref_cnt == 0 for block in self.blocks.values())

    def _expect_violation(self, method: str, clause: str, h: bytes, *block: BlockStatus) -> None:
        self.step()
        rendered = ", ".join([self.log.name(h), *(f"BlockStatus({b.block_id})" for b in block)])
        what = f"{method} of a {'present' if clause == 'P2' else 'absent'} hash"
        mark = len(self.log.lines)
        self.refused(clause, f"p.{method}({rendered})", "must raise", what, getattr(self.target, method), h, *block)
        self.calls.append((method, (h, *(b.block_id for b in block)), {}))
        self.sweep(clause, f"after a refused {method}")
        self.twin_check(method, mark)

    def twin_check(self, method: str, mark: int) -> None:
        """I7: the last call (refused or raising) left the policy's order as it was, judged
        on fresh policies replaying the example with and without it (``twins``); the model
        cannot tell under ``--policy any``, and tells an exact policy's only when a later
        victim shows it."""
        probe = PolicyProbe(self.present(), self.absent())
        self.judge_twins(self.twins, self.calls, (probe, probe), method, mark)

    def sweep(self, clause: str, why: str) -> None:
        """P1 for every pool hash (``get`` returns the very block inserted, or None)."""
        var = self.logged("g", f"[p.get(h) for h in ({', '.join(map(self.log.name, self.pool))},)]")
        ghosts = set(self.model.b1) | set(self.model.b2) if self.policy_mode == "arc" else set()
        self.judged(judge_gets(self.target, self.pool, self.blocks, ghosts, clause, why, self.log.name, var))

    @precondition(lambda self: len(self.blocks) < self.capacity and bool(self.absent()))
    @rule(data=st.data())
    def insert(self, data: st.DataObject) -> None:
        """P2, L1, A1: insert an absent hash with a new pending block."""
        h = data.draw(st.sampled_from(self.absent()), label="hash")
        self._insert(h, data.draw(st.sampled_from((0, 0, 0, -1, 1)), label="ref_cnt"))

    def _insert(self, h: bytes, initial: int) -> None:
        self.step()
        block = BlockStatus(len(self.refs))
        self.log.add(f"blk{block.block_id} = BlockStatus({block.block_id})")
        self._set_block_ref(block, initial, logged=initial != -1)  # a new block is pending (-1) already
        self._tell("insert", f"{self.log.name(h)}, blk{block.block_id}", (h, block), (h, block.block_id), "P2", "P1")
        self.model.insert(h, block)
        self.blocks[h] = block

    def _tell(self, method: str, source: str, args: tuple[Any, ...], recorded: tuple[Any, ...], own: str,
              default: str) -> None:
        """A protocol-keeping ``method`` given ``args`` on the target (judged: P2–P4, M0),
        logged as ``p.method(source)`` and kept for the twins as ``recorded``; exercises
        ``own`` and the exact mode's clause of it (``CLAUSES``, else ``default``)."""
        self.log.add(f"p.{method}({source})")
        self.judged(policy_call(self.target, method, *args)[1])
        self.calls.append((method, recorded, {}))
        self.exercised(own, CLAUSES.get(self.policy_mode, {}).get(method, default))

    @precondition(lambda self: self.on("store") and bool(self.absent()))
    @rule(data=st.data())
    def store(self, data: st.DataObject) -> None:
        """What a manager's store does to its policy: evict to make room (P5, L3, A4, A5),
        then insert the new hashes, pending or already completed (P2, L1, A1)."""
        absent = self.absent()
        fresh = self.draw_unique(data, absent, "hashes", most=min(3, len(absent), self.capacity))
        need = len(self.blocks) + len(fresh) - self.capacity
        if need > 0 and self._evict(need, set()) is None:
            return
        for h in fresh:
            self._insert(h, data.draw(st.sampled_from((-1, 0, 0)), label="ref_cnt"))

    @precondition(lambda self: bool(self.pending()))
    @rule(data=st.data())
    def complete(self, data: st.DataObject) -> None:
        """A store completes: a pending block becomes ready and idle (L2, A3 then see it ready)."""
        self._set_ref(data.draw(st.sampled_from(self.pending()), label="hash"), 0)

    @precondition(lambda self: self.on("set_ref_cnt") and bool(self.blocks))
    @rule(data=st.data())
    def set_ref_cnt(self, data: st.DataObject) -> None:
        """The machine (standing in for the manager) sets a block's ref_cnt to -1, 0 or k."""
        h = data.draw(st.sampled_from(self.present()), label="hash")
        self._set_ref(h, data.draw(st.sampled_from((0, 0, 1, -1, 2)), label="ref_cnt"))

    def _set_ref(self, h: bytes, value: int) -> None:
        self.step()
        self._set_block_ref(self.blocks[h], value)

    def _set_block_ref(self, block: BlockStatus, value: int, logged: bool = True) -> None:
        """The machine sets ``block``'s ref_cnt and remembers it (P6 compares later)."""
        block.ref_cnt = value
        self.refs[id(block)] = (block, value)
        self.calls.append(("ref", (block.block_id, value), {}))
        if logged:
            self.log.add(f"blk{block.block_id}.ref_cnt = {value}")

    @precondition(lambda self: self.on("remove") and bool(self.blocks))
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        """P3, A6."""
        self.step()
        h = data.draw(st.sampled_from(self.present()), label="hash")
        self._tell("remove", self.log.name(h), (h,), (h,), "P3", "P3")
        self.model.remove(h)
        del self.blocks[h]

    @rule(data=st.data())
    def touch(self, data: st.DataObject) -> None:
        """P4, L2, A3 (absent and ghost hashes included)."""
        self._touch(data, data.draw(batches(self.pool, unique=not self.strict), label="hashes"))

    @precondition(lambda self: self.on("touch_pending") and bool(self.pending()))
    @rule(data=st.data())
    def touch_pending(self, data: st.DataObject) -> None:
        """L2, A3: a touch of pending blocks (moved, but in ARC not promoted), maybe with others."""
        self._touch(data, self.draw_with_others(data, self.pending(), self.pool))

    @precondition(lambda self: self.policy_mode == "arc" and bool(self.model.b1 or self.model.b2))
    @rule(data=st.data())
    def touch_ghost(self, data: st.DataObject) -> None:
        """A3: a touch of ARC ghosts (B1 raises p, B2 lowers it; A5 decides who is still a ghost).

        Prefers, when the model has one, a ghost whose hit moves p by a non-whole step
        (|B2|/|B1| or |B1|/|B2| above 1 and not whole), then p's fraction matters (A4),
        and repeats the touch up to three times, so that whole and fractional steps part
        by a whole block (A3)."""
        self._hit_ghosts(data, [h for h in self.pool if h in self.model.b1 or h in self.model.b2])

    def _hit_ghosts(self, data: st.DataObject, candidates: list[bytes]) -> None:
        """Touch one or two of ``candidates`` 1-3 times, preferring (3 in 4) fractional ghosts."""
        fractional = fractional_ghosts(self.model, self.pool)
        if fractional and data.draw(st.integers(0, 3), label="any ghost") < 3:
            candidates = fractional
        if not candidates:
            return
        items = self.draw_unique(data, candidates, "hashes", most=2)
        # Ghost hits do not change the lists' sizes: the same step again, as a later request would.
        for _ in range(data.draw(st.integers(1, 3), label="repeats")):
            self._touch(data, items)

    def _touch(self, data: st.DataObject | None, items: list[bytes]) -> None:
        """P4 of ``items`` on both sides (as a drawn shape; a list without ``data``)."""
        self.step()
        shape = data.draw(st.sampled_from(ARG_KINDS), label="shape") if data is not None else "list"
        argument, source = make_argument(shape, items, self.log.name)
        if isinstance(argument, OneShot):
            self.log.add(f"a = {source}")
            source = "a"
        self._tell("touch", source, (argument,), (list(items),), "P4", "P4")
        self.model.touch(list(items))

    @precondition(lambda self: self.on("evict_full") and len(self.blocks) == self.capacity)
    @rule(data=st.data())
    def evict_full(self, data: st.DataObject) -> None:
        """P5, L3, A4, A5: evict from a full policy, nothing protected."""
        self._evict(data.draw(st.integers(1, min(3, self.capacity)), label="n"), set())

    @precondition(lambda self: self.on("cycle"))
    @rule(data=st.data())
    def cycle(self, data: st.DataObject) -> None:
        """A round of a cache's life in one rule: fill up with new hashes (some pending),
        touch some (L2, A3: promotes ready T1 blocks, keeps pending ones in T1), complete
        the pending stores, then maybe drain. A few rounds fill both ARC ghost lists in
        drawn proportions, so that ghost hits move p by fractions (A3) and the drains
        show floor(p) (A4) and the ghosts' trimming (A5).

        An aimed ARC round (drawn) promotes all but floor(p) of T1 (at least 1, at most
        capacity - 1, so that T2 is not empty), as the model says, then drains: the drain
        switches from T1 to T2 exactly where ``t1 < floor(p)``, so an implementation whose
        p or whose comparison differs (A3, A4, A5) picks another victim there."""
        aim = self.policy_mode == "arc" and data.draw(st.booleans(), label="aim")
        self._fill(data, ready=aim)
        present = self.present()
        if aim:
            t1_ready = [h for h in self.model.t1 if self.blocks[h].ref_cnt == 0]
            excess = len(self.model.t1) - min(max(1, math.floor(self.model.p)), self.capacity - 1)
            if excess > 0 and t1_ready:
                self._touch(data, list(data.draw(st.permutations(t1_ready), label="promoted")[:excess]))
            self.drain()
            return
        if present:
            self._touch(data, self.draw_unique(data, present, "touched", 0))
        if data.draw(st.booleans(), label="complete"):
            for h in self.pending():
                self._set_ref(h, 0)
        if data.draw(st.booleans(), label="drain"):
            self.drain()

    def _fill(self, data: st.DataObject, *, ready: bool) -> None:
        """Insert absent hashes until the cache is full (all ready and idle if ``ready``);
        in ARC new hashes first, so that the ghost lists keep their sizes (A1)."""
        while len(self.blocks) < self.capacity and self.absent():
            absent = self.absent()
            if self.policy_mode == "arc":
                absent = [h for h in absent if h not in self.model.b1 and h not in self.model.b2] or absent
            self._insert(data.draw(st.sampled_from(absent), label="hash"),
                         0 if ready else data.draw(st.sampled_from((0, 0, -1)), label="ref_cnt"))

    def _promote(self, data: st.DataObject, low: int, high: int) -> None:
        """Touch between ``low`` and ``high`` ready blocks (in ARC: of T1, which moves them
        to T2, A3), in a drawn order."""
        ready = [h for h in (self.model.t1 if self.policy_mode == "arc" else self.present())
                 if self.blocks[h].ref_cnt == 0]
        high = min(high, len(ready))
        if high < 1 or high < low:
            return
        count = data.draw(st.integers(max(0, low), high), label="promoted")
        if count:
            self._touch(data, list(data.draw(st.permutations(ready), label="order")[:count]))

    @precondition(lambda self: self.on("ladder"))
    @rule(data=st.data())
    def ladder(self, data: st.DataObject) -> None:
        """A4, A5 (and L3, F5, V5): reach states by their shape, then drain them one
        victim at a time.

        In ARC, first 0-3 rounds of fill (ready), promote a drawn share to T2, drain all:
        the ghost lists fill in drawn proportions and, with new hashes, beyond capacity
        (A5 trims them); then a hit on a ghost or an absent hash (fractional steps
        preferred, either list, so that p swings both ways: A3). Last, fill, promote at
        least one block while T1 keeps at least floor(p), and evict(1) until nothing is
        eligible: every |T1| from the top down to floor(p) is passed while T2 is not empty,
        so the T1/T2 switch of A4 shows wherever p puts it."""
        if self.policy_mode == "arc":
            for _ in range(data.draw(st.integers(0, 3), label="rounds")):
                self._fill(data, ready=True)
                self._promote(data, 0, self.capacity)
                if self._eligible_count():
                    self._evict(self._eligible_count(), set())
            self._hit_ghosts(data, self.absent())
        self._fill(data, ready=True)
        arc = self.policy_mode == "arc"
        self._promote(data, 1, len(self.model.t1) - min(math.floor(self.model.p), self.capacity - 1) if arc
                      else self.capacity)
        while self._eligible_count():
            if self._evict(1, set()) is None:
                break

    @precondition(lambda self: self.on("drain") and self._eligible_count() >= 2)
    @rule()
    def drain(self) -> None:
        """P5, L3, A4, A5: evict every eligible block in one call. The victims show the
        whole eviction order at once (LRU's order; ARC's T1/T2 interleaving, which
        reveals floor(p)), and fill the ghost lists."""
        self._evict(self._eligible_count(), set())

    @rule(data=st.data())
    def evict(self, data: st.DataObject) -> None:
        """P5 (and L3 or A4, A5 exactly)."""
        n = data.draw(st.integers(1, min(3, self.capacity)) | st.just(0), label="n")
        protected = set(data.draw(st.lists(st.sampled_from(self.pool), max_size=2), label="protected"))
        self._evict(n, protected)

    def _evict(self, n: int, protected: set[bytes]) -> list[bytes] | None:
        """Evict on both sides and compare; the victims, or ``None`` when refused."""
        _, protected_source = make_argument("set", [h for h in self.pool if h in protected], self.log.name)
        mark = len(self.log.lines)
        var = self.logged("ev", f"p.evict({n}, {protected_source})")
        value, verdict = policy_call(self.target, "evict", n, set(protected))
        self.calls.append(("evict", (n, set(protected)), {}))
        self.judged(verdict)
        self.exercised("P5", "P6")
        exact = self.policy_mode in POLICIES
        expected = self.model.evict(n, set(protected)) if exact else None
        self.judged(judge_evict(self.policy_mode, n, protected, value, expected, self.blocks, self.log.name, var))
        victims = [] if value is None else [h for h, _ in value]
        if exact:  # the order clause (and ARC's ghost trimming, A5) was checked by this comparison
            self.exercised(EXACT_VICTIM_CLAUSE[self.policy_mode], *(("A5",) if self.policy_mode == "arc" else ()))
        elif value is not None:
            self.model.next_victims = list(victims)
            self.model.evict(n, set(protected))
        for h in victims:
            self.blocks.pop(h, None)
        if n:
            self.sweep("P5", f"after evict({n}, ...)")
        if value is None:
            self.twin_check("evict", mark)
            return None
        return victims

    def close(self) -> None:
        """The end of every example that ran to its end (``teardown``): the target's hidden
        order made observable, as the model checker's ``probe`` does. Every block is made
        ready and idle, the pool hashes not present are touched (P4: ghosts move as the model
        says), then one eviction takes every block, its victims judged in order (L3, A4, F5,
        V5; P5 in ``any`` mode)."""
        for h in [h for h in self.present() if self.blocks[h].ref_cnt != 0]:
            self._set_ref(h, 0)
        if self.absent():
            self._touch(None, self.absent())
        if self.blocks:
            self._evict(len(self.blocks), set())

    @precondition(lambda self: self.strict and bool(self.blocks))
    @rule(data=st.data())
    def strict_insert_present(self, data: st.DataObject) -> None:
        """P2: inserting a present hash raises, nothing changes."""
        h = data.draw(st.sampled_from(self.present()), label="hash")
        block = BlockStatus(10_000 + len(self.refs))
        self.refs[id(block)] = (block, -1)
        self._expect_violation("insert", "P2", h, block)

    @precondition(lambda self: self.strict and bool(self.absent()))
    @rule(data=st.data())
    def strict_remove_absent(self, data: st.DataObject) -> None:
        """P3: removing an absent hash raises, nothing changes."""
        self._expect_violation("remove", "P3", data.draw(st.sampled_from(self.absent()), label="hash"))

    @invariant()
    def ref_counts_untouched(self) -> None:
        """P6: the policy never changes a block's ref_cnt."""
        self.judged(judge_ref_counts(getattr(self, "refs", {}).values(), "after the last call"))
