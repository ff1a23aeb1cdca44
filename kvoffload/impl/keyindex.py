"""``KeyIndexedManager``: a production manager plus Python sets of its keys, for
per-key callers (vLLM's connector asks ``lookup(key)`` one key at a time).

A per-key question answered by the compiled core costs a compiled-call round trip
(microseconds); a set membership test costs tens of nanoseconds. So this class keeps
two sets: ``ready`` (present and ready) and ``pending`` (present, store not completed,
``ref_cnt == -1``); an absent hash is in neither. That is exactly what a per-key lookup
needs (M1: present and ready; pending blocks are told apart from absent ones). The
pending set holds only stores in flight, so it stays small and cache-resident; per
stored block the big set sees one insert and one eviction.

The sets change only where presence or readiness changes (M10 names them):

- ``prepare_store`` (M5.5): victims leave ``ready``, the new hashes enter ``pending``;
- ``complete_store`` (M6): listed pending hashes move to ``ready``; (M7): they leave;
- ``reset``: a fresh core, empty sets.

Loads and touches never change presence or readiness (M2–M4), so they go straight to
the core. Every call reaches the core first and updates the sets only after the core
returned: a call the core refuses (M9: it raises and changes nothing; M5.4: ``None``
and nothing changed) leaves the sets untouched too, so sets and core cannot disagree
after a failure. The set updates themselves cannot fail: their keys were checked by the
core (hashable ``bytes``) and, by I1–I3, every victim is present and ready. All of them
are single C-level set operations (no Python loop per key).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..spec.types import BlockHash, CPULoadStoreSpec, OffloadingEvent, PrepareStoreOutput
from .manager import CPUOffloadingManager

__all__ = ["KeyIndexedManager"]


class KeyIndexedManager:
    """A ``CPUOffloadingManager`` built by ``factory`` and its per-key sets (M1, M5–M7).

    ``ready`` and ``pending`` are the same two set objects for the object's whole life
    (``reset`` empties them in place), so a caller may keep references to them for the
    fastest lookups. The core reads each hash argument once (M0) and hands back what it read.
    """

    def __init__(self, factory: Callable[[], CPUOffloadingManager]) -> None:
        self._factory = factory
        self.core: CPUOffloadingManager = factory()
        self.ready: set[bytes] = set()
        self.pending: set[bytes] = set()
        self._carried: list[OffloadingEvent] = []  # events queued before a reset

    def state(self, block_hash: bytes) -> bool | None:
        """``True`` ready, ``False`` pending, ``None`` absent (M1's per-key question)."""
        if block_hash in self.ready:
            return True
        return False if block_hash in self.pending else None

    def lookup(self, block_hashes: Iterable[BlockHash]) -> int:
        """M1, answered from the sets: the longest prefix of ready hashes."""
        ready, count = self.ready, 0
        for block_hash in block_hashes:
            if block_hash not in ready:
                break
            count += 1
        return count

    def prepare_load(self, block_hashes: Iterable[BlockHash]) -> CPULoadStoreSpec:
        """M2 (presence and readiness unchanged)."""
        return self.core.prepare_load(block_hashes)

    def complete_load(self, block_hashes: Iterable[BlockHash]) -> None:
        """M3 (presence and readiness unchanged)."""
        self.core.complete_load(block_hashes)

    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        """M4 (presence and readiness unchanged)."""
        self.core.touch(block_hashes)

    def prepare_store(self, block_hashes: Iterable[BlockHash]) -> PrepareStoreOutput | None:
        """M5: the core decides; then the victims leave ``ready``, the new enter ``pending``."""
        output = self.core.prepare_store(block_hashes)
        if output is None or not output.block_hashes_to_store:
            return output  # M5.2 / M5.4: nothing changed
        self.ready.difference_update(output.block_hashes_evicted)
        self.pending.update(output.block_hashes_to_store)
        return output

    def complete_store(self, block_hashes: Iterable[BlockHash], success: bool = True) -> None:
        """M6: listed pending hashes become ready; M7: they leave. Others are ignored."""
        # The core reads the argument once (M0) and raises (M9) before anything changes.
        hashes, count = self.core.complete_store_counted(block_hashes, success)
        if not count:  # none of them was pending: the sets, like the core, are unchanged
            return
        # ``count`` distinct pending blocks changed; if that is every listed hash, the
        # list is exactly the keys to move (no pass to check it against ``pending``).
        done = hashes if count == len(hashes) else self.pending.intersection(hashes)
        self.pending.difference_update(done)
        if success:
            self.ready.update(done)

    def take_events(self) -> Iterable[OffloadingEvent]:
        """M8 (events queued before a ``reset`` first)."""
        if not self._carried:
            return self.core.take_events()
        events, self._carried = self._carried, []
        return [*events, *self.core.take_events()]

    def reset(self) -> None:
        """Drop every block, in flight or not: a fresh core, empty sets. Events already
        queued are kept for the next ``take_events`` (they happened; vLLM 0.32's own
        manager keeps them across ``reset_cache`` too)."""
        self._carried.extend(self.core.take_events())
        self.core = self._factory()
        self.ready.clear()
        self.pending.clear()
