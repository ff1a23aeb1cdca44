"""The model checker's worlds for targets written against vLLM's own interfaces (K1, K2, K5–K8).

``check-exhaustive`` explores the contract's calls; a manager written for vLLM 0.32/0.33's
per-key ``OffloadingManager`` (or a vLLM ``CachePolicy``) is driven through the same
adapters as the lockstep suite's vLLM mode (``lockstep.vllm``: a call is a request of its
own unless a request is open, K2; a policy told of ``ref_cnt`` transitions, K8). What
changes for a manager:

- its hashes are vLLM ``OffloadKey`` s of KV-cache group 0: the alphabet's hashes (and the
  probe's) with a 4-byte group index appended, so they still share their first 16 bytes
  and stay interchangeable (``symmetry``);
- the lookups after each call ask ``lookup(key, ctx)`` per key and expect HIT,
  HIT_PENDING or MISS as the model holds the key (K1);
- before each ``prepare_store`` the model is told of the call's absent keys, as vLLM's
  manager reports its store misses to its policy first (K6: an ARC ghost among them moves
  ``p``);
- a request may span calls (K5): ``on_new_request`` opens it, up to ``request_calls``
  ``prepare_store`` or ``prepare_load`` calls (default ``REQUEST_CALLS``; 0: none) and the
  ``complete_store`` calls between them belong to it, other requests' stores (calls of
  their own) may fall between them and count among them, and
  ``on_request_finished`` ends it, applying its recency to the model (``spec.keyed.request_finished``:
  LRU a touch in request order, ARC its moves); its store misses reach the policy once
  per request (K6). What the open request observed is part of the state (its hashes stay
  distinguished from fresh ones), and the probe finishes it first;
- where the target has ``reset_cache``, every state has one more call: it, then
  (0.33) ``on_reset_flushed``; the model starts afresh, the loads and stores in flight are
  never completed (K7's fence), no event announces the drop, and an open request goes on
  with what it observed forgotten (K7);
- with ``admission`` (``store_threshold`` >= 2 and a ``max_tracker_size``, passed to the
  factory), an offer stores only the keys N2 admits (``spec.admission``: the judge's model
  counts every offer); only admitted keys are store misses (K6) or observed (K5). The
  tracker (its keys in order, counts up to the threshold) is part of the state and its keys
  stay distinguished from fresh ones; the probe offers each alphabet key the model does not
  hold once (a tracker the target keeps otherwise admits otherwise), and its fresh keys
  one at a time, ``store_threshold`` times each (N2 admits them on the last). At
  ``store_threshold`` 1 (the tracker's size passed too) admission is off: every offer
  stores every absent key, whatever a tracker would have counted.

Not explored here (``kvoffload conform`` covers them): key positions, touches and
completed loads inside a request, other requests' calls but stores while one is open,
batches of more than a few keys and a second KV-cache group (mutation testing
shows each: docs/mutation-report.md, ``vllm033-cpu-mc``). With no positions, N9's
request ranks (vLLM 0.33's ``LRUCachePolicy``) order keys as L1's recency with K5's
request end does, so LRU targets of either order are judged by L1 (the checker proved
vLLM 0.33's own LRU manager so, capacities 1..3).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from ...spec.admission import ReferenceAdmission
from ...spec.keyed import RequestAccess, request_finished
from ..judge import Verdict, invoke
from ..lockstep.vllm import as_contract_manager, as_contract_policy
from ..lockstep.vllm.adapter import through_adapter
from .manager_world import PROBE_HASHES, ManagerOp, ManagerWorld, render_op
from .policy_world import PolicyWorld
from .symmetry import Relabel

__all__ = ["GROUP_0", "REQUEST_CALLS", "VllmManagerWorld", "VllmPolicyWorld", "offload_keys", "vllm_calls_text"]

#: vLLM's ``make_offload_key(block_hash, 0)`` suffix: the KV-cache group index, 4 bytes big-endian.
GROUP_0 = bytes(4)
#: K7's call, and K5's calls that open and finish a request (``ManagerOp``: method, hashes, success).
RESET: ManagerOp = ("reset_cache", (), True)
OPEN: ManagerOp = ("on_new_request", (), True)
FINISH: ManagerOp = ("on_request_finished", (), True)
#: The calls a request spanning calls makes (K5), and how many of its ``prepare_store`` and
#: ``prepare_load`` calls at most (its completions are not counted): a store, its completion and
#: a load of what it stored (K5's reuse), or two offers whose store misses overlap (K6).
REQUEST_METHODS = ("prepare_store", "prepare_load", "complete_store")
REQUEST_CALLS = 2
#: A ``prepare_store`` of another request, a call of its own, while one is open (counted
#: among the open request's calls): vLLM's scheduler interleaves requests.
OTHERS = "prepare_store of another request"


def vllm_calls_text(request_calls: int, admission: tuple[int, int] | None = None) -> str:
    """What the alphabet's text adds for a vLLM-interface manager (``exhaustive``)."""
    requests = (f"or of a request spanning up to {request_calls} prepare_store/prepare_load calls (and completions) "
                "between on_new_request and on_request_finished, other requests' stores among them (K5), "
                if request_calls else "")
    admits = (f", store_threshold={admission[0]}, max_tracker_size={admission[1]} "
              f"({'admission' if admission[0] >= 2 else 'admission off'}: N2)" if admission else "")
    return ("; through vLLM's interface (K2): hashes are OffloadKeys of KV-cache group 0, each call a request of its "
            f"own {requests}lookups per key (lookup(key, ctx): HIT/HIT_PENDING/MISS, K1), a store's misses told to "
            f"the policy first, once per request (K6), reset_cache where the target has it (K7){admits}")


