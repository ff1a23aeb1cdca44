"""N9 in the compiled core: an LRU ranked by request (``lru_order="request-rank"``, driven
through ``RequestRanks``) against the reference request-rank policy, call by call.

The machine keeps up to three requests open at once, each with drawn end-token positions
(some keys unpositioned), over a pool small enough that stores evict inside open requests:
loads pin keys the request then ranks, stores of other requests interleave, keys of one
position in two groups tie on rank and go by their bytes. After every call the victims, the
stored keys and the whole eviction order must be the model's.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kvoffload.impl.manager import CPUOffloadingManager
from kvoffload.impl.request_ranks import RequestRanks
from kvoffload.spec import ReferenceManager, ReferenceRequestRankLRUPolicy

# Two groups per stem, as vLLM keys them (hash + 4-byte group). Stems ascend in their first
# byte and descend in the next ones: read as little-endian words (the core's rows) they
# would order the other way, so a tie on rank broken by anything but the bytes shows.
STEMS = [bytes([s]) + bytes([6 - s]) * 31 for s in range(7)]
POOL = [stem + group.to_bytes(4, "big") for stem in STEMS for group in (0, 1)]
REQUESTS = ("r0", "r1", "r2")
CAPACITY = 6


class RankedCoreMachine(RuleBasedStateMachine):
    """The core plus ``RequestRanks`` against ``ReferenceManager`` over the N9 policy."""

    @initialize(positions=st.lists(st.sampled_from((None, 0, 1, 2, 3, 4, 5)), min_size=len(STEMS) * 3,
                                   max_size=len(STEMS) * 3))
    def setup(self, positions: list[int | None]) -> None:
        self.core = CPUOffloadingManager(CAPACITY, "lru", lru_order="request-rank")
        self.ranks = RequestRanks()
        self.policy = ReferenceRequestRankLRUPolicy(CAPACITY)
        self.model = ReferenceManager(CAPACITY, policy=self.policy)
        # each request's end-token position of each stem (both groups share it), or none
        self.positions: dict[str, dict[bytes, int]] = {}
        for r, request in enumerate(REQUESTS):
            drawn = positions[r * len(STEMS) : (r + 1) * len(STEMS)]
            self.positions[request] = {key: p for key in POOL for s, p in enumerate(drawn)
                                       if p is not None and key.startswith(STEMS[s])}
        self.observed: dict[str, set[bytes]] = {request: set() for request in REQUESTS}
        # a finished request never comes back (K5): its slot serves a new one, "r0#1" …
        self.names = {request: request for request in REQUESTS}
        self.loads: list[list[bytes]] = []

    def _serve(self, request: str | None) -> None:
        self.policy.serve(self.names[request] if request else None, self.positions[request] if request else None)

    def _model_observes(self, request: str, keys: list[bytes]) -> None:
        new = [key for key in dict.fromkeys(keys) if key not in self.observed[request]]
        self.observed[request].update(new)
        if new:
            self.policy.on_request_access(new)

    def _ready(self) -> list[bytes]:
        return [key for key, block in self.model.blocks().items() if block.ref_cnt >= 0]

    @rule(request=st.sampled_from(REQUESTS), keys=st.lists(st.sampled_from(POOL), min_size=1, max_size=4),
          by_id=st.booleans())
    def store(self, request: str, keys: list[bytes], by_id: bool) -> None:
        """``by_id``: the stored keys are ranked by the store's block ids (``rerank_blocks``,
        as the vLLM manager does), else by hash (``rerank``)."""
        blocks = self.model.blocks()
        observable = [key for key in keys if key not in blocks or blocks[key].ref_cnt >= 0]
        self._serve(request)
        self._model_observes(request, observable)
        want = self.model.prepare_store(keys)
        new, number = self.ranks.begin(self.core, self.names[request], observable)
        ready = [key for key in new if key in blocks]  # observable and present: ready
        got = self.core.prepare_store(keys)
        stored = [] if got is None else got.block_hashes_to_store
        ids = got.store_spec.block_ids if got is not None and by_id else None
        self.ranks.observe(self.core, self.names[request], new, number, self.positions[request], ready, stored, ids)
        assert (got is None) == (want is None)
        if got is not None and want is not None:
            assert got.block_hashes_to_store == want.block_hashes_to_store
            assert got.block_hashes_evicted == want.block_hashes_evicted, "N9: another victim"

    @rule(data=st.data(), success=st.booleans())
    def complete_store(self, data: st.DataObject, success: bool) -> None:
        pending = [key for key, block in self.model.blocks().items() if block.ref_cnt == -1]
        if pending:
            keys = data.draw(st.lists(st.sampled_from(pending), min_size=1, max_size=3, unique=True))
            self.model.complete_store(keys, success)
            self.core.complete_store(keys, success)

    @rule(request=st.sampled_from(REQUESTS), data=st.data())
    def load(self, request: str, data: st.DataObject) -> None:
        ready = self._ready()
        if ready:
            keys = data.draw(st.lists(st.sampled_from(ready), min_size=1, max_size=3, unique=True))
            self._serve(request)
            self.model.prepare_load(keys)
            self._model_observes(request, keys)
            self.core.prepare_load(keys)
            new, number = self.ranks.begin(self.core, self.names[request], keys)
            self.ranks.observe(self.core, self.names[request], new, number, self.positions[request], new)
            self.loads.append(keys)

    @precondition(lambda self: self.loads)
    @rule(data=st.data())
    def complete_load(self, data: st.DataObject) -> None:
        keys = self.loads.pop(data.draw(st.integers(0, len(self.loads) - 1)))
        self.model.complete_load(keys)
        self.core.complete_load(keys)

    @rule(request=st.sampled_from(REQUESTS))
    def finish(self, request: str) -> None:
        """K5's end, simplified: a touch of what the request observed, first observed last."""
        keys = sorted(self.observed[request])
        self._serve(None)
        self.model.touch(keys)
        self.core.touch(keys)
        self.observed[request] = set()
        self.ranks.finish(self.names[request])
        self.names[request] += "#"

    @rule(keys=st.lists(st.sampled_from(POOL), min_size=1, max_size=3))
    def touch(self, keys: list[bytes]) -> None:
        self._serve(None)
        self.model.touch(keys)
        self.core.touch(keys)

    @invariant()
    def same_order(self) -> None:
        if not hasattr(self, "core"):
            return
        self.core.check_invariants()
        order = [key for key, _block in self.policy.items()]
        assert self.core.policy_view()["lists"][0] == order, "N9: the eviction order differs"


