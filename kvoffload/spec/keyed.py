"""vLLM's per-key manager interface (K1–K9): what the model expects where that interface
says more than the batch interface of M0–M10.

The conformance suite's vLLM mode drives a vLLM-interface manager through an adapter
(K2) and asks this module what each per-key answer and each request's end must be.
Nothing here imports vLLM: answers are named by ``LookupResult`` member names.

Where the rest lives: K2 (the batch calls through the per-key interface), K3 (the
errors vLLM documents), K4 (metadata-only events), K7 (``reset_cache``: the model
becomes a fresh ``ReferenceManager`` of the same capacity and policy) and K8 (a vLLM
``CachePolicy`` told of ``ref_cnt`` transitions) are mappings between the two
interfaces, executed by ``kvoffload.conformance.lockstep.vllm``; this module holds K1, K5, K6.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from .arc import ReferenceARCPolicy
from .clauses import implements
from .interfaces import CachePolicy
from .types import BlockHash

__all__ = ["expected_lookup", "RequestAccess", "arc_request_finished", "group_index", "request_finished",
           "request_order"]


@implements("K1")
def expected_lookup(ref_cnt: int | None) -> str:
    """K1: ``HIT`` for a present, ready block; ``HIT_PENDING`` while its store is in flight
    (``ref_cnt == -1``); ``MISS`` when absent. ``RETRY`` is never the answer of a manager
    whose state is its own (the model's lookups are synchronous)."""
    if ref_cnt is None:
        return "MISS"
    return "HIT_PENDING" if ref_cnt == -1 else "HIT"


class RequestAccess:
    """What one request observed, for its ``on_request_finished`` (K5) and for the
    store misses it reported already (K6).

    ``observed``: the keys the request loaded (``prepare_load``) or offered to
    ``prepare_store`` while they were absent or ready, in first-observation order.
    ``inserted``: the keys its ``prepare_store`` calls stored. ``reused``: the ready keys
    it loaded or offered, unless it had stored them itself. ``store_misses``: the absent
    keys its ``prepare_store`` calls offered (each reported once, K6)."""

    def __init__(self) -> None:
        self.observed: dict[bytes, None] = {}
        self.inserted: set[bytes] = set()
        self.reused: set[bytes] = set()
        self.store_misses: set[bytes] = set()

    @implements("K6")
    def new_store_misses(self, absent: Sequence[bytes]) -> list[bytes]:
        """K6: the absent keys of one ``prepare_store`` not yet reported by this request,
        in input order; they are reported now (the policy sees them as a touch: A3)."""
        fresh = [h for h in absent if h not in self.store_misses]
        self.store_misses.update(fresh)
        return fresh

    @implements("K5")
    def loaded(self, keys: Iterable[bytes]) -> None:
        """K5: ``prepare_load`` observes every key and reuses it."""
        for key in keys:
            self.observed.setdefault(key, None)
            if key not in self.inserted:
                self.reused.add(key)

    @implements("K5")
    def offered(self, absent: Iterable[bytes], ready: Iterable[bytes], stored: Iterable[bytes],
                offer: Sequence[bytes] | None = None) -> None:
        """K5: ``prepare_store`` observes its absent and ready keys (pending ones are not
        observed) in the order of the ``offer`` (when given; else absent ones first),
        reuses the ready ones and inserts what it stored."""
        ready = list(ready)
        seen = [*absent, *ready]
        if offer is not None:
            kept = set(seen)
            seen = [key for key in offer if key in kept]
        for key in seen:
            self.observed.setdefault(key, None)
        self.reused.update(k for k in ready if k not in self.inserted)
        self.inserted.update(stored)


@implements("K5")
def group_index(key: bytes) -> int:
    """K5: the KV cache group of a vLLM ``OffloadKey`` (block hash + 4-byte big-endian
    group index): its last four bytes."""
    return int.from_bytes(key[-4:], "big")


@implements("K5")
def request_order(access: RequestAccess, positions: Mapping[bytes, int] | None = None) -> list[bytes]:
    """K5: the order a finished request's keys are applied in. Grouped by KV cache group
    (ascending group index), first observation first within a group; a group whose keys
    all have an end-token position (``positions``, the request context's) is ordered by
    position instead; when every key has one, all of them are ordered by position, the
    groups' order breaking ties (stable sorts, as vLLM's manager and
    ``order_request_keys`` do)."""
    positions = positions or {}
    groups: dict[int, list[bytes]] = {}
    for key in access.observed:
        groups.setdefault(group_index(key), []).append(key)
    keys: list[bytes] = []
    for group in sorted(groups):
        members = groups[group]
        if all(k in positions for k in members):
            members = sorted(members, key=positions.__getitem__)
        keys.extend(members)
    if all(k in positions for k in keys):
        keys.sort(key=positions.__getitem__)
    return keys


@implements("K5")
def arc_request_finished(policy: ReferenceARCPolicy, access: RequestAccess,
                         positions: Mapping[bytes, int] | None = None) -> None:
    """K5 for ARC: walking the observed keys last to first (P4 order), a key the request
    only inserted keeps its list and moves to its most-recent end (a store is not a
    second use); a key it reused moves from T1 to T2's most-recent end, or to T2's
    most-recent end; any other key is left alone. (LRU: ``touch`` of ``request_order``.)"""
    insertion_only = access.inserted - access.reused
    for raw in reversed(request_order(access, positions)):
        key = BlockHash(raw)
        if key in insertion_only:
            for lst in (policy.t1, policy.t2):
                if key in lst:
                    lst.move_to_end(key)
                    break
            continue
        if key in access.reused and key in policy.t1:
            policy.t2[key] = policy.t1.pop(key)
        elif key in access.reused and key in policy.t2:
            policy.t2.move_to_end(key)


@implements("K5")
def request_finished(policy: CachePolicy, access: RequestAccess, positions: Mapping[bytes, int] | None = None) -> None:
    """K5: what a request's end does to the model's policy: ARC's moves
    (``arc_request_finished``); any other policy (LRU's recency) a ``touch`` of its keys in
    ``request_order``."""
    if isinstance(policy, ReferenceARCPolicy):
        arc_request_finished(policy, access, positions)
    else:
        policy.touch([BlockHash(h) for h in request_order(access, positions)])
