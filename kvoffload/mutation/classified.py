"""Survivors judged by hand: is the mutant equivalent to the original, and why.

Keyed by ``target|file|line:column|operator`` (cosmic-ray's position of the mutation in
the original file, which the scratch copy keeps). Verdicts:

- ``equivalent``: no caller can tell the mutant from the original (the reason says why);
- ``not equivalent``: a real behaviour change the suite missed (a gap, counted against the bar);
- ``unreachable``: a behaviour change only in code the factory convention never runs, or
  seen only through ``get_stats`` (metrics have no clause); listed apart, and the report
  gives the kill rate both without and with them.
"""

from __future__ import annotations

__all__ = ["CLASSIFIED", "EQUIVALENT", "NOT_EQUIVALENT", "UNREACHABLE"]

EQUIVALENT = "equivalent"
NOT_EQUIVALENT = "not equivalent"
UNREACHABLE = "unreachable"

_M = "vllm-cpu|manager.py|"

CLASSIFIED: dict[str, tuple[str, str]] = {
    _M + "148:27|core/ReplaceComparisonOperator_IsNot_NotEq": (EQUIVALENT, (
        "`state.owner != self`: CPUOffloadingManager defines no __eq__, so != is identity")),
    _M + "33:17|core/ReplaceTrueWithFalse": (EQUIVALENT, (
        "`@dataclass(slots=False)`: no code sets an undeclared attribute on _RequestCacheAccess; "
        "only memory layout changes")),
    _M + "330:55|core/NumberReplacer": (EQUIVALENT, (
        "a weaker internal assertion (`>= -1`): the evictable count is exact (the policy evicts "
        "idle chunks only), so the original assertion never fails either")),
    _M + "405:38|core/ReplaceComparisonOperator_NotEq_Lt": (EQUIVALENT, (
        "`cache_generation < current` for `!=`: generations only grow and a request's state takes "
        "the current one, so the state's generation is never greater")),
    _M + "277:43|core/ReplaceComparisonOperator_GtE_Eq": (UNREACHABLE, (
        "store_threshold admission (`self.counts is not None`): off under the factory convention "
        "(vLLM's default store_threshold=1)")),
    _M + "225:52|core/NumberReplacer": (UNREACHABLE, (
        "the evictable count is not lowered on a 0 -> 1 load: prepare_store's early `return None` "
        "is skipped but the policy's evict still refuses, so every answer is the same; only "
        "get_stats' usage gauge differs (metrics, no clause)")),
    _M + "98:52|core/ReplaceBinaryOperator_Sub_BitXor": (NOT_EQUIVALENT, (
        "fresh chunks counted as capacity XOR allocated: after a failed store a chunk id equal to "
        "the capacity is handed out (a write past the CPU buffer). It survived the suite as it "
        "was; the suite now checks B4's range of CPU block ids and kills it (re-judged)")),
    _M + "405:12|core/ReplaceOrWithAnd": (NOT_EQUIVALENT, (
        "on_request_finished applies a request that began before reset_cache to the new cache "
        "generation. The machine opens and finishes a request within one rule, so a reset never "
        "falls inside a request: a gap in generation (and K7 does not yet say what such a request "
        "may update); not fixed")),
}
