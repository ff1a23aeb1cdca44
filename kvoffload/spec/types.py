"""Plain data shared by every part of kvoffload (the contract's vocabulary).

These mirror vLLM's ``vllm.v1.kv_offload`` types of the contract's generation, so code
written against vLLM's interfaces reads the same here.
"""

from __future__ import annotations

import ctypes
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt

__all__ = [
    "BlockHash",
    "BlockStatus",
    "LoadStoreSpec",
    "BlockIdsLoadStoreSpec",
    "CPULoadStoreSpec",
    "GPULoadStoreSpec",
    "PrepareStoreOutput",
    "OffloadingEvent",
    "TransferSpec",
    "TransferResult",
]

#: A block hash: ``bytes`` of any non-zero length (vocabulary). Distinct byte strings are
#: distinct blocks, also when one is a prefix of the other (I8). An alias, not a
#: ``NewType``: every API takes the ``bytes`` users have (plain ``bytes``, vLLM's
#: ``BlockHash``/``OffloadKey`` NewTypes) without a cast, and hands back those objects.
BlockHash: TypeAlias = bytes


class BlockStatus(ctypes.Structure):
    """One block of offloaded space, as a backend hands it out (B2).

    ``ref_cnt`` is a C int32: ``-1`` pending (store in flight), ``0`` ready and idle,
    ``k > 0`` ready and read by ``k`` loads (vocabulary, I2). ``block_id`` is the
    backend's address of the block (B4). A new block starts pending. A ctypes structure
    so that a compiled backend can hand out views into its own arrays
    (``BlockStatus.from_buffer``), which skip ``__init__``.
    """

    _fields_ = [("ref_cnt", ctypes.c_int32), ("block_id", ctypes.c_int64)]

    if TYPE_CHECKING:
        ref_cnt: int
        block_id: int

    def __init__(self, block_id: int = 0) -> None:
        super().__init__()
        self.ref_cnt = -1
        self.block_id = block_id

    @property
    def is_ready(self) -> bool:
        """True once the store completed (``ref_cnt >= 0``)."""
        return self.ref_cnt >= 0

    def __repr__(self) -> str:
        return f"BlockStatus(block_id={self.block_id}, ref_cnt={self.ref_cnt})"


class LoadStoreSpec(ABC):
    """Medium-specific addresses of blocks (vocabulary: spec)."""

    @staticmethod
    @abstractmethod
    def medium() -> str:
        """The medium these addresses live in, e.g. ``"CPU"`` or ``"GPU"``."""


_Spec = TypeVar("_Spec", bound="BlockIdsLoadStoreSpec")


class BlockIdsLoadStoreSpec(LoadStoreSpec, ABC):
    """A spec that addresses blocks by int64 id, in the order of the hashes (B4)."""

    block_ids: npt.NDArray[np.int64]

    def __init__(self, block_ids: npt.ArrayLike) -> None:
        ids = np.asarray(block_ids, dtype=np.int64)
        if ids.ndim != 1:
            raise ValueError(f"block_ids must be one-dimensional, got shape {ids.shape}")
        self.block_ids = ids

    @classmethod
    def of_checked(cls: type[_Spec], block_ids: npt.NDArray[np.int64]) -> _Spec:
        """A spec of ``block_ids`` that are already a one-dimensional int64 array (ids the
        caller made): ``__init__``'s conversion and shape check skipped (~0.3 us, a few
        percent of a small batch's call in the production manager)."""
        spec = object.__new__(cls)
        spec.block_ids = block_ids
        return spec

    def __len__(self) -> int:
        return int(self.block_ids.shape[0])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.block_ids.tolist()!r})"


class CPULoadStoreSpec(BlockIdsLoadStoreSpec):
    """Block ids in host memory; ``medium() == "CPU"``."""

    @staticmethod
    def medium() -> str:
        return "CPU"


class GPULoadStoreSpec(BlockIdsLoadStoreSpec):
    """Block ids in the GPU KV cache (GPU-sized blocks); ``medium() == "GPU"``."""

    @staticmethod
    def medium() -> str:
        return "GPU"


@dataclass(slots=True)
class PrepareStoreOutput:
    """What ``prepare_store`` decided (M5.5): hashes to copy, where to, and who left."""

    block_hashes_to_store: list[BlockHash]
    store_spec: LoadStoreSpec
    block_hashes_evicted: list[BlockHash]


@dataclass(slots=True)
class OffloadingEvent:
    """A change of the ready set (M5.5 removed, M6 stored), for KV-event consumers (I5)."""

    block_hashes: list[BlockHash]
    block_size: int
    medium: str
    removed: bool


#: ``(src_spec, dst_spec)`` of one transfer job (H1).
TransferSpec = tuple[LoadStoreSpec, LoadStoreSpec]
#: ``(job_id, success)`` as reported by ``get_finished`` (H2).
TransferResult = tuple[int, bool]
