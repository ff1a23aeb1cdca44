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
from hypothesis.stateful import initialize

from ....spec.clauses import implements
from ....spec.rank_lru import ReferenceRequestRankLRUPolicy
from .machine import OpenRequest, VllmManagerMachine

__all__ = ["RankOrderManagerMachine"]

@implements("N9")
class RankOrderManagerMachine(VllmManagerMachine):
    """``VllmManagerMachine`` with the victims judged by N9 (vLLM 0.33's LRU order)."""

    lru_order: ClassVar[str] = "request-rank"
    cuts_positioned_offers: ClassVar[bool] = False
    turns: ClassVar[tuple[str, ...]] = (*VllmManagerMachine.turns, "observe")

    @initialize(data=st.data())
    def setup(self, data: st.DataObject) -> None:
        super().setup(data)
        self.judge.make_policy = ReferenceRequestRankLRUPolicy
        self.judge.reset()
        self.judge.calls = None  # M10's replay models L1's order, not N9's
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
    def _open_turns(self, data: st.DataObject) -> OpenRequest:
        """N9 steering of ``interleaved_requests``: a new request with end-token positions
        (K5): a drawn order of the pool's block hashes (a hash's keys in both groups share
        its position, vLLM's end token), sometimes for every other hash only (unpositioned
        keys take fresh numbers). Its stores evict inside the other open requests, its loads
        pin keys it then ranks, and the victims show N9's order."""
        request = super()._open_turns(data)
        if self.policy_mode != "lru":
            return request
        stems = list(dict.fromkeys(h[:-4] for h in self.pool))
        order = data.draw(st.permutations(range(len(stems))), label="positions")
        every_other: bool = data.draw(st.sampled_from((False, False, False, True)), label="some unpositioned")
        request.positions = self.positions = self._set_positions(
            {h: order[stems.index(h[:-4])] for h in self.pool if not (every_other and stems.index(h[:-4]) % 2)})
        self.exercised("N9")
        return request

    @implements("N9", "K5")
    def _turn_observe(self, request: OpenRequest, data: st.DataObject, opened: list[OpenRequest]) -> None:
        """N9's "only if that raises its rank", both ways in one call. The open request
        observes one ready key (so it has its number), requests of their own touch some
        other ready keys (fresh numbers, above the request's), then the request offers
        ready keys new to it, those and older ones in a drawn order (present keys are
        observed, not pinned: evictable at once at their new ranks), and others fill the
        cache and store, evicting while it is still open (its end re-ranks every key it
        observed)."""
        fresh = [h for h in self.ready() if h not in request.access.observed]
        if len(fresh) < 3:
            return
        first = data.draw(st.sampled_from(fresh), label="first observed")
        self._offer(request.access, [first], data)
        rest = [h for h in fresh if h != first and h in self.judge.ready_set()]
        if len(rest) < 2:
            return
        self._enter(None)
        self.call("touch", self.draw_unique(data, rest, "renumbered", most=2), "list")
        self._enter(request)
        self._offer(request.access, self.draw_unique(data, rest, "observed", least=2), data)
        self._enter(None)
        self._fill(data)
        self._turn_others(request, data, opened)
