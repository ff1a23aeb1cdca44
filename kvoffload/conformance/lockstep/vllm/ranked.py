"""Lockstep machine for a vLLM-interface manager whose LRU ranks keys by request (N9).

vLLM 0.33's ``LRUCachePolicy`` gives a request one number at its first access and ranks
the keys it positions ``(number, -position)`` while it is open; its end, ``touch`` and
unpositioned inserts give fresh numbers (N9). ``VllmManagerMachine`` judges L1's
recency order; this subclass judges N9 instead: the model's policy is
``ReferenceRequestRankLRUPolicy``, told before each call which request it belongs to
and which keys the request observes new (K5), and generation steers evictions INTO open
positioned requests: several open at once and interleaved, their loads pinning keys
that become evictable again while they are open, other requests storing beside them,
``reset_cache`` falling inside them (a new generation).
"""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from ....spec.clauses import implements
from ....spec.keyed import RequestAccess
from ....spec.rank_lru import ReferenceRequestRankLRUPolicy
from .machine import VllmManagerMachine

__all__ = ["RankOrderManagerMachine"]

#: What an open request does next in ``ranked_requests`` (stores twice as often: they evict)
ACTIONS = ("store", "store", "load", "unpin", "others", "touch", "reset")


class _OpenRequest:
    """One request of ``ranked_requests``: its variable in the reproduction, its
    ``ReqContext``, its key positions and what it observed (K5)."""

    def __init__(self, name: str, ctx: Any, positions: dict[bytes, int]) -> None:
        self.name, self.ctx, self.positions = name, ctx, positions
        self.access = RequestAccess()


