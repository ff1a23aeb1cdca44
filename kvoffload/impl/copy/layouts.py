"""KV-cache tensor layouts, named explicitly (H1, S3).

vLLM hands a spec ``kv_caches: dict[layer_name, tensor]``; what each dimension means
depends on the attention backend, and shapes alone are ambiguous (a K/V dimension of 2
and a layer count or block count of 2 look the same). So callers name the layout, and
this module turns every tensor into *planes*: views with the GPU block dimension first,
one per K/V half, whose row ``i`` is everything that belongs to GPU block ``i``.

Layouts (``KVLayout`` value — shape):

- ``blocks`` — ``(num_blocks, ...)`` per layer (FlashInfer ``(N, 2, bs, h, d)``, MLA).
- ``kv_blocks`` — ``(2, num_blocks, ...)`` per layer, K and V split first (FlashAttention).
- ``layers_blocks`` — ``(num_layers, num_blocks, ...)``, one cross-layer tensor.
- ``layers_kv_blocks`` — ``(num_layers, 2, num_blocks, ...)``, cross-layer, K/V split.
- ``page`` — ``(num_blocks, page_bytes)`` int8/uint8, the canonical page layout of newer
  vLLM (one tensor per layer or KV cache group).

Every plane is reinterpreted as an integer dtype of the same width, so copies move bits,
never floating-point values: NaN payloads and signed zeros survive byte for byte (H2).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import torch

__all__ = ["KVLayout", "kv_planes", "bits_view", "resolve_layouts"]


class KVLayout(str, enum.Enum):
    """How one KV cache tensor is laid out (module docstring lists the shapes)."""

    BLOCKS = "blocks"
    KV_BLOCKS = "kv_blocks"
    LAYERS_BLOCKS = "layers_blocks"
    LAYERS_KV_BLOCKS = "layers_kv_blocks"
    PAGE = "page"

    @property
    def block_dim(self) -> int:
        """Index of the ``num_blocks`` dimension in the tensor."""
        return _BLOCK_DIM[self]

    @property
    def kv_dim(self) -> int | None:
        """Index of the K/V dimension (size 2) split into separate planes, if any."""
        return _KV_DIM[self]


_BLOCK_DIM = {
    KVLayout.BLOCKS: 0,
    KVLayout.KV_BLOCKS: 1,
    KVLayout.LAYERS_BLOCKS: 1,
    KVLayout.LAYERS_KV_BLOCKS: 2,
    KVLayout.PAGE: 0,
}
_KV_DIM: dict[KVLayout, int | None] = {
    KVLayout.BLOCKS: None,
    KVLayout.KV_BLOCKS: 0,
    KVLayout.LAYERS_BLOCKS: None,
    KVLayout.LAYERS_KV_BLOCKS: 1,
    KVLayout.PAGE: None,
}

# Same-width integer dtypes: copying through them can never canonicalise a float.
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def bits_view(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` reinterpreted as a same-width integer dtype (a view; any strides)."""
    bits = _BITS.get(tensor.element_size())
    if bits is None or tensor.dtype == bits:
        return tensor
    return tensor.view(bits)


def _as_layout(value: KVLayout | str) -> KVLayout:
    try:
        return KVLayout(value)
    except ValueError:
        names = ", ".join(layout.value for layout in KVLayout)
        raise ValueError(f"unknown KV layout {value!r}; expected one of: {names}") from None


def resolve_layouts(
    kv_caches: Mapping[str, torch.Tensor],
    layout: KVLayout | str | Mapping[str, KVLayout | str],
) -> dict[str, KVLayout]:
    """One ``KVLayout`` per layer name: a single layout for all, or a mapping per name."""
    if isinstance(layout, (str, KVLayout)):
        one = _as_layout(layout)
        return {name: one for name in kv_caches}
    missing = [name for name in kv_caches if name not in layout]
    if missing:
        raise ValueError(f"no KV layout given for layer(s) {missing}")
    return {name: _as_layout(layout[name]) for name in kv_caches}


def kv_planes(tensor: torch.Tensor, layout: KVLayout | str, name: str = "tensor") -> list[torch.Tensor]:
    """Block-first integer views of ``tensor``: one per K/V half (or one), row = block.

    Views share storage with ``tensor`` (writes through a plane land in the KV cache).
    Cross-layer layouts keep the layers dimension inside the row, so one gather moves a
    block of every layer at once.
    """
    kind = _as_layout(layout)
    need = kind.block_dim + 1
    if tensor.dim() < need:
        raise ValueError(
            f"{name}: layout {kind.value!r} needs at least {need} dimensions, got shape "
            f"{tuple(tensor.shape)}"
        )
    if kind is KVLayout.PAGE and (tensor.dim() != 2 or tensor.element_size() != 1):
        raise ValueError(
            f"{name}: layout 'page' is (num_blocks, page_bytes) of a 1-byte dtype, got shape "
            f"{tuple(tensor.shape)} of {tensor.dtype}"
        )
    if kind.kv_dim is None:
        halves, block_dim = [tensor], kind.block_dim
    else:
        if tensor.shape[kind.kv_dim] != 2:
            raise ValueError(
                f"{name}: layout {kind.value!r} has K/V at dimension {kind.kv_dim}, which must "
                f"be 2, got shape {tuple(tensor.shape)}"
            )
        # K/V precedes the block dimension, so selecting a half shifts it down by one.
        halves, block_dim = [tensor.select(kind.kv_dim, i) for i in range(2)], kind.block_dim - 1
    return [bits_view(half.movedim(block_dim, 0)) for half in halves]
