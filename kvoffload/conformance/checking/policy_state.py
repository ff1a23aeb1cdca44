"""The exact reference policies' state, as the model checker keys and copies it (issue 15).

One home for what both worlds need of a policy (L1, A1, F1, V1): its fields in a fixed
order (``FIELDS``), the hashes it holds (present and ghosts: ``held``), a canonical key
with free hashes renamed (``policy_key``) and a copy sharing remapped blocks
(``clone_policy``). A field is an ordered dict of hashes (to a ``BlockStatus``, to an
entry with ``block`` and a counter or bit, or to ``None`` for ghosts), a hash (SIEVE's
hand) or a number (ARC's ``p``).
"""

from __future__ import annotations

import copy
import functools
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

from ...spec import (
    BlockStatus,
    ReferenceARCPolicy,
    ReferenceLRUPolicy,
    ReferenceS3FIFOPolicy,
    ReferenceSIEVEPolicy,
)

__all__ = ["FIELDS", "ghost_capacity", "held", "policy_fields", "policy_key", "readable_key", "manager_key", "clone_policy", "twin_blocks", "ghosts_of", "plain_policy", "shallow"]

T = TypeVar("T")
#: The state fields of each exact policy, in key order.
FIELDS: dict[type, tuple[str, ...]] = {
    ReferenceLRUPolicy: ("order",),
    ReferenceARCPolicy: ("t1", "t2", "b1", "b2", "p"),
    ReferenceS3FIFOPolicy: ("small", "main", "ghost"),
    ReferenceSIEVEPolicy: ("queue", "hand"),
}
#: Fields holding hashes that are remembered but not present (A2, F3).
_GHOST_FIELDS = frozenset({"b1", "b2", "ghost"})
#: Fields whose entries carry a counter or a bit beside the block (S3-FIFO's F1, SIEVE's V1).
_COUNTED_FIELDS = frozenset({"small", "main", "queue"})


def ghost_capacity(policy: str, capacity: int) -> int:
    """Most ghost hashes a policy of ``capacity`` blocks holds besides its residents
    (A1: |T1|+|T2|+|B1|+|B2| <= 2c, counted generously as 2c; F6: G's bound)."""
    if policy == "s3fifo":
        return ReferenceS3FIFOPolicy(capacity).ghost_bound
    return 2 * capacity if policy == "arc" else 0


@functools.cache  # once per type: asked for every state
def _exact_base(kind: type) -> type | None:
    """The exact policy ``kind`` is or derives from (planted bugs and production keep its fields)."""
    return next((cls for cls in kind.__mro__ if cls in FIELDS), None)


def policy_fields(policy: Any) -> tuple[str, ...]:
    """The state fields of an exact policy (or of a subclass of one), in key order (``FIELDS``)."""
    base = _exact_base(policy.__class__)
    if base is None:
        raise TypeError(f"{type(policy).__name__} is not an exact reference policy the checker knows")
    return FIELDS[base]


def plain_policy(policy: Any) -> bool:
    """An exact policy, or a subclass of one holding no field of its own (the planted
    bugs): its key is its whole state and ``clone_policy`` copies it."""
    base = _exact_base(policy.__class__)
    return base is not None and vars(policy).keys() == vars(base(1)).keys()


def readable_key(target: Any, name: Callable[[bytes], int]) -> Hashable:
    """A target's state if built on a reference policy, else ``None``: keeps apart joint
    states whose targets differ in unseen memory (an extra ghost, another ``p``)."""
    policy = getattr(target, "policy", target)
    return policy_key(policy, name) if _exact_base(policy.__class__) is not None else None


