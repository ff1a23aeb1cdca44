"""The reset fence of vLLM 0.33 (N1): blocks in flight at ``reset_cache()`` stay out of use
until ``on_reset_flushed()``.

A reset gives the adapter a fresh core manager (every block dropped). The blocks that a
copy may still touch (pending stores, blocks being read by loads) must not be handed out
again before the workers have flushed those copies, yet their capacity must come back
afterwards. The fence holds them in the fresh core as pending placeholder blocks, and
renames core block ids so that the placeholders sit exactly on the physical ids still in
flight: ``physical = perm[core id]``. ``release`` fails the placeholders' stores (M7),
which frees them. The renaming is a bijection of ``[0, num_blocks)``, so the capacity
never changes.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ...spec.clauses import implements
from ...spec.types import BlockHash
from ..manager import CPUOffloadingManager

__all__ = ["ResetFence", "FENCE_KEY_PREFIX"]

#: Placeholder keys: 30 bytes, never the 36-byte ``OffloadKey`` vLLM builds (I8 keeps
#: keys of different lengths apart).
FENCE_KEY_PREFIX = b"kvoffload:reset-fence:"


def in_flight_ids(core: CPUOffloadingManager) -> list[int]:
    """Core ids of the blocks a copy may still touch: pending (``-1``) or read (``> 0``)."""
    return sorted(status.block_id for status in core.blocks().values() if status.ref_cnt != 0)


@implements("N1")
class ResetFence:
    """Core-id → physical-id renaming plus the placeholders that hold fenced blocks."""

    def __init__(self) -> None:
        self.perm: npt.NDArray[np.int64] | None = None  # None: the identity
        self.placeholders: list[BlockHash] = []

    def physical(self, core_ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The physical block ids (what the worker copies) of core block ids: the same
        array while no fence renamed them (the common case costs nothing)."""
        return core_ids if self.perm is None else self.perm[core_ids]

    def fence(self, old_core: CPUOffloadingManager, new_core: CPUOffloadingManager) -> int:
        """N1: occupy, in the fresh ``new_core``, the physical blocks ``old_core`` had in
        flight (earlier fences' placeholders included). Returns how many were fenced."""
        busy = self.physical(np.asarray(in_flight_ids(old_core), dtype=np.int64)).tolist()
        self.placeholders = []
        self.perm = None
        if not busy:
            return 0
        keys = [BlockHash(FENCE_KEY_PREFIX + i.to_bytes(8, "big")) for i in range(len(busy))]
        output = new_core.prepare_store(keys)
        if output is None or len(output.block_hashes_to_store) != len(keys):
            raise RuntimeError("N1: a fresh manager refused the reset fence's placeholders")
        n = new_core.num_blocks
        held = np.asarray(getattr(output.store_spec, "block_ids"), dtype=np.int64)
        perm = np.full(n, -1, dtype=np.int64)
        perm[held] = busy
        free_core = np.setdiff1d(np.arange(n, dtype=np.int64), held)
        free_physical = np.setdiff1d(np.arange(n, dtype=np.int64), np.asarray(busy, dtype=np.int64))
        perm[free_core] = free_physical
        self.perm = perm
        self.placeholders = keys
        return len(keys)

    def release(self, core: CPUOffloadingManager) -> int:
        """N1: the workers flushed every fenced copy: free the placeholders (M7)."""
        released = len(self.placeholders)
        if released:
            core.complete_store(self.placeholders, success=False)
            self.placeholders = []
        return released
