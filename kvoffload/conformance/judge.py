"""The one judge (issue 15): the verdict on one step, for every driver.

``ManagerJudge.step(target, method, argument, items)`` applies a call to the target and
to the reference model, compares answers, errors and the target's observable state (block
ids, events, lookups), and returns a ``Verdict`` naming the broken clauses with the check
that holds on a conforming target, or ``None``. ``judge_evict``, ``judge_gets`` and
``judge_ref_counts`` (and ``policy_call``) do the same for a ``CachePolicy``. The
hypothesis machines (``lockstep``), the model checker's worlds (``checking``), ``fuzz``
(through the machines) and ``simulate`` (through ``JudgedManager``) call these and only
render the verdict (their call log, their reproduction); no driver compares answers itself.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from typing import Any

import attrs

from ..spec import BlockStatus, CachePolicy, ContractViolation, ReferenceManager
from ..spec.admission import ReferenceAdmission
from ..spec.keyed import expected_lookup
from ..spec.types import BlockHash, PrepareStoreOutput
from .lockstep.adopting import AdoptingPolicy
from .lockstep.strategies import ONE_SHOT_KINDS, OneShot, listed

__all__ = [
    "EXACT_VICTIM_CLAUSE", "EventView", "JudgedManager", "ManagerJudge", "Outcome", "Step", "Verdict", "confusable",
    "event_blame", "exception_kind", "invoke", "judge_evict", "judge_gets", "judge_ref_counts", "judge_refusal",
    "listed", "method_clause", "policy_call", "probe_calls", "victim_blame",
]

#: Events as compared: (hashes, removed).
EventView = tuple[Sequence[bytes], bool]
#: (value, exception): exactly one is meaningful.
Outcome = tuple[Any, BaseException | None]
Name = Callable[[object], str]

#: By exact policy, the clauses a wrong victim points at, the eviction clause first (L3 for
#: LRU, A4 for ARC, F5 for S3-FIFO, V5 for SIEVE): the order itself, or the state it depends
#: on (recency, ghosts and target, counters, visited bits) diverged earlier; and that in words.
WRONG_VICTIM: dict[str, tuple[tuple[str, ...], str]] = {
    "lru": (("L3", "L2"), "(L3: least recently used first; L2: touch order)"),
    "arc": (("A4", "A3", "A5"), "(A4; or the T1/T2 order, ghosts or p diverged earlier: A1, A3, A5)"),
    "s3fifo": (("F5", "F4", "F6"), "(F5; or the S/M order, counters or ghosts diverged earlier: F2, F4, F6)"),
    "sieve": (("V5", "V4", "V6"), "(V5; or the visited bits or the hand diverged earlier: V4, V6)"),
}
#: The clause that fixes the victims exactly, by policy.
EXACT_VICTIM_CLAUSE = {policy: clauses[0] for policy, (clauses, _) in WRONG_VICTIM.items()}
METHOD_CLAUSE = {"lookup": "M1", "prepare_load": "M2", "complete_load": "M3", "touch": "M4",
                 "prepare_store": "M5", "complete_store": "M6", "take_events": "M8", "reset_cache": "K7",
                 "on_new_request": "K5", "on_request_finished": "K5"}

#: A block's state, by what K1's ``lookup(key, ctx)`` answers for it (``expected_lookup``).
STATE = {"MISS": "absent", "HIT_PENDING": "pending", "HIT": "ready"}


def method_clause(method: str, success: bool = True) -> str:
    """The clause a call is judged under: its method's, M7 for a failed ``complete_store``."""
    return "M7" if method == "complete_store" and not success else METHOD_CLAUSE[method]


@attrs.frozen
class Verdict:
    """A broken contract: the clauses (the first is reported), what happened, and a Python
    expression that holds on a conforming target (rendered as a reproduction's last line)."""

    clauses: tuple[str, ...]
    message: str
    check: str = ""


