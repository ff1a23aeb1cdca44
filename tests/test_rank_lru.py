"""N9: the reference request-rank LRU policy (vLLM 0.33's order), on hand-worked cases."""

from __future__ import annotations

import pytest

from kvoffload.spec import BlockStatus, ContractViolation, ReferenceRequestRankLRUPolicy


def _ready(policy: ReferenceRequestRankLRUPolicy, *keys: bytes) -> None:
    for key in keys:
        block = BlockStatus(block_id=len(policy.blocks))
        policy.insert(key, block)
        block.ref_cnt = 0


def _victims(policy: ReferenceRequestRankLRUPolicy, n: int, protected: set[bytes] | None = None) -> list[bytes]:
    chosen = policy.evict(n, protected or set())
    assert chosen is not None
    return [key for key, _ in chosen]


def test_N9_a_request_evicts_its_tail_before_its_head_and_before_newer_keys() -> None:
    policy = ReferenceRequestRankLRUPolicy(8)
    policy.serve("r", {b"head": 0, b"mid": 16, b"tail": 32})
    policy.on_request_access([b"head", b"mid", b"tail"])  # draws the request's number: 1
    _ready(policy, b"head", b"tail", b"mid")  # insertion order does not matter
    policy.serve(None)
    _ready(policy, b"later")  # a fresh number: 2
    assert policy.ranks == {b"head": (1, 0), b"mid": (1, -16), b"tail": (1, -32), b"later": (2, 0)}
    assert _victims(policy, 4) == [b"tail", b"mid", b"head", b"later"]


def test_N9_older_requests_before_newer_ones_and_one_number_per_request() -> None:
    policy = ReferenceRequestRankLRUPolicy(8)
    policy.serve("old", {b"a": 0})
    policy.on_request_access([b"a"])
    policy.serve("new", {b"b": 5})
    policy.on_request_access([b"b"])
    _ready(policy, b"b")
    policy.serve("old", {b"a": 0, b"c": 1})
    _ready(policy, b"a", b"c")  # a later batch of the old request keeps its number
    assert _victims(policy, 3) == [b"c", b"a", b"b"]


def test_N9_access_only_raises_a_rank_and_touch_gives_fresh_numbers_first_key_last() -> None:
    policy = ReferenceRequestRankLRUPolicy(8)
    _ready(policy, b"x", b"y")  # (1, 0), (2, 0)
    policy.serve("r", {b"x": 3, b"y": 3})
    policy.on_request_access([b"x", b"y"])  # number 3: both raised to (3, -3)
    assert policy.ranks[b"x"] == policy.ranks[b"y"] == (3, -3)
    policy.serve(None)
    policy.touch([b"y", b"x"])  # walked last to first: x gets 4, y gets 5
    assert policy.ranks == {b"x": (4, 0), b"y": (5, 0)}
    policy.serve("r", {b"x": 3, b"y": 3})
    policy.on_request_access([b"x"])  # (3, -3) is lower than (4, 0): unchanged
    assert policy.ranks[b"x"] == (4, 0)


def test_N9_equal_ranks_go_by_key_bytes_and_pinned_keys_keep_their_rank() -> None:
    policy = ReferenceRequestRankLRUPolicy(8)
    policy.serve("r", {b"k1": 7, b"k0": 7})
    _ready(policy, b"k1", b"k0")
    policy.blocks[b"k0"].ref_cnt = 1  # pinned (a load in flight): not eligible
    assert _victims(policy, 1) == [b"k1"]
    policy.blocks[b"k0"].ref_cnt = 0
    policy.serve(None)
    _ready(policy, b"z")
    assert _victims(policy, 1) == [b"k0"]  # its request rank, not its unpin time


def test_N9_clear_starts_a_new_generation() -> None:
    policy = ReferenceRequestRankLRUPolicy(8)
    policy.serve("r", {b"a": 0})
    policy.on_request_access([b"a"])
    _ready(policy, b"a", b"b")
    policy.clear()
    assert policy.get(b"a") is None and policy.generation == 1
    policy.serve(None)
    _ready(policy, b"c")  # the counter starts again: (1, 0)
    policy.serve("r", {b"a": 0})
    _ready(policy, b"a")  # the open request draws a new number: 2
    assert policy.ranks == {b"c": (1, 0), b"a": (2, 0)}
    assert _victims(policy, 2) == [b"c", b"a"]


def test_N9_refusals_change_nothing() -> None:
    policy = ReferenceRequestRankLRUPolicy(2)
    _ready(policy, b"a")
    with pytest.raises(ContractViolation, match="P2"):
        policy.insert(b"a", BlockStatus(block_id=5))
    assert policy.evict(2, set()) is None and policy.get(b"a") is not None
    with pytest.raises(ValueError, match="N9"):
        policy.request_number()
