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

Every call is judged by ``judge.ManagerJudge`` (as in the lockstep machines), then with
events on ``take_events()`` (so no event queue is carried between states, M5–M8, I5),
the target's block ids (I4), ``lookup([h])`` of the observed hashes, of them all and
reversed (M1, I7 after a refused store) and the model's ``check_invariants()`` (I1–I4):
these last two once per new state when the world is ``exact``.

The joint state's fingerprint: the model's policy lists (hashes, ref counts, order; ARC's
ghosts and ``p``), the loads in flight, and the target's state: its whole logical state
when the checker can read it (``exact``: ``policy_state.manager_key``; block ids, handles,
left out), else what it showed (the block id it gave each live hash); free hashes renamed
(``symmetry.Relabel``). The events'
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
from ..judge import ManagerJudge, Verdict, method_clause, probe_calls
from ..lockstep.strategies import OneShot, listed
from .model_checker import LockstepWorld
from .policy_state import (
    clone_policy, held, manager_key, plain_policy, policy_fields, policy_key, shallow, twin_blocks,
)
from .symmetry import DISTINGUISHED, Relabel, canonical_calls, distinguished_text

__all__ = ["ManagerOp", "ManagerWorld", "manager_alphabet_text", "render_op"]

#: One call: (method, hashes, success) — success only for complete_store.
ManagerOp = tuple[str, tuple[bytes, ...], bool]
#: The calls whose hashes are passed as a one-shot iterator (M0).
ONE_SHOT_METHODS = ("prepare_store", "complete_store")


def manager_alphabet_text(hashes: int, touch_max: int, store_max: int, max_pins: int, distinguished: int = DISTINGUISHED) -> str:
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


def render_op(op: ManagerOp, name: Callable[[object], str]) -> str:
    method, hashes, success = op
    argument = f"iter({listed(name, hashes)})" if method in ONE_SHOT_METHODS else listed(name, hashes)
    keyword = f", success={success}" if method == "complete_store" else ""
    result = "r = " if method in ("prepare_store", "prepare_load") else ""
    return f"{result}m.{method}({argument}{keyword}); events = list(m.take_events())"


#: Hashes outside every alphabet, stored only by ``probe`` (never part of a state).
PROBE_HASHES = [bytes([0x70 + i]) * 32 for i in range(16)]
_MODEL_FIELDS = frozenset(vars(ReferenceManager(1)))


def clone_reference_manager(manager: ReferenceManager) -> ReferenceManager:
    """A copy of a manager built of the reference parts (faster than ``deepcopy``: the
    ctypes blocks are rebuilt, not pickled). Subclasses holding no state of their own
    (the planted bugs) are cloned the same way."""
    new = shallow(manager)
    backend = shallow(manager.backend)
    assert isinstance(backend, ReferenceCPUBackend)
    fresh = twin_blocks(backend._handed_out.values())
    backend._handed_out = {block_id: fresh[id(block)] for block_id, block in backend._handed_out.items()}
    backend._free_ids = list(backend._free_ids)
    new.backend, new.policy, new._events = backend, clone_policy(manager.policy, fresh), list(manager._events)
    return new


def reference_memento(manager: ReferenceManager) -> tuple[Any, ...]:
    """A manager of reference parts' state, for ``restore_reference``: its very blocks with
    their ref counts, its free ids, a copy of its policy on those blocks, its events."""
    backend = manager.backend
    assert isinstance(backend, ReferenceCPUBackend)
    blocks = dict(backend._handed_out)
    return (blocks, [(block, block.ref_cnt) for block in blocks.values()], list(backend._free_ids),
            clone_policy(manager.policy), list(manager._events))


def restore_reference(manager: ReferenceManager, memento: tuple[Any, ...]) -> None:
    """Put ``manager`` back in the state its ``reference_memento`` kept, in place: blocks
    are reused (a block is a ctypes structure, costly to build), dicts and lists copied."""
    blocks, refs, free, policy, events = memento
    for block, ref in refs:
        block.ref_cnt = ref
    backend = manager.backend
    assert isinstance(backend, ReferenceCPUBackend)
    backend._handed_out, backend._free_ids = dict(blocks), list(free)
    manager.policy, manager._events = clone_policy(policy), list(events)


def reference_unchanged(manager: ReferenceManager, memento: tuple[Any, ...]) -> bool:
    """Whether ``manager`` is still in the state its ``reference_memento`` kept: the same blocks
    with the same ref counts, and equal policy fields (a copied entry that counts, S3-FIFO's
    or SIEVE's, is never equal to its original: such a policy always answers "changed")."""
    blocks, refs, _free, policy, _events = memento
    backend = manager.backend
    assert isinstance(backend, ReferenceCPUBackend)
    if backend._handed_out != blocks or any(block.ref_cnt != ref for block, ref in refs):
        return False
    current = manager.policy
    return all(getattr(current, field) == getattr(policy, field) for field in policy_fields(current))


