"""What a replay counts, and the two ways to compute it.

**Replay semantics** (what the vLLM connector does with one request, all copies
instantaneous and successful). A cache of ``capacity`` blocks starts empty. For each
request, with ``keys`` its first ``capacity`` keys (a longer request cannot keep more;
the rest are misses):

1. ``hits = lookup(keys)`` (M1): the longest prefix of keys present — the blocks the
   connector would load instead of recomputing. **A hit is a key of that prefix**; the
   hit ratio is hits / all keys of all requests (the part of the prompt served from the
   cache). A present key after the first miss is not a hit: vLLM cannot use it.
2. ``touch(keys)`` (M4, P4): the request uses all of its blocks.
3. ``prepare_store(keys)`` (M5) with the whole request protected, evicting by the policy,
   then ``complete_store`` of what it allocated (M6): every miss is stored.

``replay_reference`` runs exactly these calls on ``ReferenceManager`` — the definition.
``replay_hits`` computes the same numbers with compiled simulators over integer keys
(``_policies``; the tests check both agree request by request), plus the bounds
(``_bounds``): ``infinite`` (no evictions, no truncation: the ceiling) and ``belady``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..spec.manager import ReferenceManager
from ..spec.types import BlockHash
from ._bounds import replay_belady, replay_infinite
from ._policies import POLICY_CODES, replay_policy
from .traces import Trace

__all__ = ["REPLAY_POLICIES", "BOUNDS", "replay_hits", "replay_reference"]

#: The contract's exact policies, in the order tables and plots show them.
REPLAY_POLICIES = ("lru", "arc", "s3fifo", "sieve")
#: The curves that bound them: Belady's offline optimum and an infinite cache.
BOUNDS = ("belady", "infinite")


def replay_hits(trace: Trace, capacity: int, policy: str) -> npt.NDArray[np.int64]:
    """Hits per request of ``trace`` replayed at ``capacity`` blocks (module doc)."""
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity <= 0:
        raise ValueError(f"capacity={capacity!r} must be a positive number of blocks")
    hits = np.zeros(trace.num_requests, np.int64)
    if trace.num_accesses == 0:
        return hits
    if policy in POLICY_CODES:
        replay_policy(POLICY_CODES[policy], trace.keys, trace.offsets, trace.num_keys, capacity, hits)
    elif policy == "belady":
        replay_belady(trace.keys, trace.offsets, trace.num_keys, capacity, hits)
    elif policy == "infinite":
        replay_infinite(trace.keys, trace.offsets, trace.num_keys, hits)
    else:
        raise ValueError(f"policy={policy!r} is not one of {[*REPLAY_POLICIES, *BOUNDS]}")
    return hits


def _key_bytes(key: int) -> BlockHash:
    return BlockHash(key.to_bytes(8, "little"))


def replay_reference(trace: Trace, capacity: int, policy: str) -> list[int]:
    """Hits per request, by the module doc's calls on ``ReferenceManager`` (slow, exact)."""
    manager = ReferenceManager(capacity, policy=policy)
    hits: list[int] = []
    for request in trace.requests():
        keys = [_key_bytes(key) for key in request[:capacity]]
        hits.append(manager.lookup(keys))
        manager.touch(keys)
        output = manager.prepare_store(keys)
        if output is None:  # cannot happen: at most `capacity` keys, all others evictable
            raise AssertionError("I6: prepare_store refused a request that fits")
        manager.complete_store(output.block_hashes_to_store)
    return hits
