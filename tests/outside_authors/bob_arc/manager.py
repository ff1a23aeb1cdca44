"""Scheduler-side KV-cache offloading manager with the ARC eviction policy.

Implements the Manager section (M0-M10), the invariants I1-I8 and the ARC
policy (A1-A6, touch order P4) of the shared contract, for a CPU backend
with ``num_blocks`` blocks, block size 16.

Design notes
------------
* Every public method first reads its ``hashes`` argument exactly once into a
  list and validates every element (M0, M9).  Only then does it check the
  contract preconditions, and only when those all hold does it mutate state.
  So a call that raises or returns ``None`` leaves everything as it was (I7).
  ``lookup`` is the exception: it is pure, reads lazily and stops at the first
  miss (M1 allows it).
* Hashes are normalised to plain ``bytes`` before they are used as keys, so a
  ``bytes`` subclass with an odd ``__eq__``/``__hash__`` cannot alias another
  hash (I8).  Ghost entries use the same full keys.
* Victim selection (A4) is computed without touching any state; the victims
  are applied (A5) only when the whole request can be satisfied.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Iterable, List, Optional

from kvoffload.spec import (
    ContractViolation,
    CPULoadStoreSpec,
    OffloadingEvent,
    PrepareStoreOutput,
)

__all__ = ["ARCOffloadingManager", "make_manager"]

BLOCK_SIZE = 16
MEDIUM = "CPU"

PENDING = -1
INT32_MAX = 2**31 - 1

try:  # numpy booleans are accepted for ``success``; numpy is optional.
    import numpy as _np

    _BOOL_TYPES: tuple = (bool, _np.bool_)
except Exception:  # pragma: no cover - numpy missing
    _BOOL_TYPES = (bool,)


def _as_key(h: bytes) -> bytes:
    """Plain ``bytes`` with the same content (identity for exact ``bytes``)."""
    if type(h) is bytes:
        return h
    return b"".join((h,))  # buffer copy: ignores subclass __bytes__/__getitem__


def _read_hashes(hashes: Iterable[bytes], what: str) -> List[bytes]:
    """Read ``hashes`` once, front to back (M0), type-checking every element (M9).

    Raises TypeError before anything else happens if the argument is not an
    iterable or an element is not ``bytes`` (subclasses allowed).
    """
    if isinstance(hashes, (bytes, bytearray, memoryview, str)):
        raise TypeError(
            f"{what}: expected an iterable of bytes block hashes, got a single "
            f"{type(hashes).__name__} object"
        )
    try:
        it = iter(hashes)
    except TypeError:
        raise TypeError(
            f"{what}: expected an iterable of bytes block hashes, got "
            f"{type(hashes).__name__}"
        ) from None
    out: List[bytes] = []
    for i, h in enumerate(it):
        if not isinstance(h, bytes):
            raise TypeError(
                f"{what}: block hash #{i} is {type(h).__name__} ({h!r:.60}), "
                f"expected bytes"
            )
        out.append(_as_key(h))
    return out


class ARCOffloadingManager:
    """OffloadingManager over an in-process CPU block pool, ARC eviction."""

    def __init__(self, num_blocks: int, enable_events: bool = False):
        if isinstance(num_blocks, bool) or not isinstance(num_blocks, int):
            raise TypeError(f"num_blocks must be an int, got {type(num_blocks).__name__}")
        if num_blocks < 0:
            raise ValueError(f"num_blocks must be >= 0, got {num_blocks}")
        self._capacity: int = num_blocks
        self._events_on: bool = bool(enable_events)
        self._events: List[OffloadingEvent] = []

        # Backend: free block ids (stack; lowest ids handed out first initially).
        self._free_ids: List[int] = list(range(num_blocks - 1, -1, -1))
        # hash -> [block_id, ref_cnt]; present hashes only.
        self._blocks: dict = {}

        # ARC state (keys only; values unused).  Ordered least -> most recent.
        self._t1: "OrderedDict[bytes, None]" = OrderedDict()
        self._t2: "OrderedDict[bytes, None]" = OrderedDict()
        self._b1: "OrderedDict[bytes, None]" = OrderedDict()
        self._b2: "OrderedDict[bytes, None]" = OrderedDict()
        self._p: float = 0.0

    # ------------------------------------------------------------------ M1
    def lookup(self, hashes: Iterable[bytes]) -> int:
        if isinstance(hashes, (bytes, bytearray, memoryview, str)):
            raise TypeError(
                f"lookup: expected an iterable of bytes block hashes, got a "
                f"single {type(hashes).__name__} object"
            )
        try:
            it = iter(hashes)
        except TypeError:
            raise TypeError(
                f"lookup: expected an iterable of bytes block hashes, got "
                f"{type(hashes).__name__}"
            ) from None
        n = 0
        for h in it:
            if not isinstance(h, bytes):
                raise TypeError(
                    f"lookup: block hash #{n} is {type(h).__name__}, expected bytes"
                )
            entry = self._blocks.get(_as_key(h))
            if entry is None or entry[1] == PENDING:
                break
            n += 1
        return n

    # ------------------------------------------------------------------ M2
    def prepare_load(self, hashes: Iterable[bytes]) -> CPULoadStoreSpec:
        hs = _read_hashes(hashes, "prepare_load")
        counts: dict = {}
        for h in hs:
            entry = self._blocks.get(h)
            if entry is None:
                raise ContractViolation("M2", f"prepare_load: block {h!r} is not present")
            if entry[1] == PENDING:
                raise ContractViolation(
                    "M2", f"prepare_load: block {h!r} is pending (store in flight)"
                )
            counts[h] = counts.get(h, 0) + 1
        for h, k in counts.items():
            if self._blocks[h][1] + k > INT32_MAX:
                raise ContractViolation(
                    "M2", f"prepare_load: ref_cnt of block {h!r} would overflow int32"
                )
        ids = []
        for h in hs:
            entry = self._blocks[h]
            entry[1] += 1
            ids.append(entry[0])
        return CPULoadStoreSpec(ids)

    # ------------------------------------------------------------------ M3
    def complete_load(self, hashes: Iterable[bytes]) -> None:
        hs = _read_hashes(hashes, "complete_load")
        counts: dict = {}
        for h in hs:
            counts[h] = counts.get(h, 0) + 1
        for h, k in counts.items():
            entry = self._blocks.get(h)
            if entry is None:
                raise ContractViolation("M3", f"complete_load: block {h!r} is not present")
            if entry[1] < k:
                raise ContractViolation(
                    "M3",
                    f"complete_load: block {h!r} has {max(entry[1], 0)} outstanding "
                    f"load(s), {k} completion(s) given",
                )
        for h, k in counts.items():
            self._blocks[h][1] -= k

    # ------------------------------------------------------------- M4 / A3
    def touch(self, hashes: Iterable[bytes]) -> None:
        hs = _read_hashes(hashes, "touch")
        for h in reversed(hs):  # P4: last to first, first ends most recent
            self._touch_one(h)

    def _touch_one(self, h: bytes) -> None:
        if h in self._t1:
            if self._blocks[h][1] == PENDING:
                self._t1.move_to_end(h)
            else:
                del self._t1[h]
                self._t2[h] = None
        elif h in self._t2:
            self._t2.move_to_end(h)
        elif h in self._b1:
            self._p = float(min(self._p + max(1.0, len(self._b2) / len(self._b1)),
                                self._capacity))
            self._b1.move_to_end(h)
        elif h in self._b2:
            self._p = float(max(self._p - max(1.0, len(self._b1) / len(self._b2)), 0.0))
            self._b2.move_to_end(h)

    # ------------------------------------------------------------------ M5
    def prepare_store(self, hashes: Iterable[bytes]) -> Optional[PrepareStoreOutput]:
        hs = _read_hashes(hashes, "prepare_store")
        to_store: List[bytes] = []
        seen: set = set()
        for h in hs:
            if h in seen:
                continue
            seen.add(h)
            if h not in self._blocks:
                to_store.append(h)
        if not to_store:
            return PrepareStoreOutput(
                block_hashes_to_store=[],
                store_spec=CPULoadStoreSpec([]),
                block_hashes_evicted=[],
            )

        need = len(to_store) - len(self._free_ids)
        victims: List[tuple] = []
        if need > 0:
            chosen = self._choose_victims(need, seen)
            if chosen is None:
                return None  # nothing has been touched (M5.4, I7)
            victims = chosen
            self._apply_eviction(victims)

        ids = []
        for h in to_store:
            bid = self._free_ids.pop()
            self._blocks[h] = [bid, PENDING]
            self._arc_insert(h)
            ids.append(bid)

        evicted = [h for h, _ in victims]
        if self._events_on and evicted:
            self._events.append(OffloadingEvent(list(evicted), BLOCK_SIZE, MEDIUM, True))
        return PrepareStoreOutput(
            block_hashes_to_store=to_store,
            store_spec=CPULoadStoreSpec(ids),
            block_hashes_evicted=evicted,
        )

    def _eligible(self, h: bytes, protected: set) -> bool:
        return self._blocks[h][1] == 0 and h not in protected

    def _choose_victims(self, n: int, protected: set) -> Optional[List[tuple]]:
        """A4: pick ``n`` victims as (hash, from_t1) pairs without mutating."""
        t1_iter = (h for h in self._t1 if self._eligible(h, protected))
        t2_iter = (h for h in self._t2 if self._eligible(h, protected))
        floor_p = math.floor(self._p)
        t1_size = len(self._t1)
        t1_taken = 0
        victims: List[tuple] = []
        for _ in range(n):
            t1 = t1_size - t1_taken
            if t1 >= floor_p:
                order = ((t1_iter, True), (t2_iter, False))
            else:
                order = ((t2_iter, False), (t1_iter, True))
            for src, from_t1 in order:
                h = next(src, None)
                if h is not None:
                    victims.append((h, from_t1))
                    if from_t1:
                        t1_taken += 1
                    break
            else:
                return None
        return victims

    def _apply_eviction(self, victims: List[tuple]) -> None:
        """A5: move victims to the ghost lists, trim them, free the blocks."""
        for h, from_t1 in victims:
            if from_t1:
                del self._t1[h]
                self._b1[h] = None
                self._b1.move_to_end(h)
            else:
                del self._t2[h]
                self._b2[h] = None
                self._b2.move_to_end(h)
        self._trim_ghosts()
        for h, _ in victims:
            bid, _rc = self._blocks.pop(h)
            self._free_ids.append(bid)

    def _trim_ghosts(self) -> None:
        while len(self._b1) > self._capacity:
            self._b1.popitem(last=False)
        while len(self._b2) > self._capacity:
            self._b2.popitem(last=False)

    def _arc_insert(self, h: bytes) -> None:
        """A1."""
        self._t1[h] = None
        self._b1.pop(h, None)
        self._b2.pop(h, None)

    # ------------------------------------------------------------- M6 / M7
    def complete_store(self, hashes: Iterable[bytes], success: bool = True) -> None:
        if not isinstance(success, _BOOL_TYPES):
            raise TypeError(
                f"complete_store: success must be a bool, got {type(success).__name__}"
            )
        hs = _read_hashes(hashes, "complete_store")
        if success:
            stored: List[bytes] = []
            for h in hs:
                entry = self._blocks.get(h)
                if entry is not None and entry[1] == PENDING:
                    entry[1] = 0
                    stored.append(h)
            if self._events_on and stored:
                self._events.append(OffloadingEvent(stored, BLOCK_SIZE, MEDIUM, False))
        else:
            for h in hs:
                entry = self._blocks.get(h)
                if entry is not None and entry[1] == PENDING:
                    del self._blocks[h]
                    self._t1.pop(h, None)  # A6: ghosts untouched
                    self._t2.pop(h, None)
                    self._free_ids.append(entry[0])

    # ------------------------------------------------------------------ M8
    def take_events(self) -> List[OffloadingEvent]:
        events, self._events = self._events, []
        return events

    # ------------------------------------------------------ introspection
    def get_num_free_blocks(self) -> int:
        return len(self._free_ids)

    def debug_state(self) -> dict:
        """Snapshot of every observable (and ARC internal) for tests."""
        return {
            "free": len(self._free_ids),
            "blocks": {h: rc for h, (_bid, rc) in self._blocks.items()},
            "t1": list(self._t1),
            "t2": list(self._t2),
            "b1": list(self._b1),
            "b2": list(self._b2),
            "p": self._p,
            "events": list(self._events),
        }


def make_manager(num_blocks: int, enable_events: bool = False) -> ARCOffloadingManager:
    return ARCOffloadingManager(num_blocks, enable_events)