TestRankedCore = RankedCoreMachine.TestCase
TestRankedCore.settings = settings(max_examples=150, stateful_step_count=40, deadline=None,
                                   suppress_health_check=[HealthCheck.too_slow])


def test_N9_rerank_refuses_bad_input_and_other_orders() -> None:
    core = CPUOffloadingManager(4, "lru", lru_order="request-rank")
    core.prepare_store([b"a" * 8])
    before = [array.copy() for array in core._state]
    for positions, raised in (([-1], 0), ([2**31], 1), ([2**70], 0), (["x"], 0), ([1, 2], 0), ([1], 2)):
        with pytest.raises(ValueError, match="N9"):
            core.rerank([b"a" * 8], 1, positions, raised)
    assert all((a == b).all() for a, b in zip(before, core._state))
    with pytest.raises(ValueError, match="N9"):
        CPUOffloadingManager(4, "arc", lru_order="request-rank")
    with pytest.raises(ValueError, match="N9"):
        CPUOffloadingManager(4, "lru").rerank([b"a" * 8], 1, [0])


def test_N9_rerank_blocks_refuses_bad_ids_and_positions_changing_nothing() -> None:
    """Ids outside the blocks (a ghost's node included), positions outside [0, 2**31 - 1],
    non-integers and a length mismatch raise ValueError naming the value; no state changes."""
    core = CPUOffloadingManager(4, "lru", lru_order="request-rank")
    block = int(core.prepare_store([b"a" * 8]).store_spec.block_ids[0])
    before = [array.copy() for array in core._state]
    cases = (([4], [0], "block id 4"), ([-1], [0], "block id -1"), ([block], [-1], "position -1"),
             ([block], [2**31], "position 2147483648"), ([block], [2**70], "integers"), (["x"], [0], "integers"),
             ([block, block], [0], "2 block ids, 1 positions"), ([block, 9], [1, 1], "block id 9"))
    for ids, positions, message in cases:
        with pytest.raises(ValueError, match=f"N9: .*{message}"):
            core.rerank_blocks(ids, 1, positions)
    assert all((a == b).all() for a, b in zip(before, core._state))
    with pytest.raises(ValueError, match="N9"):
        CPUOffloadingManager(4, "lru").rerank_blocks([0], 1, [0])


def test_N9_rerank_blocks_ranks_as_rerank_by_hash() -> None:
    """The stored blocks ranked by id take the ranks ranking them by hash gives: the same
    eviction order, a tail positioned last evicted first; a block no longer present is
    left alone (its id is counted out)."""
    keys = [bytes([k]) * 8 for k in range(4)]
    orders = []
    for by_id in (True, False):
        core = CPUOffloadingManager(6, "lru", lru_order="request-rank")
        core.prepare_store([b"z" * 8])
        out = core.prepare_store(keys)
        number = core.rank_number()
        positions = [16, 48, 32, 64]
        ranked = (core.rerank_blocks(out.store_spec.block_ids, number, positions) if by_id
                  else core.rerank(keys, number, positions))
        assert ranked == 4
        core.complete_store([b"z" * 8, *keys])
        orders.append(core.policy_view()["lists"][0])
    assert orders[0] == orders[1] == [b"z" * 8, keys[3], keys[1], keys[2], keys[0]]
    gone = int(core.prepare_store([b"y" * 8]).store_spec.block_ids[0])
    core.complete_store([b"y" * 8], success=False)  # the block is free again: not present
    assert core.rerank_blocks([gone], core.rank_number(), [0]) == 0


def test_N9_a_request_tail_is_evicted_before_its_head_and_older_keys_keep_their_place() -> None:
    """Hand-worked: stored head to tail by one open request, the tail goes first; an
    unpositioned key stored before the request opened goes before all of them."""
    core: Any = CPUOffloadingManager(4, "lru", lru_order="request-rank")
    ranks = RequestRanks()
    old, head, mid, tail, new = (bytes([i]) * 36 for i in range(5))
    core.prepare_store([old])
    positions = {head: 16, mid: 32, tail: 48}
    observed, number = ranks.begin(core, "r", [head, mid, tail])
    out = core.prepare_store([head, mid, tail])
    ranks.observe(core, "r", observed, number, positions, [], out.block_hashes_to_store)
    core.complete_store([old, head, mid, tail])
    assert core.prepare_store([new]).block_hashes_evicted == [old]
    core.complete_store([new])
    assert core.policy_view()["lists"][0] == [tail, mid, head, new]
    victims = [core.prepare_store([bytes([9 + i]) * 36]).block_hashes_evicted for i in range(3)]
    assert victims == [[tail], [mid], [head]]  # the heap's own order, not only the view's
