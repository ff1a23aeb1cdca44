"""N9 on the compiled core: what a request observed, and the rank number it drew.

vLLM 0.33's ``LRUCachePolicy`` ranks a request's keys while it is open: the request draws
one number from the cache's counter at its first access, and each key it positions (end
token ``p``) ranks ``(number, -p)`` when the request inserts it, or when it observes it
present and that raises its rank (N9). The core keeps the ranks (``core.ranks``,
``CPUOffloadingManager.rerank``); this class keeps, per open request, its number and the
keys it has observed, and tells the core what to rank after each call:

- ``observe`` before a ``prepare_store`` (after the admission filter) and after a
  ``prepare_load``, with the keys the call observes (loaded; offered absent, or ready);
  the number is drawn before the store inserts anything, so the store's unpositioned
  inserts (fresh numbers) rank above the request's keys, as in vLLM;
- ``inserted`` after a ``prepare_store``, with the keys it stored;
- ``finish`` at the request's end (the caller then touches its keys in K5's order: fresh
  numbers, minor 0), ``clear`` at ``reset_cache`` (a new generation, K7).

An unpositioned key (no end token) is never ranked here: it keeps its fresh number.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping

from ..spec.clauses import implements
from .manager import CPUOffloadingManager

__all__ = ["RequestRanks"]


@implements("N9", "K5", "K7")
class RequestRanks:
    """Per open request: its N9 number (this generation's) and the keys it observed."""

    def __init__(self) -> None:
        self._numbers: dict[Hashable, int] = {}
        self._observed: dict[Hashable, set[bytes]] = {}

    def _number(self, core: CPUOffloadingManager, request: Hashable) -> int:
        number = self._numbers.get(request)
        if number is None:
            number = self._numbers[request] = core.rank_number()
        return number

    @implements("N9", "K5")
    def observe(self, core: CPUOffloadingManager, request: Hashable, keys: Iterable[bytes],
                positions: Mapping[bytes, int]) -> None:
        """The request observes ``keys``: those new to it draw its number (at its first
        access) and raise the positioned present ones to ``(number, -p)``."""
        seen = self._observed.get(request)
        if seen is None:
            seen = self._observed[request] = set()
        new = [key for key in dict.fromkeys(keys) if key not in seen]
        if not new:
            return
        seen.update(new)
        number = self._number(core, request)
        ranked = [key for key in new if key in positions]
        if ranked:
            core.rerank(ranked, number, [positions[key] for key in ranked], b"\x01" * len(ranked))

    @implements("N9")
    def inserted(self, core: CPUOffloadingManager, request: Hashable, keys: list[bytes],
                 positions: Mapping[bytes, int]) -> None:
        """The request stored ``keys`` (new, pending): each positioned one ranks ``(number, -p)``."""
        ranked = [key for key in keys if key in positions] if positions else []
        if ranked:
            core.rerank(ranked, self._number(core, request), [positions[key] for key in ranked],
                        bytes(len(ranked)))

    def finish(self, request: Hashable) -> None:
        """K5: the request ended; what it observed and its number are forgotten."""
        self._numbers.pop(request, None)
        self._observed.pop(request, None)

    @implements("K7", "N9")
    def clear(self) -> None:
        """K7, N9: a new cache generation: every number and observation is forgotten."""
        self._numbers.clear()
        self._observed.clear()
