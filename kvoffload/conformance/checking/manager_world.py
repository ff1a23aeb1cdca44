"""The lockstep world of ``check-exhaustive`` for an ``OffloadingManager`` (M0–M10, I1–I8).

Calls per state, over the hash alphabet (``symmetry``), computed from the model's state
so that every sequence keeps the caller protocol C1–C5:

- ``touch(s)``: ordered sequences of 1..``touch_max`` distinct hashes (absent and ghost
  hashes included: C4);
- ``prepare_store(s)``: ordered sequences of 1..``store_max`` distinct hashes, passed as
  a one-shot iterator (M0);
- ``complete_store(s, success)``: every non-empty subset of the pending hashes, with
  ``success`` True and False (C3), one-shot;
- ``prepare_load(s)``: every non-empty subset of the ready hashes with fewer than
  ``max_pins`` loads in flight (C1; the bound keeps the state space finite);
- ``complete_load(s)``: one of the loads in flight, with its own hashes (C2).

Events are on, and ``take_events()`` follows every call (so no event queue is carried
between states): the events must be those of the model, with ``removed`` (M5–M8, I5).
After every call: ``lookup([h])`` of every alphabet hash, ``lookup(H)`` and
``lookup(reversed(H))`` (M1, I7 after a refused store), the model's
``check_invariants()`` (I1–I4) and the target's block ids of live hashes (I4). Each call
compares exception or not, ``None`` vs not, ``block_hashes_to_store`` and
``block_hashes_evicted`` in order (M5, I3, I6, L3/A4) and load ids against store ids (M2).

The joint state's fingerprint: the model's policy lists (hashes, ref counts, order; ARC's
ghosts and ``p``), the loads in flight, and the target's observable state (the block id
it gave each live hash), with free hashes renamed (``symmetry.Relabel``). The events'
``block_size``/``medium`` are compared with the first event of the path being judged, and
are not part of the state.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Hashable
from typing import Any

from ...spec import ReferenceCPUBackend, ReferenceManager
from ...spec.types import BlockStatus
from ..lockstep.machine_base import Outcome, invoke
from ..judge import confusable, event_blame, replay_events, victim_blame, victim_fault
from ..reports.result import CallLog, ConformanceFailure
from ..lockstep.strategies import OneShot
from .policy_state import FIELDS, clone_policy, held, policy_key
from .symmetry import DISTINGUISHED, Relabel, canonical_calls, hash_alphabet

__all__ = ["hash_alphabet", "ManagerOp", "ManagerWorld", "distinguished_text", "manager_alphabet_text", "render_op"]

#: One call: (method, hashes, success) — success only for complete_store.
ManagerOp = tuple[str, tuple[bytes, ...], bool]


def distinguished_text(distinguished: int) -> str:
    relations = ["h0", "h1 shares h0's first 8 bytes", "h2 is a prefix of h0"][:distinguished]
    return f"{', '.join(relations)}, the rest are" if distinguished else "all"


def manager_alphabet_text(hashes: int, touch_max: int, store_max: int, max_pins: int, distinguished: int = 3) -> str:
    return (
        f"hashes H=h0..h{hashes - 1} ({distinguished_text(distinguished)} "
        f"interchangeable: symmetry-reduced); calls: touch(1..{touch_max} distinct of H, ordered), "
        f"prepare_store(1..{store_max} distinct of H, ordered, one-shot), "
        "complete_store(non-empty subset of pending, success=True|False, one-shot), "
        f"prepare_load(non-empty subset of ready with < {max_pins} loads in flight), "
        "complete_load(a load in flight); after each call: take_events(), lookup([h]) for h in H, "
        "lookup(H), lookup(reversed(H))"
    )


def _subsets(items: list[bytes]) -> list[tuple[bytes, ...]]:
    return [combo for size in range(1, len(items) + 1) for combo in itertools.combinations(items, size)]


def render_op(op: ManagerOp, name: Callable[[object], str], var: str = "m") -> str:
    method, hashes, success = op
    listed = "[" + ", ".join(name(h) for h in hashes) + "]"
    if method in ("prepare_store", "complete_store"):
        listed = f"iter({listed})"
    if method == "complete_store":
        call = f"{var}.complete_store({listed}, success={success})"
    elif method == "prepare_store":
        call = f"r = {var}.prepare_store({listed})"
    else:
        call = f"{var}.{method}({listed})"
    return f"{call}; events = list({var}.take_events())"


#: Hashes outside every alphabet, stored only by ``probe`` (never part of a state).
PROBE_HASHES = [bytes([0x70 + i]) * 32 for i in range(16)]
_MODEL_FIELDS = frozenset(vars(ReferenceManager(1)))


def clone_reference_manager(manager: ReferenceManager) -> ReferenceManager:
    """A copy of a manager built of the reference parts (faster than ``deepcopy``: the
    ctypes blocks are rebuilt, not pickled). Subclasses holding no state of their own
    (the planted bugs) are cloned the same way."""
    new = copy.copy(manager)
    backend = copy.copy(manager.backend)
    assert isinstance(backend, ReferenceCPUBackend)
    fresh: dict[int, BlockStatus] = {}
    for block_id, block in backend._handed_out.items():
        twin = fresh[id(block)] = BlockStatus(block_id)
        twin.ref_cnt = block.ref_cnt
    backend._handed_out = {block_id: fresh[id(block)] for block_id, block in backend._handed_out.items()}
    backend._free_ids = list(backend._free_ids)
    new.backend, new.policy, new._events = backend, clone_policy(manager.policy, fresh), list(manager._events)
    return new


def _clonable(target: Any) -> bool:
    return (
        isinstance(target, ReferenceManager)
        and set(vars(target)) == _MODEL_FIELDS
        and type(target.backend) in (ReferenceCPUBackend,)
        and set(vars(target.backend)) == {"block_size", "medium", "num_blocks", "_free_ids", "_handed_out"}
        and type(target.policy) in FIELDS
    )


class ManagerWorld:
    """A model ``ReferenceManager`` and a target manager, driven in lockstep."""

    def __init__(
        self,
        build: Callable[[], Any],
        capacity: int,
        policy: str,
        hashes: list[bytes],
        touch_max: int = 2,
        construct: str = "make()",
        imports: list[str] | None = None,
        store_max: int = 2,
        max_pins: int = 1,
        distinguished: int = DISTINGUISHED,
    ) -> None:
        self.capacity = capacity
        self.policy = policy
        self.pool = hashes
        self.touch_max = touch_max
        self.store_max = store_max
        self.max_pins = max_pins
        self.fixed = distinguished  # pool[:fixed] keep their names (h0, h1, h2: I8)
        self.model = ReferenceManager(capacity, policy=policy, enable_events=True)
        self.target: Any = build()
        self.inflight: list[tuple[bytes, ...]] = []
        self.id_of: dict[bytes, int] = {}
        self.event_meta: tuple[Any, Any] | None = None
        self.replayed: set[bytes] = set()
        self.construct = construct
        self.imports = imports or []
        self.history: list[ManagerOp] = []
        self.last_store_refused = False
        self.copyable = True
        self.observing = True
        self._log: CallLog | None = None  # lookups/gets after each call; off while probing
        self._calls: dict[frozenset[bytes], tuple[list[ManagerOp], list[ManagerOp]]] = {}

    # -- the alphabet -------------------------------------------------------------------
    def ref(self, h: bytes) -> int | None:
        block = self.model.policy.get(h)
        return None if block is None else int(block.ref_cnt)

    def in_state(self) -> set[bytes]:
        return held(self.model.policy)

    def hashes_in_state(self) -> int:
        return len(self.in_state())

    def _touches_and_stores(self) -> tuple[list[ManagerOp], list[ManagerOp]]:
        """Shared by every state with the same hashes in it (memoised: the alphabet is fixed)."""
        present = frozenset(self.in_state())
        found = self._calls.get(present)
        if found is None:
            touches: list[ManagerOp] = [("touch", s, True) for s in canonical_calls(self.pool, set(present), self.touch_max, self.fixed)]
            stores: list[ManagerOp] = [
                ("prepare_store", s, True) for s in canonical_calls(self.pool, set(present), self.store_max, self.fixed)
            ]
            found = self._calls[present] = (touches, stores)
        return found

    def enabled(self) -> list[ManagerOp]:
        touches, stores = self._touches_and_stores()
        blocks: dict[Any, BlockStatus] = self.model.blocks()
        pending = [h for h in self.pool if h in blocks and blocks[h].ref_cnt == -1]
        loadable = [h for h in self.pool if h in blocks and 0 <= blocks[h].ref_cnt < self.max_pins]
        ops: list[ManagerOp] = list(stores)
        for subset in _subsets(pending):
            ops.append(("complete_store", subset, True))
            ops.append(("complete_store", subset, False))
        ops.extend(("prepare_load", subset, True) for subset in _subsets(loadable))
        ops.extend(("complete_load", load, True) for load in dict.fromkeys(self.inflight))
        ops.extend(touches)
        return ops

    def fingerprint(self) -> Hashable:
        name = Relabel(self.pool[: self.fixed])
        lists = policy_key(self.model.policy, name)
        loads = tuple(sorted(name.many(load) for load in self.inflight))
        ids = tuple(sorted((name(h), block_id) for h, block_id in self.id_of.items()))
        return (lists, loads, ids)

    def fork(self) -> ManagerWorld | None:
        """An independent copy (the target deep-copied), or ``None`` if it cannot be."""
        if not self.copyable:
            return None
        new = copy.copy(self)
        try:
            new.target = clone_reference_manager(self.target) if _clonable(self.target) else copy.deepcopy(self.target)
        except Exception:  # a target that cannot be copied is rebuilt by replay instead
            self.copyable = False
            return None
        new.model = clone_reference_manager(self.model)
        new.inflight = list(self.inflight)
        new.id_of = dict(self.id_of)
        new.replayed = set(self.replayed)
        new.history = list(self.history)
        return new

    # -- failing ------------------------------------------------------------------------
    def fail(self, clauses: str | tuple[str, ...], message: str, check: str = "") -> None:
        ids = (clauses,) if isinstance(clauses, str) else clauses
        raise ConformanceFailure(ids, message, self.reproduction(check))

    def reproduction(self, check: str = "") -> str:
        """The calls so far as a snippet; hashes named as in the failure's message (a
        victim outside the alphabet gets the next name, defined in the snippet too)."""
        log = self._log if self._log is not None and len(self._log.lines) == len(self.history) else self._names()
        return log.render(self.construct, f"# the failing check:\nassert {check}" if check else "")

    # -- one step -----------------------------------------------------------------------
    def apply(self, op: ManagerOp) -> None:
        self.history.append(op)
        method, hashes, success = op
        getattr(self, "_" + method)(list(hashes), success)
        self._take_events()
        self.model.check_invariants()
        if self.observing:
            self.observe(method, success)

    def probe(self) -> None:
        """Make the target's eviction order observable before states are merged on the
        model's state (this world is spent: the engine probes a copy or a state it
        drops): touch every alphabet hash the model does not hold (a no-op in the model,
        so a target's hidden memory of it shows), complete every load and store in
        flight, then store ``capacity`` hashes
        that are never in the alphabet (evicting every block in one call), judged against
        the model: a recency bug that has not yet changed a victim is seen now, with
        those calls in the reproduction."""
        self.observing = False  # the probe judges victims and events; its states are spent
        blocks = self.model.blocks()
        if not blocks:
            return
        pending = tuple(h for h, b in blocks.items() if b.ref_cnt == -1)
        forgotten = tuple(h for h in self.pool if h not in self.in_state())
        if forgotten:  # a no-op for the model; a target still remembering one of them changes order
            self.apply(("touch", forgotten, True))
        for load in list(dict.fromkeys(self.inflight)):
            self.apply(("complete_load", load, True))
        if pending:
            self.apply(("complete_store", pending, True))
        self.apply(("prepare_store", tuple(PROBE_HASHES[: self.capacity]), True))

    def _call(self, method: str, items: list[bytes], clause: str, **keywords: Any) -> tuple[Outcome, Outcome]:
        oneshot = method in ("prepare_store", "complete_store")
        argument: Any = OneShot(items) if oneshot else list(items)
        target_out = invoke(getattr(self.target, method), argument, **keywords)
        model_out = invoke(getattr(self.model, method), list(items), **keywords)
        if isinstance(argument, OneShot) and argument.reiterated:
            self.fail("M0", f"{method} iterated its one-shot hashes argument a second time (M0: read it at most once)")
        if model_out[1] is not None:  # never on protocol-keeping sequences
            raise AssertionError(f"the model raised {model_out[1]!r} on a protocol-keeping call")
        if target_out[1] is not None:
            self.fail(clause, f"{method} raised {target_out[1]!r} on a call the contract allows; "
                      f"the model returned {model_out[0]!r}")
        return model_out, target_out

    def _touch(self, items: list[bytes], _: bool) -> None:
        self._call("touch", items, "M4")

    def _take_events(self) -> None:
        try:
            target_events = list(self.target.take_events())
        except Exception as error:
            self.fail("M8", f"take_events raised {error!r}")
        model_events = list(self.model.take_events())
        view = [(list(e.block_hashes), bool(e.removed)) for e in target_events]
        expected = [(list(e.block_hashes), bool(e.removed)) for e in model_events]
        for event in target_events:
            meta = (event.block_size, event.medium)
            if self.event_meta is None:
                self.event_meta = meta
            elif meta != self.event_meta:
                self.fail("M8", f"event block_size/medium {meta!r} differ from earlier {self.event_meta!r}")
        ready = {h for h, b in self.model.blocks().items() if b.ref_cnt >= 0}
        if view != expected:
            log = self._names()
            rendered = "[" + ", ".join(f"([{', '.join(map(log.name, hs))}], {rm})" for hs, rm in expected) + "]"
            got = "[" + ", ".join(f"([{', '.join(map(log.name, hs))}], {rm})" for hs, rm in view) + "]"
            self.fail(event_blame(view, expected, ready), f"take_events yielded {got}; the contract expects {rendered}",
                      f"[(list(e.block_hashes), e.removed) for e in events] == {rendered}")
        replay_events(self.replayed, view)
        if self.replayed != ready:
            self.fail("I5", "replaying the events does not give the ready set")

    def _complete_store(self, items: list[bytes], success: bool) -> None:
        self._call("complete_store", items, "M6" if success else "M7", success=success)
        for h in items:
            if self.ref(h) is None:
                self.id_of.pop(h, None)

    def _prepare_load(self, items: list[bytes], _: bool) -> None:
        _model_out, target_out = self._call("prepare_load", items, "M2")
        self.inflight.append(tuple(items))
        ids = getattr(target_out[0], "block_ids", None)
        if ids is None:
            return
        if len(ids) != len(items):
            self.fail("M2", f"the load spec addresses {len(ids)} blocks for {len(items)} hashes")
        for index, h in enumerate(items):
            known = self.id_of.get(h)
            if known is not None and int(ids[index]) != known:
                self.fail(self.refine(("M2",), h), f"prepare_load addressed {h!r} as block {int(ids[index])}, "
                          f"but its store spec said block {known}")

    def _complete_load(self, items: list[bytes], _: bool) -> None:
        self.inflight.remove(tuple(items))
        self._call("complete_load", items, "M3")

    def _prepare_store(self, items: list[bytes], _: bool) -> None:
        blocks_before = {h: int(b.ref_cnt) for h, b in self.model.blocks().items()}
        to_store = list(dict.fromkeys(h for h in items if h not in blocks_before))
        free = self.model.backend.get_num_free_blocks()
        need = max(0, len(to_store) - free)
        protected = set(items)
        evictable = sum(1 for h, r in blocks_before.items() if r == 0 and h not in protected)
        model_out, target_out = self._call("prepare_store", items, "M5")
        model_value, target_value = model_out[0], target_out[0]
        self.last_store_refused = target_value is None
        if target_value is None:
            if model_value is not None:
                self.fail("I6", f"prepare_store returned None, but it could store: {len(to_store)} new hashes, "
                          f"{free} free blocks and {evictable} ready idle blocks outside the input", "r is not None")
            return
        evicted = list(target_value.block_hashes_evicted)
        got = set(target_value.block_hashes_to_store)
        missing = [h for h in to_store if h not in got]
        if missing:
            self.fail(self.refine(("M5",), missing[0]),
                      f"prepare_store did not store {missing[0]!r}, which is absent (M5.1), "
                      f"block_hashes_to_store is {list(target_value.block_hashes_to_store)!r}")
        fault = victim_fault(evicted, blocks_before, protected, need, self._names().name)
        if fault is not None:
            self.fail(*fault)
        if model_value is None:
            self.fail("M5", "prepare_store stored although no eviction could satisfy it (M5.4)", "r is None")
        got_to_store = list(target_value.block_hashes_to_store)
        if got_to_store != list(model_value.block_hashes_to_store):
            self.fail("M5", f"block_hashes_to_store is {got_to_store!r}, the contract expects "
                      f"{model_value.block_hashes_to_store!r} (M5.1)")
        if evicted != list(model_value.block_hashes_evicted):
            name = self._names().name
            expected = "[" + ", ".join(map(name, model_value.block_hashes_evicted)) + "]"
            self.fail(victim_blame(self.policy),
                      f"prepare_store evicted [{', '.join(map(name, evicted))}], {self.policy.upper()} evicts {expected}",
                      f"list(r.block_hashes_evicted) == {expected}")
        for victim in evicted:
            self.id_of.pop(victim, None)
        ids = getattr(target_value.store_spec, "block_ids", None)
        if ids is not None:
            if len(ids) != len(to_store):
                self.fail("M5", f"store_spec addresses {len(ids)} blocks for {len(to_store)} hashes to store (M5.5)")
            for index, h in enumerate(got_to_store):
                self.id_of[h] = int(ids[index])

    # -- observations -------------------------------------------------------------------
    def refine(self, clauses: tuple[str, ...], h: bytes) -> tuple[str, ...]:
        if any(confusable(h, other) for other in self.model.blocks()):
            return ("I8", *clauses)
        return clauses

    def observed(self) -> list[bytes]:
        """The hashes looked up after a call: those in the state, the distinguished ones
        and one fresh free hash (the other fresh ones are its renamings), alphabet order."""
        in_state = self.in_state()
        fresh = [h for h in self.pool[self.fixed :] if h not in in_state][:1]
        return [h for h in self.pool if h in in_state or h in fresh or h in self.pool[: self.fixed]]

    def observe(self, method: str, success: bool) -> None:
        """M1 after every call (I7 after a refused store); I4 on the target's block ids."""
        hashes = self.observed()
        blocks = self.model.blocks()
        lookup = self.target.lookup
        for h in hashes:
            block = blocks.get(h)
            value, error = invoke(lookup, [h])
            if error is not None or value != (1 if block is not None and block.ref_cnt >= 0 else 0):
                self._lookup_mismatch(method, success, [h])
        for query in (hashes, hashes[::-1]):
            value, error = invoke(lookup, list(query))
            if error is not None or value != self.model.lookup(list(query)):
                self._lookup_mismatch(method, success, query)
        owners: dict[int, bytes] = {}
        for h in blocks:
            known = self.id_of.get(h)
            if known is None:
                continue
            other = owners.setdefault(known, h)
            if other != h:
                log = self._names()
                self.fail(("I4", "I8") if confusable(h, other) else ("I4",),
                          f"{log.name(h)} and {log.name(other)} are both present and share block {known}")

    def _names(self) -> CallLog:
        """The reproduction's log (alphabet, then the calls): a message naming hashes
        with it agrees with the snippet. Built only on the way to a failure."""
        log = self._log = CallLog("m", self.imports)
        for h in self.pool:
            log.name(h)
        for op in self.history:
            log.add(render_op(op, log.name))
        return log

    def _lookup_mismatch(self, method: str, success: bool, query: list[bytes]) -> None:
        """Name the clause a wrong lookup answer breaks, and fail."""
        clause = {"touch": "M4", "prepare_store": "M5", "complete_store": "M6" if success else "M7",
                  "prepare_load": "M2", "complete_load": "M3"}[method]
        if method == "prepare_store" and self.last_store_refused:
            clause = "I7"
        log = self._names()
        source = f"m.lookup([{', '.join(map(log.name, query))}])"
        value, error = invoke(self.target.lookup, list(query))
        expected = self.model.lookup(list(query))
        if error is not None:
            self.fail("M1", f"{source} raised {error!r} after {method}")
        found: tuple[str, ...] = (clause,)
        if len(query) > 1:
            found = ("M1", clause)
        elif value and self.ref(query[0]) == -1:
            found = ("M1", clause)
        elif value:
            found = self.refine(found, query[0])
        self.fail(found, f"after {method}, {source} returned {value!r}; the model says {expected!r}",
                  f"{source} == {expected!r}")
