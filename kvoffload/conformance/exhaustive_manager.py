"""The lockstep world of ``check-exhaustive`` for an ``OffloadingManager`` (M0–M10, I1–I8).

Call alphabet per step, over the hash alphabet H (3 or 4 hashes, see ``hash_alphabet``),
computed from the model's state so that every sequence keeps the caller protocol C1–C5:

- ``touch(s)``: every ordered sequence ``s`` of 1..``touch_max`` distinct hashes of H
  (absent and ghost hashes included: C4);
- ``prepare_store(s)``: every ordered sequence of 1..min(capacity+1, |H|) distinct
  hashes of H (C4, C5), passed as a one-shot iterator (M0);
- ``complete_store(s, success)``: every non-empty subset ``s`` of the pending hashes, in
  alphabet order, with ``success`` True and False (C3: each pending hash completed once),
  passed as a one-shot iterator;
- ``prepare_load(s)``: every non-empty subset of the ready hashes, in alphabet order (C1);
- ``complete_load(s)``: one of the loads in flight, with its own hashes (C2);
- ``take_events()``.

Events are on. After every step (observations, not branching): ``lookup([h])`` of every
h in H, ``lookup(H)`` and ``lookup(reversed(H))`` are compared with the model (M1, and
I7 after a refused store), the model's ``check_invariants()`` runs (I1–I4), and the
target's block ids of the live hashes must be distinct (I4). Each call compares the
answer: exception or not (ContractViolation vs not), ``None`` vs not and
``block_hashes_to_store`` and ``block_hashes_evicted`` in order (M5, I3, I6, L3/A4),
load spec ids against the store spec ids (M2), events with ``removed`` (M6–M8, I5).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable
from typing import Any

from ..spec import ContractViolation, ReferenceARCPolicy, ReferenceLRUPolicy, ReferenceManager
from .machine_base import Outcome, invoke
from .report import CallLog, ConformanceFailure
from .strategies import OneShot

__all__ = ["hash_alphabet", "ManagerOp", "ManagerWorld", "manager_alphabet_text", "render_op"]

#: One call: (method, hashes, success) — success only for complete_store.
ManagerOp = tuple[str, tuple[bytes, ...], bool]

_BASE = bytes.fromhex("00112233445566778899aabbccddeeff0123456789abcdeffedcba9876543210")


def hash_alphabet(size: int = 3) -> list[bytes]:
    """h0: 32 bytes; h1: same first 8 bytes as h0, differs after (a 64-bit fingerprint
    collision); h2: h0's first 16 bytes (a prefix of h0, I8); h3: unrelated."""
    alphabet = [_BASE, _BASE[:8] + bytes(range(0xE0, 0xF8)), _BASE[:16], bytes(range(0x40, 0x60))]
    if not 1 <= size <= len(alphabet):
        raise ValueError(f"the hash alphabet has 1 to {len(alphabet)} hashes, not {size}")
    return alphabet[:size]


def manager_alphabet_text(hashes: int, touch_max: int, capacity: int) -> str:
    return (
        f"hashes H=h0..h{hashes - 1} (h1 shares h0's first 8 bytes, h2 is a prefix of h0); "
        f"ops: touch(1..{touch_max} distinct of H, ordered), "
        f"prepare_store(1..{min(capacity + 1, hashes)} distinct of H, ordered, one-shot), "
        "complete_store(non-empty subset of pending, success=True|False, one-shot), "
        "prepare_load(non-empty subset of ready), complete_load(a load in flight), take_events(); "
        "observed after each step: lookup([h]) for h in H, lookup(H), lookup(reversed(H))"
    )


def _confusable(a: bytes, b: bytes) -> bool:
    return a != b and (a[:8] == b[:8] or a.startswith(b) or b.startswith(a))


def _kind(error: BaseException) -> type[BaseException]:
    for kind in (ContractViolation, TypeError, ValueError):
        if isinstance(error, kind):
            return kind
    return type(error)


def _subsets(items: list[bytes]) -> list[tuple[bytes, ...]]:
    return [combo for size in range(1, len(items) + 1) for combo in itertools.combinations(items, size)]