def offload_keys(hashes: Sequence[bytes]) -> list[bytes]:
    """``hashes`` as ``OffloadKey`` s of KV-cache group 0."""
    return [h + GROUP_0 for h in hashes]


class VllmManagerWorld(ManagerWorld):
    """``ManagerWorld`` with the target seen through ``as_contract_manager`` (module docstring)."""

    needs = ("from kvoffload.conformance.lockstep.vllm import as_contract_manager",)
    probe_hashes = offload_keys(PROBE_HASHES)
    access: RequestAccess | None = None  # the request open across calls (K5)
    calls_in_request = 0  # the offers and loads it made so far
    others_at: frozenset[int] = frozenset()  # the calls (history indices) of other requests made while it was open

    def __init__(self, build: Callable[[], Any], capacity: int, policy: str, hashes: list[bytes],
                 touch_max: int = 2, construct: str = "make()", imports: list[str] | None = None,
                 request_calls: int = REQUEST_CALLS, admission: tuple[int, int] | None = None, **rest: Any) -> None:
        """``ManagerWorld``'s arguments; ``request_calls``: the most offers and loads of a request
        spanning calls (K5; 0: every call a request of its own); ``admission``: the target's
        ``(store_threshold, max_tracker_size)`` (N2; the factory builds it with them)."""
        super().__init__(lambda: as_contract_manager(build()), capacity, policy, offload_keys(hashes), touch_max,
                         f"as_contract_manager({construct})", imports, **rest)
        self.request_calls = request_calls
        self.restorable = False  # the open request and the tracker are copied with the world (``copy_parts``)
        if admission is not None and admission[0] >= 2:
            self.judge.admission = ReferenceAdmission(*admission)
        elif admission is not None:  # store_threshold 1 with a tracker size: admission off (N2)
            self.judge.threshold_one = True

    @property
    def tracker(self) -> ReferenceAdmission | None:
        """N2's offer counts in the model (the judge's), ``None`` without admission."""
        return self.judge.admission

    def in_state(self) -> set[bytes]:
        """The model's hashes, those the open request observed and those N2's tracker counts
        (not fresh: they are remembered)."""
        held = super().in_state()
        if self.tracker is not None:
            held |= self.tracker.counts.keys()
        return held if self.access is None else held | set(self.access.observed)

    def enabled(self) -> list[ManagerOp]:
        resets = [RESET] if callable(getattr(self.target.manager, "reset_cache", None)) else []
        if self.access is None:
            return [*super().enabled(), *([OPEN] if self.request_calls else []), *resets]
        inside = super().enabled() if self.calls_in_request < self.request_calls else []
        others = [(OTHERS, hashes, True) for method, hashes, _ in inside if method == "prepare_store"]
        return [*(op for op in inside if op[0] in REQUEST_METHODS), *others, FINISH, *resets]

    def apply(self, op: ManagerOp) -> None:
        method, hashes, _ = op
        if op in (RESET, OPEN, FINISH):
            self.history.append(op)
            {RESET: self._reset, OPEN: self._open, FINISH: self._finish}[op]()
            self.after_call(method, True)
            return
        if method == OTHERS:
            self._others_store(op)
            return
        if method != "prepare_store":
            super().apply(op)
            if self.access is not None and method == "prepare_load":
                self.access.loaded(hashes)  # K5: observed and reused
                self.calls_in_request += 1
            return
        absent = self.judge.store_candidates(hashes)  # N2: keys not admitted are no store misses (K6) nor observed (K5)
        if self.access is None:  # K6: the store misses reach the policy before the store
            self.judge.store_misses(absent)
            super().apply(op)
            return
        ready_set = self.judge.ready_set()
        ready = [h for h in hashes if h in ready_set]
        self.judge.store_misses(self.access.new_store_misses(absent))  # K6: once per request
        super().apply(op)
        self.calls_in_request += 1  # K5: what the offer observed, reused and inserted
        self.access.offered(absent, ready, [h for h in absent if self.judge.ref(h) == -1], offer=list(hashes))

    def _others_store(self, op: ManagerOp) -> None:
        """K5: another request's ``prepare_store`` (a call of its own: its store misses its
        own, K6) while the open request waits; it counts among the open request's calls."""
        held = self.target.request, self.access
        self.target.request = self.access = None
        self.others_at = self.others_at | {len(self.history)}  # ``render`` shows the request held aside
        self.apply(("prepare_store", op[1], True))
        self.target.request, self.access = held
        self.calls_in_request += 1

    def _reset(self) -> None:
        """K7: ``reset_cache``; an open request goes on, what it observed forgotten."""
        _, error = invoke(self.target.reset_cache)
        if error is not None:
            self.judged(Verdict(("K7",), f"reset_cache raised {error!r}"))
        self.judge.reset()
        self.inflight.clear()  # K7's fence: a job begun before the reset is never completed
        if self.access is not None:
            self.access = RequestAccess()

    def _open(self) -> None:
        """K5: a request the next calls belong to (``on_new_request`` of a new context)."""
        context, error = invoke(self.target.context)
        if error is not None:
            self.judged(Verdict(("K5",), f"on_new_request raised {error!r}"))
        self.target.request, self.access, self.calls_in_request = context, RequestAccess(), 0

    def _finish(self) -> None:
        """K5: ``on_request_finished``; the model applies the request's recency."""
        access, self.access = self.access, None
        assert access is not None
        _, error = invoke(self.target.finish_request)
        if error is not None:
            self.judged(Verdict(("K5",), f"on_request_finished raised {error!r}"))
        request_finished(self.judge.model.policy, access)

    def caller_key(self, name: Relabel) -> Hashable:
        """The open request: what it observed (in order), inserted, reused and reported (K5,
        K6); N2's tracker: its keys, least recently offered first, with their counts up to the
        threshold (beyond it every count admits alike)."""
        tracker = self.tracker
        counts = () if tracker is None else tuple((name(h), min(count, tracker.store_threshold))
                                                  for h, count in tracker.counts.items())
        access = self.access
        if access is None:
            return counts
        return (counts, tuple(map(name, access.observed)), *(frozenset(map(name, keys)) for keys in
                (access.inserted, access.reused, access.store_misses)), self.calls_in_request)

    def copy_parts(self) -> None:
        super().copy_parts()
        self.access = copy.deepcopy(self.access)
        if self.tracker is not None:
            self.judge.admission = copy.deepcopy(self.tracker)

    def probe(self) -> None:
        """``ManagerWorld.probe`` once the open request finished (K5: its end is judged too);
        with admission, before its fresh keys' offers, each alphabet key the model does not
        hold offered once (a store it admits dropped again, M7): the target's tracker shows
        (N2); then the fresh keys offered one at a time, ``store_threshold`` times each."""
        if self.access is not None:
            self.apply(FINISH)
        tracker = self.tracker
        if tracker is None:
            super().probe()
            return
        self.observing = False
        ops = self.probe_ops()  # its last call (if any) stores the fresh keys that evict every block
        for op in ops[:-1]:
            self.apply(op)
        for h in self.pool:
            if self.judge.ref(h) is None:
                self.apply(("prepare_store", (h,), True))
                if self.judge.ref(h) == -1:
                    self.apply(("complete_store", (h,), False))
        for _, fresh, _ in ops[-1:]:  # one key at a time, ``store_threshold`` offers each (admitted on the last)
            for h in fresh:
                for _ in range(tracker.store_threshold):
                    self.apply(("prepare_store", (h,), True))

    def render(self, index: int, name: Callable[[object], str]) -> str:
        call = {RESET: "m.reset_cache()", OPEN: "m.request = m.context()", FINISH: "m.finish_request()"}
        op = self.history[index]
        if op in call:
            return f"{call[op]}; events = list(m.take_events())"
        if index in self.others_at:
            return f"held, m.request = m.request, None; {render_op(op, name)}; m.request = held"
        return super().render(index, name)

    def judged(self, verdict: Verdict | None) -> None:
        """A verdict as the lockstep suite's vLLM mode names it: K2 after a batch clause."""
        if verdict is not None:
            clauses = through_adapter(verdict.clauses)
            if clauses[0] in ("L3", "A4") and FINISH in self.history:  # the order a request's end applied
                clauses = (clauses[0], "K5", *clauses[1:])
            verdict = Verdict(clauses, verdict.message, verdict.check)
        super().judged(verdict)

    def sweep(self, hashes: list[bytes], clause: str, why: str) -> Verdict | None:
        """K1: ``lookup(key, ctx)`` of each hash, judged by ``ManagerJudge.key_sweep``."""
        check = f"[m.key_lookup(h) for h in ({', '.join(map(self._name, hashes))},)]"
        return self.judge.key_sweep(self.target, hashes, (clause,), why, check)


class VllmPolicyWorld(PolicyWorld):
    """``PolicyWorld`` with a vLLM ``CachePolicy`` seen through ``as_contract_policy`` (K8)."""

    needs = (*PolicyWorld.needs, "from kvoffload.conformance.lockstep.vllm import as_contract_policy")

    def __init__(self, build: Callable[[], Any], capacity: int, policy: str, hashes: list[bytes],
                 touch_max: int = 2, construct: str = "make()", imports: list[str] | None = None,
                 **rest: Any) -> None:
        super().__init__(lambda: as_contract_policy(build()), capacity, policy, hashes, touch_max,
                         f"as_contract_policy({construct})", imports, **rest)
