"""The pluggable contracts: ``OffloadingManager``, ``Backend``, ``CachePolicy`` and the
worker-side ``OffloadingHandler``.

Method names and signatures follow vLLM's ``vllm.v1.kv_offload`` of the contract's
generation, so code written for vLLM reads the same. Unlike vLLM, every method is
abstract: a default no-op ``touch`` or ``complete_load`` would silently break P4 or M3.
The conformance suite never requires subclassing these classes (it duck-types); they
exist to document the interface and to let typed code say what it expects.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable

from .clauses import implements
from .types import (
    BlockHash,
    BlockStatus,
    LoadStoreSpec,
    OffloadingEvent,
    PrepareStoreOutput,
    TransferResult,
    TransferSpec,
)

__all__ = ["OffloadingManager", "Backend", "CachePolicy", "OffloadingHandler"]


@implements("C1", "C2", "C3", "C4", "C5", "C6")
class OffloadingManager(ABC):
    """Scheduler-side bookkeeping of offloaded blocks (M0–M10, I1–I8).

    Callers keep the caller protocol C1–C6 (what vLLM's connector guarantees): loads only
    of ready hashes (C1), one ``complete_load`` per ``prepare_load`` batch (C2), each
    stored hash completed exactly once (C3), no hash twice within one call (C5), and
    completions only after the worker reported the copy done (C6). ``lookup``, ``touch``
    and ``prepare_store`` take any hashes (C4). Every ``block_hashes`` argument may be a
    one-shot iterable (M0).
    """

    @abstractmethod
    def lookup(self, block_hashes: Iterable[BlockHash]) -> int:
        """Length of the longest prefix of present, ready hashes (M1). Pure."""

    @abstractmethod
    def prepare_load(self, block_hashes: Iterable[BlockHash]) -> LoadStoreSpec:
        """Pin ready blocks for reading and address them, in order (M2)."""

    @abstractmethod
    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        """Recency hint for the policy; the first hash ends most recent (M4, P4)."""

    @abstractmethod
    def complete_load(self, block_hashes: Iterable[BlockHash]) -> None:
        """Release the read pins of a finished load (M3)."""

    @abstractmethod
    def prepare_store(self, block_hashes: Iterable[BlockHash]) -> PrepareStoreOutput | None:
        """Allocate pending blocks for the absent hashes, evicting if needed (M5)."""

    @abstractmethod
    def complete_store(self, block_hashes: Iterable[BlockHash], success: bool = True) -> None:
        """Mark pending blocks ready (M6) or drop them after a failed copy (M7)."""

    @abstractmethod
    def take_events(self) -> Iterable[OffloadingEvent]:
        """Drain the queued events, oldest first (M8)."""


class Backend(ABC):
    """Holds the offloaded space of one medium (B1–B4).

    ``block_size`` (tokens per offloaded block) and ``medium`` label the events a manager
    queues over this backend (M8).
    """

    def __init__(self, block_size: int, medium: str) -> None:
        self.block_size = block_size
        self.medium = medium

    @abstractmethod
    def get_num_free_blocks(self) -> int:
        """Free blocks, in ``[0, capacity]`` (B1)."""

    @abstractmethod
    def allocate_blocks(self, block_hashes: list[BlockHash]) -> list[BlockStatus]:
        """One new pending block per hash; over-allocation is a violation (B2)."""

    @abstractmethod
    def free(self, block: BlockStatus) -> None:
        """Return one allocated block; double and foreign frees are violations (B3)."""

    @abstractmethod
    def get_load_store_spec(
        self, block_hashes: Iterable[BlockHash], blocks: Iterable[BlockStatus]
    ) -> LoadStoreSpec:
        """A spec of this backend's medium addressing exactly ``blocks``, in order (B4)."""


class CachePolicy(ABC):
    """Which present hash to evict next (P1–P6); LRU (L1–L3) and ARC (A1–A6) are exact."""

    @abstractmethod
    def __init__(self, cache_capacity: int) -> None:
        """A policy for a backend of ``cache_capacity`` blocks."""

    @abstractmethod
    def get(self, block_hash: BlockHash) -> BlockStatus | None:
        """The block inserted under ``block_hash``, or ``None`` (P1)."""

    @abstractmethod
    def insert(self, block_hash: BlockHash, block: BlockStatus) -> None:
        """Add an absent hash at the most-recent end (P2, L1, A1)."""

    @abstractmethod
    def remove(self, block_hash: BlockHash) -> None:
        """Drop a present hash, for failed stores (P3, A6)."""

    @abstractmethod
    def touch(self, block_hashes: Iterable[BlockHash]) -> None:
        """Mark present hashes recently used, walking last to first (P4, L2, A3)."""

    @abstractmethod
    def evict(
        self, n: int, protected: set[BlockHash]
    ) -> list[tuple[BlockHash, BlockStatus]] | None:
        """Exactly ``n`` ready, idle, unprotected victims, or ``None`` and no change (P5)."""


class OffloadingHandler(ABC):
    """Worker side: copies blocks of one direction asynchronously (H1–H4).

    H3: with block-size factor ``f``, offloaded block ``b`` holds the GPU-sized
    sub-blocks ``b·f … b·f+f−1``; a load into ``m`` GPU blocks from ``k`` offloaded
    blocks (``k·f − f < m ≤ k·f``) reads the last ``m`` of those ``k·f`` sub-blocks.
    H4: on CUDA, copies run on their own streams, after the compute that produced the
    data, into pinned host memory; without CUDA the same handler works on CPU tensors.
    """

    @abstractmethod
    def transfer_async(self, job_id: int, spec: TransferSpec) -> bool:
        """Start copying ``spec = (src, dst)``; ``True`` when accepted (H1)."""

    @abstractmethod
    def get_finished(self) -> list[TransferResult]:
        """Each accepted job exactly once, after its bytes landed (H2)."""

    @abstractmethod
    def wait(self, job_ids: set[int]) -> None:
        """Block until the given jobs are done (H2)."""
