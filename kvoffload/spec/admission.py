"""N2 in the model: which absent keys a ``prepare_store`` offer may store when
``store_threshold`` >= 2 (vLLM's ``_record_accesses`` and its filter).

The conformance suite's vLLM mode applies this before the model's M5 when it judges a
target built with ``store_threshold`` (``--store-threshold``): the model then stores
only the admitted keys. The offer tracker survives ``reset_cache`` (N2, K7).
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Callable, Sequence

from .clauses import implements

__all__ = ["ReferenceAdmission", "DEFAULT_MAX_TRACKER_SIZE"]

#: vLLM's default ``max_tracker_size`` (N2).
DEFAULT_MAX_TRACKER_SIZE = 64_000


@implements("N2")
class ReferenceAdmission:
    """The offer counts of N2: at most ``max_tracker_size`` keys, least recently offered
    first out; keys of the offer being counted are never pushed out by it."""

    def __init__(self, store_threshold: int, max_tracker_size: int = DEFAULT_MAX_TRACKER_SIZE) -> None:
        if type(store_threshold) is not int or store_threshold < 2:
            raise ValueError(f"N2: store_threshold={store_threshold!r} turns admission on only from 2")
        if type(max_tracker_size) is not int or max_tracker_size < 1:
            raise ValueError(f"N2: max_tracker_size={max_tracker_size!r} must be a positive integer")
        self.store_threshold = store_threshold
        self.max_tracker_size = max_tracker_size
        self.counts: OrderedDict[bytes, int] = OrderedDict()

    def _count(self, keys: Sequence[bytes]) -> None:
        """N2: every occurrence of a tracked key counts and makes it the youngest; then each
        new key enters with 1, pushing out the oldest key outside this offer when full
        (none left: the new key goes uncounted)."""
        in_offer: set[bytes] = set()
        for key in keys:
            if key in self.counts:
                self.counts[key] += 1
                self.counts.move_to_end(key)
                in_offer.add(key)
        outside = len(self.counts) - len(in_offer)
        for key in keys:
            if key in self.counts:
                continue
            if len(self.counts) >= self.max_tracker_size:
                if outside == 0:
                    continue
                self.counts.popitem(last=False)
                outside -= 1
            self.counts[key] = 1

    def offer(self, keys: Sequence[bytes], present: Callable[[bytes], bool]) -> list[bytes]:
        """N2: count this offer, then keep its present keys (not candidates: M5 makes them
        no-ops) and the absent ones offered ``store_threshold`` times, in input order."""
        self._count(keys)
        return [k for k in keys if present(k) or self.counts.get(k, 0) >= self.store_threshold]

    def preview(self, keys: Sequence[bytes], present: Callable[[bytes], bool]) -> list[bytes]:
        """What ``offer`` would keep, counting nothing."""
        return copy.deepcopy(self).offer(keys, present)
