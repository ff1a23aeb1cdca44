"""K5: a request observes one ``prepare_store``'s absent and ready keys in the order of
the offer, as vLLM's manager records them (not absent keys first)."""

from __future__ import annotations

from typing import Any

from kvoffload.spec import BlockStatus, make_reference_policy
from kvoffload.spec.keyed import RequestAccess, request_finished, request_order
from kvoffload.spec.types import BlockHash

G0 = (0).to_bytes(4, "big")
A, B, C = b"a" * 8 + G0, b"b" * 8 + G0, b"c" * 8 + G0


def test_K5_offer_observed_in_input_order() -> None:
    access = RequestAccess()
    # B is ready, A and C absent; the offer lists B first
    access.offered([A, C], [B], [A, C], offer=[B, A, C])
    assert request_order(access) == [B, A, C]
    assert access.reused == {B} and access.inserted == {A, C}


def test_K5_pending_keys_of_the_offer_are_not_observed() -> None:
    access = RequestAccess()
    access.offered([C], [], [C], offer=[A, C])  # A pending: neither absent nor ready
    assert request_order(access) == [C]


def _ready(policy_name: str) -> Any:
    """A reference policy holding A, B and C in that order, each ready and idle."""
    policy = make_reference_policy(policy_name, 3)
    for block_id, key in enumerate((A, B, C)):
        block = BlockStatus(block_id)
        block.ref_cnt = 0
        policy.insert(BlockHash(key), block)
    return policy


def test_K5_request_end_on_lru_touches_in_request_order() -> None:
    """LRU: the request's keys touched in request order (P4: the first ends most recent)."""
    policy = _ready("lru")
    request_finished(policy, _loaded(A, B))
    assert [key for key, _ in policy.evict(3, set())] == [C, B, A]


def test_K5_request_end_on_arc_moves_reused_keys_to_t2() -> None:
    """ARC: a key the request reused moves from T1 to T2; T1's others are evicted first (p = 0)."""
    policy = _ready("arc")
    request_finished(policy, _loaded(A))
    assert list(policy.t2) == [A]
    assert [key for key, _ in policy.evict(3, set())] == [B, C, A]


def _loaded(*keys: bytes) -> RequestAccess:
    access = RequestAccess()
    access.loaded(keys)
    return access
