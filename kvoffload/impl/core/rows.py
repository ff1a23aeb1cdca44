"""Packing a batch into ``q`` rows in plain numpy: the portable path and the twin's.

``q[i, :(len(hash) + 7) // 8]`` := hash ``i`` as little-endian uint64 words, zero padded
(what ``batch.gather`` reads from the list in compiled code). Nothing here is compiled
or imports numba.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["pack"]


def pack(hashes: Sequence[bytes], q: Any) -> None:
    """Rows ``q[:len(hashes)]`` := the hashes' words, each row zero padded to its width."""
    width = 8 * q.shape[1]
    joined = b"".join(block_hash.ljust(width, b"\0") for block_hash in hashes)
    q[: len(hashes)] = np.frombuffer(joined, np.dtype("<u8")).reshape(len(hashes), q.shape[1])