@implements("N9")
class RankOrderManagerMachine(VllmManagerMachine):
    """``VllmManagerMachine`` with the victims judged by N9 (vLLM 0.33's LRU order)."""

    lru_order: ClassVar[str] = "request-rank"
    cuts_positioned_offers: ClassVar[bool] = False

    @initialize(data=st.data())
    def setup(self, data: st.DataObject) -> None:
        super().setup(data)
        self.judge.make_policy = ReferenceRequestRankLRUPolicy
        self.judge.reset()
        self.judge.calls = None  # M10's replay models L1's order, not N9's
        self.ranked_opened = 0
        self.current: _OpenRequest | None = None
        self.exercised("N9")

    def blame(self, ids: tuple[str, ...], message: str) -> tuple[tuple[str, ...], str]:
        if ids and ids[0] == "L3":  # a wrong victim: the order is N9's (then what it depends on)
            ids = ("N9", "L3", *(["K5"] if self.finished_requests else []),
                   *(["K7"] if self.resets_inside else []), *ids[1:])
            message = f"{message}; N9 (request-rank order), the model's ranks before the call: {self._ranks_text()}"
        return super().blame(ids, message)

    def _ranks_text(self) -> str:
        ranked = sorted(getattr(self, "ranks_before", {}).items(), key=lambda item: (item[1], item[0]))
        return ", ".join(f"{self.log.name(h)} {rank}" for h, rank in ranked) or "none"

    # -- N9: what the model's policy learns before a call --------------------------------------
    @implements("N9", "K5")
    def before_call(self, method: str, items: list[Any]) -> None:
        """N9: the call belongs to the open request (its positions) or to one of its own;
        a ``prepare_load``/``prepare_store`` of the open request first observes the keys
        new to it (loaded; offered absent and admitted, or ready), as vLLM's manager tells
        its policy (``on_request_access``) before it inserts or evicts."""
        policy = self.model.policy
        self.ranks_before: dict[bytes, tuple[int, int]] = dict(policy.ranks)
        access = self.open_request
        policy.serve(access, self.positions if access is not None else None)
        if access is None or method not in ("prepare_store", "prepare_load"):
            return
        if method == "prepare_store":
            observable = set(self.store_candidates) | self.judge.ready_set()
            seen = [h for h in items if h in observable]
        else:
            seen = list(items)
        policy.on_request_access([h for h in dict.fromkeys(seen) if h not in access.observed])

    # -- N9 steering: evictions inside open positioned requests ----------------------------------
    @precondition(lambda self: self.policy_mode == "lru")
    @rule(data=st.data())
    def ranked_requests(self, data: st.DataObject) -> None:
        """N9: one to three positioned requests open at once; in turn they store (evicting
        inside each other), load (pinning keys they then rank), complete loads (the keys
        become evictable with the rank they took while pinned), touch, let other requests
        store beside them, or see ``reset_cache`` (a new generation); then they finish in
        a drawn order and fresh keys are stored, so that the order shows in victims."""
        self._fill(data)
        opened = [self._open_ranked(data) for _ in range(data.draw(st.integers(1, 3), label="requests"))]
        for _ in range(data.draw(st.integers(2, 7), label="rounds")):
            request = data.draw(st.sampled_from(opened), label="request")
            self._enter(request)
            action = data.draw(st.sampled_from(ACTIONS), label="action")
            getattr(self, f"_ranked_{action}")(request, data, opened)
        for request in data.draw(st.permutations(opened), label="finish order"):
            self._finish_ranked(request)
        for _ in range(data.draw(st.integers(0, 2), label="then store")):
            self._ranked_others(None, data, opened)
        self.exercised("N9", "K5")

    def _fill(self, data: st.DataObject) -> None:
        """Store fresh keys (completed) until the cache is full: the requests' stores then evict."""
        while self.free_blocks() > 0:
            absent = self.absent()
            if not absent or not data.draw(st.sampled_from((True, True, True, False)), label="fill"):
                return
            self._store_and_complete([data.draw(st.sampled_from(absent), label="filler")], data)

    def _open_ranked(self, data: st.DataObject) -> _OpenRequest:
        """A new request with end-token positions (N9, K5): a drawn order of the pool's
        block hashes (a hash's keys in both groups share its position, vLLM's end token),
        sometimes for every other hash only (unpositioned keys take fresh numbers)."""
        self.ranked_opened += 1
        name = f"rq{self.ranked_opened}"
        self._open(name)
        stems = list(dict.fromkeys(h[:-4] for h in self.pool))
        order = data.draw(st.permutations(range(len(stems))), label="positions")
        every_other: bool = data.draw(st.sampled_from((False, False, False, True)), label="some unpositioned")
        positions = self._set_positions({h: order[stems.index(h[:-4])] for h in self.pool
                                         if not (every_other and stems.index(h[:-4]) % 2)})
        request = self.current = _OpenRequest(name, self.target.request, positions)
        self._enter(request)
        return request

    def _enter(self, request: _OpenRequest | None) -> None:
        """Make ``request`` the one the next calls belong to (``None``: calls of their own)."""
        if request is not self.current:
            self.log.add(f"m.request = {request.name if request is not None else None}")
        self.current = request
        self.target.request = request.ctx if request is not None else None
        self.open_request = request.access if request is not None else None
        self.positions = request.positions if request is not None else {}

    def _ranked_store(self, request: _OpenRequest, data: st.DataObject, _opened: list[_OpenRequest]) -> None:
        """The request offers a batch, mostly of absent keys (stored, evicting when full),
        sometimes with present ones; its stores mostly complete at once, sometimes fail or
        stay pending."""
        absent = self.absent()
        items = self.draw_batch(data, min_size=1)
        if absent and data.draw(st.sampled_from((True, True, True, False)), label="fresh"):
            fresh = self.draw_unique(data, absent, "fresh keys", most=min(3, len(absent)))
            items = list(dict.fromkeys(fresh + items[:data.draw(st.integers(0, 1), label="present")]))
        stored = self._offer(request.access, items, data)
        outcome = data.draw(st.sampled_from(("complete", "complete", "fail", "pending")), label="outcome")
        if stored and outcome != "pending":
            self.call("complete_store", stored, "list", success=outcome == "complete")

    def _ranked_load(self, request: _OpenRequest, data: st.DataObject, _opened: list[_OpenRequest]) -> None:
        """The request loads ready keys: pinned, ranked by it (N9) while not evictable."""
        self._request_load(request.access, data)

    def _ranked_unpin(self, _request: _OpenRequest, data: st.DataObject, _opened: list[_OpenRequest]) -> None:
        """A load in flight completes: its keys are evictable again, at their ranks (N9)."""
        if self.inflight:
            index = data.draw(st.integers(0, len(self.inflight) - 1), label="load")
            self.call("complete_load", self.inflight.pop(index), "list")

    def _ranked_touch(self, _request: _OpenRequest, data: st.DataObject, _opened: list[_OpenRequest]) -> None:
        """``touch`` inside the request: fresh numbers, its first key last (N9, P4)."""
        self.call("touch", self.draw_unique(data, self.pool, "hashes", most=3), "list")

    def _ranked_others(self, request: _OpenRequest | None, data: st.DataObject,
                       _opened: list[_OpenRequest]) -> None:
        """Requests of their own store fresh keys (completed) while the open ones wait: the
        victims are the open requests' tails first, older requests' before newer ones'."""
        self._enter(None)
        self._store_fresh_rounds(data, data.draw(st.integers(1, 2), label="other stores"), 3, "others' keys")
        self._enter(request)

    def _ranked_reset(self, request: _OpenRequest, data: st.DataObject, opened: list[_OpenRequest]) -> None:
        """``reset_cache`` inside the open requests (K7, N9): a new generation; each
        forgets what it observed and draws a new number at its next access. Then the
        request stores again, others fill the cache and store more: the victims show
        whether its number is the new generation's."""
        if not hasattr(self.target.manager, "reset_cache"):
            return
        self.reset_cache()
        self.resets_inside += 1
        for each in opened:
            each.access = RequestAccess()
        self.open_request = self.current.access if self.current is not None else None
        self.exercised("K7", "N9")
        self._ranked_store(request, data, opened)
        self._enter(None)
        self._fill(data)
        self._ranked_others(request, data, opened)

    def _finish_ranked(self, request: _OpenRequest) -> None:
        """``on_request_finished``: fresh numbers in K5's order, its first key last (N9:
        ``_finish`` touches the model's policy in ``request_order``)."""
        self._enter(request)
        self._finish(request.access)
        self.current, self.open_request, self.positions = None, None, {}
