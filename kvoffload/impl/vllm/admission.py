"""Store admission: ``store_threshold`` and ``max_tracker_size``, as vLLM's CPU manager has them (N2).

A chunk is stored only once it has been offered ``store_threshold`` times (values below
2 turn admission off, as in vLLM). Offers are counted in a tracker of at most
``max_tracker_size`` keys, least recently offered first out; the keys of the offer being
counted are never pushed out by it. Keys already resident are not candidates: the
threshold applies to new stores only. Plain Python, no vLLM import.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence

from ...spec.clauses import implements

__all__ = ["StoreAdmission"]


@implements("N2")
class StoreAdmission:
    """The offer tracker of N2. ``skipped`` counts candidates refused since it was last read."""

    def __init__(self, store_threshold: int, max_tracker_size: int) -> None:
        self.store_threshold = store_threshold
        self.max_tracker_size = max_tracker_size
        self.enabled = store_threshold >= 2
        self.counts: OrderedDict[bytes, int] = OrderedDict()
        self.skipped = 0

    def _count_offer(self, keys: Sequence[bytes]) -> None:
        """Count one offer: tracked keys move to the young end, new keys enter with 1."""
        counts = self.counts
        tracked: set[bytes] = set()
        for key in keys:
            if key in counts:
                counts.move_to_end(key)
                counts[key] += 1
                tracked.add(key)
        # Only keys outside this offer may be pushed out to make room.
        evictable = len(counts) - len(tracked)
        for key in keys:
            if key in counts:
                continue
            if len(counts) >= self.max_tracker_size:
                if evictable == 0:
                    continue  # the offer itself fills the tracker: the key goes uncounted
                counts.popitem(last=False)
                evictable -= 1
            counts[key] = 1

    def filter_offer(self, keys: Sequence[bytes], resident: Callable[[bytes], bool]) -> list[bytes]:
        """N2: the offer with the new keys that have not reached the threshold removed.

        ``resident(key)``: the key is stored or being stored (not a candidate). Order is
        kept; resident keys stay in (they protect themselves from eviction, M5).
        """
        self._count_offer(keys)
        kept: list[bytes] = []
        for key in keys:
            if resident(key) or self.counts.get(key, 0) >= self.store_threshold:
                kept.append(key)
            else:
                self.skipped += 1
        return kept

    def take_skipped(self) -> int:
        skipped, self.skipped = self.skipped, 0
        return skipped