def invoke(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Outcome:
    """Call ``function`` and capture what it returned or raised."""
    try:
        return function(*args, **kwargs), None
    except Exception as error:  # the target may raise anything; judged by the caller
        return None, error


def shortened(value: Any, limit: int = 1000) -> str:
    """``repr(value)``, cut to ``limit`` characters (an answer of hundreds of blocks, from
    the large example, would fill the message; the reproduction shows it whole)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def judge_refusal(outcome: Outcome, clause: str, what: str) -> Verdict | None:
    """A call that breaks the caller protocol (B2, B3, P2, P3) must raise ``ContractViolation``."""
    error = outcome[1]
    if isinstance(error, ContractViolation):
        return None
    return Verdict((clause,), f"{what} returned instead of raising ContractViolation" if error is None
                   else f"{what} raised {error!r}, expected a ContractViolation")


def confusable(a: bytes, b: bytes) -> bool:
    """I8: two distinct hashes that agree in 8+ leading bytes or where one prefixes the other."""
    return a != b and (a[:8] == b[:8] or a.startswith(b) or b.startswith(a))


def refine(clauses: tuple[str, ...], block_hash: object, present: Iterable[bytes]) -> tuple[str, ...]:
    """Put I8 first when the confused hash looks like a ``present`` one."""
    confused = isinstance(block_hash, bytes) and any(confusable(block_hash, other) for other in present)
    return ("I8", *clauses) if confused else clauses


def exception_kind(error: BaseException) -> type[BaseException]:
    """The kind of error the contract distinguishes (M9): ContractViolation, TypeError,
    ValueError, or the error's own type."""
    return next((kind for kind in (ContractViolation, TypeError, ValueError) if isinstance(error, kind)), type(error))


def victim_blame(policy: str, refused: bool = False, ineligible: bool = False) -> tuple[str, ...]:
    """The clauses broken by victims that differ from the exact policy's (P5, L2/L3,
    A3–A5, I6): ``refused`` the target gave none where the model evicts; ``ineligible`` a
    victim was pending, read, protected or absent."""
    if refused:
        return ("I6", EXACT_VICTIM_CLAUSE.get(policy, "P5"), "P5")
    clauses = WRONG_VICTIM[policy][0] if policy in WRONG_VICTIM else ("P5",)
    return ("P5", *clauses) if ineligible else clauses


def event_blame(
    got: Sequence[EventView], expected: Sequence[EventView], ready: Set[bytes], failed: Set[bytes] = frozenset()
) -> tuple[str, ...]:
    """The clauses broken by events that differ from the model's (M5 removed, M6 stored,
    M7 a failed store announced; always M8 and I5), judged at the first difference. An
    event naming a hash whose store failed since the last take (``failed``), and not the
    very hashes of an expected event of its kind, is M7's: the failing call was
    ``complete_store(success=False)``, which queues no event, stored or removed."""
    announced = {(frozenset(hashes), removed) for hashes, removed in expected}
    if any(set(hashes) & failed and (frozenset(hashes), removed) not in announced for hashes, removed in got):
        return ("M7", "M8", "I5")  # (an expected event in another order is M5's or M6's)
    index = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
    if index < len(expected):
        clause = "M5" if expected[index][1] else "M6"
    else:
        hashes, removed = got[index]
        clause = "M5" if removed else ("M6" if all(h in ready for h in hashes) else "M7")
    return (clause, "M8", "I5")


class StoreScope:
    """What M5 expects of a ``prepare_store`` of ``items``, read off the model before the call."""

    def __init__(self, model: ReferenceManager, items: Sequence[Any]) -> None:
        self.before: dict[Any, int] = {h: int(b.ref_cnt) for h, b in model.blocks().items()}  # of the present blocks
        self.to_store: list[bytes] = list(dict.fromkeys(h for h in items if h not in self.before))
        self.free, self.protected = model.backend.get_num_free_blocks(), set(items)
        self.need = max(0, len(self.to_store) - self.free)
        self.evictable = sum(1 for h, r in self.before.items() if r == 0 and h not in self.protected)

    def victim_fault(self, evicted: Sequence[object], name: Name, var: str = "r") -> Verdict | None:
        """M5.3, I3: ``prepare_store``'s victims must be ``need`` distinct present blocks,
        each ready, idle (``before``: ref counts ahead of the call) and outside its input."""
        for victim in evicted:
            ref = self.before.get(victim)
            if ref == 0 and victim not in self.protected:
                continue  # a conforming victim: not named (``name`` is not free on the checker's hot path)
            label = name(victim)
            # holds on a fixed target too, also where that one refuses the store
            absent = f"{var} is None or {label} not in {var}.block_hashes_evicted"
            if ref is None:  # (the present hashes are the model's: bytes)
                return Verdict(refine(("M5",), victim, self.before), f"prepare_store evicted {label}, which is "
                               "not present", absent)
            if ref != 0:  # I3: pending (-1), or read by loads in flight
                busy = "whose store is still in flight (pending)" if ref == -1 else \
                    f"which {ref} load(s) in flight are reading"
                return Verdict(("I3",), f"prepare_store evicted {label}, {busy}", absent)
            return Verdict(("M5",), f"prepare_store evicted {label}, which is in its own input (M5.3: protected)",
                           absent)  # (ready and idle, so it is protected)
        check = f"{var} is None or len({var}.block_hashes_evicted) == {self.need}"
        if len(set(evicted)) != len(evicted):
            return Verdict(("M5",), f"prepare_store evicted a hash twice: {list(evicted)!r}", check)
        if len(evicted) != self.need:
            return Verdict(("M5", "I1") if len(evicted) < self.need else ("M5",),
                           f"prepare_store evicted {len(evicted)} blocks, but M5.3 needs exactly {self.need}", check)
        return None


@attrs.define
class Step:
    """One judged call: both outcomes, and the verdict (``None``: it conforms).
    ``early_stop``: ``lookup`` stopped at its first miss before a badly typed element (M1)."""

    model: Outcome
    target: Outcome
    verdict: Verdict | None = None
    early_stop: bool = False


class ManagerJudge:
    """The model of an ``OffloadingManager`` (M0–M10, I1–I8) and what the verdicts
    remember of the target: the block id it gave each live hash (with the expression that
    read it, for checks), its store medium, event metadata, the replayed events (I5).

    ``policy``: ``lru``/``arc``/... compares victims exactly; ``any`` adopts the target's
    victims once they pass M5.3 and I3. ``explain_m10`` keeps the calls, so that a wrong
    victim explained by a manager that touches on loads or stores is reported as M10."""

    def __init__(self, capacity: int, policy: str, events: bool, name: Name, *, explain_m10: bool = False,
                 sources: bool = True) -> None:
        self.capacity, self.policy, self.events_on, self.name = capacity, policy, events, name
        self.sources = sources  # keep the expressions that read block ids (for checks)
        self.calls: list[tuple[str, list[Any], dict[str, Any]]] | None = [] if explain_m10 else None
        #: N2 admission (vLLM targets built with ``store_threshold`` >= 2): the model stores
        #: only what it admits; it survives ``reset`` as vLLM's offer tracker does
        self.admission: ReferenceAdmission | None = None
        #: N2 at ``store_threshold`` 1 given to a target built with a tracker (an admission run's
        #: threshold-1 arm): admission is off, so a key left unstored breaks N2 as well as M5.1
        self.threshold_one = False
        #: builds the model's policy instead of ``policy``'s reference one (N9: vLLM 0.33's
        #: request-rank LRU order), at every ``reset``
        self.make_policy: Callable[[int], CachePolicy] | None = None
        #: K9: absent keys admission refused since ``get_stats`` was last judged (a reset keeps them, as vLLM does)
        self.skipped_offers = 0
        self.reset()

    def reset(self) -> None:
        """A fresh model of the same capacity and policy, nothing known of the target (K7)."""
        self.adopt = None if self.policy in EXACT_VICTIM_CLAUSE else AdoptingPolicy(self.capacity)
        policy = self.make_policy(self.capacity) if self.make_policy is not None else self.policy
        self.model = ReferenceManager(self.capacity, policy=self.adopt or policy, enable_events=self.events_on)
        self.id_of: dict[bytes, tuple[int, str]] = {}
        self.ids_added = False  # ids recorded since ``aliasing`` last held
        self.medium: Any = None
        self.event_meta: tuple[Any, Any] | None = None
        self.replayed: set[bytes] = set()
        self.failed_since_take: set[bytes] = set()
        self.last_store_refused = False
        if self.calls is not None:
            self.calls.clear()

    # -- the model's view -------------------------------------------------------------
    def ref(self, block_hash: bytes) -> int | None:
        block = self.model.policy.get(block_hash)
        return None if block is None else int(block.ref_cnt)

    def ready_set(self) -> set[bytes]:
        return {h for h, block in self.model.blocks().items() if block.ref_cnt >= 0}

    def refine(self, clauses: tuple[str, ...], block_hash: bytes) -> tuple[str, ...]:
        return refine(clauses, block_hash, self.model.blocks())

    def record(self, method: str, items: list[Any], **keywords: Any) -> None:
        """A call the model saw outside ``step`` (K6's touches), for M10's explanation."""
        if self.calls is not None:
            self.calls.append((method, list(items), dict(keywords)))

    def store_candidates(self, items: Sequence[bytes]) -> list[bytes]:
        """The absent keys of an offer of ``items`` that N2's admission, when on, admits (the
        offer not counted yet): the store misses a vLLM-interface manager reports (K6)."""
        absent = [h for h in items if self.ref(h) is None]
        if self.admission is not None and absent:
            admitted = set(self.admission.preview(list(items), lambda h: self.ref(h) is not None))
            absent = [h for h in absent if h in admitted]
        return absent

    def store_misses(self, keys: list[bytes]) -> None:
        """K6: a vLLM-interface manager's ``prepare_store`` hands its store misses to its
        policy before it stores (``on_store_miss``, a touch: an ARC ghost among them moves
        ``p``, A3); the model is told the same, and the touch kept for M10's explanation."""
        if keys:
            self.model.policy.touch([BlockHash(h) for h in keys])
            self.record("touch", keys)

    # -- one call -----------------------------------------------------------------------
    def step(self, target: Any, method: str, argument: Any, items: list[Any], var: str = "r",
             shape: str = "list", **keywords: Any) -> Step:
        """Call ``target.method(argument)`` then the model with ``items`` (the hashes the
        argument yields, in order) and judge the call (M0, M9, then the method's clauses)."""
        typed = all(type(h) is bytes for h in items)  # M9's badly typed calls have no scope
        model_items = items
        if method == "prepare_store" and typed and self.admission is not None:
            model_items = self.admission.offer(items, lambda h: self.ref(h) is not None)  # N2
            self.skipped_offers += len(items) - len(model_items)  # absent keys not admitted (K9)
        scope = StoreScope(self.model, model_items) if method == "prepare_store" and typed else None
        target_out = invoke(getattr(target, method), argument, **keywords)
        if scope is not None and self.adopt is not None:
            self._adopt(self.adopt, target_out[0], scope)
        success = keywords.get("success", True)
        failing = set() if success else {h for h in items if self.ref(h) == -1}
        model_out = invoke(getattr(self.model, method), list(model_items), **keywords)
        if self.calls is not None:  # (no call on the checker's hot path when off)
            self.record(method, model_items, **keywords)
        step = Step(model_out, target_out)
        if isinstance(argument, OneShot) and argument.reiterated:
            step.verdict = Verdict(("M0",), f"{method} iterated its one-shot hashes argument a second time "
                                   "(M0: read it at most once)", "not a.reiterated" if shape == "oneshot" else "")
            return step
        step.verdict = self._errors(step, method, method_clause(method, success), items, shape)
        if step.verdict is not None or step.early_stop or model_out[1] is not None:
            return step
        if scope is not None:
            step.verdict = self._prepare_store(scope, model_out[0], target_out[0], var)
        elif method == "prepare_load":
            step.verdict = self._prepare_load(items, target_out[0], var)
        elif method == "lookup":
            step.verdict = self._lookup(target, items, model_out[0], target_out[0], var)
        elif method == "complete_store":
            self.failed_since_take.update(failing)  # M7: these must never show up as stored
            for h in items:
                if self.ref(h) is None:
                    self.id_of.pop(h, None)
        return step

    def _adopt(self, adopt: AdoptingPolicy, out: Any, scope: StoreScope) -> None:
        """``any`` mode (``adopt``: the model's policy): the model evicts the target's victims
        (``out``: its answer, ``None`` if it raised) if they are eligible."""
        adopt.next_victims = None
        if hasattr(out, "block_hashes_evicted"):
            evicted = list(out.block_hashes_evicted)
            if scope.victim_fault(evicted, self.name) is None:
                adopt.next_victims = evicted

    def _errors(self, step: Step, method: str, clause: str, items: list[Any], shape: str) -> Verdict | None:
        """M9 (and M0 for one-shot arguments): the target raises where, and what, the model raises."""
        (model_value, model_error), (target_value, target_error) = step.model, step.target
        if model_error is None:
            if target_error is None:
                return None
            hint = f" (the argument was a one-shot {shape}: M0)" if shape in ONE_SHOT_KINDS else ""
            return Verdict((clause, "M0") if hint else (clause,), f"{method} raised {target_error!r} on a call the "
                           f"contract allows; the model returned {shortened(model_value)}{hint}")
        expected_kind = exception_kind(model_error)
        expected_clause = getattr(model_error, "clause", "M9")
        if target_error is None:
            if method == "lookup" and expected_kind is TypeError:
                position = next(i for i, h in enumerate(items) if not isinstance(h, bytes))
                hits = self.model.lookup(items[:position])
                if hits < position and target_value == hits:
                    step.early_stop = True  # M1: it may stop reading at the first miss, before the bad element
                    return None
            return Verdict((expected_clause, "M9"), f"{method} returned {target_value!r} where the contract expects "
                           f"{expected_kind.__name__} ({model_error}) and no change (M9)")
        if exception_kind(target_error) is not expected_kind:
            return Verdict((expected_clause, "M9"), f"{method} raised {target_error!r}, but the contract expects a "
                           f"{expected_kind.__name__} ({model_error})")
        return None

    def _lookup(self, target: Any, items: list[Any], expected: Any, got: Any, var: str) -> Verdict | None:
        """M1 (I8 when the first miss is answered as if it were a confusable present hash)."""
        if got == expected:
            return None
        clauses: tuple[str, ...] = ("M1",)
        if isinstance(got, int) and got > expected:
            miss = items[expected]
            alone, _ = invoke(target.lookup, [miss])
            if alone == 1 and self.ref(miss) is None:
                clauses = self.refine(clauses, miss)
        return Verdict(clauses, f"lookup returned {got!r}, the model {expected!r} "
                       "(the longest prefix of present, ready hashes)", f"{var} == {expected!r}")

    def _prepare_load(self, items: list[bytes], spec: Any, var: str) -> Verdict | None:
        """M2: the load spec addresses each hash where its store spec put it (I4, I8)."""
        ids = getattr(spec, "block_ids", None)
        if ids is None:
            return None
        if len(ids) != len(items):
            return Verdict(("M2",), f"the load spec addresses {len(ids)} blocks for {len(items)} hashes",
                           f"len({var}.block_ids) == {len(items)}")
        for index, h in enumerate(items):
            known = self.id_of.get(h)
            if known is not None and int(ids[index]) != known[0]:
                return Verdict(self.refine(("M2",), h), f"prepare_load addressed {self.name(h)} as block "
                               f"{int(ids[index])}, but its store spec said block {known[0]}",
                               f"{var}.block_ids[{index}] == {known[1]}" if known[1] else "")
        return None

    def _prepare_store(self, scope: StoreScope, expected: Any, got: Any, var: str) -> Verdict | None:
        """M5 (M5.1 what to store, M5.3 victims, M5.4 refusal, M5.5 the spec), I3, I6, L3/A4."""
        self.last_store_refused = got is None
        if got is None:
            if scope.need <= scope.evictable:
                return Verdict(("I6",), f"prepare_store returned None, but it could store: {len(scope.to_store)} new "
                               f"hashes, {scope.free} free blocks and {scope.evictable} ready idle blocks outside "
                               "the input", f"{var} is not None")
            return None
        return self._admitted(scope, got, var) or self._store_output(scope, expected, got, var)

    def _admitted(self, scope: StoreScope, got: Any, var: str) -> Verdict | None:
        """N2: with admission on, an absent key stores only once offered ``store_threshold`` times."""
        stored = getattr(got, "block_hashes_to_store", None)
        if self.admission is None or not isinstance(stored, (list, tuple)):
            return None  # off, or not a PrepareStoreOutput: M5's shape check reports it
        early = [h for h in stored if h not in scope.before and h not in scope.to_store]
        if not early:
            return None
        count = self.admission.counts.get(early[0], 0)
        return Verdict(("N2", "M5"), f"prepare_store stored {self.name(early[0])}, offered {count} time(s) so far, "
                       f"but store_threshold is {self.admission.store_threshold} (N2: not admitted yet)",
                       f"{self.name(early[0])} not in {var}.block_hashes_to_store")

    def _store_output(self, scope: StoreScope, expected: Any, got: Any, var: str) -> Verdict | None:
        """M5.1 (N2), M5.3, M5.4, the victims (``_wrong_victims``), then the spec (``_store_spec``)
        once the victims' block ids are dropped."""
        fields = ("block_hashes_to_store", "store_spec", "block_hashes_evicted")
        if not all(isinstance(getattr(got, f, None), (list, tuple)) for f in fields[::2]) or \
                not hasattr(got, "store_spec"):
            return Verdict(("M5",), f"prepare_store returned {got!r} ({type(got).__name__}), not a "
                           "PrepareStoreOutput with lists block_hashes_to_store and block_hashes_evicted and a "
                           f"store_spec, nor None", f"{var} is None or all(hasattr({var}, f) for f in {fields!r})")
        to_store, evicted = list(got.block_hashes_to_store), list(got.block_hashes_evicted)
        stored = set(to_store)
        missing = [h for h in scope.to_store if h not in stored]
        if missing:
            admitted = "" if self.admission is None else " and admitted (N2)"
            admitted = " (N2: store_threshold 1 admits every offer)" if self.threshold_one else admitted
            return Verdict(self.refine(("M5",) if not admitted else ("N2", "M5"), missing[0]),
                           f"prepare_store did not store {self.name(missing[0])}, which is absent{admitted} (M5.1); "
                           f"block_hashes_to_store is {listed(self.name, to_store)}",
                           f"{self.name(missing[0])} in {var}.block_hashes_to_store")
        verdict = scope.victim_fault(evicted, self.name, var)
        if verdict is not None:
            return verdict
        if expected is None:  # only reachable with exact policies
            return Verdict(("M5",), "prepare_store stored although no eviction could satisfy it (M5.4)",
                           f"{var} is None")
        if to_store != list(expected.block_hashes_to_store):
            want = listed(self.name, expected.block_hashes_to_store)
            return Verdict(("M5",), f"block_hashes_to_store is {listed(self.name, to_store)}, the contract expects "
                           f"{want} (M5.1: the absent hashes, first occurrence order)",
                           f"list({var}.block_hashes_to_store) == {want}")
        if self.adopt is None and evicted != list(expected.block_hashes_evicted):
            return self._wrong_victims(evicted, list(expected.block_hashes_evicted), var)
        for victim in evicted:
            self.id_of.pop(victim, None)
        return self._store_spec(got, len(scope.to_store), var)

    def _wrong_victims(self, evicted: list[bytes], expected: list[bytes], var: str) -> Verdict:
        """L3/A4/F5/V5 (or the state they depend on); M10 when a manager that touches on
        loads or stores evicts just these."""
        clause = EXACT_VICTIM_CLAUSE[self.policy]
        want = listed(self.name, expected)
        head = self._victims_text(evicted, expected)
        check = f"list({var}.block_hashes_evicted) == {want}"
        culprit = self.m10_culprit(evicted)
        if culprit is not None:
            return Verdict(("M10", clause), f"{head}; the target's victims are those of a manager whose {culprit} "
                           "touches the policy (M10: only touch, stores, evictions and failed stores change the "
                           "policy's order)", check)
        return Verdict(victim_blame(self.policy), f"{head} {WRONG_VICTIM[self.policy][1]}", check)

    def _victims_text(self, evicted: list[bytes], expected: list[bytes], most: int = 12) -> str:
        """Both victim lists; for longer ones (the large example: hundreds of blocks) their
        lengths and a few victims from the first difference on (the check keeps them whole)."""
        policy = self.policy.upper()
        if max(len(evicted), len(expected)) <= most:
            return f"prepare_store evicted {listed(self.name, evicted)}, {policy} evicts {listed(self.name, expected)}"
        start = next((i for i, (a, b) in enumerate(zip(evicted, expected)) if a != b), min(len(evicted), len(expected)))

        def window(victims: list[bytes]) -> str:
            shown = listed(self.name, victims[start:start + 6])
            return shown[:-1] + ", …]" if len(victims) > start + 6 else shown

        return (f"prepare_store evicted {len(evicted)} blocks, {policy} evicts {len(expected)}; from victim {start} "
                f"on the target's are {window(evicted)}, {policy}'s {window(expected)}")

    def m10_culprit(self, evicted: list[bytes]) -> str | None:
        """The method whose touching the policy (an M10 bug) explains the target's victims."""
        if self.calls is None:
            return None
        for method in ("prepare_load", "complete_load", "complete_store"):
            # the model with one M10 bug: ``method``, when it succeeds, also touches the policy
            shadow = ReferenceManager(self.capacity, policy=self.policy, enable_events=self.events_on)
            out: Outcome = (None, None)
            for name, items, keywords in self.calls:
                out = invoke(getattr(shadow, name), list(items), **keywords)
                if name == method and out[1] is None and keywords.get("success", True):
                    shadow.policy.touch(list(items))
            if isinstance(out[0], PrepareStoreOutput) and list(out[0].block_hashes_evicted) == evicted:
                return method
        return None

    def _store_spec(self, got: Any, count: int, var: str) -> Verdict | None:
        """M5.5 and B4: the spec addresses one block per hash stored, on one medium."""
        spec = got.store_spec
        medium = spec.medium() if hasattr(spec, "medium") else None
        if self.medium is None:
            self.medium = medium
        elif medium != self.medium:
            return Verdict(("B4",), f"store spec medium {medium!r} differs from earlier {self.medium!r}",
                           f"{var}.store_spec.medium() == {self.medium!r}")
        ids = getattr(spec, "block_ids", None)
        if ids is None:
            return None
        if len(ids) != count:
            return Verdict(("M5",), f"store_spec addresses {len(ids)} blocks for {count} hashes to store (M5.5)",
                           f"len({var}.store_spec.block_ids) == {count}")
        for index, h in enumerate(got.block_hashes_to_store):
            self.id_of[h] = (int(ids[index]), f"{var}.store_spec.block_ids[{index}]" if self.sources else "")
        self.ids_added = True
        # B4: a CPU block id addresses the backend's buffer, so it lies in [0, capacity)
        # (vLLM 0.32's CPU spec has no medium(); its class name says CPU).
        if medium == "CPU" or type(spec).__name__.startswith("CPU"):
            outside = [int(i) for i in ids if not 0 <= int(i) < self.capacity]
            if outside:
                return Verdict(("B4",), f"store_spec addresses block {outside[0]}, outside [0, {self.capacity})",
                               f"all(0 <= int(i) < {self.capacity} for i in {var}.store_spec.block_ids)")
        return None

    # -- observations -----------------------------------------------------------------------
    def events(self, target: Any, var: str = "events") -> Verdict | None:
        """M8: ``take_events`` yields the model's events (M5 removed, M6 stored, M7 none for
        a failed store), with one block size and medium; I5: replaying them gives the ready set."""
        try:
            target_events = list(target.take_events())
        except Exception as error:  # the target may raise anything
            return Verdict(("M8",), f"take_events raised {error!r}")
        model_events = self.model.take_events()
        failed, self.failed_since_take = self.failed_since_take, set()
        if not target_events and not model_events:  # nothing changed the ready set (I5 held after the last events)
            return None
        view = [(list(e.block_hashes), bool(e.removed)) for e in target_events]
        expected = [(list(e.block_hashes), bool(e.removed)) for e in model_events]
        if not self.events_on and view:
            return Verdict(("M8",), "events are off, but take_events yielded events", f"{var} == []")
        for meta in [(event.block_size, event.medium) for event in target_events]:
            self.event_meta = self.event_meta or meta  # the first event's: every later one must agree
            if meta != self.event_meta:
                return Verdict(("M8",), f"event block_size/medium {meta!r} differ from earlier {self.event_meta!r}")
        ready = self.ready_set()
        if view != expected:
            def render(events: list[tuple[list[Any], bool]]) -> str:
                return "[" + ", ".join(f"({listed(self.name, hs)}, {rm})" for hs, rm in events) + "]"

            want = render(expected)
            return Verdict(event_blame(view, expected, ready, failed), f"take_events yielded {len(view)} event(s) "
                           f"{render(view)}; the contract expects {want}",
                           f"[(list(e.block_hashes), e.removed) for e in {var}] == {want}")
        for hashes, removed in view:
            (self.replayed.difference_update if removed else self.replayed.update)(hashes)
        if self.events_on and self.replayed != ready:
            return Verdict(("I5",), "replaying the events does not give the ready set")
        return None

    def sweep(self, target: Any, hashes: Sequence[bytes], clauses: tuple[str, ...], why: str,
              var: str = "") -> Verdict | None:
        """M1 on ``lookup([h])`` of each hash alone: 1 exactly when the model holds it ready."""
        ready = self.ready_set()
        expected = [1 if h in ready else 0 for h in hashes]
        for index, h in enumerate(hashes):
            got, error = invoke(target.lookup, [h])
            if error is not None:
                return Verdict(("M1",), f"lookup([{self.name(h)}]) raised {error!r} ({why})")
            if got == expected[index]:
                continue
            state = STATE[expected_lookup(self.ref(h))]
            found = self.refine(clauses, h) if got else clauses
            if got and self.ref(h) == -1:
                found = ("M1", *clauses)  # pending blocks end the prefix
            check = var or f"[m.lookup([h]) for h in ({', '.join(map(self.name, hashes))},)]"
            return Verdict(found, f"{why}, lookup([{self.name(h)}]) returned {got!r}, but {self.name(h)} is {state}",
                           f"{check} == {expected!r}")
        return None

    def key_sweep(self, target: Any, keys: Sequence[bytes], clauses: tuple[str, ...], why: str,
                  var: str) -> Verdict | None:
        """K1: ``target.key_lookup(key)`` (the name of ``lookup(key, ctx)``'s answer) for each
        of ``keys`` is HIT where the model holds the key ready, HIT_PENDING where pending, MISS
        where absent."""
        answers: list[str] = []
        for h in keys:
            answer, error = invoke(target.key_lookup, h)
            if error is not None:
                return Verdict(("K1", "M1"), f"lookup({self.name(h)}, ctx) raised {error!r} ({why})")
            answers.append(answer)
        expected = [expected_lookup(self.ref(h)) for h in keys]
        index = next((i for i, (a, b) in enumerate(zip(answers, expected)) if a != b), None)
        if index is None:
            return None
        h, got, want = keys[index], answers[index], expected[index]
        if got == "HIT" and want == "HIT_PENDING":
            found = ("K1", "M1", *clauses)  # pending blocks are not readable
        elif got == "HIT":
            found = (*self.refine(clauses, h), "K1")
        elif want in ("HIT", "MISS"):
            found = (*clauses, "K1")  # the target lost a ready block, or still holds one the model dropped
        else:
            found = ("K1", *clauses)  # the answer itself is wrong (MISS or RETRY while pending)
        return Verdict(found, f"{why}, lookup({self.name(h)}, ctx) answered {got}, but {self.name(h)} is "
                       f"{STATE[want]}: K1 expects {want}", f"{var}[{index}] == {want!r}")

    def prefix_lookups(self, target: Any, queries: Iterable[Sequence[bytes]], clause: str, why: str) -> Verdict | None:
        """M1 on longer queries: the longest prefix of ready hashes."""
        for query in queries:
            got, error = invoke(target.lookup, list(query))
            expected = self.model.lookup(list(query))
            source = f"m.lookup({listed(self.name, query)})" if error is not None or got != expected else ""
            if error is not None:
                return Verdict(("M1",), f"{source} raised {error!r} {why}")
            if got != expected:
                return Verdict(("M1", clause), f"{why}, {source} returned {got!r}; the model says {expected!r}",
                               f"{source} == {expected!r}")
        return None

    def aliasing(self) -> Verdict | None:
        """I4: the block ids of live blocks never collide (I8 when the hashes are confusable).
        Checked once ids were added since it last held (``ids_added``): only a store adds
        live blocks and ids; every other call can only drop them, and a collision with them."""
        if not self.ids_added:
            return None
        owners: dict[int, tuple[bytes, str]] = {}
        for h in self.model.blocks():
            known = self.id_of.get(h)
            if known is None:
                continue
            other = owners.setdefault(known[0], (h, known[1]))
            if other[0] != h:
                return Verdict(("I4", "I8") if confusable(h, other[0]) else ("I4",),
                               f"{self.name(h)} and {self.name(other[0])} are both present and share block {known[0]}",
                               f"{known[1]} != {other[1]}" if known[1] and other[1] else "")
        self.ids_added = False
        return None


def probe_calls(model: ReferenceManager, inflight: Iterable[Sequence[bytes]], forgotten: Sequence[bytes],
                fresh: Sequence[bytes]) -> list[tuple[str, tuple[bytes, ...], bool]]:
    """The calls that make a target manager's hidden order observable, judged as any others
    (the model checker's ``probe``, the machines' ``teardown``): ``(method, hashes, success)``.
    Every load in flight completed (C2); every pending store completed (C3), in the model's
    order reversed (most recent first: a manager touching on completion, an M10 bug, keeps
    their order, so the probe lends M10's explanation no order of its own); a touch of the
    ``forgotten`` hashes (in none of the model's lists, ghost lists included: a no-op for it,
    C4, which reorders a target still remembering one); then one store of ``fresh`` hashes
    (as many as the capacity) evicting every block at once: its victims are the whole
    eviction order (L3, A4, F5, V5)."""
    pending = tuple(h for h, block in reversed(model.blocks().items()) if block.ref_cnt == -1)
    calls = [("complete_load", tuple(load), True) for load in inflight]
    calls += [("complete_store", pending, True)] if pending else []
    calls += [("touch", tuple(forgotten), True)] if forgotten else []
    return [*calls, ("prepare_store", tuple(fresh), True)]


# -- CachePolicy (P1–P6, L1–L3, A1–A6) -------------------------------------------------------------
#: A policy call the caller protocol allows must not raise: its clause, and what it was.
POLICY_CALL = {"insert": ("P2", "insert of an absent hash"), "remove": ("P3", "remove of a present hash"),
               "touch": ("P4", "touch"), "evict": ("P5", "evict")}


def policy_call(target: Any, method: str, *args: Any) -> tuple[Any, Verdict | None]:
    """Call the target policy (a protocol-keeping call): its answer, or the verdict when it
    raised (P2–P5) or read a one-shot argument twice (M0)."""
    value, error = invoke(getattr(target, method), *args)
    if args and isinstance(args[0], OneShot) and args[0].reiterated:
        return value, Verdict(("M0",), f"{method} iterated its one-shot argument twice", "not a.reiterated")
    if error is not None:
        clause, what = POLICY_CALL[method]
        return value, Verdict((clause,), f"{what} raised {error!r}")
    return value, None


def _victims_view(victims: Any) -> list[tuple[bytes, int]] | None:
    return None if victims is None else [(h, int(b.block_id)) for h, b in victims]


def judge_evict(policy: str, n: int, protected: Set[bytes], got: Any, expected: Any,
                blocks: Mapping[bytes, BlockStatus], name: Name, var: str = "r") -> Verdict | None:
    """P5 and the exact order (L3, A4, F5, V5): ``got`` must be ``expected``, each victim
    with the very block inserted; ``expected`` is ``None`` in ``any`` mode (eligibility only)."""
    if policy not in EXACT_VICTIM_CLAUSE:
        return _judge_any_victims(n, got, blocks, protected, name, var)
    got_view, want = _victims_view(got), _victims_view(expected)
    if got_view != want:
        rendered = "None" if want is None else "[" + ", ".join(f"({name(h)}, {i})" for h, i in want) + "]"
        ineligible = got is not None and any(
            blocks.get(h) is None or blocks[h].ref_cnt != 0 or h in protected for h, _ in got)
        return Verdict(victim_blame(policy, refused=got is None, ineligible=ineligible),
                       f"evict({n}, ...) returned {got_view!r}; {policy.upper()} evicts {rendered}",
                       f"(None if {var} is None else [(h, blk.block_id) for h, blk in {var}]) == {rendered}")
    for index, (h, block) in enumerate(got or ()):
        if block is not blocks.get(h):
            return _other_block(name(h), f"{var}[{index}][1] is blk{blocks[h].block_id}")
    return None


def _other_block(label: str, check: str) -> Verdict:
    return Verdict(("P5", "P1"), f"evict returned {label} with a block other than the one inserted", check)


def _judge_any_victims(n: int, got: Any, blocks: Mapping[bytes, BlockStatus], protected: Set[bytes], name: Name,
                       var: str) -> Verdict | None:
    """P5: ``n`` distinct present, ready, idle, unprotected victims, or ``None`` only when
    fewer are eligible (I6)."""
    eligible_count = sum(1 for h, b in blocks.items() if b.ref_cnt == 0 and h not in protected)
    if got is None:
        if eligible_count >= n:
            return Verdict(("P5", "I6"), f"evict({n}, ...) returned None, but {eligible_count} blocks are ready, "
                           "idle and unprotected", f"{var} is not None")
        return None
    pairs = list(got)
    if len(pairs) != n and eligible_count < n:  # the check holds on a fixed policy too
        return Verdict(("P5",), f"evict({n}, ...) returned {len(pairs)} victims, but only {eligible_count} "
                       "blocks are eligible: P5 wants None and no change", f"{var} is None")
    if len(pairs) != n:
        return Verdict(("P5",), f"evict({n}, ...) returned {len(pairs)} victims", f"{var} is not None and len({var}) == {n}")
    seen: set[bytes] = set()
    for index, (h, block) in enumerate(pairs):
        entry = blocks.get(h)
        if entry is None or h in seen:
            return Verdict(("P5",), f"evict returned {h!r}, which is not present (or twice)")
        if entry.ref_cnt != 0:
            return Verdict(("P5", "I3"), f"evict returned {name(h)} with ref_cnt {entry.ref_cnt} (not ready and idle)",
                           f"{var} is None or {var}[{index}][0] != {name(h)}")
        if h in protected:
            return Verdict(("P5",), f"evict returned the protected hash {name(h)}", f"{var} is None or {var}[{index}][0] != {name(h)}")
        if block is not entry:
            return _other_block(name(h), f"{var} is None or {var}[{index}][1] is blk{entry.block_id}")
        seen.add(h)
    return None


def judge_gets(target: Any, pool: Sequence[bytes], blocks: Mapping[bytes, BlockStatus], ghosts: Set[bytes],
               clause: str, why: str, name: Name, var: str = "", ghost_clause: str = "A2") -> Verdict | None:
    """P1 (``ghost_clause`` for a policy's ghosts: A2 for ARC, F3 for S3-FIFO; I8 for
    confusable hashes): ``get(h)`` is the very block inserted for a present hash, ``None``
    for any other."""
    def check(index: int) -> str:  # rendered only for a failure: naming may build the reproduction
        return f"{var or '[p.get(h) for h in (' + ', '.join(map(name, pool)) + ',)]'}[{index}]"

    for index, h in enumerate(pool):
        value, error = invoke(target.get, h)
        if error is not None:
            return Verdict(("P1",), f"get raised {error!r}")
        entry = blocks.get(h)
        if entry is None and value is not None:
            ghost = h in ghosts
            return Verdict((ghost_clause, "P1") if ghost else ("P1", "I8"), f"{why}, get({name(h)}) returned {value!r}, but "
                           f"{name(h)} is not present" + (" (it is a ghost)" if ghost else ""), f"{check(index)} is None")
        if entry is not None and value is not entry:
            return Verdict((clause, "P1", "I8") if clause != "P1" else ("P1", "I8"),
                           f"{why}, get({name(h)}) returned {value!r}, not the block inserted (blk{entry.block_id})",
                           f"{check(index)} is blk{entry.block_id}")
    return None


def judge_ref_counts(blocks: Iterable[tuple[BlockStatus, int]], why: str) -> Verdict | None:
    """P6: the policy never changes a block's ``ref_cnt`` (``blocks``: block, the value the caller set)."""
    for block, ref in blocks:
        if int(block.ref_cnt) != ref:
            return Verdict(("P6",), f"{why}, blk{block.block_id}.ref_cnt is {block.ref_cnt}, but the caller set {ref}",
                           f"blk{block.block_id}.ref_cnt == {ref}")
    return None


#: The calls ``JudgedManager`` judges.
JUDGED_CALLS = frozenset(("lookup", "prepare_load", "complete_load", "touch", "prepare_store", "complete_store"))


class JudgedManager:
    """An ``OffloadingManager`` whose every call is judged (``ManagerJudge.step``, then
    the events, M8, and the block ids, I4) while the caller gets the target's own answers
    and errors: drivers that are not state machines (``simulate``) put it between
    themselves and the target. The first ``verdict`` is kept; after it the model and the
    target have parted, so later calls go to the target unjudged."""

    def __init__(self, target: Any, capacity: int, policy: str, name: Name) -> None:
        self.target = target
        self.judge = ManagerJudge(capacity, policy, True, name, sources=False)
        self.verdict: Verdict | None = None
        self.judged_calls = 0

    def _call(self, method: str, argument: Any, **keywords: Any) -> Any:
        if self.verdict is not None:
            return getattr(self.target, method)(argument, **keywords)
        items = list(argument)
        shaped = argument if isinstance(argument, (list, tuple, set, frozenset)) else OneShot(items)
        step = self.judge.step(self.target, method, shaped, items, "r", "list", **keywords)
        self.judged_calls += 1
        self.verdict = step.verdict or (None if method == "lookup" else self.judge.events(self.target)) \
            or self.judge.aliasing()
        if step.target[1] is not None:
            raise step.target[1]
        return step.target[0]

    def __getattr__(self, method: str) -> Any:
        """The six batch calls, each judged (``take_events`` below)."""
        if method not in JUDGED_CALLS:
            raise AttributeError(method)
        return functools.partial(self._call, method)

    def take_events(self) -> list[Any]:
        """``[]`` while judging: the judge took and compared the target's events after each call (M8)."""
        if self.verdict is None:
            self.verdict = self.judge.events(self.target)  # the target's events were judged call by call
            return []
        return list(self.target.take_events())