#: What a judged call changes in place in the judge besides its model (a copy of a world copies them).
_JUDGE_RECORDS = ("id_of", "replayed", "failed_since_take")


def judge_records(fields: dict[str, Any]) -> dict[str, Any]:
    """Copies of the ``_JUDGE_RECORDS`` among a judge's ``fields`` (its ``vars``)."""
    return {name: fields[name].copy() for name in _JUDGE_RECORDS}


def _clonable(target: Any) -> bool:
    return (
        isinstance(target, ReferenceManager)
        and set(vars(target)) == _MODEL_FIELDS
        and type(target.backend) is ReferenceCPUBackend
        and set(vars(target.backend)) == {"block_size", "medium", "num_blocks", "_free_ids", "_handed_out"}
        and plain_policy(target.policy)
    )


class ManagerWorld(LockstepWorld[ManagerOp]):
    """A model ``ReferenceManager`` and a target manager, driven in lockstep and judged by
    ``ManagerJudge``."""

    var = "m"
    probe_hashes = PROBE_HASHES  # ``probe``'s fresh hashes (vLLM targets: ``OffloadKey`` s)

    def __init__(self, *args: Any, store_max: int = 2, max_pins: int = 1, **common: Any) -> None:
        """``LockstepWorld``'s arguments, the longest store and the most loads on a block in flight."""
        super().__init__(*args, **common)
        self.judge = ManagerJudge(self.capacity, self.policy, True, self._name, sources=False)
        self.store_max = store_max
        self.max_pins = max_pins
        self.inflight: list[tuple[bytes, ...]] = []
        #: The target's whole state is in its key (``policy_state.manager_key``): lookups, pure
        #: (M1), are judged once per new state (``settle``) and a merged state needs no probe.
        self.clonable = _clonable(self.target)  # of reference parts alone: copied field by field
        self.exact = hasattr(self.target, "logical_state") or self.clonable
        #: calls are undone in place (``restore``): the model and the target of reference parts, or a
        #: target that restores its own state (``restore_state``: the production manager)
        self.restorable = _clonable(self.model) and (self.clonable or hasattr(self.target, "restore_state"))

    @property
    def model(self) -> ReferenceManager:
        return self.judge.model

    # -- the alphabet -------------------------------------------------------------------
    def in_state(self) -> set[bytes]:
        return held(self.model.policy)

    def enabled(self) -> list[ManagerOp]:
        present = self.in_state()
        blocks: dict[Any, BlockStatus] = self.model.blocks()
        pending = [h for h in self.pool if h in blocks and blocks[h].ref_cnt == -1]
        loadable = [h for h in self.pool if h in blocks and 0 <= blocks[h].ref_cnt < self.max_pins]
        ops: list[ManagerOp] = [("prepare_store", s, True)
                                for s in canonical_calls(self.pool, present, self.store_max, self.fixed)]
        ops.extend(("complete_store", subset, success) for subset in _subsets(pending) for success in (True, False))
        ops.extend(("prepare_load", subset, True) for subset in _subsets(loadable))
        ops.extend(("complete_load", load, True) for load in dict.fromkeys(self.inflight))
        ops.extend(("touch", s, True) for s in canonical_calls(self.pool, present, self.touch_max, self.fixed))
        return ops

    def state_key(self, name: Relabel) -> Hashable:
        lists = policy_key(self.model.policy, name)
        loads: tuple[tuple[int, ...], ...] = tuple(sorted(tuple(map(name, load)) for load in self.inflight))
        # the block id shown for each live hash, unless exact: block ids are handles (symmetry), the target's free
        # blocks are in its key
        ids = None if self.exact else tuple(sorted((name(h), i) for h, (i, _) in self.judge.id_of.items()))
        return (lists, loads, ids, manager_key(self.target, name), self.caller_key(name))

    def caller_key(self, name: Relabel) -> Hashable:
        """What the caller holds beyond the loads in flight (a hook: a request open across
        calls, ``vllm_world``), hashes renamed by ``name``."""
        return None

    def copy_parts(self) -> None:
        """``LockstepWorld.copy_parts``: the target deep-copied, the judge's model and records."""
        if self.clonable:
            self.target = clone_reference_manager(self.target)
        else:  # the production manager's own __deepcopy__ directly (deepcopy's dispatch is not free)
            copier = getattr(self.target, "__deepcopy__", None)
            self.target = copier({}) if copier is not None else copy.deepcopy(self.target)
        judge = self.judge = shallow(self.judge)
        judge.name = self._name  # the copy names hashes from its own history
        judge.model = clone_reference_manager(judge.model)
        vars(judge).update(judge_records(vars(judge)))
        self.inflight = list(self.inflight)

    def memento(self, copy: Callable[[Any], Any]) -> Any:
        """``LockstepWorld.memento``; when ``restorable``: this world's and the judge's fields,
        the records the calls change, the model's state and the target's (a copy of the
        production manager, kept untouched)."""
        if not self.restorable:
            return super().memento(copy)
        kept = reference_memento(self.target) if self.clonable else self.target.__deepcopy__({})
        return ({**vars(self), "history": list(self.history), "inflight": list(self.inflight)},
                {**vars(self.judge), **judge_records(vars(self.judge))}, reference_memento(self.model), kept)

    def unchanged(self, memento: Any) -> bool:
        """``LockstepWorld.unchanged``: the model first (most calls that change the state change
        it), then the target, compared with the copy kept (``same_state``) or, of reference
        parts, like the model."""
        if not self.restorable:
            return False
        fields, _judge, model, kept = memento
        if self.inflight != fields["inflight"] or not reference_unchanged(self.judge.model, model):
            return False
        return reference_unchanged(self.target, kept) if self.clonable else bool(self.target.same_state(kept))

    def restore(self, memento: Any) -> None:
        """``LockstepWorld.restore``; when ``restorable``, in place: nothing is copied whole."""
        if not self.restorable:
            return super().restore(memento)
        fields, judge_fields, model, kept = memento
        judge = self.judge
        vars(self).clear()
        vars(self).update(fields)
        self.history, self.inflight, self._log = list(self.history), list(self.inflight), None
        vars(judge).clear()
        vars(judge).update(judge_fields, **judge_records(judge_fields))
        restore_reference(judge.model, model)
        if self.clonable:
            restore_reference(self.target, kept)
        else:
            self.target.restore_state(kept)

    def render(self, index: int, name: Callable[[object], str]) -> str:
        return render_op(self.history[index], name)

    # -- one step -----------------------------------------------------------------------
    def apply(self, op: ManagerOp) -> None:
        self.history.append(op)
        method, hashes, success = op
        items = list(hashes)
        oneshot = method in ONE_SHOT_METHODS
        argument: Any = OneShot(items) if oneshot else list(items)
        keywords = {"success": success} if method == "complete_store" else {}
        if method == "complete_load":
            self.inflight.remove(hashes)
        step = self.judge.step(self.target, method, argument, items, "r", "iter" if oneshot else "list", **keywords)
        if step.model[1] is not None:  # never on protocol-keeping sequences
            raise AssertionError(f"the model raised {step.model[1]!r} on a protocol-keeping call")
        self.judged(step.verdict)
        if method == "prepare_load":
            self.inflight.append(hashes)
        self.after_call(method, success)

    def after_call(self, method: str, success: bool) -> None:
        """What every call is judged on after its answer: events and block-id aliasing (I4,
        I5), then (unless the key holds the whole target) the lookups (``observe``)."""
        self.last = (method, success)
        self.judged(self.judge.events(self.target) or self.judge.aliasing())
        if self.observing and not self.exact:
            self.observe(method, success)

    def probe_ops(self) -> list[ManagerOp]:
        """``LockstepWorld.probe``'s calls (none when the model holds no block): ``judge.probe_calls``
        with the alphabet's forgotten hashes and ``capacity`` hashes never in the alphabet."""
        if not self.model.blocks():
            return []
        return probe_calls(self.model, list(dict.fromkeys(self.inflight)), self.forgotten(),
                           self.probe_hashes[: self.capacity])

    # -- observations -------------------------------------------------------------------
    def observed(self) -> list[bytes]:
        """The hashes looked up after a call: those in the state, the distinguished ones
        and one fresh free hash (the other fresh ones are its renamings), alphabet order."""
        in_state = self.in_state()
        fresh = [h for h in self.pool[self.fixed :] if h not in in_state][:1]
        return [h for h in self.pool if h in in_state or h in fresh or h in self.pool[: self.fixed]]

    def observe(self, method: str, success: bool) -> None:
        """M1 after every call (I7 after a refused store): ``lookup([h])`` of each observed
        hash, then of all of them in both orders (I4, every call: ``apply``)."""
        refused = method == "prepare_store" and self.judge.last_store_refused
        clause = "I7" if refused else method_clause(method, success)
        hashes = self.observed()
        why = f"after {method}"
        self.judged(self.sweep(hashes, clause, why)
                    or self.judge.prefix_lookups(self.target, (hashes, hashes[::-1]), clause, why))

    def sweep(self, hashes: list[bytes], clause: str, why: str) -> Verdict | None:
        """M1 on ``lookup([h])`` of each observed hash (``ManagerJudge.sweep``)."""
        return self.judge.sweep(self.target, hashes, (clause,), why)
