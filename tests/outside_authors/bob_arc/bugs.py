"""Five buggy variants of manager.ARCOffloadingManager, one subtle bug each.

Each factory has the signature of ``manager.make_manager``.  See BUGS.md for
the bug, the clauses it breaks and a call sequence that exposes it.
"""

from __future__ import annotations

import math
from typing import Iterable, List

from kvoffload.spec import ContractViolation, CPULoadStoreSpec

from .manager import PENDING, ARCOffloadingManager, _read_hashes


# 1. p adaptation uses floor division (a Python 2 habit) -------------------
class _FloorDivP(ARCOffloadingManager):
    def _touch_one(self, h: bytes) -> None:
        if h in self._t1 or h in self._t2:
            super()._touch_one(h)
        elif h in self._b1:
            self._p = float(min(self._p + max(1, len(self._b2) // len(self._b1)),
                                self._capacity))
            self._b1.move_to_end(h)
        elif h in self._b2:
            self._p = float(max(self._p - max(1, len(self._b1) // len(self._b2)), 0))
            self._b2.move_to_end(h)
        else:
            super()._touch_one(h)


def make_floordiv_p(num_blocks, enable_events=False):
    return _FloorDivP(num_blocks, enable_events)


# 2. T1/T2 choice compares |T1| with the float p instead of floor(p) ------
class _UnflooredP(ARCOffloadingManager):
    def _choose_victims(self, n, protected):
        t1_iter = (h for h in self._t1 if self._eligible(h, protected))
        t2_iter = (h for h in self._t2 if self._eligible(h, protected))
        t1_taken = 0
        victims = []
        for _ in range(n):
            t1 = len(self._t1) - t1_taken
            if t1 >= self._p:  # BUG: A4 says floor(p)
                order = ((t1_iter, True), (t2_iter, False))
            else:
                order = ((t2_iter, False), (t1_iter, True))
            for src, from_t1 in order:
                h = next(src, None)
                if h is not None:
                    victims.append((h, from_t1))
                    t1_taken += from_t1
                    break
            else:
                return None
        return victims


def make_unfloored_p(num_blocks, enable_events=False):
    return _UnflooredP(num_blocks, enable_events)


# 3. victims are ghosted while they are being chosen, before we know the ---
#    eviction succeeds; a refused store leaves B1/B2 changed.
class _GhostOnRefusal(ARCOffloadingManager):
    def _choose_victims(self, n, protected):
        victims = self._choose_victims_partial(n, protected)
        for h, from_t1 in victims:  # BUG: bookkeeping before the success check
            ghost = self._b1 if from_t1 else self._b2
            ghost[h] = None
            ghost.move_to_end(h)
        self._trim_ghosts()
        return victims if len(victims) == n else None

    def _choose_victims_partial(self, n, protected):
        # same walk as the correct one, but returns what it found so far
        t1_iter = (h for h in self._t1 if self._eligible(h, protected))
        t2_iter = (h for h in self._t2 if self._eligible(h, protected))
        floor_p = math.floor(self._p)
        t1_taken = 0
        victims: List[tuple] = []
        for _ in range(n):
            t1 = len(self._t1) - t1_taken
            order = (((t1_iter, True), (t2_iter, False)) if t1 >= floor_p
                     else ((t2_iter, False), (t1_iter, True)))
            for src, from_t1 in order:
                h = next(src, None)
                if h is not None:
                    victims.append((h, from_t1))
                    t1_taken += from_t1
                    break
            else:
                break
        return victims


def make_ghost_on_refusal(num_blocks, enable_events=False):
    return _GhostOnRefusal(num_blocks, enable_events)


# 4. only the hashes being stored are protected from eviction -------------
class _ShallowProtect(ARCOffloadingManager):
    def _choose_victims(self, n, protected):
        # BUG: M5.3 protects all of `hashes`; this protects only the absent ones
        to_store = {h for h in protected if h not in self._blocks}
        return super()._choose_victims(n, to_store)


def make_shallow_protect(num_blocks, enable_events=False):
    return _ShallowProtect(num_blocks, enable_events)


# 5. prepare_load bumps ref counts while it validates ----------------------
class _PartialLoad(ARCOffloadingManager):
    def prepare_load(self, hashes: Iterable[bytes]) -> CPULoadStoreSpec:
        hs = _read_hashes(hashes, "prepare_load")
        ids = []
        for h in hs:
            entry = self._blocks.get(h)
            if entry is None or entry[1] == PENDING:
                # BUG: earlier hashes of this call keep their +1
                raise ContractViolation("M2", f"prepare_load: block {h!r} not ready")
            entry[1] += 1
            ids.append(entry[0])
        return CPULoadStoreSpec(ids)


def make_partial_load(num_blocks, enable_events=False):
    return _PartialLoad(num_blocks, enable_events)


FACTORIES = {
    "floordiv_p": make_floordiv_p,
    "unfloored_p": make_unfloored_p,
    "ghost_on_refusal": make_ghost_on_refusal,
    "shallow_protect": make_shallow_protect,
    "partial_load": make_partial_load,
}
