"""The torch copy handlers (the ``torch`` extra) on CPU tensors."""

from __future__ import annotations

import torch

from kvoffload import CPULoadStoreSpec, GPULoadStoreSpec, TransferResult
from kvoffload.impl.copy import build_cpu_handlers


def store_two_blocks() -> list[TransferResult]:
    kv_caches = {"layer.0": torch.zeros(4, 2, 16, 8)}
    store, _load = build_cpu_handlers(kv_caches, "blocks", gpu_block_size=16, block_size_factor=1, num_cpu_blocks=4)
    accepted: bool = store.transfer_async(1, (GPULoadStoreSpec([0, 1]), CPULoadStoreSpec([2, 3])))
    store.wait({1})
    return store.get_finished() if accepted else []
