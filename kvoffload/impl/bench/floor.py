"""The floor of the benchmarks: the plainest exact LRU in Python, an ``OrderedDict``.

``FloorLRU`` maps each present key to ``[ref_cnt, block id]`` (``ref_cnt`` -1: pending),
oldest first, with the contract's batch calls; ``FloorLRUPerKey`` puts it behind vLLM
0.32's per-key ``OffloadingManager`` calls. Same answers as vLLM 0.32's LRU manager and
our reference model for the calls the benchmarks make (lookups, stored and evicted keys,
in order); no events, no argument checks: it is a floor for cost, not a product.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Sequence
from typing import Any

__all__ = ["FloorLRU", "FloorLRUPerKey"]

StoreOutput = tuple[list[bytes], list[int], list[bytes]]


class FloorLRU:
    """Exact LRU over ``capacity`` blocks, batch calls (M1–M7 as the benchmarks use them)."""

    def __init__(self, capacity: int) -> None:
        self.blocks: OrderedDict[bytes, list[int]] = OrderedDict()
        self.free = list(range(capacity - 1, -1, -1))

    def lookup(self, keys: Sequence[bytes]) -> int:
        get, count = self.blocks.get, 0
        for key in keys:
            entry = get(key)
            if entry is None or entry[0] < 0:
                break
            count += 1
        return count

    def prepare_load(self, keys: Sequence[bytes]) -> list[int]:
        ids = []
        for key in keys:
            entry = self.blocks[key]
            entry[0] += 1
            ids.append(entry[1])
        return ids

    def complete_load(self, keys: Collection[bytes]) -> None:
        for key in keys:
            self.blocks[key][0] -= 1

    def touch(self, keys: Sequence[bytes]) -> None:
        """Recency: the first key ends up the most recent."""
        blocks = self.blocks
        for key in reversed(keys):
            if key in blocks:
                blocks.move_to_end(key)

    def prepare_store(self, keys: Sequence[bytes]) -> StoreOutput | None:
        blocks, free = self.blocks, self.free
        to_store = [key for key in dict.fromkeys(keys) if key not in blocks]
        need = len(to_store) - len(free)
        victims: list[bytes] = []
        if to_store and need > 0:
            protected = set(keys)
            for key, entry in blocks.items():  # oldest first
                if entry[0] == 0 and key not in protected:
                    victims.append(key)
                    if len(victims) == need:
                        break
            else:
                return None
            for key in victims:
                free.append(blocks.pop(key)[1])
        ids = [free.pop() for _ in to_store]
        for key, block_id in zip(to_store, ids):
            blocks[key] = [-1, block_id]
        return to_store, ids, victims

    def complete_store(self, keys: Collection[bytes], success: bool = True) -> None:
        blocks = self.blocks
        for key in keys:
            entry = blocks.get(key)
            if entry is not None and entry[0] < 0:
                if success:
                    entry[0] = 0
                else:
                    self.free.append(blocks.pop(key)[1])


class FloorLRUPerKey:
    """``FloorLRU`` behind vLLM 0.32's per-key calls; recency on ``on_request_finished``
    (the request's loaded and offered keys, in the order it gave them), as vLLM's LRU.

    ``results`` are vLLM's ``(HIT, HIT_PENDING, MISS)``; the floor imports nothing."""

    def __init__(self, capacity: int, results: tuple[Any, Any, Any]) -> None:
        self.lru = FloorLRU(capacity)
        self._get = self.lru.blocks.get
        self._hit, self._pending, self._miss = results
        self._seen: dict[str, dict[bytes, None]] = {}

    def on_new_request(self, ctx: Any) -> None:
        self._seen[ctx.req_id] = {}

    def lookup(self, key: bytes, ctx: Any) -> Any:
        entry = self._get(key)
        if entry is None:
            return self._miss
        return self._hit if entry[0] >= 0 else self._pending

    def prepare_load(self, keys: Sequence[bytes], ctx: Any) -> list[int]:
        self._seen[ctx.req_id].update(dict.fromkeys(keys))
        return self.lru.prepare_load(keys)

    def complete_load(self, keys: Collection[bytes], ctx: Any) -> None:
        self.lru.complete_load(keys)

    def prepare_store(self, keys: Sequence[bytes], ctx: Any) -> StoreOutput | None:
        get = self._get
        self._seen[ctx.req_id].update(dict.fromkeys(k for k in keys if (e := get(k)) is None or e[0] >= 0))
        return self.lru.prepare_store(keys)

    def complete_store(self, keys: Collection[bytes], ctx: Any, success: bool = True) -> None:
        self.lru.complete_store(keys, success)

    def on_request_finished(self, ctx: Any) -> None:
        self.lru.touch(list(self._seen.pop(ctx.req_id, ())))
