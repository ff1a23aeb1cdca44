"""N9 on the compiled core: what a request observed, and the rank number it drew.

vLLM 0.33's ``LRUCachePolicy`` ranks a request's keys while it is open: the request draws
one number from the cache's counter at its first access, and each key it positions (end
token ``p``) ranks ``(number, -p)`` when the request inserts it, or when it observes it
present and that raises its rank (N9). The core keeps the ranks (``core.ranks``,
``CPUOffloadingManager.rerank``); this class keeps, per open request, its number and the
keys it has observed, and tells the core what to rank after each call:

- ``begin`` before a ``prepare_store`` (after the admission filter) or ``prepare_load``,
  with the keys the call observes (loaded; offered absent, or ready): the keys new to the
  request, and its number, drawn now at its first access, so that the store's
  unpositioned inserts (fresh numbers) rank above the request's keys, as in vLLM;
- ``observe`` once the call succeeded (a refused store included), with the keys a store
  inserted;
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

    @implements("N9", "K5")
    def begin(self, core: CPUOffloadingManager, request: Hashable, keys: Iterable[bytes]) -> tuple[list[bytes], int]:
        """Before a call: the keys of ``keys`` new to the request (once each, in order) and
        the number they rank by, drawn now if the request has none (its first access: before
        the call's inserts take fresh numbers); ``([], 0)`` when none is new. Changes only
        the core's counter: :meth:`observe` records them once the call succeeded."""
        seen = self._observed.get(request, ())
        new = [key for key in dict.fromkeys(keys) if key not in seen]
        if not new:
            return new, 0
        number = self._numbers.get(request)
        return new, core.rank_number() if number is None else number

    @implements("N9", "K5")
    def observe(self, core: CPUOffloadingManager, request: Hashable, new: list[bytes], number: int,
                positions: Mapping[bytes, int], inserted: list[bytes] | None = None) -> None:
        """After the call: the request observed ``new`` (from :meth:`begin`) and keeps
        ``number``; each positioned key it ``inserted`` ranks ``(number, -p)``, each other
        positioned present key of ``new`` rises to it if that is higher. One core call."""
        if new:
            self._numbers[request] = number
            seen = self._observed.get(request)
            if seen is None:
                seen = self._observed[request] = set()
            seen.update(new)
        number = self._numbers.get(request, 0)
        if not positions or not number:  # nothing positioned, or nothing ever observed
            return
        stored = [key for key in inserted if key in positions] if inserted else []
        if stored:
            was_stored = set(stored)
            raised = [key for key in new if key in positions and key not in was_stored]
        else:
            raised = [key for key in new if key in positions]
        if raised or stored:
            keys = raised + stored
            core.rerank(keys, number, [positions[key] for key in keys], b"\x01" * len(raised) + bytes(len(stored)))

    def finish(self, request: Hashable) -> None:
        """K5: the request ended; what it observed and its number are forgotten."""
        self._numbers.pop(request, None)
        self._observed.pop(request, None)

    @implements("K7", "N9")
    def clear(self) -> None:
        """K7, N9: a new cache generation: every number and observation is forgotten."""
        self._numbers.clear()
        self._observed.clear()
