"""N9 on the compiled core: what a request observed, and the rank number it drew.

vLLM 0.33's ``LRUCachePolicy`` ranks a request's keys while it is open: the request draws
one number from the cache's counter at its first access, and each key it positions (end
token ``p``) ranks ``(number, -p)`` when the request inserts it, or when it observes it
present and that raises its rank (N9). The core keeps the ranks (``core.ranks``;
``CPUOffloadingManager.rerank`` by hash, ``rerank_blocks`` by the block ids a store
answered); this class keeps, per open request, its number and the
keys it has observed, and tells the core what to rank after each call:

- ``begin`` before a ``prepare_store`` (after the admission filter) or ``prepare_load``,
  with the keys the call observes (loaded; offered absent, or ready): the keys new to the
  request, and its number, drawn now at its first access, so that the store's
  unpositioned inserts (fresh numbers) rank above the request's keys, as in vLLM;
- ``observe`` once the call succeeded (a refused store included), with the observed keys
  that may rise (present: loaded, or offered while ready) and the keys a store inserted;
- ``finish`` at the request's end (the caller then touches its keys in K5's order: fresh
  numbers, minor 0), ``clear`` at ``reset_cache`` (a new generation, K7).

An unpositioned key (no end token) is never ranked here: it keeps its fresh number.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from itertools import compress, filterfalse

from ..spec.clauses import implements
from .manager import CPUOffloadingManager

__all__ = ["RequestRanks"]

_NONE: list[bytes] = []


def _positioned(keys: list[bytes], positions: Mapping[bytes, int]) -> tuple[list[bytes], list[int]]:
    """The keys of ``keys`` that have a position, and their positions (every key has one
    in vLLM's usual call: then one C-level pass)."""
    if not keys:
        return keys, []
    try:
        return keys, list(map(positions.__getitem__, keys))
    except KeyError:
        kept = list(compress(keys, map(positions.__contains__, keys)))
        return kept, list(map(positions.__getitem__, kept))


@implements("N9", "K5", "K7")
class RequestRanks:
    """Per open request: its N9 number (this generation's) and the keys it observed."""

    def __init__(self) -> None:
        self._numbers: dict[Hashable, int] = {}
        # Per open request: the keys it observed, as a set and the lists of the calls since
        # it was last asked for. A request's last call is never asked about again (vLLM's
        # usual request: a load, then a store), so its keys are only listed, not hashed.
        self._observed: dict[Hashable, tuple[set[bytes], list[list[bytes]]]] = {}

    def _seen(self, request: Hashable) -> set[bytes] | None:
        """The keys ``request`` observed so far, or ``None`` before its first observation."""
        entry = self._observed.get(request)
        if entry is None:
            return None
        seen, calls = entry
        for keys in calls:
            seen.update(keys)
        calls.clear()
        return seen

    @implements("N9", "K5")
    def begin(self, core: CPUOffloadingManager, request: Hashable, keys: Iterable[bytes]) -> tuple[list[bytes], int]:
        """Before a call: the keys of ``keys`` new to the request, in order, and the number
        they rank by, drawn now if the request has none (its first access: before the call's
        inserts take fresh numbers); ``([], 0)`` when none is new. A key twice in ``keys``
        stays twice: ranking it again to the same rank changes nothing, and dropping
        repeats would cost more. Changes only the core's counter: :meth:`observe` records
        them once the call succeeded."""
        seen = self._seen(request)
        new = list(keys) if seen is None else list(filterfalse(seen.__contains__, keys))
        if not new:
            return new, 0
        number = self._numbers.get(request)
        return new, core.rank_number() if number is None else number

    @implements("N9", "K5")
    def observe(self, core: CPUOffloadingManager, request: Hashable, new: list[bytes], number: int,
                positions: Mapping[bytes, int], raised: list[bytes], stored: list[bytes] = _NONE,
                stored_ids: Sequence[int] | None = None) -> None:
        """After the call: the request observed ``new`` (from :meth:`begin`) and keeps
        ``number``; of the positioned keys, those it ``stored`` rank ``(number, -p)`` and
        those ``raised`` (observed present: a subset of ``new``) rise to it if that is
        higher. ``stored_ids``: the stored keys' block ids (the store's answer, in its
        order), so that the core ranks them without finding each hash. A core call for
        each of the two kinds present (none when nothing is positioned)."""
        if new:
            self._numbers[request] = number
            entry = self._observed.get(request)
            if entry is None:
                self._observed[request] = (set(), [new])
            else:
                entry[1].append(new)
        number = self._numbers.get(request, 0)
        if not positions or not number or not (raised or stored):  # nothing to rank
            return
        if raised:
            raised, up = _positioned(raised, positions)
            if raised:
                core.rerank(raised, number, up, len(raised))
        if stored:
            kept, at = _positioned(stored, positions)
            if stored_ids is None:
                core.rerank(kept, number, at)
            else:  # the store's own block ids: no hash to find again
                ids = stored_ids if kept is stored else list(compress(stored_ids, map(positions.__contains__, stored)))
                core.rerank_blocks(ids, number, at)

    def finish(self, request: Hashable) -> None:
        """K5: the request ended; what it observed and its number are forgotten."""
        self._numbers.pop(request, None)
        self._observed.pop(request, None)

    @implements("K7", "N9")
    def clear(self) -> None:
        """K7, N9: a new cache generation: every number and observation is forgotten."""
        self._numbers.clear()
        self._observed.clear()
