"""The model checker's worlds for targets written against vLLM's own interfaces (K1, K2, K6, K8).

``check-exhaustive`` explores the contract's calls; a manager written for vLLM 0.32/0.33's
per-key ``OffloadingManager`` (or a vLLM ``CachePolicy``) is driven through the same
adapters as the lockstep suite's vLLM mode (``lockstep.vllm``: each call a request of its
own, K2; a policy told of ``ref_cnt`` transitions, K8). What changes for a manager:

- its hashes are vLLM ``OffloadKey`` s of KV-cache group 0: the alphabet's hashes (and the
  probe's) with a 4-byte group index appended, so they still share their first 16 bytes
  and stay interchangeable (``symmetry``);
- the lookups after each call ask ``lookup(key, ctx)`` per key and expect HIT,
  HIT_PENDING or MISS as the model holds the key (K1);
- before each ``prepare_store`` the model is told of the call's absent keys, as vLLM's
  manager reports its store misses to its policy first (K6: an ARC ghost among them moves
  ``p``);
- where the target has ``reset_cache``, every state has one more call: it, then
  (0.33) ``on_reset_flushed``; the model starts afresh, the loads and stores in flight are
  never completed (K7's fence), and no event announces the drop (K7).

Not explored here (``kvoffload conform`` covers them): requests spanning calls and their
``on_request_finished`` (K5), key positions, a ``reset_cache`` inside a request (K7),
admission (N2), batches of more than a few keys and a second KV-cache group (mutation
testing shows each: docs/mutation-report.md, ``vllm033-cpu-mc``). With every call an
unpositioned request of its own, N9's request ranks (vLLM 0.33's ``LRUCachePolicy``)
order keys as L1's recency does, so LRU targets of either order are judged by L1 (the
checker proved vLLM 0.33's own LRU manager so, capacities 1..3).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..judge import Verdict, invoke
from ..lockstep.vllm import as_contract_manager, as_contract_policy
from ..lockstep.vllm.adapter import through_adapter
from .manager_world import PROBE_HASHES, ManagerOp, ManagerWorld
from .policy_world import PolicyWorld

__all__ = ["GROUP_0", "VLLM_CALLS_TEXT", "VllmManagerWorld", "VllmPolicyWorld", "offload_keys"]

#: vLLM's ``make_offload_key(block_hash, 0)`` suffix: the KV-cache group index, 4 bytes big-endian.
GROUP_0 = bytes(4)
#: K7's call (``ManagerOp``: method, hashes, success).
RESET: ManagerOp = ("reset_cache", (), True)
#: What the alphabet's text adds for a vLLM-interface manager (``exhaustive``).
VLLM_CALLS_TEXT = ("; through vLLM's interface (K2): hashes are OffloadKeys of KV-cache group 0, each call a request "
                   "of its own, lookups per key (lookup(key, ctx): HIT/HIT_PENDING/MISS, K1), a store's misses told "
                   "to the policy first (K6), reset_cache where the target has it (K7)")


def offload_keys(hashes: Sequence[bytes]) -> list[bytes]:
    """``hashes`` as ``OffloadKey`` s of KV-cache group 0."""
    return [h + GROUP_0 for h in hashes]


class VllmManagerWorld(ManagerWorld):
    """``ManagerWorld`` with the target seen through ``as_contract_manager`` (module docstring)."""

    needs = ("from kvoffload.conformance.lockstep.vllm import as_contract_manager",)
    probe_hashes = offload_keys(PROBE_HASHES)

    def __init__(self, build: Callable[[], Any], capacity: int, policy: str, hashes: list[bytes],
                 touch_max: int = 2, construct: str = "make()", imports: list[str] | None = None,
                 **rest: Any) -> None:
        super().__init__(lambda: as_contract_manager(build()), capacity, policy, offload_keys(hashes), touch_max,
                         f"as_contract_manager({construct})", imports, **rest)

    def enabled(self) -> list[ManagerOp]:
        resets = [RESET] if callable(getattr(self.target.manager, "reset_cache", None)) else []
        return [*super().enabled(), *resets]

    def apply(self, op: ManagerOp) -> None:
        method, hashes, _ = op
        if method == "reset_cache":
            self._reset()
            return
        if method == "prepare_store":  # K6: the store misses reach the policy before the store
            self.judge.store_misses([h for h in dict.fromkeys(hashes) if self.judge.ref(h) is None])
        super().apply(op)

    def _reset(self) -> None:
        """K7: ``reset_cache`` (the events of every earlier call were taken after it)."""
        self.history.append(RESET)
        _, error = invoke(self.target.reset_cache)
        if error is not None:
            self.judged(Verdict(("K7",), f"reset_cache raised {error!r}"))
        self.judge.reset()
        self.inflight.clear()  # K7's fence: a job begun before the reset is never completed
        self.after_call("reset_cache", True)

    def render(self, index: int, name: Callable[[object], str]) -> str:
        if self.history[index] == RESET:
            return "m.reset_cache(); events = list(m.take_events())"
        return super().render(index, name)

    def judged(self, verdict: Verdict | None) -> None:
        """A verdict as the lockstep suite's vLLM mode names it: K2 after a batch clause."""
        if verdict is not None:
            verdict = Verdict(through_adapter(verdict.clauses), verdict.message, verdict.check)
        super().judged(verdict)

    def sweep(self, hashes: list[bytes], clause: str, why: str) -> Verdict | None:
        """K1: ``lookup(key, ctx)`` of each hash, judged by ``ManagerJudge.key_sweep``."""
        answers: list[str] = []
        for h in hashes:
            answer, error = invoke(self.target.key_lookup, h)
            if error is not None:
                return Verdict(("K1", "M1"), f"lookup({self._name(h)}, ctx) raised {error!r} ({why})")
            answers.append(answer)
        check = f"[m.key_lookup(h) for h in ({', '.join(map(self._name, hashes))},)]"
        return self.judge.key_sweep(answers, hashes, (clause,), why, check)


class VllmPolicyWorld(PolicyWorld):
    """``PolicyWorld`` with a vLLM ``CachePolicy`` seen through ``as_contract_policy`` (K8)."""

    needs = (*PolicyWorld.needs, "from kvoffload.conformance.lockstep.vllm import as_contract_policy")

    def __init__(self, build: Callable[[], Any], capacity: int, policy: str, hashes: list[bytes],
                 touch_max: int = 2, construct: str = "make()", imports: list[str] | None = None,
                 **rest: Any) -> None:
        super().__init__(lambda: as_contract_policy(build()), capacity, policy, hashes, touch_max,
                         f"as_contract_policy({construct})", imports, **rest)
