"""Hit ratio of the two LRU orders (L1 recency vs N9 request rank) on a trace.

Replays a Mooncake-format trace (``/work/shared/data/README.md``) through the reference
model (``ReferenceManager``) with ``ReferenceLRUPolicy`` (L1, vLLM 0.32's order, ours)
and ``ReferenceRequestRankLRUPolicy`` (N9, vLLM 0.33's order). ``--concurrent`` requests
are open at once; each step, each open request loads its prefix hit (first step) or
stores its next ``--chunk`` blocks (positions = block index), round robin, and a request
finishes (K5) after its last chunk. Prints the share of prompt blocks found offloaded.

    PYTHONPATH=. python3 examples/lru_order_hits.py --capacity 400 --requests 1200
"""

from __future__ import annotations

import argparse
import json
from collections import deque
from typing import Any

from kvoffload.spec import ReferenceLRUPolicy, ReferenceManager, ReferenceRequestRankLRUPolicy
from kvoffload.spec.keyed import RequestAccess, request_order


class _Request:
    def __init__(self, number: int, keys: list[bytes]) -> None:
        self.number, self.keys, self.next = number, keys, 0
        self.positions = {key: index for index, key in enumerate(keys)}
        self.access = RequestAccess()


def _serve(policy: Any, request: _Request | None) -> None:
    if isinstance(policy, ReferenceRequestRankLRUPolicy):
        policy.serve(request, request.positions if request is not None else None)


def _observe(policy: Any, request: _Request, keys: list[bytes]) -> None:
    fresh = [key for key in keys if key not in request.access.observed]
    if isinstance(policy, ReferenceRequestRankLRUPolicy):
        policy.on_request_access(fresh)
    for key in fresh:
        request.access.observed[key] = None


def _step(manager: ReferenceManager, request: _Request, chunk: int) -> int:
    """One scheduler step of ``request``; returns the blocks it hit (first step only)."""
    policy = manager.policy
    _serve(policy, request)
    hits = 0
    if request.next == 0:
        hits = manager.lookup(request.keys)
        if hits:
            loaded = request.keys[:hits]
            manager.prepare_load(loaded)
            _observe(policy, request, loaded)
            manager.complete_load(loaded)
        request.next = hits
    batch = request.keys[request.next:request.next + chunk]
    request.next += len(batch)
    if batch:
        _observe(policy, request, [k for k in batch if policy.get(k) is None or policy.get(k).ref_cnt >= 0])
        output = manager.prepare_store(batch)
        if output is not None and output.block_hashes_to_store:
            manager.complete_store(output.block_hashes_to_store)
    return hits


def replay(trace: list[list[int]], policy: Any, capacity: int, concurrent: int, chunk: int) -> float:
    manager = ReferenceManager(capacity, policy=policy)
    waiting = deque(_Request(n, [i.to_bytes(8, "big") for i in ids]) for n, ids in enumerate(trace))
    active: list[_Request] = []
    hits = total = 0
    while waiting or active:
        while waiting and len(active) < concurrent:
            active.append(waiting.popleft())
        for request in list(active):
            hits += _step(manager, request, chunk)
            if request.next >= len(request.keys):
                _serve(manager.policy, None)
                manager.touch(request_order(request.access, request.positions))  # K5: its end
                total += len(request.keys)
                active.remove(request)
    return hits / max(total, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default="/work/shared/data/mooncake_synthetic_trace.jsonl")
    parser.add_argument("--requests", type=int, default=1200)
    parser.add_argument("--capacity", type=int, default=400)
    parser.add_argument("--concurrent", type=int, default=4)
    parser.add_argument("--chunk", type=int, default=8)
    args = parser.parse_args()
    with open(args.trace, encoding="utf-8") as handle:
        trace = [json.loads(line)["hash_ids"] for _, line in zip(range(args.requests), handle)]
    for name, policy in (("L1 recency (ours, vLLM 0.32)", ReferenceLRUPolicy(args.capacity)),
                         ("N9 request rank (vLLM 0.33)", ReferenceRequestRankLRUPolicy(args.capacity))):
        ratio = replay(trace, policy, args.capacity, args.concurrent, args.chunk)
        print(f"{name:30s} hit ratio {ratio:.4f}  (capacity {args.capacity} blocks, {len(trace)} requests, "
              f"{args.concurrent} concurrent, chunk {args.chunk})")


if __name__ == "__main__":
    main()