def manager_key(target: Any, name: Callable[[bytes], int]) -> Hashable:
    """The whole logical state of a manager exposing ``logical_state`` (the production
    manager: recency lists with ref counts, ghost lists, marks, hand, ARC's ``p``, free
    blocks), hashes renamed by ``name``; else ``readable_key`` and the backend's counts
    (a leaked block shows there). Block ids are left out:
    they are handles a target treats alike (docs/model-checking.md: block-id symmetry)."""
    state = getattr(target, "logical_state", None)
    if state is None:  # a manager of reference parts: its policy, and its backend's blocks up to renaming
        backend = getattr(target, "backend", None)
        handed_out = len(getattr(backend, "_handed_out", ()))
        return readable_key(target, name), backend and (backend.get_num_free_blocks(), handed_out)
    lists, ghosts, marks, hand, p, free = state()
    return (tuple([tuple([(name(h), ref) for h, ref in listed]) for listed in lists]),
            tuple([tuple(map(name, chain)) for chain in ghosts]),
            tuple(sorted((name(h), mark) for h, mark in marks)),
            None if hand is None else name(hand), p, free)


def held(policy: Any) -> set[bytes]:
    """Every hash the policy's state names: present and ghosts."""
    values = (getattr(policy, field) for field in policy_fields(policy))
    return {h for value in values if isinstance(value, dict) for h in value}


def ghosts_of(policy: Any) -> set[bytes]:
    """The hashes the policy remembers without holding them (A2, F3)."""
    return {h for field in policy_fields(policy) if field in _GHOST_FIELDS for h in getattr(policy, field)}


def _entry_key(value: Any) -> Hashable:
    if value is None:
        return None
    if isinstance(value, BlockStatus):
        return value.ref_cnt  # a ctypes int field: already an int
    return (int(value.block.ref_cnt), getattr(value, "freq", getattr(value, "visited", None)))  # F1's or V1's


def policy_key(policy: Any, name: Callable[[bytes], int]) -> tuple[Hashable, ...]:
    """Every field, in order, hashes renamed by ``name`` (``symmetry.Relabel``): a ghost list
    as its renamed hashes, any other list as (renamed hash, entry key) pairs."""
    return tuple([_field_key(getattr(policy, field), name, field in _GHOST_FIELDS) for field in policy_fields(policy)])


def _field_key(value: Any, name: Callable[[bytes], int], ghosts: bool) -> Hashable:
    if not isinstance(value, dict):
        return name(value) if isinstance(value, bytes) else value
    if ghosts:  # (their entries are None: nothing else to key)
        return tuple(map(name, value))
    return tuple([(name(h), _entry_key(v)) for h, v in value.items()])


def shallow(obj: T) -> T:
    """``copy.copy`` of a plain object, without its generic (``__reduce_ex__``) path: the
    checker copies several objects per transition."""
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__)
    return new


def _clone_entry(value: Any, blocks: dict[int, BlockStatus]) -> Any:
    """A present entry (ghosts, mapped to ``None``, are copied whole: ``clone_policy``) on ``blocks``."""
    if isinstance(value, BlockStatus):
        return blocks[id(value)]
    twin = copy.copy(value)  # S3-FIFO's and SIEVE's entries have slots
    twin.block = blocks[id(value.block)]
    return twin


def twin_blocks(blocks: Iterable[BlockStatus]) -> dict[int, BlockStatus]:
    """A fresh copy of each block (its id and ``ref_cnt``), by ``id()`` of the original:
    ``clone_policy``'s ``blocks`` (its bytes copied: faster than ``deepcopy`` of a ctypes block)."""
    return {id(block): BlockStatus.from_buffer_copy(block) for block in blocks}


def clone_policy(policy: Any, blocks: dict[int, BlockStatus] | None = None) -> Any:
    """A copy whose entries point at ``blocks[id(old block)]`` (the caller's copies: ``twin_blocks``);
    without ``blocks``, a copy on the very same blocks: its dicts copied, and the entries that
    count (``_COUNTED_FIELDS``), faster."""
    new = shallow(policy)
    for field in policy_fields(policy):
        value = getattr(policy, field)
        if blocks is not None and field not in _GHOST_FIELDS and isinstance(value, dict):
            setattr(new, field, OrderedDict((h, _clone_entry(v, blocks)) for h, v in value.items()))
        elif blocks is None and field in _COUNTED_FIELDS:
            setattr(new, field, OrderedDict([(h, copy.copy(entry)) for h, entry in value.items()]))
        elif isinstance(value, dict):  # ghosts (mapped to None), or entries shared: nothing to remap
            setattr(new, field, value.copy())
    return new
