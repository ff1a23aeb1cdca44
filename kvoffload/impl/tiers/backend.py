"""``FileBackend``: the ``Backend`` interface (B1–B4) over the slots of a ``BlockFile``.

For third parties who compose their own manager over a disk tier: block ids are slots of
one preallocated file and specs name the ``"DISK"`` medium. ``DiskTier`` itself uses the
compiled block table (``DiskBlockTable``), whose ids are slots in the same way.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable

from ...spec.types import BlockHash, BlockStatus
from ...spec.interfaces import Backend
from ..components import CPUBackend
from .blockfile import BlockFile
from .disk import DiskLoadStoreSpec

__all__ = ["FileBackend"]


class FileBackend(Backend):
    """``num_blocks`` slots of ``payload_bytes`` in the file at ``path`` (a temporary file if ``None``)."""

    def __init__(
        self,
        num_blocks: int,
        payload_bytes: int = 4096,
        path: str | os.PathLike[str] | None = None,
        block_size: int = 16,
        digest: bytes = bytes(16),
    ) -> None:
        self._slots = CPUBackend(num_blocks, block_size=block_size, medium="DISK")  # B1–B3 bookkeeping
        super().__init__(block_size=self._slots.block_size, medium="DISK")
        self.num_blocks = self._slots.num_blocks
        if path is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="kvoffload-disk-")
            path = os.path.join(self._tmp.name, "blocks.kvo")
        self.file = BlockFile(path, self.num_blocks, payload_bytes, digest)

    def get_num_free_blocks(self) -> int:
        return self._slots.get_num_free_blocks()

    def allocate_blocks(self, block_hashes: list[BlockHash]) -> list[BlockStatus]:
        return self._slots.allocate_blocks(block_hashes)

    def free(self, block: BlockStatus) -> None:
        self._slots.free(block)

    def check_invariants(self) -> None:
        self._slots.check_invariants()

    def get_load_store_spec(
        self, block_hashes: Iterable[BlockHash], blocks: Iterable[BlockStatus]
    ) -> DiskLoadStoreSpec:
        """B4: the slots of exactly ``blocks``, in order, medium ``"DISK"``."""
        return DiskLoadStoreSpec([block.block_id for block in blocks])
