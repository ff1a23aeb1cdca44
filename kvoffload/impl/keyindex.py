"""``KeyIndexedManager``: a production manager plus a Python dict of its keys, for
per-key callers (vLLM's connector asks ``lookup(key)`` one key at a time).

A per-key question answered by the compiled core costs a compiled-call round trip
(microseconds); a ``dict.get`` costs tens of nanoseconds. So this class keeps
``index``: every present hash mapped to ``True`` (ready) or ``False`` (pending,
``ref_cnt == -1``); an absent hash is not in it. That is exactly what a per-key
lookup needs (M1: present and ready; pending blocks are told apart from absent ones).

The index changes only where presence or readiness changes (M10 names them):

- ``prepare_store`` (M5.5): victims leave, the new hashes enter as pending;
- ``complete_store`` (M6): listed pending hashes become ready; (M7): they leave;
- ``reset``: a fresh core, an empty index.

Loads and touches never change presence or readiness (M2–M4), so they go straight to
the core. Every call reaches the core first and updates the index only after the core
returned: a call the core refuses (M9: it raises and changes nothing; M5.4: ``None``
and nothing changed) leaves the index untouched too, so index and core cannot disagree
after a failure. The index update itself cannot fail: its keys were checked by the core
(hashable ``bytes``) and, by I1–I3, every victim is present and ready.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..spec.types import BlockHash, CPULoadStoreSpec, OffloadingEvent, PrepareStoreOutput
from .manager import CPUOffloadingManager

__all__ = ["KeyIndexedManager"]

_NOT_A_BATCH = (bytes, bytearray, memoryview, str)


def _read_once(block_hashes: Iterable[BlockHash]) -> Iterable[BlockHash]:
    """M0: a list to read twice (core, then index). Anything the core must refuse with
    the contract's own error (a ``bytes``-like or non-iterable argument) goes on as is."""
    if type(block_hashes) is list or isinstance(block_hashes, _NOT_A_BATCH):
        return block_hashes
    try:
        return list(block_hashes)
    except TypeError:
        return block_hashes


class KeyIndexedManager:
    """A ``CPUOffloadingManager`` built by ``factory`` and its per-key ``index`` (M1, M5–M7).

    ``index`` is one dict for the object's whole life (``reset`` empties it in place),
    so a caller may keep a reference to it, or to its ``get``, for the fastest lookups.
    Hash arguments are read once into a list (M0) before the core sees them.
    """

    def __init__(self, factory: Callable[[], CPUOffloadingManager]) -> None:
        self._factory = factory
        self.core: CPUOffloadingManager = factory()
        self.index: dict[bytes, bool] = {}

    def state(self, block_hash: bytes) -> bool | None:
        """``True`` ready, ``False`` pending, ``None`` absent (M1's per-key question)."""
        return self.index.get(block_hash)

    def lookup(self, block_hashes: Iterable[BlockHash]) -> int:
        """M1, answered from the index: the longest prefix of ready hashes."""
        ready = self.index.get
        count = 0
        for block_hash in block_hashes:
            if not ready(block_hash):
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
        """M5: the core decides; the index then drops the victims and adds the pending."""
        output = self.core.prepare_store(block_hashes)
        if output is None or not output.block_hashes_to_store:
            return output  # M5.2 / M5.4: nothing changed
        index = self.index
        for victim in output.block_hashes_evicted:
            del index[victim]
        index.update(dict.fromkeys(output.block_hashes_to_store, False))
        return output

    def complete_store(self, block_hashes: Iterable[BlockHash], success: bool = True) -> None:
        """M6: listed pending hashes become ready; M7: they leave. Others are ignored."""
        hashes = _read_once(block_hashes)
        self.core.complete_store(hashes, success)  # raises (M9) before anything changes
        index = self.index
        if success:
            for block_hash in hashes:
                if index.get(block_hash) is False:
                    index[block_hash] = True
        else:
            for block_hash in hashes:
                if index.get(block_hash) is False:
                    del index[block_hash]

    def take_events(self) -> Iterable[OffloadingEvent]:
        """M8."""
        return self.core.take_events()

    def reset(self) -> None:
        """Drop every block, in flight or not: a fresh core, an empty index."""
        self.core = self._factory()
        self.index.clear()
