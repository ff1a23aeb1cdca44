"""Configuration and wiring of an offloading setup (S1–S4), from plain values.

vLLM builds its ``OffloadingSpec`` from its own config objects; ours takes the three
numbers that matter (tokens per block hash, each KV cache group's GPU block size, and
the connector's extra-config dict) so it can be built, validated and tested without
vLLM. The vLLM connector translates vLLM's config into these values.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .clauses import implements
from .interfaces import OffloadingHandler, OffloadingManager
from .types import LoadStoreSpec

__all__ = ["OffloadingSpec", "positive_int"]


@implements("S4")
def positive_int(key: str, value: object) -> int:
    """``value`` as a positive int, or ``ValueError`` naming ``key`` and ``value`` (S4)."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"S4: {key}={value!r} must be a positive integer")
    return value


class OffloadingSpec(ABC):
    """Validated block-size configuration plus the factories of S3.

    S1: ``hash_block_size`` tokens per block hash; every group's GPU block size is a
    positive multiple of it. S2: ``block_size_factor`` is ``extra_config["block_size"]``
    divided by the (single, shared) GPU block size, or 1 when ``block_size`` is unset.
    S4: every error is a ``ValueError`` naming the key and value at fault, raised before
    a subclass allocates anything (subclasses call ``super().__init__`` first).
    """

    @implements("S1", "S2", "S4")
    def __init__(
        self,
        hash_block_size: int,
        gpu_block_sizes: Sequence[int],
        extra_config: Mapping[str, Any] | None = None,
    ) -> None:
        self.hash_block_size = positive_int("hash_block_size", hash_block_size)
        # S1: each group's GPU block size is a whole number of hash blocks.
        sizes = tuple(gpu_block_sizes)
        for group, size in enumerate(sizes):
            positive_int(f"gpu_block_sizes[{group}]", size)
            if size % self.hash_block_size:
                raise ValueError(
                    f"S1: gpu_block_sizes[{group}]={size!r} is not a multiple of "
                    f"hash_block_size={self.hash_block_size}"
                )
        self.gpu_block_sizes: tuple[int, ...] = sizes
        self.extra_config: dict[str, Any] = dict(extra_config or {})

        # S2: one factor for all groups; only when block_size is given must the
        # groups agree on a GPU block size.
        requested = self.extra_config.get("block_size")
        if requested is None:
            self.block_size_factor = 1
        else:
            offloaded = positive_int("block_size", requested)
            if not sizes:
                raise ValueError(f"S2: block_size={requested!r} needs at least one KV cache group")
            if len(set(sizes)) != 1:
                raise ValueError(
                    f"S2: block_size={requested!r} needs all KV cache groups to share one "
                    f"GPU block size, got gpu_block_sizes={list(sizes)}"
                )
            if offloaded % sizes[0]:
                raise ValueError(
                    f"S2: block_size={requested!r} is not a multiple of the GPU block size {sizes[0]}"
                )
            self.block_size_factor = offloaded // sizes[0]

    @property
    @implements("S2")
    def offloaded_block_sizes(self) -> tuple[int, ...]:
        """Tokens per offloaded block, per KV cache group (S2)."""
        return tuple(size * self.block_size_factor for size in self.gpu_block_sizes)

    @implements("S3")
    @abstractmethod
    def get_manager(self) -> OffloadingManager:
        """The scheduler-side manager; the same object on every call (S3)."""

    @implements("S3")
    @abstractmethod
    def get_handlers(
        self, kv_caches: Mapping[str, Any], attn_backends: Mapping[str, Any]
    ) -> Iterator[tuple[type[LoadStoreSpec], type[LoadStoreSpec], OffloadingHandler]]:
        """``(src_spec_type, dst_spec_type, handler)`` once per direction (S3, H1–H4)."""
