"""Cross-check of the replay against libCacheSim (PyPI ``libcachesim``, the S3-FIFO and
SIEVE authors' simulator) on the same key sequences.

With one key per request, our replay semantics (lookup, touch, store with the request
protected) is exactly a cache ``get`` per access, which is what libCacheSim counts, so
the hit counts are comparable one to one:

- LRU (L1–L3) and SIEVE (V1–V6): identical hit counts.
- S3-FIFO (F1–F7) against libCacheSim's S3FIFO with ``move_to_main_threshold=1`` (our
  F5 moves a block to M after one further use): within 1 % of hits. The remaining
  differences are libCacheSim's, listed under F7 in CONTRACT.md: before its first
  eviction it inserts into M once S is full, and its ghost holds ``floor(0.9 c)``
  (ours ``c − s``). Below 20 blocks its S is one block (``floor(0.1 c)``) and it
  refuses objects as large as S, so it caches nothing at all (checked below at 10
  blocks; below 10, with S of size 0, libcachesim 0.3.5 aborts the process), where
  ours keeps S at one block and caches.
- ARC (A1–A6, vLLM's variant) against libCacheSim's ARC (the paper's): within 15 % of
  hits. The variants differ by design: a hash that returns from a ghost list enters
  T1 here (A1) but T2 in the paper, and each ghost list is bounded by ``c`` on its own
  (A5) instead of ``|T1| + |B1| ≤ c``. The gap is largest for small caches (measured:
  −13.6 % at 10 blocks, within ±2 % from 300 blocks on); it is a property of vLLM's
  ARC, which ours reproduces exactly (see the ARC clauses).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kvoffload.replay import replay_hits
from kvoffload.replay.traces import Trace, from_requests

lcs = pytest.importorskip("libcachesim", reason="libcachesim is not installed (pip install -e '.[dev]')")

CAPACITIES = (30, 100, 300, 1000)


@pytest.fixture(scope="module")
def keys() -> np.ndarray[Any, np.dtype[np.int64]]:
    """30,000 accesses over 3,000 objects, popularity ∝ 1 / rank^0.9 (a skewed trace)."""
    rng = np.random.default_rng(0)
    weights = 1 / np.arange(1, 3001) ** 0.9
    return rng.choice(3000, 30_000, p=weights / weights.sum()).astype(np.int64)


def single_key_trace(keys: np.ndarray[Any, np.dtype[np.int64]]) -> Trace:
    return from_requests("zipf", [[int(k)] for k in keys])


def theirs(cache_class: Any, keys: np.ndarray[Any, np.dtype[np.int64]], capacity: int, **params: Any) -> int:
    cache = cache_class(cache_size=capacity, **params)
    request = lcs.Request()
    hits = 0
    for key in keys.tolist():
        request.obj_id = key
        request.obj_size = 1
        hits += bool(cache.get(request))
    return hits


def ours(keys: np.ndarray[Any, np.dtype[np.int64]], capacity: int, policy: str) -> int:
    return int(replay_hits(single_key_trace(keys), capacity, policy).sum())


@pytest.mark.parametrize("capacity", CAPACITIES)
def test_L3_lru_hits_identical_to_libcachesim(keys: np.ndarray[Any, np.dtype[np.int64]], capacity: int) -> None:
    assert ours(keys, capacity, "lru") == theirs(lcs.LRU, keys, capacity)


@pytest.mark.parametrize("capacity", (10, *CAPACITIES))
def test_V5_sieve_hits_identical_to_libcachesim(keys: np.ndarray[Any, np.dtype[np.int64]], capacity: int) -> None:
    assert ours(keys, capacity, "sieve") == theirs(lcs.Sieve, keys, capacity)


@pytest.mark.parametrize("capacity", CAPACITIES)
def test_F5_s3fifo_hits_within_one_percent_of_libcachesim(
    keys: np.ndarray[Any, np.dtype[np.int64]], capacity: int
) -> None:
    reference = theirs(lcs.S3FIFO, keys, capacity, move_to_main_threshold=1)
    assert abs(ours(keys, capacity, "s3fifo") - reference) <= 0.01 * reference


def test_F1_libcachesim_s3fifo_caches_nothing_at_ten_blocks_ours_does(
    keys: np.ndarray[Any, np.dtype[np.int64]],
) -> None:
    assert theirs(lcs.S3FIFO, keys, 10, move_to_main_threshold=1) == 0
    assert ours(keys, 10, "s3fifo") > ours(keys, 10, "lru") > 0


@pytest.mark.parametrize("capacity", CAPACITIES)
def test_A4_arc_hits_within_fifteen_percent_of_libcachesim(
    keys: np.ndarray[Any, np.dtype[np.int64]], capacity: int
) -> None:
    reference = theirs(lcs.ARC, keys, capacity)
    assert abs(ours(keys, capacity, "arc") - reference) <= 0.15 * reference