def render_op(op: ManagerOp, name: Callable[[object], str], var: str = "m") -> str:
    method, hashes, success = op
    listed = "[" + ", ".join(name(h) for h in hashes) + "]"
    if method == "take_events":
        return f"list({var}.take_events())"
    if method in ("prepare_store", "complete_store"):
        listed = f"iter({listed})"
    if method == "complete_store":
        return f"{var}.complete_store({listed}, success={success})"
    return f"{var}.{method}({listed})"


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
    ) -> None:
        self.capacity = capacity
        self.policy = policy
        self.pool = hashes
        self.touch_max = touch_max
        self.model = ReferenceManager(capacity, policy=policy, enable_events=True)
        self.target: Any = build() if build is not None else None
        self.inflight: list[tuple[bytes, ...]] = []
        self.id_of: dict[bytes, int] = {}
        self.event_meta: tuple[Any, Any] | None = None
        self.replayed: set[bytes] = set()
        self.construct = construct
        self.imports = imports or []
        self.history: list[ManagerOp] = []
        self.step_ops = self._static_ops()

    # -- the alphabet -------------------------------------------------------------------
    def _static_ops(self) -> tuple[list[ManagerOp], list[ManagerOp]]:
        touches = [
            ("touch", seq, True)
            for size in range(1, min(self.touch_max, len(self.pool)) + 1)
            for seq in itertools.permutations(self.pool, size)
        ]
        stores = [
            ("prepare_store", seq, True)
            for size in range(1, min(self.capacity + 1, len(self.pool)) + 1)
            for seq in itertools.permutations(self.pool, size)
        ]
        return touches, stores

    def ref(self, h: bytes) -> int | None:
        block = self.model.policy.get(h)
        return None if block is None else int(block.ref_cnt)

    def enabled(self) -> list[ManagerOp]:
        touches, stores = self.step_ops
        pending = [h for h in self.pool if self.ref(h) == -1]
        ready = [h for h in self.pool if (r := self.ref(h)) is not None and r >= 0]
        ops: list[ManagerOp] = list(stores)
        for subset in _subsets(pending):
            ops.append(("complete_store", subset, True))
            ops.append(("complete_store", subset, False))
        ops.extend(("prepare_load", subset, True) for subset in _subsets(ready))
        ops.extend(("complete_load", load, True) for load in dict.fromkeys(self.inflight))
        ops.extend(touches)
        ops.append(("take_events", (), True))
        return ops

    def key(self) -> Hashable:
        policy = self.model.policy
        if isinstance(policy, ReferenceARCPolicy):
            lists: tuple[Any, ...] = (
                tuple((h, b.ref_cnt) for h, b in policy.t1.items()),
                tuple((h, b.ref_cnt) for h, b in policy.t2.items()),
                tuple(policy.b1),
                tuple(policy.b2),
                policy.p,
            )
        else:
            assert isinstance(policy, ReferenceLRUPolicy)
            lists = (tuple((h, b.ref_cnt) for h, b in policy.order.items()),)
        events = tuple((tuple(e.block_hashes), e.removed) for e in self.model._events)
        return (lists, self.model.backend.get_num_free_blocks(), tuple(sorted(self.inflight)), events)

    # -- failing ------------------------------------------------------------------------
    def fail(self, clauses: str | tuple[str, ...], message: str, check: str = "") -> None:
        ids = (clauses,) if isinstance(clauses, str) else clauses
        raise ConformanceFailure(ids, message, self.reproduction(check))

    def reproduction(self, check: str = "") -> str:
        log = CallLog("m", self.imports)
        for h in self.pool:
            log.name(h)
        for op in self.history:
            log.add(render_op(op, log.name))
        return log.render(self.construct, f"# the failing check:\nassert {check}" if check else "")

    # -- one step -----------------------------------------------------------------------
    def apply(self, op: ManagerOp) -> None:
        self.history.append(op)
        method, hashes, success = op
        getattr(self, "_" + method)(list(hashes), success)
        self.model.check_invariants()
        self.observe(method, success)

    def _call(self, method: str, items: list[bytes], clause: str, **keywords: Any) -> tuple[Outcome, Outcome]:
        oneshot = method in ("prepare_store", "complete_store")
        argument: Any = OneShot(items) if oneshot else list(items)
        target_out = invoke(getattr(self.target, method), argument, **keywords)
        model_out = invoke(getattr(self.model, method), list(items), **keywords)
        if isinstance(argument, OneShot) and argument.reiterated:
            self.fail("M0", f"{method} iterated its one-shot hashes argument a second time", "not reiterated")
        if model_out[1] is not None:  # never on protocol-keeping sequences
            raise AssertionError(f"the model raised {model_out[1]!r} on a protocol-keeping call")
        if target_out[1] is not None:
            self.fail(clause, f"{method} raised {target_out[1]!r} on a call the contract allows; "
                      f"the model returned {model_out[0]!r}")
        return model_out, target_out

    def _touch(self, items: list[bytes], _: bool) -> None:
        self._call("touch", items, "M4")

    def _take_events(self, items: list[bytes], _: bool) -> None:
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
        if view != expected:
            log = CallLog("m", [])
            for h in self.pool:
                log.name(h)
            index = next((i for i, (a, b) in enumerate(zip(view, expected)) if a != b), min(len(view), len(expected)))
            if index < len(expected):
                clause = "M5" if expected[index][1] else "M6"
            else:
                hs, removed = view[index]
                ready = {h for h, b in self.model.blocks().items() if b.ref_cnt >= 0}
                clause = "M5" if removed else ("M6" if all(h in ready for h in hs) else "M7")
            rendered = "[" + ", ".join(f"([{', '.join(map(log.name, hs))}], {rm})" for hs, rm in expected) + "]"
            got = "[" + ", ".join(f"([{', '.join(map(log.name, hs))}], {rm})" for hs, rm in view) + "]"
            self.fail((clause, "M8", "I5"), f"take_events yielded {got}; the contract expects {rendered}",
                      f"[(list(e.block_hashes), e.removed) for e in <the last take_events>] == {rendered}")
        for hs, removed in view:
            if removed:
                self.replayed.difference_update(hs)
            else:
                self.replayed.update(hs)
        if self.replayed != {h for h, b in self.model.blocks().items() if b.ref_cnt >= 0}:
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
        for victim in evicted:
            ref = blocks_before.get(victim)
            if ref is None:
                self.fail(self.refine(("M5",), victim), f"prepare_store evicted {victim!r}, which is not present")
            if ref == -1:
                self.fail("I3", f"prepare_store evicted {victim!r}, whose store is still in flight (pending)")
            if ref is not None and ref > 0:
                self.fail("I3", f"prepare_store evicted {victim!r}, which {ref} load(s) in flight are reading")
            if victim in protected:
                self.fail("M5", f"prepare_store evicted {victim!r}, which is in its own input (M5.3: protected)")
        if len(set(evicted)) != len(evicted):
            self.fail("M5", f"prepare_store evicted a hash twice: {evicted!r}")
        if len(evicted) != need:
            self.fail(("M5", "I1") if len(evicted) < need else ("M5",),
                      f"prepare_store evicted {len(evicted)} blocks, but M5.3 needs exactly {need}")
        if model_value is None:
            self.fail("M5", "prepare_store stored although no eviction could satisfy it (M5.4)", "r is None")
        got_to_store = list(target_value.block_hashes_to_store)
        if got_to_store != list(model_value.block_hashes_to_store):
            self.fail("M5", f"block_hashes_to_store is {got_to_store!r}, the contract expects "
                      f"{model_value.block_hashes_to_store!r} (M5.1)")
        if evicted != list(model_value.block_hashes_evicted):
            clause = {"lru": "L3", "arc": "A4"}[self.policy]
            self.fail((clause, "A3", "A5") if clause == "A4" else (clause, "L2"),
                      f"prepare_store evicted {evicted!r}, {self.policy.upper()} evicts "
                      f"{list(model_value.block_hashes_evicted)!r}")
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
        if any(_confusable(h, other) for other in self.model.blocks()):
            return ("I8", *clauses)
        return clauses

    def observe(self, method: str, success: bool) -> None:
        clause = {"touch": "M4", "prepare_store": "M5", "complete_store": "M6" if success else "M7",
                  "prepare_load": "M2", "complete_load": "M3", "take_events": "M8"}[method]
        if method == "prepare_store" and getattr(self, "last_store_refused", False):
            clause = "I7"
        queries = [[h] for h in self.pool] + [list(self.pool), list(reversed(self.pool))]
        log = CallLog("m", [])
        for h in self.pool:
            log.name(h)
        for query in queries:
            value, error = invoke(self.target.lookup, list(query))
            expected = self.model.lookup(list(query))
            source = f"m.lookup([{', '.join(map(log.name, query))}])"
            if error is not None:
                self.fail("M1", f"{source} raised {error!r} after {method}")
            if value != expected:
                found: tuple[str, ...] = (clause,) if clause != "M1" else ("M1",)
                if len(query) > 1:
                    found = ("M1", clause)
                else:
                    h = query[0]
                    if value and self.ref(h) == -1:
                        found = ("M1", clause)
                    elif value:
                        found = self.refine(found, h)
                self.fail(found, f"after {method}, {source} returned {value!r}; the model says {expected!r}",
                          f"{source} == {expected!r}")
        owners: dict[int, bytes] = {}
        for h in self.model.blocks():
            known = self.id_of.get(h)
            if known is None:
                continue
            other = owners.setdefault(known, h)
            if other != h:
                self.fail(("I4", "I8") if _confusable(h, other) else ("I4",),
                          f"{log.name(h)} and {log.name(other)} are both present and share block {known}")
