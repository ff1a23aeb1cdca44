"""The lockstep world of ``check-exhaustive --policies-only``: a ``CachePolicy`` (P1–P6)
against the exact reference policy (L1–L3 or A1–A6).

Call alphabet per step, over the hash alphabet H, keeping the policy's caller protocol
(the default mode of the suite: never insert a present hash, never remove an absent one,
never hold more than ``capacity`` blocks):

- ``insert(h, blk)``: h absent from T1/T2 (ghosts allowed), fewer than ``capacity``
  present, a fresh block with ``ref_cnt`` −1, 0 or 1;
- ``blk.ref_cnt = v``: a present hash's block set to v ∈ {−1, 0, 1}, v ≠ its value;
- ``touch(s)``: every ordered sequence of 1..``touch_max`` distinct hashes of H (up to
  renaming of free hashes, ``symmetry``);
- ``remove(h)``: h present;
- ``evict(n, protected)``: n = 0 with no protection, or n ∈ 1..capacity+1 with
  ``protected`` ∅ or {h} for each h of H (n = capacity + 1 can never be met: None).

The joint state's fingerprint: the model's lists (hashes and ref counts; ARC's ghosts and
``p``) with free hashes renamed. Blocks evicted or removed are forgotten once checked.

Judged (``judge``) after every step: ``get(h)`` of every h in H (P1, A2, I8), every
block's ``ref_cnt`` (P6), the victims in order with their blocks (P5, L3, A4); then the
model's ``check_invariants()`` runs.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable
from typing import Any

from ...spec import BlockStatus, make_reference_policy
from ..judge import judge_evict, judge_gets, judge_ref_counts, policy_call
from .model_checker import LockstepWorld
from .policy_state import clone_policy, ghosts_of, held, plain_policy, policy_key, readable_key, twin_blocks
from .symmetry import DISTINGUISHED, Relabel, canonical_calls, distinguished_text

__all__ = ["PolicyOp", "PolicyWorld", "policy_alphabet_text", "render_policy_op"]

#: (method, hashes, number): insert (h,) ref; set_ref (h,) value; touch seq 0;
#: remove (h,) 0; evict protected n.
PolicyOp = tuple[str, tuple[bytes, ...], int]
REF_VALUES = (-1, 0, 1)


def policy_alphabet_text(hashes: int, touch_max: int, capacity: int, idle: bool = False,
                         distinguished: int = DISTINGUISHED) -> str:
    refs, protected = ("0", "set()") if idle else ("-1|0|1", "set() or {h} for h in H")
    set_ref = "" if idle else "set ref_cnt of a present block to another of -1|0|1, "
    return (
        f"hashes H=h0..h{hashes - 1}; ops: insert(absent h, fresh block, ref_cnt {refs}) while < {capacity} present, "
        f"{set_ref}touch(1..{touch_max} distinct of H, ordered), remove(present h), "
        f"evict(0, set()) and evict(n in 1..{capacity + 1}, {protected}); "
        f"observed after each step: get(h) for h in H, every block's ref_cnt; {distinguished_text(distinguished)} "
        "interchangeable"
    )


def render_policy_op(op: PolicyOp, name: Callable[[object], str], block: int) -> str:
    """``op`` as source; ``block``: the id of the block an insert makes (the inserts before it)."""
    method, hashes, number = op
    names = ", ".join(map(name, hashes))  # the one hash, but for touch and evict's protected set
    return {
        "insert": f"blk{block} = BlockStatus({block}); blk{block}.ref_cnt = {number}; p.insert({names}, blk{block})",
        "set_ref": f"p.get({names}).ref_cnt = {number}",
        "touch": f"p.touch([{names}])",
        "remove": f"p.remove({names})",
        "evict": f"r = p.evict({number}, {{{names}}})" if hashes else f"r = p.evict({number}, set())",
    }[method]


class PolicyWorld(LockstepWorld[PolicyOp]):
    """A reference policy and a target policy sharing the caller's blocks."""

    var = "p"

    needs: tuple[str, ...] = ("from kvoffload.spec import BlockStatus",)  # its blocks

    def __init__(self, *args: Any, idle: bool = False, **common: Any) -> None:
        """``LockstepWorld``'s arguments, and ``idle``."""
        super().__init__(*args, **common)
        self.model = make_reference_policy(self.policy, self.capacity)
        self.idle = idle  # every block idle (ref_cnt 0), nothing protected
        self.blocks: dict[bytes, BlockStatus] = {}
        #: id(block) -> the block, the ref_cnt the caller set (P6): present blocks, and those the call drops
        self.refs: dict[int, tuple[BlockStatus, int]] = {}
        self.inserted = 0  # blocks inserted so far (their ids)
        #: A target of an exact policy's fields alone: its key is its whole state, so ``get``
        #: (pure, P1) is judged once per new state (``settle``) and a merged state needs no probe.
        self.exact = plain_policy(self.target)

    def in_state(self) -> set[bytes]:
        return held(self.model)

    def enabled(self) -> list[PolicyOp]:
        in_state = self.in_state()
        singles = [seq[0] for seq in canonical_calls(self.pool, in_state, 1, self.fixed)]
        refs = (0,) if self.idle else REF_VALUES
        ops: list[PolicyOp] = []
        if len(self.blocks) < self.capacity:
            ops.extend(("insert", (h,), v) for h in singles if h not in self.blocks for v in refs)
        ops.extend(("set_ref", (h,), v) for h, block in self.blocks.items() for v in refs if v != block.ref_cnt)
        ops.extend(("touch", seq, 0) for seq in canonical_calls(self.pool, in_state, self.touch_max, self.fixed))
        ops.extend(("remove", (h,), 0) for h in self.blocks)
        protected_sets = [()] if self.idle else [(), *((h,) for h in singles)]
        ops.append(("evict", (), 0))
        ops.extend(("evict", protected, n) for n in range(1, self.capacity + 2) for protected in protected_sets)
        return ops

    def state_key(self, name: Relabel) -> Hashable:
        return policy_key(self.model, name), readable_key(self.target, name)

    def copy_parts(self) -> None:
        """``LockstepWorld.copy_parts``: model, target and the caller's blocks copied together,
        so both policies still share each block."""
        memo: dict[int, Any] = twin_blocks(block for block, _ in self.refs.values())
        # a target of a reference policy's fields alone is cloned as the model is
        self.target = clone_policy(self.target, memo) if self.exact else copy.deepcopy(self.target, memo)
        self.model = clone_policy(self.model, memo)
        self.blocks = {h: memo[id(b)] for h, b in self.blocks.items()}
        self.refs = {id(memo[key]): (memo[key], ref) for key, (_, ref) in self.refs.items()}

    def apply(self, op: PolicyOp) -> None:
        self.history.append(op)
        method, hashes, number = op
        if method == "insert":
            h = hashes[0]
            block = BlockStatus(self.inserted)
            self.inserted += 1
            block.ref_cnt = number
            self.refs[id(block)] = (block, number)
            self.judged(policy_call(self.target, "insert", h, block)[1])
            self.model.insert(h, block)
            self.blocks[h] = block
        elif method == "set_ref":
            block = self.blocks[hashes[0]]
            block.ref_cnt = number
            self.refs[id(block)] = (block, number)
        elif method == "touch":
            self.judged(policy_call(self.target, "touch", list(hashes))[1])
            self.model.touch(list(hashes))
        elif method == "remove":
            self.judged(policy_call(self.target, "remove", hashes[0])[1])
            self.model.remove(hashes[0])
            del self.blocks[hashes[0]]
        else:
            self._evict(number, set(hashes))
        self.last = (method,)
        self.judged(judge_ref_counts(self.refs.values(), f"after {method}"))  # P6: the caller's blocks, every call
        if self.observing and not self.exact:
            self.observe(method)
        live = {id(b) for b in self.blocks.values()}
        self.refs = {key: entry for key, entry in self.refs.items() if key in live}

    def probe_ops(self) -> list[PolicyOp]:
        """``LockstepWorld.probe``'s calls: touch every alphabet hash the model does not hold (untrimmed
        ghosts show), make every block idle and evict them all in one call (a touch that changed a
        block's ``ref_cnt`` fails P6 before the blocks are made idle)."""
        forgotten = self.forgotten()
        ops: list[PolicyOp] = [("touch", forgotten, 0)] if forgotten else []
        # the caller's own field: pending and read blocks become idle
        ops.extend(("set_ref", (h,), 0) for h, block in self.blocks.items() if block.ref_cnt != 0)
        return [*ops, ("evict", (), len(self.blocks))] if self.blocks else ops

    def _evict(self, n: int, protected: set[bytes]) -> None:
        value, verdict = policy_call(self.target, "evict", n, set(protected))
        expected = self.model.evict(n, set(protected))
        self.judged(verdict or judge_evict(self.policy, n, protected, value, expected, self.blocks, self._name))
        for h, _ in value or ():
            del self.blocks[h]

    def render(self, index: int, name: Callable[[object], str]) -> str:
        block = sum(op[0] == "insert" for op in self.history[:index])
        return render_policy_op(self.history[index], name, block)

    def observe(self, method: str) -> None:
        """P1 (A2, I8) on ``get`` of every hash (P6, every call: ``apply``)."""
        clause = {"evict": "P5", "remove": "P3", "insert": "P2"}.get(method, "P1")
        self.judged(judge_gets(self.target, self.pool, self.blocks, ghosts_of(self.model), clause,
                               f"after {method}", self._name,
                               ghost_clause={"arc": "A2", "s3fifo": "F3"}.get(self.policy, "P1")))
